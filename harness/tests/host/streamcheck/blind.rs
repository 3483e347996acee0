//! What streamcheck concludes about launches whose arguments were not read (H200 run 22's
//! recorder claimed `"args":[],"args_known":true` for every launch, with `"api":0`) and about
//! stream-ordered frees (`cudaFreeAsync`), on hand-checked traces.

use super::{A, B, BUF, N, PINNED, SCALE, T};
use racegate::judge::sanitize::injected::streams::model::{self as streams, blind};
use racegate::judge::sanitize::injected::streams::trace::no_pointer_params;
use racegate::judge::sanitize::injected::streams::verdict::STREAM_CANNOT_JUDGE;
use racegate::judge::sanitize::tool::Outcome;

/// A launch on stream `s` as run 22's recorder wrote it: no arguments, "known".
fn unread(t: &mut T, s: u64, api: u64) -> &mut T {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"kernel","t":1,"s":{s},"api":{api},"name":"{SCALE}","args":[],"args_known":true,"site":[{site}]}}"#
    ))
}

fn free_async(t: &mut T, s: u64, base: u64) -> &mut T {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"free","base":{base},"t":1,"s":{s},"api":{s},"async":true,"site":[{site}]}}"#
    ))
}

#[track_caller]
fn assert_undecidable(t: &T, with: &str) {
    assert_eq!(t.races(), (0, 0), "{}", t.text());
    match t.outcome() {
        Outcome::Inconclusive(w) => {
            assert!(w.starts_with(STREAM_CANNOT_JUDGE), "{w}");
            assert!(w.contains(with), "{w}");
        }
        o => panic!("{o:?}\n{}", t.text()),
    }
}

#[test]
fn a_launch_whose_arguments_were_not_read_is_clean_only_if_all_else_is_ordered_with_it() {
    // kernel_copy_nowait as recorded: it may have written what the copy reads.
    let mut racy = T::new();
    racy.stream(A, 0).stream(B, 0);
    unread(&mut racy, A, A).copy(B, B, PINNED, BUF, 3, true);
    assert_undecidable(
        &racy,
        "is not ordered with memcpy device-to-host (async) on stream 0xb000",
    );
    // kernel_copy_wait: the copy waits for an event recorded after it; whatever it touched, no race.
    let mut waits = T::new();
    waits.stream(A, 0).stream(B, 0);
    unread(&mut waits, A, A).record(A, 1).wait(B, 1);
    waits.copy(B, B, PINNED, BUF, 3, true).sync(B);
    assert_eq!(waits.outcome(), Outcome::Clean);
    let j = streams::judge(&waits.text());
    assert_eq!(j.blind.len(), 1, "the log says which launch was not read");
    // The other way round: a copy on B, then the kernel on A without waiting for it.
    let mut before = T::new();
    before
        .stream(A, 0)
        .stream(B, 0)
        .copy(B, B, BUF, PINNED, 2, true);
    unread(&mut before, A, A);
    assert_undecidable(&before, "memcpy host-to-device (async) on stream 0xb000");
    let mut ordered = T::new();
    ordered
        .stream(A, 0)
        .stream(B, 0)
        .copy(B, B, BUF, PINNED, 2, true);
    ordered.record(B, 2).wait(A, 2);
    unread(&mut ordered, A, A);
    assert_eq!(ordered.outcome(), Outcome::Clean);
    // Two such launches on two streams may touch the same memory; on one stream they cannot race.
    let mut two = T::new();
    two.stream(A, 0).stream(B, 0);
    unread(&mut two, A, A);
    unread(&mut two, B, B);
    assert_undecidable(&two, "kernel _Z5scalePfi on stream 0xa000");
    let mut one = T::new();
    one.stream(A, 0);
    unread(&mut one, A, A);
    unread(&mut one, A, A)
        .copy(A, A, PINNED, BUF, 3, true)
        .sync(A);
    assert_eq!(one.outcome(), Outcome::Clean);
    // The legacy stream orders a blocking stream (legacy_default_ok), not a non-blocking one.
    for (flags, clean) in [(0, true), (1, false)] {
        let mut legacy = T::new();
        legacy.stream(B, flags);
        unread(&mut legacy, 0x5, 0).copy(B, B, PINNED, BUF, 3, true);
        assert_eq!(
            legacy.outcome() == Outcome::Clean,
            clean,
            "{flags}: {:?}",
            legacy.outcome()
        );
    }
    // A race sure without the kernel is still reported (host_read_nosync).
    let mut host = T::new();
    host.stream(A, 0);
    unread(&mut host, A, A)
        .copy(A, A, PINNED, BUF, 3, true)
        .host_read(PINNED);
    assert!(matches!(host.outcome(), Outcome::Findings(f) if f[0].kind == "StreamHost"));
}

#[test]
fn a_launch_is_blind_unless_its_pointer_arguments_were_read_or_it_takes_none() {
    let why = |name, args: &[(u32, u64)], known, params, args_why| {
        blind(name, args, known, params, args_why).unwrap_or_default()
    };
    assert!(why(SCALE, &[], true, None, "").contains("its name says it takes pointers"));
    assert!(why(SCALE, &[], true, Some(2), "").contains("its name says it takes pointers"));
    assert!(why("_Z1kPKf", &[], true, None, "").contains("takes pointers"));
    assert_eq!(blind(SCALE, &[(0, BUF)], true, None, ""), None);
    assert_eq!(blind("_Z1kii", &[], true, None, ""), None);
    assert_eq!(blind("_Z1kv", &[], false, None, "no layout"), None);
    // A struct by value may hold pointers; a C name says nothing: the driver's layout must.
    assert!(why("_Z1k6Params", &[], true, None, "").contains("layout is unknown"));
    assert!(why("k", &[], true, None, "").contains("layout is unknown"));
    assert_eq!(blind("k", &[], true, Some(2), ""), None);
    let unreadable = why("k", &[], false, Some(2), "cuFuncGetParamInfo returned 400");
    assert!(unreadable.contains("could not be read (cuFuncGetParamInfo returned 400)"));
    assert!(no_pointer_params("_Z1kifDh"));
    for name in ["_Z1kKi", SCALE, "k", "_Z1k", "_Z1kIiEvv", "_Z1kS_"] {
        assert!(!no_pointer_params(name), "{name}");
    }
}

#[test]
fn a_launch_on_a_stream_the_program_created_is_on_that_stream_whatever_api_says() {
    // Run 22 wrote "api":0 for launches on stream A: not the legacy stream, so not ordered with B.
    let mut racy = T::new();
    racy.stream(A, 0).stream(B, 0);
    let site = racy.site();
    racy.push(format!(
        r#"{{"op":"kernel","t":1,"s":{A},"api":0,"name":"{SCALE}","args":[[0,{BUF}]],"args_known":true,"site":[{site}]}}"#
    ));
    racy.copy(B, B, PINNED, BUF, 3, true);
    assert_eq!(racy.races(), (1, 0), "{}", racy.text());
    let Outcome::Findings(f) = racy.outcome() else {
        panic!("{:?}", racy.outcome())
    };
    assert!(
        f[0].what.contains("kernel _Z5scalePfi on stream 0xa000"),
        "{}",
        f[0].what
    );
    // The legacy stream as the runtime announces it (no public handle) stays the legacy stream.
    let mut legacy = T::new();
    legacy
        .push(r#"{"op":"stream","s":5,"cu":0,"flags":0}"#.into())
        .stream(B, 0);
    let site = legacy.site();
    legacy.push(format!(
        r#"{{"op":"kernel","t":1,"s":5,"api":0,"name":"{SCALE}","args":[[0,{BUF}]],"args_known":true,"site":[{site}]}}"#
    ));
    legacy.copy(B, B, PINNED, BUF, 3, true).sync(B);
    assert_eq!(legacy.outcome(), Outcome::Clean);
}

#[test]
fn a_stream_ordered_free_writes_its_allocation_on_its_stream_then_ends_its_history() {
    // Freed on the stream that used it: ordered, and the run is judged (not "cannot judge").
    let mut same = T::new();
    same.stream(A, 0).kernel(A, A, SCALE, &[BUF]);
    free_async(&mut same, A, BUF);
    assert_eq!(same.outcome(), Outcome::Clean);
    // Freed on another stream while the kernel may still use it: a race (a use after free).
    let mut racy = T::new();
    racy.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    free_async(&mut racy, B, BUF);
    assert_eq!(racy.races(), (1, 0), "{}", racy.text());
    let Outcome::Findings(f) = racy.outcome() else {
        panic!("{:?}", racy.outcome())
    };
    assert!(
        f[0].what.contains("and cudaFreeAsync on stream 0xb000"),
        "{}",
        f[0].what
    );
    // After an event wait: ordered.
    let mut waits = T::new();
    waits.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    waits.record(A, 1).wait(B, 1);
    free_async(&mut waits, B, BUF);
    assert_eq!(waits.outcome(), Outcome::Clean);
    // A copy still reading it on B when A frees it: a race too.
    let mut copy = T::new();
    copy.stream(A, 0)
        .stream(B, 0)
        .copy(B, B, PINNED, BUF, 3, true);
    free_async(&mut copy, A, BUF);
    assert_eq!(copy.races(), (1, 0), "{}", copy.text());
    // The history ends at the free: the pool's next allocation there (on any stream) starts fresh.
    let mut reused = T::new();
    reused.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    free_async(&mut reused, A, BUF);
    reused.push(format!(
        r#"{{"op":"alloc","base":{BUF},"size":{N},"kind":"async"}}"#
    ));
    reused.copy(B, B, PINNED, BUF, 3, true).sync(B);
    assert_eq!(reused.outcome(), Outcome::Clean);
}
