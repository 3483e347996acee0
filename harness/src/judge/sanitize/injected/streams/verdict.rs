//! streamcheck's outcome of a finished run: the trace ([`super::streams::judge`]) -> races with
//! both call sites -> [`Finding`]s, or why the run cannot be judged. Nothing undecidable is
//! clean: no trace, a trace that does not parse, a crash, CUDA graphs, IPC, several contexts,
//! kernels whose arguments could not be read (unless everything else is ordered with them), and
//! possible races that rest only on a kernel's "may touch" are inconclusive.
//!
//! Call sites are program counters in the program's own executable (the recorder keeps the
//! frames of the host backtrace that lie in it); `addr2line` turns them into `file:line` where the
//! program has debug info (`-g`/`-lineinfo` on the host side), else into `function+0xOFFSET`,
//! passing over the CUDA runtime linked into the program (`libcudart_static_*`, `cuda*`) and
//! nvcc's launch stubs (`__device_stub_*`, `*.cudafe1.stub.c`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::model::{self as streams, Access, Judged, Race};
use crate::judge::sanitize::normalize::{self, Finding};
use crate::judge::sanitize::tool::Outcome;
use crate::proc::watchdog::{self, Exit};

/// How every inconclusive outcome of streamcheck that is a limit of the method begins.
pub const STREAM_CANNOT_JUDGE: &str = "streamcheck cannot judge this run: ";

/// The file the recorder writes in the tool's folder.
pub const TRACE: &str = "streams.jsonl";

/// The most of a trace racegate reads (10k operations are a few MiB).
const TRACE_LIMIT: u64 = 256 << 20;

/// The trace in the tool's folder `dir`, read as the target may have left it (none: the recorder
/// was not loaded or not asked, or the file is not a regular one within [`TRACE_LIMIT`]).
pub fn read_trace(dir: &Path) -> Option<String> {
    match crate::judge::sanitize::tool::read_capture(&dir.join(TRACE), TRACE_LIMIT) {
        crate::judge::sanitize::tool::Capture::Text(t) => Some(t),
        _ => None,
    }
}

/// Keeps the trace beside a saved report (`--save-xml FILE`: `FILE.streams.jsonl`).
pub fn keep(report: &Path, trace: Option<&str>) {
    if let Some(t) = trace {
        let mut p = report.as_os_str().to_owned();
        p.push(".streams.jsonl");
        // ignored: the kept copy is for people; the verdict does not depend on it
        let _ = std::fs::write(p, t);
    }
}

/// streamcheck's outcome from the trace's text (`None`: the recorder wrote none).
pub fn decide(
    exit: &Exit,
    left_behind: bool,
    trace: Option<&str>,
    root: &Path,
    log: &mut String,
) -> Outcome {
    if *exit == Exit::TimedOut {
        return Outcome::Hang {
            left_behind,
            said: None,
        };
    }
    let j = streams::judge(trace.unwrap_or_default());
    log.push_str(&summary(&j));
    if !j.started {
        return Outcome::Inconclusive(format!(
            "streamcheck was not loaded into the target (no trace; {})",
            match exit {
                Exit::Code(c) => format!("the target exited {c}"),
                Exit::Signal(s) => format!("the target died of signal {s}"),
                Exit::TimedOut => unreachable!(),
            }
        ));
    }
    if let Some(e) = j.errors.first() {
        return Outcome::Inconclusive(format!("streamcheck: {e}"));
    }
    if let Exit::Signal(s) = exit {
        return Outcome::Inconclusive(format!("the target died of signal {s} under streamcheck"));
    }
    let sites = Sites::resolve(&j, root);
    let (sure, maybe): (Vec<&Race>, Vec<&Race>) = j.races.iter().partition(|r| r.certain);
    let all: Vec<Finding> = j.races.iter().map(|r| finding(r, &sites)).collect();
    let all = normalize::normalized(all, root);
    for f in all.iter().filter(|f| f.level == "Warning") {
        log.push_str(&format!("streamcheck warning (may touch): {}\n", f.line()));
    }
    if !sure.is_empty() {
        return Outcome::Findings(all);
    }
    if let Exit::Code(c) = exit {
        if *c != 0 {
            return Outcome::Inconclusive(format!(
                "the target exited {c} without a streamcheck finding (a failed call leaves nothing to judge)"
            ));
        }
    }
    if !maybe.is_empty() {
        return Outcome::Inconclusive(format!(
            "{STREAM_CANNOT_JUDGE}{} possible race(s) rest on what a kernel may touch (its pointer arguments), not on what it touched: {}",
            maybe.len(),
            all.iter().map(Finding::line).collect::<Vec<_>>().join("; ")
        ));
    }
    if let Some(why) = j.unjudged.first() {
        return Outcome::Inconclusive(format!("{STREAM_CANNOT_JUDGE}{why}"));
    }
    if j.operations <= 1 {
        return Outcome::Inconclusive("streamcheck saw no CUDA operation".into());
    }
    Outcome::Clean
}

fn summary(j: &Judged) -> String {
    let mut s = format!(
        "streamcheck: {} operation(s), {} race(s) ({} near certain)\n",
        j.operations,
        j.races.len(),
        j.races.iter().filter(|r| r.certain).count()
    );
    for u in &j.unjudged {
        s.push_str(&format!("streamcheck: not judged: {u}\n"));
    }
    for b in &j.blind {
        s.push_str(&format!(
            "streamcheck: {b}: every other operation is ordered with it, so it cannot race\n"
        ));
    }
    s
}

fn direction(a: &Access) -> &'static str {
    match (a.write, a.may) {
        (true, false) => "Write",
        (false, false) => "Read",
        (true, true) => "May write",
        (false, true) => "May read",
    }
}

/// One race as a finding: its location is the later access's call site, its accesses name the
/// earlier one's.
pub fn finding(r: &Race, sites: &Sites) -> Finding {
    let kernel = [&r.later, &r.earlier]
        .iter()
        .find_map(|a| a.what.strip_prefix("kernel "))
        .unwrap_or("")
        .to_string();
    let (kind, what) = if r.after_free {
        (
            "Stream",
            format!(
                "Use of freed memory: {} on {} touches memory that {} on {} released (a use after the free, or one the free may overtake)",
                r.later.what, r.later.stream, r.earlier.what, r.earlier.stream,
            ),
        )
    } else if r.host {
        (
            "StreamHost",
            format!(
                "Race between the host and a stream: {} on {} and {} on {} touch the same host memory with no synchronization between them",
                r.earlier.what, r.earlier.stream, r.later.what, r.later.stream
            ),
        )
    } else {
        (
            "Stream",
            format!(
                "Race between streams: {} on {} and {} on {} touch the same memory with no event wait or synchronization between them{}",
                r.earlier.what,
                r.earlier.stream,
                r.later.what,
                r.later.stream,
                if r.earlier.thread != r.later.thread { " (issued by different host threads)" } else { "" }
            ),
        )
    };
    Finding {
        kind: kind.into(),
        level: if r.certain { "Error" } else { "Warning" }.into(),
        kernel,
        location: sites.of(&r.later),
        accesses: format!(
            "{} -> {} {}",
            direction(&r.earlier),
            direction(&r.later),
            sites.of(&r.earlier)
        ),
        what,
    }
}

/// Program counters of the executable -> where in the program's source they are.
#[derive(Default)]
pub struct Sites {
    /// offset -> (function, file:line or empty)
    known: BTreeMap<u64, (String, String)>,
    exe: String,
}

impl Sites {
    /// Resolves every call site of `j` with one `addr2line` run (none found: offsets stay).
    pub fn resolve(j: &Judged, root: &Path) -> Sites {
        let mut s = Sites {
            exe: Path::new(&j.exe)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ..Sites::default()
        };
        let mut pcs: Vec<u64> = j
            .races
            .iter()
            .flat_map(|r| r.earlier.site.iter().chain(&r.later.site))
            .copied()
            .collect();
        pcs.sort();
        pcs.dedup();
        if pcs.is_empty() || j.exe.is_empty() {
            return s;
        }
        let Some(tool) = which("addr2line") else {
            return s;
        };
        let mut args: Vec<OsString> = vec!["-f".into(), "-e".into(), j.exe.clone().into()];
        // Return addresses: the call is the byte before.
        args.extend(
            pcs.iter()
                .map(|p| OsString::from(format!("0x{:x}", p.saturating_sub(1)))),
        );
        let Ok((done, out)) = watchdog::collect(
            &tool,
            &args,
            &watchdog::Spawn::default(),
            watchdog::Deadline::within(Duration::from_secs(60)),
            watchdog::Output::bounded(),
        ) else {
            return s;
        };
        let out = out.text();
        if done.exit != Exit::Code(0) {
            return s;
        }
        let lines: Vec<&str> = out.lines().collect();
        for (pc, pair) in pcs.iter().zip(lines.chunks(2)) {
            if let [func, at] = pair {
                let at = at.split(" (discriminator").next().unwrap_or(at).trim();
                let at = if at.starts_with("??") || at.ends_with(":0") || at.ends_with(":?") {
                    String::new()
                } else {
                    relative(at, root)
                };
                s.known.insert(*pc, (func.trim().to_string(), at));
            }
        }
        s
    }

    /// The first frame of `a`'s call site that is the program's own code with a `file:line`,
    /// else the first that is its own code (`function+0xPC`, `exe+0xPC`), else the first.
    pub fn of(&self, a: &Access) -> String {
        let kernel = a.what.strip_prefix("kernel ").unwrap_or("");
        let own = |pc: &u64| match self.known.get(pc) {
            Some((f, at)) => !is_runtime(f, at, kernel),
            None => true,
        };
        let lined = |pc: &u64| self.known.get(pc).is_some_and(|(_, at)| !at.is_empty());
        let Some(pc) = (a.site.iter())
            .find(|p| own(p) && lined(p))
            .or_else(|| a.site.iter().find(|p| own(p)))
            .or(a.site.first())
        else {
            return "<host>".into();
        };
        match self.known.get(pc) {
            Some((_, at)) if !at.is_empty() => at.clone(),
            Some((f, _)) if f != "??" => format!("{f}+0x{pc:x}"),
            _ => format!(
                "{}+0x{pc:x}",
                if self.exe.is_empty() {
                    "<program>"
                } else {
                    &self.exe
                }
            ),
        }
    }
}

/// Frames of the CUDA runtime linked into the program (its internal functions are named
/// `libcudart_static_<hash>`) and of nvcc's launch stubs (`_Z25__device_stub__Z5scalePfiPfi` in
/// a generated `*.cudafe1.stub.c`; the kernel's host-side twin has the kernel's own name).
fn is_runtime(func: &str, at: &str, kernel: &str) -> bool {
    func.starts_with("cuda")
        || func.starts_with("__cuda")
        || func.starts_with("_ZN6cudart")
        || func.starts_with("cudart")
        || func.starts_with("libcudart_static")
        || func.contains("__device_stub")
        || at.contains(".cudafe1.")
        || func.starts_with("_Z16cudaLaunchKernel")
        || func.contains("cudaLaunch")
        || (!kernel.is_empty() && func == kernel)
}

fn relative(at: &str, root: &Path) -> String {
    let root = root.to_string_lossy();
    at.strip_prefix(&format!("{root}/"))
        .unwrap_or(at)
        .to_string()
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The call sites of run 22's `host_read_nosync` as `addr2line` resolved them in its binary.
    #[test]
    fn a_call_site_is_the_program_s_own_line_past_the_static_runtime_and_the_stubs() {
        let mut s = Sites::default();
        for (pc, f, at) in [
            (
                256305,
                "libcudart_static_1310e5fb72b7ef3b631832b7a0c7e3ebdd0f4cc9",
                "",
            ),
            (448205, "cudaMemcpyAsync", ""),
            (36939, "main", "examples/streams/host_read_nosync.cu:46"),
            (35557, "_start", ""),
            (462232, "cudaLaunchKernel", ""),
            (
                35950,
                "_ZL25__cudaLaunchKernel_helperP9CUkern_st4dim3S1_PPvmP11CUstream_st",
                "/usr/local/cuda/targets/x86_64-linux/include/crt/device_functions.h:2963",
            ),
            (
                38136,
                "_Z25__device_stub__Z5scalePfiPfi",
                "/tmp/tmpxft_00001df5_00000000-6_host_read_nosync.cudafe1.stub.c:14",
            ),
            (
                38265,
                "_Z5scalePfi",
                "examples/streams/host_read_nosync.cu:15",
            ),
            (36906, "main", "examples/streams/host_read_nosync.cu:45"),
            (9, "helper", ""),
        ] {
            s.known.insert(pc, (f.to_string(), at.to_string()));
        }
        let at = |what: &str, site: &[u64]| {
            s.of(&Access {
                line: 0,
                what: what.into(),
                write: false,
                may: false,
                stream: String::new(),
                site: site.to_vec(),
                thread: 1,
            })
        };
        let copy = at("memcpy", &[256305, 448205, 36939, 35557]);
        assert_eq!(copy, "examples/streams/host_read_nosync.cu:46");
        let launch = at(
            "kernel _Z5scalePfi",
            &[59716, 462232, 35950, 38136, 38265, 36906, 35557],
        );
        // 59716 is unknown to addr2line: the program's own, but without a line.
        assert_eq!(launch, "examples/streams/host_read_nosync.cu:45");
        assert_eq!(at("host read", &[9, 35557]), "helper+0x9");
        assert_eq!(at("host read", &[]), "<host>");
    }
}
