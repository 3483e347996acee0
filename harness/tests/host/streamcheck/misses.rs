//! `streamcheck::misses::<name>`: the misses found in review of streamcheck, each fixed or made
//! inconclusive, on synthetic traces: the lines are written by hand in the recorder's format
//! (`harness/globalcheck/streams.cpp`), not captured on a GPU. Where the fix is the recorder's
//! (guards at launches and on managed/mapped memory, the `unguard` line), these test what the model
//! concludes from the lines the recorder now writes; the recorder itself was not run on the device.

use super::{A, B, BUF, N, PINNED, SCALE, T};
use racegate::judge::sanitize::injected::streams::model::reach;
use racegate::judge::sanitize::injected::streams::trace::{param_types, Ty};
use racegate::judge::sanitize::injected::streams::verdict::STREAM_CANNOT_JUDGE;
use racegate::judge::sanitize::tool::Outcome;

const MANAGED: u64 = 0x7d00_0000_0000;
const MAPPED: u64 = 0x7c00_0000_0000;
const OTHER: u64 = 0x7b00_0000_0000;
/// Pageable host memory: no allocation callback announces it.
const PAGEABLE: u64 = 0x5500_0000_0000;

fn alloc<'a>(t: &'a mut T, base: u64, kind: &str) -> &'a mut T {
    t.push(format!(
        r#"{{"op":"alloc","base":{base},"size":{N},"kind":"{kind}"}}"#
    ))
}

fn host(t: &mut T, addr: u64, write: bool) -> &mut T {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"host","t":1,"addr":{addr},"write":{write},"in_api":false,"site":[{site}]}}"#
    ))
}

fn guard(t: &mut T, base: u64, ok: bool) -> &mut T {
    t.push(format!(
        r#"{{"op":"guard","base":{base},"size":{N},"ok":{ok}}}"#
    ))
}

/// An operation on stream `s` given as `api` (0: the recorder said "legacy").
fn memset(t: &mut T, s: u64, api: u64, addr: u64) -> &mut T {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"memset","t":1,"s":{s},"api":{api},"addr":{addr},"size":{N},"async":true,"pitched":false,"site":[{site}]}}"#
    ))
}

fn copy_api(t: &mut T, s: u64, api: u64, dst: u64, src: u64, dir: u32, is_async: bool) -> &mut T {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"memcpy","t":1,"s":{s},"api":{api},"src":{src},"dst":{dst},"size":{N},"dir":{dir},"async":{is_async},"pitched":false,"site":[{site}]}}"#
    ))
}

fn event<'a>(t: &'a mut T, op: &str, s: u64, api: u64, ev: u64) -> &'a mut T {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"{op}","t":1,"s":{s},"api":{api},"ev":{ev},"site":[{site}]}}"#
    ))
}

fn free_async(t: &mut T, s: u64, base: u64) -> &mut T {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"free","base":{base},"t":1,"s":{s},"api":{s},"async":true,"site":[{site}]}}"#
    ))
}

fn findings(t: &T) -> Vec<racegate::judge::sanitize::normalize::Finding> {
    match t.outcome() {
        Outcome::Findings(f) => f,
        o => panic!("want findings, got {o:?}\n{}", t.text()),
    }
}

#[track_caller]
fn assert_inconclusive(t: &T, with: &str) {
    match t.outcome() {
        Outcome::Inconclusive(w) => assert!(w.contains(with), "{w}\n{}", t.text()),
        o => panic!("want inconclusive ({with}), got {o:?}\n{}", t.text()),
    }
}

#[test]
fn host_accesses_to_managed_and_mapped_memory_and_after_launches_are_judged() {
    // The recorder now guards managed and mapped memory as it does pinned memory, and guards the
    // host-visible memory a launch may touch: a host access before the synchronization is seen.
    for kind in ["managed", "mapped", "pinned"] {
        let mem = match kind {
            "managed" => MANAGED,
            "mapped" => MAPPED,
            _ => PINNED,
        };
        // A kernel given the memory, then the host reads the very pointer it was given.
        let mut racy = T::new();
        alloc(&mut racy, mem, kind)
            .stream(A, 0)
            .kernel(A, A, SCALE, &[mem]);
        guard(&mut racy, mem, true);
        host(&mut racy, mem, false);
        let f = findings(&racy);
        assert_eq!(f[0].kind, "StreamHost", "{kind}: {f:?}");
        assert_eq!(f[0].level, "Error", "{kind}: {f:?}");
        // Elsewhere in it: the kernel may or may not touch that byte, never clean.
        let mut inside = T::new();
        alloc(&mut inside, mem, kind)
            .stream(A, 0)
            .kernel(A, A, SCALE, &[mem]);
        host(&mut inside, mem + 64, true);
        assert_inconclusive(&inside, STREAM_CANNOT_JUDGE);
        // After the stream is synchronized: ordered.
        let mut ok = T::new();
        alloc(&mut ok, mem, kind)
            .stream(A, 0)
            .kernel(A, A, SCALE, &[mem]);
        guard(&mut ok, mem, true);
        ok.sync(A);
        host(&mut ok, mem, false);
        assert_eq!(ok.outcome(), Outcome::Clean, "{kind}\n{}", ok.text());
        // An async copy into it, read by the host before the sync.
        let mut copy = T::new();
        alloc(&mut copy, mem, kind)
            .stream(A, 0)
            .copy(A, A, mem, BUF, 3, true);
        host(&mut copy, mem + 8, false);
        assert_eq!(findings(&copy)[0].kind, "StreamHost", "{kind}");
    }
    // Memory the recorder could not guard (mprotect refused, as it may on managed memory): host
    // accesses to it are not seen, so the run is not clean.
    let mut unguarded = T::new();
    alloc(&mut unguarded, MANAGED, "managed")
        .stream(A, 0)
        .kernel(A, A, SCALE, &[MANAGED]);
    guard(&mut unguarded, MANAGED, false);
    unguarded.sync(A);
    assert_inconclusive(&unguarded, "are not seen");
}

#[test]
fn a_guard_lifted_by_an_access_beside_the_guarded_bytes_leaves_the_run_undecidable() {
    let unguard = |t: &mut T| {
        t.push(format!(
            r#"{{"op":"unguard","t":1,"base":{PINNED},"size":16,"addr":{}}}"#,
            PINNED + 100
        ));
    };
    // A copy into 16 bytes of a page; the host writes byte 100 of that page (no race there), which
    // lifted the guard while the copy may still run: a later read of the 16 bytes is unseen.
    let mut racy = T::new();
    racy.stream(A, 0);
    racy.push(format!(
        r#"{{"op":"memcpy","t":1,"s":{A},"api":{A},"src":{BUF},"dst":{PINNED},"size":16,"dir":3,"async":true,"pitched":false,"site":[1]}}"#
    ));
    host(&mut racy, PINNED + 100, true);
    unguard(&mut racy);
    assert_eq!(racy.races(), (0, 0));
    assert_inconclusive(
        &racy,
        "lifted their guard while memcpy device-to-host (async)",
    );
    // After the copy's stream was synchronized the lifted guard hides nothing.
    let mut ok = T::new();
    ok.stream(A, 0);
    ok.push(format!(
        r#"{{"op":"memcpy","t":1,"s":{A},"api":{A},"src":{BUF},"dst":{PINNED},"size":16,"dir":3,"async":true,"pitched":false,"site":[1]}}"#
    ));
    ok.sync(A);
    host(&mut ok, PINNED + 100, true);
    unguard(&mut ok);
    assert_eq!(ok.outcome(), Outcome::Clean, "{}", ok.text());
}

#[test]
fn a_use_of_memory_after_cuda_free_async_on_another_stream_is_found() {
    // Freed on B, then used by a kernel on A with nothing ordering the two: a race with the free.
    let mut racy = T::new();
    racy.stream(A, 0).stream(B, 0);
    free_async(&mut racy, B, BUF);
    racy.kernel(A, A, SCALE, &[BUF]);
    let f = findings(&racy);
    assert!(
        f[0].what
            .contains("touches memory that cudaFreeAsync on stream 0xb000 released"),
        "{f:?}"
    );
    assert_eq!(f[0].level, "Error");
    // Ordered after the free (an event wait): still a use of freed memory.
    let mut after = T::new();
    after.stream(A, 0).stream(B, 0);
    free_async(&mut after, B, BUF).record(B, 1).wait(A, 1);
    after.copy(A, A, PINNED, BUF, 3, true);
    let f = findings(&after);
    assert!(
        f[0].what.starts_with("Use of freed memory: memcpy"),
        "{f:?}"
    );
    // A second free of it.
    let mut twice = T::new();
    twice.stream(A, 0);
    free_async(&mut twice, A, BUF);
    free_async(&mut twice, A, BUF);
    assert!(findings(&twice)[0]
        .what
        .contains("cudaFreeAsync on stream 0xa000 touches"));
    // Handed out again by the pool (an allocation over it): the history starts afresh.
    let mut reused = T::new();
    reused.stream(A, 0).stream(B, 0);
    free_async(&mut reused, B, BUF);
    reused.push(format!(
        r#"{{"op":"alloc","base":{},"size":64,"kind":"async"}}"#,
        BUF + 256
    ));
    reused.kernel(A, A, SCALE, &[BUF + 256]).sync(A);
    assert_eq!(reused.outcome(), Outcome::Clean, "{}", reused.text());
    // Memory not freed is untouched by this: the kernel on A, freed on A after it, is clean.
    let mut fine = T::new();
    fine.stream(A, 0).kernel(A, A, SCALE, &[BUF]);
    free_async(&mut fine, A, BUF);
    assert_eq!(fine.outcome(), Outcome::Clean);
}

#[test]
fn a_synchronous_copy_from_pageable_memory_may_still_be_writing_the_device_when_it_returns() {
    // cudaMemcpy(BUF, pageable, H2D) on the legacy stream, then a copy of BUF on a non-blocking
    // stream: the DMA to BUF may not be done (CUDA's "API synchronization behavior").
    let mut racy = T::new();
    racy.stream(B, 1);
    copy_api(&mut racy, 0x5, 0, BUF, PAGEABLE, 2, false);
    racy.copy(B, B, PINNED, BUF, 3, true);
    let f = findings(&racy);
    assert!(
        f[0].what
            .contains("memcpy host-to-device on the legacy default stream"),
        "{f:?}"
    );
    // From pinned memory it returns once done: ordered.
    let mut pinned = T::new();
    pinned.stream(B, 1);
    copy_api(&mut pinned, 0x5, 0, BUF, PINNED, 2, false);
    pinned.copy(B, B, OTHER, BUF, 3, true).sync(B);
    alloc(&mut pinned, OTHER, "pinned");
    assert_eq!(pinned.outcome(), Outcome::Clean, "{}", pinned.text());
    // The pageable source itself may be reused at once (it was staged): a host write to it is
    // ordered after the copy's read.
    let mut reuse = T::new();
    copy_api(&mut reuse, 0x5, 0, BUF, PAGEABLE, 2, false);
    host(&mut reuse, PAGEABLE, true);
    assert_eq!(reuse.races(), (0, 0), "{}", reuse.text());
    // A stream synchronization is done before the copy starts: a kernel earlier on that stream is
    // ordered before the host, so an async copy on a non-blocking stream issued later is too.
    let mut before = T::new();
    before
        .stream(A, 0)
        .stream(B, 1)
        .kernel(A, A, SCALE, &[OTHER]);
    alloc(&mut before, OTHER, "device");
    copy_api(&mut before, A, A, BUF, PAGEABLE, 2, false);
    before.copy(B, B, PINNED, OTHER, 3, true).sync(B).sync(A);
    assert_eq!(before.races(), (0, 0), "{}", before.text());
    // Device to pageable host memory returns once done: the host may read it.
    let mut d2h = T::new();
    d2h.stream(B, 1);
    copy_api(&mut d2h, 0x5, 0, PAGEABLE, BUF, 3, false);
    d2h.copy(B, B, BUF, PINNED, 2, true).sync(B);
    assert_eq!(d2h.outcome(), Outcome::Clean, "{}", d2h.text());
}

#[test]
fn a_kernel_that_can_reach_memory_through_memory_is_never_clean_unless_all_is_ordered() {
    // k(float** table) on A; the copy on B reads BUF, which no argument names, but table may
    // point to it.
    for (name, args, why) in [
        ("_Z1kPPf", vec![OTHER], "a pointer to pointers"),
        ("_Z1kPKPKf", vec![OTHER], "a pointer to pointers"),
        ("_Z1kPv", vec![OTHER], "a pointer to void"),
        ("_Z1kP6Params", vec![OTHER], "a pointer to a struct"),
        ("_Z1k6Params", vec![OTHER], "a struct or class by value"),
        ("k_c_name", vec![OTHER], "not a C++-mangled one"),
        ("_Z1kIiEvPf", vec![OTHER], "not understood"),
    ] {
        let build = |ordered: bool| {
            let mut t = T::new();
            alloc(&mut t, OTHER, "device").stream(A, 0).stream(B, 0);
            t.kernel(A, A, name, &args);
            if ordered {
                t.record(A, 1).wait(B, 1);
            }
            t.copy(B, B, PINNED, BUF, 3, true).sync(B);
            t
        };
        let racy = build(false);
        assert_eq!(racy.races(), (0, 0), "{name}");
        assert_inconclusive(&racy, why);
        assert_inconclusive(&racy, "is not ordered with memcpy device-to-host (async)");
        assert_eq!(build(true).outcome(), Outcome::Clean, "{name}");
    }
    // Plain pointers to numbers (and CUDA's vector types) reach only what they point into.
    for name in ["_Z5scalePfi", "_Z1kP6float4PK7__half2", "_Z3addPKfS0_Pfi"] {
        let mut t = T::new();
        alloc(&mut t, OTHER, "device").stream(A, 0).stream(B, 0);
        t.kernel(A, A, name, &[OTHER])
            .copy(B, B, PINNED, BUF, 3, true)
            .sync(B);
        assert_eq!(t.outcome(), Outcome::Clean, "{name}");
    }
    // __device__ variables (module memory): any kernel may use them, and the pointers they hold.
    let mut module = T::new();
    alloc(&mut module, OTHER, "module")
        .stream(A, 0)
        .stream(B, 0);
    module
        .kernel(A, A, SCALE, &[BUF])
        .copy(B, B, PINNED, OTHER, 3, true)
        .sync(B);
    assert_inconclusive(&module, "__device__ or __constant__ variables");
}

#[test]
fn parameter_types_are_read_from_the_mangled_name_with_substitutions() {
    let ptr = |konst, to| Ty::Ptr {
        konst,
        to: Box::new(to),
    };
    assert_eq!(
        param_types("_Z3addPKfS0_Pfi"),
        [
            ptr(true, Ty::Scalar),
            ptr(true, Ty::Scalar),
            ptr(false, Ty::Scalar),
            Ty::Scalar
        ]
    );
    assert_eq!(
        param_types("_Z1kPPfS_"),
        [ptr(false, ptr(false, Ty::Scalar)), ptr(false, Ty::Scalar)]
    );
    assert_eq!(
        param_types("_Z1k6ParamsS_"),
        [Ty::Class("Params".into()), Ty::Class("Params".into())]
    );
    assert_eq!(param_types("_Z1kv"), []);
    assert_eq!(param_types("_Z1kIiEvPf").last(), Some(&Ty::Unknown));
    assert!(param_types("plain").is_empty());
    // A struct by value without a pointer word in it reaches nothing; with one, maybe anything.
    assert_eq!(reach("_Z1k6Paramsi", &[]), None);
    assert!(reach("_Z1k6Paramsi", &[(0, BUF)]).is_some());
    assert_eq!(reach("_Z1kPfi", &[(0, BUF)]), None);
}

#[test]
fn copies_memsets_and_events_on_a_created_stream_stay_on_it_whatever_api_says() {
    // The recorder said "api":0 (legacy) for a copy on the program's stream B: were it the legacy
    // stream it would be ordered after the kernel on blocking stream A.
    let mut copy = T::new();
    copy.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    copy_api(&mut copy, B, 0, PINNED, BUF, 3, true);
    assert!(findings(&copy)[0].what.contains("on stream 0xb000"));
    let mut set = T::new();
    set.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    memset(&mut set, B, 0, BUF);
    assert_eq!(set.races(), (1, 0), "{}", set.text());
    // Record and wait given as "api":0 still order the two created streams.
    let mut ev = T::new();
    ev.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    event(&mut ev, "record", A, 0, 7);
    event(&mut ev, "wait", B, 0, 7);
    copy_api(&mut ev, B, 0, PINNED, BUF, 3, true);
    ev.sync(B);
    assert_eq!(ev.outcome(), Outcome::Clean, "{}", ev.text());
    // A sync given as "api":0 synchronizes B, not the legacy stream (which would order A too).
    let mut sync = T::new();
    sync.stream(A, 0)
        .stream(B, 0)
        .kernel(A, A, SCALE, &[PINNED]);
    sync.push(format!(r#"{{"op":"stream_sync","t":1,"s":{B},"api":0}}"#));
    host(&mut sync, PINNED, false);
    assert!(
        matches!(sync.outcome(), Outcome::Findings(_)),
        "{:?}",
        sync.outcome()
    );
}
