//! The compile child of a submission cannot read files, whatever the source looks like: the
//! kernel refuses (seccomp-bpf, Landlock, an empty mount namespace), and the token scanner's
//! refusal before it is a friendly first line only. Each test plants a file holding a unique
//! marker and asks for it in some spelling; a leak is the marker anywhere in what comes back.
//!
//! The controls show each test can fail: the same include through an unconfined child with the
//! scanner off does read the file.

use std::path::PathBuf;

use racegate::build::compile_child::{compile, Limits, Outcome, Request};
use racegate::build::compile_jail::probe_confinement;
use racegate::proc::confine::Wanted;

use crate::runner::racegate;

fn root() -> PathBuf {
    super::package_dir().parent().unwrap().to_path_buf()
}

/// A file holding a marker no source names, and the marker.
fn planted() -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("racegate_leak_marker_{}", std::process::id());
    let path = dir.path().join("secret.h");
    // An include that reaches it stops the compile with the marker in NVRTC's log.
    std::fs::write(&path, format!("#error {marker}\n")).unwrap();
    (dir, path, marker)
}

/// Everything a compile gave back, as text: log, PTX and the message.
fn seen(out: &Outcome) -> String {
    match out {
        Outcome::Built(b) => format!("{out}\n{}", b.ptx),
        other => other.to_string(),
    }
}

fn compile_with(src: &str, scanner: bool, confine: Option<Wanted>) -> (Outcome, String) {
    let mut req = Request::new("student.cu", src);
    req.scanner = scanner;
    req.confine = confine;
    let c = compile(&super::racegate_exe(), &req, &Limits::default())
        .expect("the machine did its part");
    let layers = c.layers.map(|l| l.describe()).unwrap_or_default();
    (c.outcome, layers)
}

const KERNEL: &str = "extern \"C\" __global__ void k(int *p) { p[0] = 1; }\n";

#[test]
fn without_confinement_and_scanner_the_include_reads_the_file() {
    // The control: what the layers below are there to stop.
    let (_d, path, marker) = planted();
    let src = format!("#include \"{}\"\n{KERNEL}", path.display());
    let (out, _) = compile_with(&src, false, None);
    assert!(seen(&out).contains(&marker), "{out}");
}

#[test]
fn the_kernel_alone_stops_an_include_the_scanner_is_told_to_ignore() {
    let (_d, path, marker) = planted();
    let src = format!("#include \"{}\"\n{KERNEL}", path.display());
    let (out, layers) = compile_with(&src, false, Some(Wanted::default()));
    assert!(
        !seen(&out).contains(&marker),
        "leaked under {layers}: {out}"
    );
    assert!(matches!(out, Outcome::Failed(_)), "{out}");
    assert!(layers.contains("seccomp-bpf"), "{layers}");
}

/// Each layer alone stops the include, where this machine applies it. A layer the machine
/// does not offer fails the test under CI (a machine like the developers' has it) and is
/// reported otherwise.
#[test]
fn each_layer_alone_holds() {
    let (_d, path, marker) = planted();
    let src = format!("#include \"{}\"\n{KERNEL}", path.display());
    let only = |s, l, m| Wanted {
        seccomp: s,
        landlock: l,
        mount_namespace: m,
    };
    let mut missing = Vec::new();
    for (name, want) in [
        ("seccomp-bpf", only(true, false, false)),
        ("Landlock", only(false, true, false)),
        ("empty mount namespace", only(false, false, true)),
    ] {
        let (out, layers) = compile_with(&src, false, Some(want));
        if !layers.contains(&format!("confinement: {name}")) {
            missing.push(format!("{name}: {layers}"));
            continue;
        }
        assert!(!seen(&out).contains(&marker), "{name} alone leaked: {out}");
        // Whether the file exists must not show either: the include of a missing file fails
        // alike. Landlock alone fails here ("Permission denied" only for a file that exists),
        // which is why the probe does not count it alone as confinement.
        let gone = src.replace("secret.h", "secreX.h");
        let (other, _) = compile_with(&gone, false, Some(want));
        let norm = |o: &Outcome, p: &str| {
            seen(o)
                .replace(p, "PATH")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let (a, b) = (
            norm(&out, &path.display().to_string()),
            norm(
                &other,
                &path.display().to_string().replace("secret.h", "secreX.h"),
            ),
        );
        if name == "Landlock" {
            assert_ne!(
                a, b,
                "Landlock alone now hides existence: let the probe count it"
            );
        } else {
            assert_eq!(
                a, b,
                "{name} alone tells an existing file from a missing one"
            );
        }
    }
    if !missing.is_empty() {
        eprintln!("layers this machine does not apply: {missing:?}");
        // seccomp is the layer every supported Linux has: its absence is always a failure.
        assert!(
            !missing.iter().any(|m| m.starts_with("seccomp")),
            "{missing:?}"
        );
    }
}

/// Every spelling the preprocessor knows, with every byte from 0x00 to 0x20 between the `#`
/// (or `%:`, or `??=`) and the directive, through the whole path (scanner on, then the child):
/// the grade's compile item is "refused" or "does not compile", never the file's text, and a
/// probe (`__has_include`, pasted or not) answers the same for a file that exists as for one
/// that does not. Then the includes again with the scanner off, so the mechanism is shown to
/// hold for each byte alone.
#[test]
fn no_spelling_of_an_include_reaches_a_file() {
    let (_d, path, marker) = planted();
    let p = path.display().to_string();
    // The same length, in the same folder, never created.
    let missing = p.replace("secret.h", "secreX.h");
    let hashes = ["#", "%:", "??="];
    let includes = [
        "include \"PATH\"",
        "include_next \"PATH\"",
        "include <PATH>",
        "include RACEGATE_H",
    ];
    let probes = [
        "if __has_include(\"PATH\")\nint seen;\n#endif",
        "if CAT(__has_,include)(\"PATH\")\nint seen;\n#endif",
        "if defined(__has_include) && __has_include(<PATH>)\nint seen;\n#endif",
    ];
    let source = |h: &str, byte: u8, d: &str, path: &str| {
        format!(
            "#define RACEGATE_H \"{path}\"\n#define CAT(a, b) a##b\n{h}{}{}\n{KERNEL}",
            byte as char,
            d.replace("PATH", path)
        )
    };
    let refused = |src: &str| racegate::build::compile_child::forbidden_access(src, &[]).is_some();
    let mut through_scanner = 0;
    for h in hashes {
        for byte in 0u8..=0x20 {
            for d in includes {
                let src = source(h, byte, d, &p);
                if refused(&src) {
                    continue; // refused before any compile: nothing can leak
                }
                through_scanner += 1;
                let (out, layers) = compile_with(&src, true, Some(Wanted::default()));
                assert!(
                    !seen(&out).contains(&marker),
                    "byte {byte:#04x} after {h:?} in {d:?} leaked under {layers}: {out}"
                );
            }
            for d in probes {
                let (a, b) = (source(h, byte, d, &p), source(h, byte, d, &missing));
                if refused(&a) && refused(&b) {
                    continue;
                }
                through_scanner += 1;
                let (oa, layers) = compile_with(&a, true, Some(Wanted::default()));
                let (ob, _) = compile_with(&b, true, Some(Wanted::default()));
                assert_eq!(
                    seen(&oa).replace(&p, "PATH"),
                    seen(&ob).replace(&missing, "PATH"),
                    "byte {byte:#04x} after {h:?} in {d:?}: the probe told an existing file from \
                     a missing one under {layers}"
                );
            }
        }
    }
    eprintln!("{through_scanner} spellings passed the scanner and met the kernel's refusal");
    // The mechanism alone: the plain include with every byte and introducer, scanner off.
    for h in hashes {
        for byte in 0u8..=0x20 {
            let src = source(h, byte, includes[0], &p);
            let (out, layers) = compile_with(&src, false, Some(Wanted::default()));
            assert!(
                !seen(&out).contains(&marker),
                "scanner off: byte {byte:#04x} after {h:?} leaked under {layers}: {out}"
            );
        }
    }
    // And every probe spelling, scanner off, after `#` with a space and a vertical tab.
    for d in probes {
        for byte in [b' ', 0x0b] {
            let (a, b) = (source("#", byte, d, &p), source("#", byte, d, &missing));
            let (oa, layers) = compile_with(&a, false, Some(Wanted::default()));
            let (ob, _) = compile_with(&b, false, Some(Wanted::default()));
            assert_eq!(
                seen(&oa).replace(&p, "PATH"),
                seen(&ob).replace(&missing, "PATH"),
                "scanner off: {d:?} told an existing file from a missing one under {layers}"
            );
        }
    }
}

#[test]
fn the_probe_shows_confinement_holds_here() {
    let p = probe_confinement(&super::racegate_exe()).unwrap();
    assert!(p.confined(), "{}", p.describe());
    assert!(p.describe().contains("seccomp-bpf"), "{}", p.describe());
}

#[test]
fn a_confined_child_reads_no_proc_file_of_its_parent() {
    // The grader's environment, its command line, its memory maps: all under /proc/PPID.
    // The control: unconfined, with the scanner off, the parent's status is read.
    let me = std::process::id();
    let (out, _) = compile_with(
        &format!("#include \"/proc/{me}/status\"\n{KERNEL}"),
        false,
        None,
    );
    assert!(
        seen(&out).contains("Name:"),
        "the control did not read the file: {out}"
    );
    // The compile child's parent (this test, as racegate would be) and grandparent.
    for (ppid, f) in [std::process::id(), std::os::unix::process::parent_id()]
        .into_iter()
        .flat_map(|p| ["environ", "cmdline", "maps", "status"].map(|f| (p, f)))
    {
        let src = format!("#include \"/proc/{ppid}/{f}\"\n{KERNEL}");
        let (out, layers) = compile_with(&src, false, Some(Wanted::default()));
        assert!(
            matches!(out, Outcome::Failed(ref log) if log.contains("cannot open source file")),
            "/proc/{ppid}/{f} under {layers}: {out}"
        );
    }
}

/// The processes of `racegate` started as `pid` and all below it, found through /proc.
fn family(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...: the comm may hold spaces, so read after the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|s| s.parse::<u32>().ok());
            if ppid == Some(parent) && !out.contains(&p) {
                out.push(p);
            }
        }
        i += 1;
    }
    out
}

/// A secret given in RACEGATE_GRADE_SECRET is in no environment block of racegate or its
/// children while grading runs: racegate re-executes itself without it. Read from outside, as
/// a submission that could read /proc would.
#[test]
fn the_grading_secret_is_in_no_environment_block() {
    let dir = tempfile::tempdir().unwrap();
    // Compiling this takes until the compile deadline: time to look.
    let mut bomb = String::from("#define A0 x +\n");
    for i in 1..=22 {
        bomb.push_str(&format!("#define A{i} A{0} A{0}\n", i - 1));
    }
    bomb.push_str("extern \"C\" __global__ void reduce(const float* in, float* out, int n) { float x = 0; out[0] = A22 0; }\n");
    let sub = dir.path().join("slow.cu");
    std::fs::write(&sub, bomb).unwrap();
    let marker = format!("racegate_secret_{}", std::process::id());
    let child = racegate(["grade", "--exercise", "reduce", "--compile-timeout", "8"])
        .args([&sub])
        .at(root())
        .env("RACEGATE_GRADE_SECRET", &marker)
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // racegate's first image held the variable (as the autograder's shell does) until it
    // re-executed itself: wait for the new image, which names the descriptor instead.
    let start = std::time::Instant::now();
    while !String::from_utf8_lossy(
        &std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default(),
    )
    .contains("RACEGATE_GRADE_SECRET_FD=")
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "racegate did not re-execute itself without the secret"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut looked = 0;
    let mut compile_seen = false;
    while start.elapsed() < std::time::Duration::from_secs(6) {
        for p in family(pid) {
            let env = std::fs::read(format!("/proc/{p}/environ")).unwrap_or_default();
            if !env.is_empty() {
                looked += 1;
            }
            assert!(
                !String::from_utf8_lossy(&env).contains(&marker),
                "the secret is in /proc/{p}/environ"
            );
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            assert!(!String::from_utf8_lossy(&cmd).contains(&marker));
            compile_seen |= p != pid && String::from_utf8_lossy(&cmd).contains("__compile");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert!(looked > 10, "looked at {looked} environment blocks");
    assert!(
        compile_seen,
        "no compile child was seen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
