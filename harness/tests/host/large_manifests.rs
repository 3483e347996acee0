//! Generated manifests at scale: kernels that share a source are compiled once, with a progress
//! line for each kernel as it goes; checking a kernel's arguments is linear in their number
//! (measured as a ratio of two sizes side by side, never against a clock).

use std::time::{Duration, Instant};

use crate::runner::racegate;

const KERNEL: &str = "extern \"C\" __global__ void k(float* y, int n) \
                      { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1; }\n";

fn project(manifest: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("kernels")).unwrap();
    std::fs::write(dir.path().join("kernels/k.cu"), KERNEL).unwrap();
    std::fs::write(dir.path().join("racegate.toml"), manifest).unwrap();
    dir
}

fn kernels(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "[[kernel]]\nname = \"k{i}\"\nsource = \"kernels/k.cu\"\nentry = \"k\"\n\
                 sizes = {{ n = [1, 1000] }}\ngrid = [\"ceil_div(n, 256)\"]\nblock = [\"256\"]\n\
                 oracle = \"none\"\nargs = [\n  {{ name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" }},\n  \
                 {{ name = \"n\", kind = \"scalar\", type = \"i32\", value = \"n\" }},\n]\n"
            )
        })
        .collect()
}

#[test]
fn kernels_sharing_a_source_are_compiled_once_with_a_line_each() {
    let dir = project(&kernels(300));
    let (code, text) = racegate(["gate"]).at(dir.path()).no_gpu().run().code_text();
    assert!(matches!(code, Some(3 | 4)), "{code:?}: {text}");
    if code == Some(4) {
        assert_eq!(
            text.matches("::compile (kernels/k.cu)").count(),
            1,
            "{text}"
        );
        assert_eq!(text.matches("compiled above)").count(), 299, "{text}");
        assert!(text.contains("(300/300)"), "{text}");
    }
}

/// One kernel with `n` scalar arguments (and its output buffer).
fn wide(n: usize) -> String {
    let mut s = String::from(
        "[[kernel]]\nname = \"k\"\nsource = \"kernels/k.cu\"\nentry = \"k\"\n\
         sizes = { n = [1, 1000] }\ngrid = [\"1\"]\nblock = [\"32\"]\noracle = \"none\"\nargs = [\n  \
         { name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" },\n",
    );
    for i in 0..n {
        s.push_str(&format!(
            "  {{ name = \"a{i}\", kind = \"scalar\", type = \"i32\", value = \"1\" }},\n"
        ));
    }
    s.push_str("]\n");
    s
}

#[test]
fn argument_checks_grow_linearly() {
    let time = |n: usize| {
        let dir = project(&wide(n));
        let t = Instant::now();
        let (code, text) = racegate(["list"]).at(dir.path()).no_gpu().run().code_text();
        assert_eq!(code, Some(0), "{text}");
        t.elapsed().as_secs_f64()
    };
    // Warm the binary's pages first; then four times the arguments, side by side.
    time(1000);
    let (small, large) = (time(8000), time(32000));
    let ratio = large / small;
    // Linear gives about 4; the quadratic check took 3.8x as long for twice the arguments
    // (20000 and 40000, debug build), so about 15x here.
    assert!(
        ratio < 8.0,
        "32000 arguments took {ratio:.1}x as long as 8000 ({small:.2} s, {large:.2} s)"
    );
}

/// A folder with `k.cu` and a manifest of `n` kernels sharing it.
fn many_kernels(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), crate::exit_codes::GOOD).unwrap();
    let mut text = String::with_capacity(n * 200);
    for i in 0..n {
        text.push_str(&format!(
            "[[kernel]]\nname = \"k{i}\"\nsource = \"k.cu\"\nentry = \"k\"\nsizes = {{ n = [1, 9] }}\n\
             grid = [\"1\"]\nblock = [\"1\"]\noracle = \"determinism\"\n\
             args = [{{ name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" }}, \
             {{ name = \"n\", kind = \"scalar\", type = \"i32\", value = \"n\" }}]\n"
        ));
    }
    std::fs::write(dir.path().join("racegate.toml"), text).unwrap();
    dir
}

/// `racegate list` of n kernels: the CPU time of that child alone (from `wait4`), so that other
/// tests running beside it do not skew the comparison.
fn list_time(n: usize) -> Duration {
    let dir = many_kernels(n);
    let out_path = dir.path().join("out.txt");
    // Reaped by wait4 below, which gives this child's own CPU time.
    #[allow(clippy::zombie_processes)]
    let child = racegate(["list"])
        .at(dir.path())
        .command()
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("racegate runs");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 reaps our own child and fills both.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "list of {n}: {status}"
    );
    let stdout = std::fs::read_to_string(&out_path).unwrap();
    assert!(
        stdout.contains(&format!("k{}  ", n - 1)),
        "the last kernel is listed"
    );
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// `list` is linear in the kernels: 20,000 take at most about twice the CPU time of 10,000 (3x
/// allowed), and neither takes long. Each line number was a count of the newlines before it
/// and each name a search of the names before it: 20,000 kernels took 6 minutes.
#[test]
fn list_of_many_kernels_is_linear() {
    let small = list_time(10_000);
    let big = list_time(20_000);
    assert!(
        big < small * 3,
        "10,000 kernels: {small:?}, 20,000: {big:?} (quadratic?)"
    );
    assert!(big < Duration::from_secs(60), "20,000 kernels: {big:?}");
}
