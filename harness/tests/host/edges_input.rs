//! More edges of issue #25, each over a family of inputs: generators nested or signed without
//! bound, a 100k-kernel manifest listed in linear time, control characters of file names and of
//! a program's output never reaching the terminal raw, `RACEGATE_NVRTC_LIB` at a library that is
//! not NVRTC, a size over `u32`/`i64`, and a byte-order mark in a kernel `mutate` reads.

use std::path::Path;
use std::time::{Duration, Instant};

use racegate::source::manifest::Manifest;

use crate::runner::racegate;

/// A one-kernel manifest whose `y` argument (line 9) takes `gen`, and whose sizes are `sizes`.
fn manifest(sizes: &str, gen: &str) -> String {
    format!(
        "[[kernel]]\nname = \"k\"\nsource = \"k.cu\"\nentry = \"k\"\nsizes = {sizes}\n\
         grid = [\"1\"]\nblock = [\"1\"]\noracle = \"determinism\"\n\
         args = [{{ name = \"y\", kind = \"inout\", type = \"i32\", len = \"n\", gen = \"{gen}\" }}]\n"
    )
}

/// Parses `text` as the racegate.toml of a scratch folder holding `k.cu`: its path and result.
fn parse(text: &str) -> (String, Result<Manifest, racegate::Error>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), super::exit_codes::GOOD).unwrap();
    let path = dir.path().join("racegate.toml");
    let r = Manifest::parse(&path, text);
    (path.display().to_string(), r)
}

/// Every generator that nests (`sorted(`, `prefix_sum(`, both, and parentheses or brackets
/// inside `int` and `choice`), 65 and 40,000 deep, and 100,000 signs: refused within a second
/// with the file, the line of the argument and the bound (40,000 `sorted(` overflowed the stack,
/// exit 134). Nesting within the bound still parses.
#[test]
fn generators_nested_or_signed_without_bound_are_refused_fast_with_the_line() {
    let wrappers: &[(&str, &str)] = &[
        ("sorted(", ")"),
        ("prefix_sum(", ")"),
        ("sorted(prefix_sum(", "))"),
    ];
    let start = Instant::now();
    for (open, close) in wrappers {
        for (depth, want) in [(65usize, "nested"), (40_000, "characters: at most")] {
            let gen = format!("{}int(0, 1){}", open.repeat(depth), close.repeat(depth));
            let (path, r) = parse(&manifest("{ n = [1, 9] }", &gen));
            super::assert_rejects(r, &format!("{path}:9: "), want);
        }
        let gen = format!("{}int(0, 1){}", open.repeat(4), close.repeat(4));
        super::assert_parses(parse(&manifest("{ n = [1, 9] }", &gen)).1);
    }
    for (gen, want) in [
        (
            format!("int(0, {}n{})", "(".repeat(65), ")".repeat(65)),
            "nested",
        ),
        (
            format!("int(0, {}n{})", "(".repeat(40_000), ")".repeat(40_000)),
            "at most",
        ),
        (format!("int({}1, 2)", "-".repeat(100_000)), "at most"),
        (format!("int({}1, 2)", "- ".repeat(20)), "signs in a row"),
        (
            format!("choice({}1{})", "[".repeat(70), "]".repeat(70)),
            "nested",
        ),
    ] {
        let (path, r) = parse(&manifest("{ n = [1, 9] }", &gen));
        super::assert_rejects(r, &format!("{path}:9: "), want);
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
}

/// A size that fits no `u32` (over `i64` too, negative, fractional, or not a number) is refused
/// naming the size and its line, not as "did not match any variant of untagged enum SizeSpec".
#[test]
fn sizes_out_of_range_name_the_size_and_the_line() {
    for v in [
        "99999999999999999999",
        "-99999999999999999999",
        "18446744073709551616",
        "9223372036854775807",
        "4294967296",
        "-1",
        "1.5",
        "\"a\"",
        "[1]",
        "[1, 2, 3]",
        "[1, 99999999999999999999]",
        "[-1, 4]",
    ] {
        let (path, r) = parse(&manifest(&format!("{{ m = 4, n = {v} }}"), "iota"));
        super::assert_rejects(r, &format!("{path}:5: "), "`sizes.n`");
        let (_, r) = parse(&manifest(&format!("{{ m = 4, n = {v} }}"), "iota"));
        let msg = r.unwrap_err().to_string();
        assert!(
            !msg.contains("untagged") && !msg.contains("i128"),
            "{v}: {msg}"
        );
    }
    super::assert_parses(parse(&manifest("{ n = [1, 4294967295] }", "zeros")).1);
}

/// A folder with `k.cu` and a manifest of `n` kernels sharing it.
fn many_kernels(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cu"), super::exit_codes::GOOD).unwrap();
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

/// The bytes of `out` that are control characters other than newline and tab.
fn raw_controls(out: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(out)
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .map(|c| c as u32 as u8)
        .collect()
}

/// Every control character (C0 but NUL, newline and tab; DEL; C1) in a kernel's file name reaches `list`'s table and a
/// not-found error as a visible `\xNN`, never raw.
#[test]
fn control_characters_of_file_names_are_escaped_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let controls: Vec<char> = (0u32..=0x9f)
        .filter_map(char::from_u32)
        .filter(|c| c.is_control() && !['\0', '\t', '\n'].contains(c))
        .collect();
    let mut text = String::new();
    for (i, c) in controls.iter().enumerate() {
        let file = format!("k{c}[31m{i}.cu");
        std::fs::write(dir.path().join(&file), super::exit_codes::GOOD).unwrap();
        text.push_str(&format!(
            "[[kernel]]\nname = \"k{i}\"\nsource = \"k\\u{:04x}[31m{i}.cu\"\nentry = \"k\"\n\
             sizes = {{ n = [1, 9] }}\ngrid = [\"1\"]\nblock = [\"1\"]\noracle = \"determinism\"\n\
             args = [{{ name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" }}, \
             {{ name = \"n\", kind = \"scalar\", type = \"i32\", value = \"n\" }}]\n",
            *c as u32
        ));
    }
    std::fs::write(dir.path().join("racegate.toml"), &text).unwrap();
    let out = racegate(["list"]).at(dir.path()).output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        raw_controls(&out.stdout),
        b"",
        "raw control characters in the table"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("k\\x1b[31m"), "{stdout}");
    // Each one in an error's file name too (the file is gone).
    for (i, c) in controls.iter().enumerate() {
        std::fs::remove_file(dir.path().join(format!("k{c}[31m{i}.cu"))).unwrap();
        let out = racegate(["list"]).at(dir.path()).output();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            raw_controls(&out.stderr),
            b"",
            "U+{:04X} raw in the error",
            *c as u32
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("\\x{:02x}[31m", *c as u32)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(
            dir.path().join(format!("k{c}[31m{i}.cu")),
            super::exit_codes::GOOD,
        )
        .unwrap();
    }
}

/// A program writing every byte 0..=255 (escape sequences included) on standard error: the
/// gate's report of it holds no raw control character.
#[test]
fn control_characters_of_a_programs_output_are_escaped_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let out = racegate([
        "gate",
        "--",
        "sh",
        "-c",
        "printf \"$(printf '\\\\%03o' $(seq 0 255) | tr -d '\\n')\" >&2; exit 3",
    ])
    .at(dir.path())
    .no_gpu()
    .output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\\x1b"),
        "the program's stderr is shown: {stdout}"
    );
    assert_eq!(raw_controls(&out.stdout), b"", "{stdout}");
    assert_eq!(
        raw_controls(&out.stderr),
        b"",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `RACEGATE_NVRTC_LIB` at libraries that are not NVRTC: a tool failure (exit 3) naming the path
/// and what it lacks, never cudarc's panic (exit 101).
#[test]
fn a_library_that_is_not_nvrtc_is_a_tool_failure() {
    let dir = super::exit_codes::project(super::exit_codes::GOOD, "");
    let libs: Vec<String> = ["libm.so.6", "libc.so.6", "libpthread.so.0", "libdl.so.2"]
        .iter()
        .flat_map(|l| {
            [
                "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu",
                "/lib64",
                "/usr/lib64",
                "/lib/aarch64-linux-gnu",
            ]
            .iter()
            .map(move |d| format!("{d}/{l}"))
        })
        .filter(|p| Path::new(p).is_file())
        .collect();
    assert!(!libs.is_empty(), "no libm.so.6 or libc.so.6 found");
    for lib in &libs {
        let out = racegate(["compile"])
            .at(dir.path())
            .envs(&[("RACEGATE_NVRTC_LIB", lib)])
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{lib}: {err}");
        assert!(
            err.contains(lib.as_str()) && err.contains("nvrtcCreateProgram"),
            "{lib}: {err}"
        );
        assert!(!err.contains("panicked"), "{lib}: {err}");
    }
}

/// A kernel with a UTF-8 byte-order mark mutates exactly as without it: the same mutants, ids
/// and diffs (the mark stayed in the text `mutate` read, and in its line 1).
#[test]
fn a_byte_order_mark_does_not_change_mutate() {
    let one_line = "extern \"C\" __global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.0f; }\n";
    let mut outs = Vec::new();
    for bom in ["", "\u{feff}"] {
        let dir = super::exit_codes::project(&format!("{bom}{one_line}"), "");
        let out = racegate(["mutate", "--json", "-"]).at(dir.path()).output();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(json.contains("bounds-off-by-one"), "{json}");
        assert!(
            !json.contains('\u{feff}'),
            "the mark is in the mutants: {json}"
        );
        outs.push(json);
    }
    assert_eq!(outs[0], outs[1]);
}
