//! `hostile::<name>`: paths a user gives, handled as hostile, through the real binary: a FIFO as
//! the baseline, the `--expect` file, the manifest, a report file or `$GITHUB_STEP_SUMMARY` ends
//! the run at once with exit 2 and a message naming it (every run here has a deadline, so a hang
//! fails the test); a report written over an input of the run is refused and the input kept; a
//! library planted in racegate's cache where others could write it is refused and its code never
//! runs; 200 MB of program output cost racegate a bounded amount of memory, and a difference in its
//! middle is still seen.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::runner::{racegate, Racegate};

/// What a watched run of racegate left: its exit code, its stderr and stdout, and its peak
/// resident memory in KiB (VmHWM, as last seen while it ran).
struct Watched {
    code: i32,
    stderr: String,
    stdout: String,
    peak_kib: u64,
}

/// Runs `rg`, killed after `secs`: a run past it fails the test, as the hang it is.
fn watched(rg: Racegate, secs: u64) -> Watched {
    let out = tempfile::tempdir().unwrap();
    let (o, e) = (out.path().join("stdout"), out.path().join("stderr"));
    let mut cmd = rg.command();
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&o).unwrap())
        .stderr(std::fs::File::create(&e).unwrap());
    let mut child = cmd.spawn().expect("racegate runs");
    let start = Instant::now();
    let mut peak_kib = 0;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()));
        if let Some(kib) = status.ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        }) {
            peak_kib = peak_kib.max(kib);
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} still ran after {secs} s (it hangs); stderr so far:\n{}",
                std::fs::read_to_string(&e).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Watched {
        code: status.code().unwrap_or(-1),
        stderr: std::fs::read_to_string(&e).unwrap(),
        stdout: std::fs::read_to_string(&o).unwrap(),
        peak_kib,
    }
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads one NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {p:?}"
    );
}

/// A manifest project: one kernel `k` in `k.cu`, the manifest `racegate.toml`.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void k(float* y, int n) {\n  int i = blockIdx.x * blockDim.x + \
         threadIdx.x;\n  if (i < n) y[i] = 1.0f;\n  __syncthreads();\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        r#"[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = { n = [1, 1000] }
sanitize_sizes = { n = 100 }
grid = ["ceil_div(n, 128)"]
block = ["128"]
oracle = "determinism"
args = [
  { name = "y", kind = "out", type = "f32", len = "n" },
  { name = "n", kind = "scalar", type = "i32", value = "n" },
]
"#,
    )
    .unwrap();
    dir
}

/// `gate -- true` without sanitizers or jitter to wait for: the program mode's quickest run.
const GATE_TRUE: [&str; 6] = ["gate", "--no-jitter", "--tools", "racecheck", "--", "true"];

fn gate_true_with<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = GATE_TRUE[..4].to_vec();
    v.extend_from_slice(flags);
    v.extend_from_slice(&GATE_TRUE[4..]);
    v
}

#[track_caller]
fn refused(r: &Watched, path: &Path, kind: &str) {
    assert_eq!(r.code, 2, "{}", r.stderr);
    let shown = path.display().to_string();
    assert!(
        r.stderr.contains(&shown) && r.stderr.contains(kind) && !r.stderr.contains("panicked"),
        "expected `{shown}` and `{kind}` in: {}",
        r.stderr
    );
}

#[test]
fn a_fifo_as_baseline_expect_manifest_report_or_step_summary_ends_at_once_with_exit_2() {
    let dir = project();
    let d = dir.path();
    let fifo = d.join("trap");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    const FIFO: &str = "is a FIFO (named pipe), not a regular file";
    // racegate with `args` in the project, judged as on a device, ended within 60 s.
    let run = |args: &[&str]| watched(racegate(args).at(d).program_device().no_gpu(), 60);
    refused(&run(&gate_true_with(&["--baseline", f])), &fifo, FIFO);
    refused(&run(&gate_true_with(&["--expect", f])), &fifo, FIFO);
    let summary = [("GITHUB_STEP_SUMMARY", Some(fifo.as_os_str()))];
    refused(
        &watched(
            racegate(gate_true_with(&["--github"]))
                .at(d)
                .program_device()
                .no_gpu()
                .envs_or_removed(&summary),
            60,
        ),
        &fifo,
        FIFO,
    );
    refused(&run(&["--manifest", f, "list"]), &fifo, FIFO);
    refused(&run(&["gate", "--manifest", f]), &fifo, FIFO);
    refused(&run(&["list", "--json", f]), &fifo, FIFO);
    // A directory is refused as such, before the run (not with exit 3 after it).
    let sub = d.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let s = sub.to_str().unwrap();
    refused(
        &run(&gate_true_with(&["--baseline", s])),
        &sub,
        "is a directory, not a regular file",
    );
    refused(
        &run(&gate_true_with(&["--sarif", s])),
        &sub,
        "is a directory, not a regular file",
    );
}

#[test]
fn a_report_written_over_an_input_is_refused_and_the_input_kept() {
    let dir = project();
    let d = dir.path();
    let manifest = d.join("racegate.toml");
    let before = std::fs::read(&manifest).unwrap();
    // `mutate` lists offline and writes its JSON: over the manifest it read, it must not.
    let r = watched(
        racegate(["mutate", "--no-compile", "--json", "racegate.toml"])
            .at(d)
            .program_device()
            .no_gpu(),
        60,
    );
    refused(&r, Path::new("racegate.toml"), "an input of this run");
    // Another spelling of the same file, and a kernel the manifest names.
    std::fs::create_dir(d.join("sub")).unwrap();
    let r = watched(
        racegate(["list", "--json", "sub/../racegate.toml"])
            .at(d)
            .program_device()
            .no_gpu(),
        60,
    );
    refused(
        &r,
        Path::new("sub/../racegate.toml"),
        "an input of this run",
    );
    let r = watched(
        racegate(["gate", "--json", "k.cu"])
            .at(d)
            .program_device()
            .no_gpu(),
        60,
    );
    refused(&r, Path::new("k.cu"), "an input of this run");
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
    // Program mode: the baseline it compares with.
    let base = d.join("b.json");
    std::fs::write(&base, "{\"version\": 2, \"accepted\": []}\n").unwrap();
    let base_before = std::fs::read(&base).unwrap();
    let r = watched(
        racegate(gate_true_with(&[
            "--baseline",
            "b.json",
            "--junit",
            "b.json",
        ]))
        .at(d)
        .program_device()
        .no_gpu(),
        60,
    );
    refused(&r, Path::new("b.json"), "an input of this run");
    assert_eq!(std::fs::read(&base).unwrap(), base_before);
    // And the refusal is only for inputs: a fresh file takes the report.
    let r = watched(
        racegate(["list", "--json", "list.json"])
            .at(d)
            .program_device()
            .no_gpu(),
        60,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::read_to_string(d.join("list.json"))
        .unwrap()
        .contains("\"k\""));
}

#[test]
fn a_library_planted_in_the_cache_where_others_can_write_is_refused_and_never_runs() {
    let Some(cc) = ["cc", "gcc", "clang"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok())
    else {
        eprintln!("ignored: no C compiler (cc, gcc, clang) to build the planted library");
        return;
    };
    if Command::new("sh")
        .args(["-c", "ldconfig -p 2>/dev/null | grep -q libnvrtc"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("ignored: this machine has NVRTC on its library path, found before the cache");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("racegate");
    std::fs::create_dir(&cache).unwrap();
    let lib_dir = cache.join("nvrtc/nvidia/cu13/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let src = tmp.path().join("planted.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <stdlib.h>\n\
         __attribute__((constructor)) static void planted(void) {\n\
           const char *m = getenv(\"PLANTED_MARKER\");\n\
           FILE *f = m ? fopen(m, \"w\") : 0;\n\
           if (f) { fputs(\"ran\\n\", f); fclose(f); }\n}\n",
    )
    .unwrap();
    let lib = lib_dir.join("libnvrtc.so.13");
    let built = Command::new(cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .unwrap();
    assert!(built.success(), "{cc} could not build the planted library");
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    mode(&cache, 0o700);
    mode(&lib, 0o777);
    let marker = tmp.path().join("marker");
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let env: Vec<(&str, Option<&OsStr>)> = vec![
        ("RACEGATE_CACHE", Some(cache.as_os_str())),
        ("PLANTED_MARKER", Some(marker.as_os_str())),
        ("RACEGATE_NVRTC_LIB", None),
        ("CUDA_HOME", None),
        ("CUDA_PATH", None),
    ];
    // `racegate compile` in the checkout, with the planted cache and nothing else to load.
    let compile = || {
        watched(
            racegate(["compile"])
                .at(&root)
                .program_device()
                .no_gpu()
                .envs_or_removed(&env),
            120,
        )
    };
    let r = compile();
    assert!(
        !marker.exists(),
        "the planted library's constructor ran in racegate: {}",
        r.stderr
    );
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("refusing to load")
            && r.stderr.contains(&lib.display().to_string())
            && r.stderr
                .contains("is writable by group or others (mode 0777)"),
        "{}",
        r.stderr
    );
    // A folder of the cache others could write is refused the same way.
    mode(&lib, 0o755);
    mode(&cache.join("nvrtc"), 0o777);
    let r = compile();
    assert!(!marker.exists(), "{}", r.stderr);
    assert!(
        r.code == 3
            && r.stderr
                .contains(&format!("{} is writable", cache.join("nvrtc").display())),
        "{}",
        r.stderr
    );
    // The control: made private, the same file is loaded (its constructor runs), so the test
    // above reached the cache and only the check kept the library out.
    mode(&cache.join("nvrtc"), 0o755);
    let _ = compile();
    assert!(
        marker.exists(),
        "the cache was never searched: the test proves nothing"
    );
}

/// 100 MB of `x`, a line of `middle`, 100 MB of `x`.
fn flood(middle: &str) -> Vec<std::ffi::OsString> {
    let half = "head -c 100000000 /dev/zero | tr '\\0' x";
    vec![
        "-c".into(),
        format!("{half}; echo; echo {middle}; {half}").into(),
    ]
}

#[test]
fn two_hundred_megabytes_of_output_are_kept_bounded_and_a_difference_in_the_middle_is_seen() {
    use racegate::proc::watchdog::{self, Output};
    let run = |middle: &str| {
        let t = Duration::from_secs(300);
        let (f, out) = watchdog::collect(
            Path::new("/bin/sh"),
            &flood(middle),
            &watchdog::Spawn::default(),
            watchdog::Deadline::within(t),
            Output::bounded(),
        )
        .unwrap();
        assert_eq!(f.exit, watchdog::Exit::Code(0), "{}", f.stderr);
        out
    };
    let (a, b, a2) = (run("A"), run("B"), run("A"));
    for o in [&a, &b, &a2] {
        assert!(o.head().len() <= 1 << 20, "head: {} bytes", o.head().len());
        assert!(o.tail().len() <= 1 << 20, "tail: {} bytes", o.tail().len());
        // Every byte counted (with a newline after each piece of a long line, as collected).
        assert!(
            (200_000_003..200_004_000).contains(&o.total()),
            "{}",
            o.total()
        );
        assert!(o.text().len() < (2 << 20) + 100);
        assert!(o
            .text()
            .contains(&format!("... {} bytes not kept ...", o.dropped())));
    }
    // Head and tail agree; the digests of the whole streams do not, unless they are the same.
    assert_eq!((a.head(), a.tail()), (b.head(), b.tail()));
    assert_ne!(
        a.digest(),
        b.digest(),
        "a difference in the middle went unseen"
    );
    assert_eq!(a.digest(), a2.digest());
    // Through the gate: two runs differing in the middle are a variance finding, and racegate
    // never held the outputs in memory (it once took 1.44 GB for 200 MB a run).
    let dir = tempfile::tempdir().unwrap();
    let script = "head -c 100000000 /dev/zero | tr '\\0' x; echo; date +%N; \
                  head -c 100000000 /dev/zero | tr '\\0' x";
    let r = watched(
        racegate([
            "gate",
            "--no-jitter",
            "--no-builtin-masks",
            "--tools",
            "racecheck",
            "--runs",
            "2",
            "--timeout",
            "300",
            "--json",
            "gate.json",
            "--",
            "sh",
            "-c",
            script,
        ])
        .at(dir.path())
        .program_device()
        .no_gpu(),
        600,
    );
    let json = std::fs::read_to_string(dir.path().join("gate.json")).unwrap_or_default();
    assert!(
        json.contains("output differs between identical runs"),
        "exit {}: {}{}",
        r.code,
        r.stdout,
        r.stderr
    );
    assert!(
        r.peak_kib > 0 && r.peak_kib < 200 << 10,
        "racegate's peak memory was {} MiB for two runs of 200 MB",
        r.peak_kib >> 10
    );
    assert!(
        r.stdout.contains("they differ in the part not kept"),
        "{}",
        r.stdout
    );
}

/// `grade --output` never overwrites what the grade reads: the submission, the rubric, the
/// exercise spec. Refused (exit 2) before grading, each file byte for byte as it was.
#[test]
fn a_grade_written_over_its_own_inputs_is_refused_and_the_inputs_kept() {
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let carol = dir.path().join("carol.cu");
    let text = "extern \"C\" __global__ void reduce(const float* in, float* out, int n) {}\n";
    std::fs::write(&carol, text).unwrap();
    let rubric = dir.path().join("rubric.toml");
    std::fs::copy(root.join("grading/rubric.toml"), &rubric).unwrap();
    let rubric_text = std::fs::read(&rubric).unwrap();
    let spec = root.join("grading/exercises/reduce.toml");
    let spec_text = std::fs::read(&spec).unwrap();
    let c = carol.to_str().unwrap();
    let r = rubric.to_str().unwrap();
    // The course under --root: its exercise spec is then an input of the run (without --root the
    // built-in course is read, and the checkout's spec is no input).
    let root_s = root.to_str().unwrap();
    for (output, args) in [
        (
            c,
            vec![
                "--root",
                root_s,
                "grade",
                "--exercise",
                "reduce",
                "--output",
                c,
                "--",
                c,
            ],
        ),
        (
            r,
            vec![
                "--root",
                root_s,
                "grade",
                "--exercise",
                "reduce",
                "--rubric",
                r,
                "--output",
                r,
                "--",
                c,
            ],
        ),
        (
            spec.to_str().unwrap(),
            vec![
                "--root",
                root_s,
                "grade",
                "--exercise",
                "reduce",
                "--output",
                spec.to_str().unwrap(),
                "--",
                c,
            ],
        ),
    ] {
        let ran = watched(racegate(&args).at(&root).program_device().no_gpu(), 60);
        assert_eq!(ran.code, 2, "--output {output}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("an input of this run"),
            "{}",
            ran.stderr
        );
        assert_eq!(
            std::fs::read_to_string(&carol).unwrap(),
            text,
            "the submission changed"
        );
        assert_eq!(
            std::fs::read(&rubric).unwrap(),
            rubric_text,
            "the rubric changed"
        );
        assert_eq!(
            std::fs::read(&spec).unwrap(),
            spec_text,
            "the exercise changed"
        );
    }
}
