//! What streamcheck concludes from a confirm run's footprints (the tool's footprint mode writes,
//! after a launch's line, the bounds of the bytes it read and wrote per allocation), on
//! hand-checked traces: NVIDIA's `async-overlap` sample (`kernel(d_a, offset)` per stream, run
//! 35's false alarm) is clean once measured, a measured overlap is a race, and an access the
//! tool could not place leaves the launch's "may touch" as it was.

use super::{A, B, BUF, N, SCALE, T};
use racegate::judge::sanitize::injected::streams::model as streams;
use racegate::judge::sanitize::tool::Outcome;

/// `_Z6kernelPfi`: kernel(float*, int), as the sample declares it (writes through its pointer).
const KERNEL: &str = "_Z6kernelPfi";

/// The sample's shape on 4 streams, each with a quarter of `BUF`: a copy in, the kernel given
/// the base pointer (and its offset as an integer), a copy out; measured or not.
fn async_overlap(measured: bool) -> T {
    let q = N / 4;
    let mut t = T::new();
    for i in 0..4 {
        t.stream(0x100 + i, 0);
    }
    for i in 0..4u64 {
        let (s, part) = (0x100 + i, BUF + i * q);
        copy(&mut t, s, part, 0x5000_0000 + i * q, q, 2);
        t.kernel(s, s, KERNEL, &[BUF]);
        if measured {
            footprint(
                &mut t,
                s,
                KERNEL,
                &[(part, part + q)],
                &[(part, part + q)],
                false,
            );
        }
        copy(&mut t, s, 0x5000_0000 + i * q, part, q, 3);
    }
    t.device_sync();
    t
}

/// An async copy of `size` bytes on stream `s` (`dir` 2: to the device, 3: to the host).
fn copy(t: &mut T, s: u64, dst: u64, src: u64, size: u64, dir: u32) {
    let site = t.site();
    t.push(format!(
        r#"{{"op":"memcpy","t":1,"s":{s},"api":{s},"src":{src},"dst":{dst},"size":{size},"dir":{dir},"async":true,"pitched":false,"site":[{site}]}}"#
    ));
}

fn footprint(
    t: &mut T,
    s: u64,
    name: &str,
    reads: &[(u64, u64)],
    writes: &[(u64, u64)],
    untracked: bool,
) {
    let list = |r: &[(u64, u64)]| {
        r.iter()
            .map(|(lo, hi)| format!("[{lo},{hi}]"))
            .collect::<Vec<_>>()
            .join(",")
    };
    t.push(format!(
        r#"{{"op":"footprint","name":"{name}","s":{s},"untracked":{untracked},"reads":[{}],"writes":[{}]}}"#,
        list(reads),
        list(writes)
    ));
}

#[test]
fn a_kernel_given_a_base_pointer_and_an_offset_is_accused_until_measured() {
    // Unmeasured: the kernel on stream 1 was given the first byte of stream 0's copy.
    let unmeasured = async_overlap(false);
    let (sure, _) = unmeasured.races();
    assert!(sure > 0, "{}", unmeasured.text());
    assert!(matches!(unmeasured.outcome(), Outcome::Findings(_)));
    // Measured: each launch touched its own quarter only.
    let measured = async_overlap(true);
    assert_eq!(measured.races(), (0, 0), "{}", measured.text());
    assert_eq!(measured.outcome(), Outcome::Clean);
    assert_eq!(streams::judge(&measured.text()).measured, 4);
}

#[test]
fn a_measured_overlap_with_an_unordered_copy_is_a_race() {
    // The kernel read the whole buffer on A while B copied into its second half.
    let mut t = T::new();
    t.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    footprint(&mut t, A, SCALE, &[(BUF, BUF + N)], &[], false);
    copy(&mut t, B, BUF + N / 2, 0x5000_0000, N / 2, 2);
    t.device_sync();
    assert_eq!(t.races(), (1, 0), "{}", t.text());
    assert!(matches!(t.outcome(), Outcome::Findings(_)));
    // Measured to read only the first half: the copy into the second half is no race.
    let mut t = T::new();
    t.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF]);
    footprint(&mut t, A, SCALE, &[(BUF, BUF + N / 2)], &[], false);
    copy(&mut t, B, BUF + N / 2, 0x5000_0000, N / 2, 2);
    t.device_sync();
    assert_eq!(t.races(), (0, 0), "{}", t.text());
    assert_eq!(t.outcome(), Outcome::Clean);
}

#[test]
fn an_access_the_tool_could_not_place_leaves_the_kernel_may_touch() {
    // No bytes measured in BUF, but some access fell outside every tracked allocation: the
    // launch may still have touched BUF (a warning, never clean, never a finding alone).
    let mut t = T::new();
    t.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF + 64]);
    footprint(&mut t, A, SCALE, &[], &[], true);
    copy(&mut t, B, BUF, 0x5000_0000, N, 2);
    t.device_sync();
    assert_eq!(t.races(), (0, 1), "{}", t.text());
    assert!(matches!(t.outcome(), Outcome::Inconclusive(_)));
    // All of its accesses placed, none in BUF: it did not touch BUF.
    let mut t = T::new();
    t.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF + 64]);
    footprint(&mut t, A, SCALE, &[], &[], false);
    copy(&mut t, B, BUF, 0x5000_0000, N, 2);
    t.device_sync();
    assert_eq!(t.outcome(), Outcome::Clean);
}

#[test]
fn a_footprint_belongs_to_the_launch_of_its_kernel_and_stream_before_it() {
    // Another kernel's footprint (or one after the next launch) is not this launch's: unmeasured,
    // the launch given BUF + 64 still may touch all of BUF.
    let mut t = T::new();
    t.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF + 64]);
    footprint(&mut t, A, KERNEL, &[(BUF + 64, BUF + 128)], &[], false);
    copy(&mut t, B, BUF, 0x5000_0000, N, 2);
    t.device_sync();
    assert_eq!(streams::judge(&t.text()).measured, 0);
    assert_eq!(t.races(), (0, 1), "{}", t.text());
    let mut t = T::new();
    t.stream(A, 0).stream(B, 0).kernel(A, A, SCALE, &[BUF + 64]);
    t.kernel(B, B, SCALE, &[BUF + 64]);
    footprint(&mut t, A, SCALE, &[(BUF + 64, BUF + 128)], &[], false);
    t.device_sync();
    assert_eq!(streams::judge(&t.text()).measured, 0);
}
