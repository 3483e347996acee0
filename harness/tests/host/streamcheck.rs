//! streamcheck's happens-before model on hand-checked traces (the lines the recorder,
//! `harness/globalcheck/streams.cpp`, writes): each race shape of `examples/streams/` and its
//! correct twin, event reuse, the legacy and per-thread default streams, non-blocking streams,
//! kernels' "may touch" as warnings, and what can never be clean (launches whose arguments were
//! not read and stream-ordered frees: `streamcheck/blind.rs`). Traces captured on the H200
//! go to `tests/fixtures/h200/streams/NAME.jsonl` with `NAME.expect` (`race`, `clean`,
//! `inconclusive`) and are judged alike when present.

use std::path::Path;

mod blind;
mod footprint;
mod misses;
mod recorder;

use racegate::judge::sanitize::injected::streams::model::{self as streams, param_consts};
use racegate::judge::sanitize::injected::streams::verdict as streams_verdict;
use racegate::judge::sanitize::tool::Outcome;
use racegate::proc::watchdog::Exit;

const A: u64 = 0xa000;
const B: u64 = 0xb000;
const BUF: u64 = 0x7f00_0000_0000;
const PINNED: u64 = 0x7e00_0000_0000;
const N: u64 = 4096;

/// A trace builder: one JSON line per call, on host thread 1 unless `on` says otherwise.
#[derive(Default)]
struct T {
    lines: Vec<String>,
    t: u64,
    site: u64,
}

impl T {
    fn new() -> T {
        let mut t = T {
            t: 1,
            site: 0x1000,
            ..T::default()
        };
        t.push(r#"{"op":"start","pid":7,"exe":""}"#.into());
        t.push(format!(
            r#"{{"op":"alloc","base":{BUF},"size":{N},"kind":"device"}}"#
        ));
        t.push(format!(
            r#"{{"op":"alloc","base":{PINNED},"size":{N},"kind":"pinned"}}"#
        ));
        t
    }
    fn push(&mut self, s: String) -> &mut T {
        self.lines.push(s);
        self
    }
    fn site(&mut self) -> u64 {
        self.site += 0x10;
        self.site
    }
    fn on(&mut self, t: u64) -> &mut T {
        self.t = t;
        self
    }
    fn stream(&mut self, s: u64, flags: u32) -> &mut T {
        self.push(format!(
            r#"{{"op":"stream","s":{s},"cu":{s},"flags":{flags}}}"#
        ))
    }
    /// A kernel on stream `s` (`api`: the stream as passed; 0 legacy, 2 per-thread) given `ptrs`.
    fn kernel(&mut self, s: u64, api: u64, name: &str, ptrs: &[u64]) -> &mut T {
        let args: Vec<String> = ptrs
            .iter()
            .enumerate()
            .map(|(i, p)| format!("[{i},{p}]"))
            .collect();
        let (t, site) = (self.t, self.site());
        self.push(format!(
            r#"{{"op":"kernel","t":{t},"s":{s},"api":{api},"name":"{name}","args":[{}],"args_known":true,"site":[{site}]}}"#,
            args.join(",")
        ))
    }
    fn copy(&mut self, s: u64, api: u64, dst: u64, src: u64, dir: u32, is_async: bool) -> &mut T {
        let (t, site) = (self.t, self.site());
        self.push(format!(
            r#"{{"op":"memcpy","t":{t},"s":{s},"api":{api},"src":{src},"dst":{dst},"size":{N},"dir":{dir},"async":{is_async},"pitched":false,"site":[{site}]}}"#
        ))
    }
    fn record(&mut self, s: u64, ev: u64) -> &mut T {
        let (t, site) = (self.t, self.site());
        self.push(format!(
            r#"{{"op":"record","t":{t},"s":{s},"api":{s},"ev":{ev},"site":[{site}]}}"#
        ))
    }
    fn wait(&mut self, s: u64, ev: u64) -> &mut T {
        let (t, site) = (self.t, self.site());
        self.push(format!(
            r#"{{"op":"wait","t":{t},"s":{s},"api":{s},"ev":{ev},"site":[{site}]}}"#
        ))
    }
    fn sync(&mut self, s: u64) -> &mut T {
        let t = self.t;
        self.push(format!(
            r#"{{"op":"stream_sync","t":{t},"s":{s},"api":{s}}}"#
        ))
    }
    fn event_sync(&mut self, ev: u64) -> &mut T {
        let t = self.t;
        self.push(format!(r#"{{"op":"event_sync","t":{t},"ev":{ev}}}"#))
    }
    fn device_sync(&mut self) -> &mut T {
        let t = self.t;
        self.push(format!(r#"{{"op":"ctx_sync","t":{t}}}"#))
    }
    fn host_read(&mut self, addr: u64) -> &mut T {
        let (t, site) = (self.t, self.site());
        self.push(format!(
            r#"{{"op":"host","t":{t},"addr":{addr},"write":false,"in_api":false,"site":[{site}]}}"#
        ))
    }
    fn text(&self) -> String {
        self.lines.join("\n")
    }
    /// (near-certain races, warnings)
    fn races(&self) -> (usize, usize) {
        let j = streams::judge(&self.text());
        assert!(j.errors.is_empty(), "{:?}", j.errors);
        let sure = j.races.iter().filter(|r| r.certain).count();
        (sure, j.races.len() - sure)
    }
    fn outcome(&self) -> Outcome {
        let mut log = String::new();
        streams_verdict::decide(
            &Exit::Code(0),
            false,
            Some(&self.text()),
            Path::new("/"),
            &mut log,
        )
    }
}

const SCALE: &str = "_Z5scalePfi"; // scale(float*, int): writes through its pointer
const READ: &str = "_Z4readPKfPf"; // read(const float*, float*)

#[track_caller]
fn assert_race(t: &T) {
    assert_eq!(t.races(), (1, 0), "{}", t.text());
    assert!(
        matches!(t.outcome(), Outcome::Findings(_)),
        "{:?}",
        t.outcome()
    );
}

#[track_caller]
fn assert_clean(t: &T) {
    assert_eq!(t.races(), (0, 0), "{}", t.text());
    assert_eq!(t.outcome(), Outcome::Clean);
}

#[test]
fn a_kernel_then_a_copy_on_another_stream_races_unless_it_waits_for_an_event() {
    let mut racy = T::new();
    racy.stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, SCALE, &[BUF])
        .copy(B, B, PINNED, BUF, 3, true);
    assert_race(&racy);
    let mut ok = T::new();
    ok.stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, SCALE, &[BUF])
        .record(A, 1)
        .wait(B, 1);
    ok.copy(B, B, PINNED, BUF, 3, true).sync(B);
    assert_clean(&ok);
    // The same stream orders them without any event.
    let mut same = T::new();
    same.stream(A, 0)
        .kernel(A, A, SCALE, &[BUF])
        .copy(A, A, PINNED, BUF, 3, true);
    assert_clean(&same);
}

#[test]
fn the_found_race_names_both_operations_and_streams() {
    let mut racy = T::new();
    racy.stream(A, 0)
        .stream(B, 1)
        .kernel(A, A, SCALE, &[BUF])
        .copy(B, B, PINNED, BUF, 3, true);
    let Outcome::Findings(f) = racy.outcome() else {
        panic!("{:?}", racy.outcome())
    };
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].level, "Error");
    assert_eq!(f[0].kernel, SCALE);
    assert!(
        f[0].what.contains("kernel _Z5scalePfi on stream"),
        "{}",
        f[0].what
    );
    assert!(
        f[0].what
            .contains("memcpy device-to-host (async) on non-blocking stream"),
        "{}",
        f[0].what
    );
    assert!(
        f[0].accesses.starts_with("May write -> Read "),
        "{}",
        f[0].accesses
    );
}

#[test]
fn a_host_read_of_pinned_memory_races_an_async_copy_until_the_stream_is_synchronized() {
    let mut racy = T::new();
    racy.stream(A, 0)
        .copy(A, A, PINNED, BUF, 3, true)
        .host_read(PINNED + 8);
    assert_race(&racy);
    let j = streams::judge(&racy.text());
    assert!(
        j.races[0].host,
        "a host access to pinned memory is a stream-host race"
    );
    let mut ok = T::new();
    ok.stream(A, 0)
        .copy(A, A, PINNED, BUF, 3, true)
        .sync(A)
        .host_read(PINNED + 8);
    assert_clean(&ok);
    // Synchronizing another stream does not order the copy.
    let mut wrong = T::new();
    wrong
        .stream(A, 0)
        .stream(B, 0)
        .copy(A, A, PINNED, BUF, 3, true)
        .sync(B)
        .host_read(PINNED);
    assert_race(&wrong);
    // An event recorded after the copy and waited for by the host orders it; a device sync too.
    let mut ev = T::new();
    ev.stream(A, 0)
        .copy(A, A, PINNED, BUF, 3, true)
        .record(A, 9)
        .event_sync(9)
        .host_read(PINNED);
    assert_clean(&ev);
    let mut dev = T::new();
    dev.stream(A, 0)
        .copy(A, A, PINNED, BUF, 3, true)
        .device_sync()
        .host_read(PINNED);
    assert_clean(&dev);
    // A read in the copy's own call (the driver staging it) is no program access.
    let mut in_api = T::new();
    in_api.stream(A, 0).copy(A, A, PINNED, BUF, 3, true);
    in_api.push(format!(
        r#"{{"op":"host","t":1,"addr":{PINNED},"write":false,"in_api":true,"site":[]}}"#
    ));
    assert_clean(&in_api);
}

#[test]
fn an_input_updated_while_the_kernel_that_reads_it_may_run_is_a_race() {
    let input = BUF;
    let mut racy = T::new();
    racy.push(format!(
        r#"{{"op":"alloc","base":{},"size":{N},"kind":"device"}}"#,
        BUF + N
    ));
    racy.stream(A, 0).stream(B, 0);
    racy.kernel(A, A, READ, &[input, BUF + N])
        .copy(B, B, input, PINNED, 2, true);
    assert_race(&racy);
    let mut ok = T::new();
    ok.push(format!(
        r#"{{"op":"alloc","base":{},"size":{N},"kind":"device"}}"#,
        BUF + N
    ));
    ok.stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, READ, &[input, BUF + N])
        .record(A, 3)
        .wait(B, 3);
    ok.copy(B, B, input, PINNED, 2, true).device_sync();
    assert_clean(&ok);
}

#[test]
fn the_legacy_default_stream_orders_blocking_streams_but_not_non_blocking_ones() {
    // Kernel on the legacy stream, copy on a blocking stream: ordered (implicit barrier).
    let mut ok = T::new();
    ok.stream(B, 0)
        .kernel(0x5, 0, SCALE, &[BUF])
        .copy(B, B, PINNED, BUF, 3, true)
        .sync(B);
    assert_clean(&ok);
    // And the other way: a blocking stream's kernel, then a copy on the legacy stream.
    let mut back = T::new();
    back.stream(B, 0)
        .kernel(B, B, SCALE, &[BUF])
        .copy(0x5, 0, PINNED, BUF, 3, true)
        .sync(0x5);
    assert_clean(&back);
    // A non-blocking stream is exempt: the same program races.
    let mut racy = T::new();
    racy.stream(B, 1)
        .kernel(0x5, 0, SCALE, &[BUF])
        .copy(B, B, PINNED, BUF, 3, true);
    assert_race(&racy);
    // A synchronous copy on the legacy stream returns once done: the host is ordered after it.
    let mut sync = T::new();
    sync.stream(B, 0)
        .kernel(B, B, SCALE, &[BUF])
        .copy(0x5, 0, PINNED, BUF, 3, false)
        .host_read(PINNED);
    assert_clean(&sync);
}

#[test]
fn a_non_blocking_stream_ordered_by_an_event_or_a_sync_is_clean() {
    // The racy shape above (legacy-stream kernel, copy on a non-blocking stream), ordered by an
    // event the non-blocking stream waits for: clean.
    let mut waits = T::new();
    waits
        .stream(B, 1)
        .kernel(0x5, 0, SCALE, &[BUF])
        .record(0x5, 6)
        .wait(B, 6)
        .copy(B, B, PINNED, BUF, 3, true)
        .sync(B);
    assert_clean(&waits);
    // Ordered by the host instead: it waits for the legacy stream before issuing the copy.
    let mut synced = T::new();
    synced
        .stream(B, 1)
        .kernel(0x5, 0, SCALE, &[BUF])
        .sync(0x5)
        .copy(B, B, PINNED, BUF, 3, true)
        .sync(B);
    assert_clean(&synced);
    // Both on the non-blocking stream: stream order alone.
    let mut same = T::new();
    same.stream(B, 1)
        .kernel(B, B, SCALE, &[BUF])
        .copy(B, B, PINNED, BUF, 3, true)
        .sync(B);
    assert_clean(&same);
}

/// Each "several devices" line the recorder writes (`streams.cpp`: peer memory, launches in
/// more than one context, a copy between contexts) makes a trace that is otherwise clean
/// inconclusive, naming why: one GPU's model cannot order another's work.
#[test]
fn work_on_several_devices_is_inconclusive_never_clean() {
    for why in [
        "memory of a peer device (several devices)",
        "kernels launched in more than one CUDA context (several devices)",
        "a copy between two contexts (several devices)",
    ] {
        let mut t = T::new();
        t.stream(A, 0).kernel(A, A, SCALE, &[BUF]).sync(A);
        assert_clean(&t);
        t.push(format!(r#"{{"op":"unjudged","why":"{why}"}}"#));
        match t.outcome() {
            Outcome::Inconclusive(w) => assert!(w.contains(why), "{w}"),
            o => panic!("{why}: {o:?}"),
        }
    }
}

#[test]
fn the_per_thread_default_stream_is_ordered_with_the_legacy_stream_only() {
    let mut racy = T::new();
    racy.stream(B, 0)
        .kernel(0x7, 2, SCALE, &[BUF])
        .copy(B, B, PINNED, BUF, 3, true);
    assert_race(&racy);
    let mut ok = T::new();
    ok.kernel(0x7, 2, SCALE, &[BUF])
        .copy(0x5, 0, PINNED, BUF, 3, true)
        .sync(0x5);
    assert_clean(&ok);
}

#[test]
fn a_reused_event_orders_only_what_was_recorded_before_the_wait() {
    // Recorded before the kernel, waited for, then recorded again: the wait saw the old record.
    let mut racy = T::new();
    racy.stream(A, 0)
        .stream(B, 0)
        .record(A, 4)
        .wait(B, 4)
        .kernel(A, A, SCALE, &[BUF])
        .record(A, 4);
    racy.copy(B, B, PINNED, BUF, 3, true);
    assert_race(&racy);
    // Recorded again after the kernel, then waited for: ordered.
    let mut ok = T::new();
    ok.stream(A, 0)
        .stream(B, 0)
        .record(A, 4)
        .kernel(A, A, SCALE, &[BUF])
        .record(A, 4)
        .wait(B, 4);
    ok.copy(B, B, PINNED, BUF, 3, true).sync(B);
    assert_clean(&ok);
    // Waiting for an event never recorded orders nothing.
    let mut never = T::new();
    never
        .stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, SCALE, &[BUF])
        .wait(B, 5);
    never.copy(B, B, PINNED, BUF, 3, true);
    assert_race(&never);
}

#[test]
fn what_a_kernel_may_touch_is_a_warning_and_never_clean() {
    // Two kernels reading one input through pointers to const: no race.
    let mut reads = T::new();
    reads
        .stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, "_Z1kPKf", &[BUF])
        .kernel(B, B, "_Z1kPKf", &[BUF]);
    assert_clean(&reads);
    // One writes (non-const), the other reads: a kernel's whole allocation, so only a warning.
    let mut rw = T::new();
    rw.stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, SCALE, &[BUF])
        .kernel(B, B, "_Z1kPKf", &[BUF]);
    assert_eq!(rw.races(), (0, 1));
    assert!(
        matches!(rw.outcome(), Outcome::Inconclusive(w) if w.starts_with(streams_verdict::STREAM_CANNOT_JUDGE))
    );
    // Chunks of one buffer, each kernel and copy on its own stream: the kernel got another chunk's
    // pointer, so the overlap is only "may touch".
    let mut chunks = T::new();
    chunks.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    chunks.push(format!(
        r#"{{"op":"memcpy","t":1,"s":{B},"api":{B},"src":{},"dst":{PINNED},"size":16,"dir":3,"async":true,"pitched":false,"site":[1]}}"#,
        BUF + 2048
    ));
    assert_eq!(chunks.races(), (0, 1));
    // A copy that reads what a const-pointer kernel reads: nothing.
    let mut both_read = T::new();
    both_read
        .stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, "_Z1kPKf", &[BUF])
        .copy(B, B, PINNED, BUF, 3, true);
    assert_eq!(both_read.races(), (0, 0));
}

#[test]
fn graphs_ipc_unreadable_arguments_and_races_between_host_threads_are_never_clean() {
    let mut g = T::new();
    g.stream(A, 0).kernel(A, A, SCALE, &[BUF]);
    g.push(r#"{"op":"unjudged","why":"a CUDA graph was launched"}"#.into());
    assert!(matches!(g.outcome(), Outcome::Inconclusive(w) if w.contains("CUDA graph")));
    // A kernel whose arguments were not read, not ordered with a copy (more in `blind`).
    let mut args = T::new();
    args.stream(A, 0).stream(B, 0);
    args.push(format!(
        r#"{{"op":"kernel","t":1,"s":{A},"api":{A},"name":"k","args":[],"args_known":false,"site":[]}}"#
    ));
    args.copy(B, B, PINNED, BUF, 3, true);
    assert!(matches!(args.outcome(), Outcome::Inconclusive(w) if w.contains("arguments")));
    // Two host threads, each with its stream: they may order their calls by a mutex or a join.
    let mut threads = T::new();
    threads
        .stream(A, 0)
        .stream(B, 0)
        .copy(A, A, BUF, PINNED, 2, true);
    threads.on(2).copy(B, B, BUF, PINNED + 64, 2, true);
    assert_eq!(threads.races(), (0, 1));
    // A trace that does not parse, and no trace at all.
    let mut bad = T::new();
    bad.push(r#"{"op":"teleport"}"#.into());
    assert!(matches!(bad.outcome(), Outcome::Inconclusive(w) if w.contains("trace line")));
    let mut log = String::new();
    let none = streams_verdict::decide(&Exit::Code(0), false, None, Path::new("/"), &mut log);
    assert!(matches!(none, Outcome::Inconclusive(w) if w.contains("not loaded")));
}

#[test]
fn a_free_and_a_device_synchronize_order_everything_before_them() {
    let mut ok = T::new();
    ok.stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, SCALE, &[BUF])
        .device_sync()
        .copy(B, B, PINNED, BUF, 3, true);
    ok.sync(B);
    assert_clean(&ok);
    let mut freed = T::new();
    freed.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    freed.push(format!(r#"{{"op":"free","base":{BUF},"t":1}}"#));
    freed.push(format!(
        r#"{{"op":"alloc","base":{BUF},"size":{N},"kind":"device"}}"#
    ));
    freed.copy(B, B, PINNED, BUF, 3, true).sync(B);
    assert_clean(&freed);
}

#[test]
fn mangled_names_say_which_pointers_are_to_const() {
    assert_eq!(param_consts("_Z5scalePfi"), [Some(false), None]);
    assert_eq!(param_consts("_Z4readPKfPf"), [Some(true), Some(false)]);
    assert_eq!(
        param_consts("_Z3addPKfS0_Pfi"),
        [Some(true), Some(true), Some(false), None]
    );
    assert_eq!(param_consts("_Z1kP6float4"), [Some(false)]);
    assert!(param_consts("plain_c_kernel").is_empty());
}

/// Traces captured on the H200 (`ci/streams-check` keeps them), judged as their `.expect` says:
/// `race KEY [TEXT]`, `clean`, or `inconclusive [TEXT]` (TEXT: part of the description or reason),
/// then for a race `sites FILE` (both call sites in FILE, as the device resolved them). Where the
/// device's own report lies beside the trace (`NAME.json`, `racegate sanitize --json`), racegate's
/// outcome here must be that report's: the same findings (kind, level, kernel, description,
/// directions; their call sites need the program's binary, so they are checked in the report) or
/// the same reason word for word.
#[test]
fn captured_traces_are_judged_as_recorded() {
    let dir = crate::package_dir().join("tests/fixtures/h200/streams");
    let mut judged = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let want = std::fs::read_to_string(p.with_extension("expect")).unwrap();
        let mut lines = want.lines();
        let first = lines.next().unwrap_or_default().trim();
        let sites: Vec<&str> = lines
            .filter_map(|l| l.trim().strip_prefix("sites "))
            .collect();
        let mut words = first.splitn(2, ' ');
        let verdict = words.next().unwrap_or_default();
        let rest = words.next().unwrap_or_default();
        let text = std::fs::read_to_string(&p).unwrap();
        let mut log = String::new();
        let got =
            streams_verdict::decide(&Exit::Code(0), false, Some(&text), Path::new("/"), &mut log);
        let at = p.display();
        match (verdict, &got) {
            ("race", Outcome::Findings(f)) => {
                let (key, part) = rest.split_once(' ').unwrap_or((rest, ""));
                let kind = if key == "stream-host-race" {
                    "StreamHost"
                } else {
                    "Stream"
                };
                assert!(
                    f.iter()
                        .any(|f| f.level == "Error" && f.kind == kind && f.what.contains(part)),
                    "{at}: no {key} Error with {part:?}: {f:?}"
                );
            }
            ("clean", Outcome::Clean) => {}
            ("inconclusive", Outcome::Inconclusive(why)) => {
                assert!(why.contains(rest), "{at}: {why}");
            }
            _ => panic!("{at}: want {want}, got {got:?}\n{log}"),
        }
        if let Ok(report) = std::fs::read_to_string(p.with_extension("json")) {
            as_the_device_reported(&p, &got, &report, verdict, &sites);
        }
        judged += 1;
    }
    assert!(
        judged >= 29,
        "{judged} captured traces in {}",
        dir.display()
    );
    // H200 run 23, call B: every program `ci/streams-check` ran, with the device's report.
    for name in [
        "host_read_nosync",
        "host_read_sync",
        "input_update_racy",
        "input_update_wait",
        "kernel_copy_nowait",
        "kernel_copy_wait",
        "legacy_default_ok",
        "legacy_nonblocking_racy",
        "same_stream_ok",
        "limits_graph",
        "limits_ipc",
    ] {
        for ext in ["jsonl", "expect", "json"] {
            let f = dir.join(format!("r23_{name}.{ext}"));
            assert!(f.is_file(), "{} is missing", f.display());
        }
    }
}

/// The outcome racegate reaches here from trace `p` is the one the device reported (`report`,
/// `racegate sanitize --json`): the same findings but for their call sites, which are resolved in
/// the program's binary (absent here); the report's are checked against the `.expect`'s
/// `sites FILE` instead (every race's two call sites in FILE).
#[track_caller]
fn as_the_device_reported(p: &Path, got: &Outcome, report: &str, verdict: &str, sites: &[&str]) {
    let at = p.display();
    let device: serde_json::Value = serde_json::from_str(report).unwrap();
    let device = &device["outcome"];
    let mut here = serde_json::to_value(got).unwrap();
    // The site of the other access ends `accesses` ("May write -> Read FILE:LINE").
    let unsited = |v: &mut serde_json::Value| {
        for f in v["detail"].as_array_mut().into_iter().flatten() {
            f["location"] = serde_json::Value::Null;
            let a = f["accesses"].as_str().unwrap_or_default();
            let a = a.rsplit_once(' ').map_or(a, |(d, _)| d).to_string();
            f["accesses"] = a.into();
        }
    };
    let mut there = device.clone();
    unsited(&mut here);
    unsited(&mut there);
    assert_eq!(here, there, "{at}: judged here unlike on the device");
    let found = device["detail"].as_array().cloned().unwrap_or_default();
    if verdict == "race" {
        assert!(
            !sites.is_empty(),
            "{at}: a race's .expect names `sites FILE`"
        );
    }
    for f in found.iter().filter(|f| f["level"] == "Error") {
        let location = f["location"].as_str().unwrap_or_default();
        let other = f["accesses"].as_str().unwrap_or_default();
        let other = other.rsplit_once(' ').map_or("", |(_, s)| s);
        for (which, s) in [("location", location), ("other access", other)] {
            assert!(
                sites.iter().any(|file| s
                    .strip_prefix(file)
                    .and_then(|l| l.strip_prefix(':'))
                    .is_some_and(|l| l.parse::<u32>().is_ok())),
                "{at}: the device's {which} {s:?} is not in {sites:?}"
            );
        }
    }
}
