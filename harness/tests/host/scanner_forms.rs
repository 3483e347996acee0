//! Generated spellings of a file access: line splices made of a backslash, any run of carriage
//! returns and a newline, at every place inside `#include` and the probes; and the probe names
//! (`__has_include`, `__has_include_next`, `__has_embed`) pasted from pieces split at every
//! place, in two and three pieces and through two levels of macros. The token scanner refuses
//! every one (it is the friendly first line); with the scanner off, the kernel's layers contain
//! every one (the guarantee): the compile's output is the same for a file that exists as for
//! one that does not, and never holds the file's text.

use racegate::build::compile_child::{compile, Limits, Outcome, Request};
use racegate::proc::confine::Wanted;
use racegate::source::cscan::file_access;

const PROBES: [&str; 3] = ["__has_include", "__has_include_next", "__has_embed"];
const KERNEL: &str = "extern \"C\" __global__ void k(int *p) { p[0] = 1; }\n";

/// `s` with a splice of `crs` carriage returns inserted before byte `at`.
fn spliced(s: &str, at: usize, crs: usize) -> String {
    format!("{}\\{}\n{}", &s[..at], "\r".repeat(crs), &s[at..])
}

/// Every generated source that asks for `path`, with what it is (for messages).
fn forms(path: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let include = format!("#include \"{path}\"");
    for crs in 0..4 {
        for at in 1..9 {
            out.push((
                format!("#include split at {at} by \\ + {crs} CR + LF"),
                format!("{}\n{KERNEL}", spliced(&include, at, crs)),
            ));
        }
        for probe in PROBES {
            for at in 1..probe.len() {
                let test = format!(
                    "#if {}(\"{path}\")\n#error seen\n#endif\n",
                    spliced(probe, at, crs)
                );
                out.push((
                    format!("{probe} split at {at} by a splice of {crs} CR"),
                    format!("{test}{KERNEL}"),
                ));
            }
        }
    }
    for probe in PROBES {
        for at in 1..probe.len() {
            let (a, b) = probe.split_at(at);
            out.push((
                format!("{probe} pasted from `{a}` + `{b}`"),
                format!(
                    "#define CAT(a, b) a##b\n#if CAT({a}, {b})(\"{path}\")\n#error seen\n#endif\n{KERNEL}"
                ),
            ));
            out.push((
                format!("{probe} pasted from `{a}` + `{b}` through a second macro"),
                format!(
                    "#define CAT(a, b) a %:%: b\n#define XCAT(a, b) CAT(a, b)\n#define P1 {a}\n\
                     #if XCAT(P1, {b})(\"{path}\")\n#error seen\n#endif\n{KERNEL}"
                ),
            ));
            for at2 in (at + 1)..probe.len() {
                let (b1, c) = b.split_at(at2 - at);
                out.push((
                    format!("{probe} pasted from `{a}` + `{b1}` + `{c}`"),
                    format!(
                        "#define CAT3(a, b, c) a##b##c\n#if CAT3({a}, {b1}, {c})(\"{path}\")\n\
                         #error seen\n#endif\n{KERNEL}"
                    ),
                ));
            }
        }
    }
    out
}

#[test]
fn the_scanner_refuses_every_spliced_and_pasted_form() {
    let all = forms("/etc/passwd");
    assert!(all.len() > 500, "only {} forms", all.len());
    let missed: Vec<&String> = all
        .iter()
        .filter(|(_, src)| file_access(src).is_empty())
        .map(|(what, _)| what)
        .collect();
    assert!(
        missed.is_empty(),
        "{} of {} not refused: {missed:#?}",
        missed.len(),
        all.len()
    );
    // The control: the same kernel with no access at all, and pasting that spells nothing, pass.
    assert!(file_access(KERNEL).is_empty());
    let paste = format!("#define CAT(a, b) a##b\nint CAT(has, _value);\n{KERNEL}");
    assert!(file_access(&paste).is_empty(), "{:?}", file_access(&paste));
}

/// Everything a compile gave back, as text.
fn seen(out: &Outcome) -> String {
    match out {
        Outcome::Built(b) => format!("{out}\n{}", b.ptx),
        other => other.to_string(),
    }
}

#[test]
fn with_the_scanner_off_the_layers_contain_every_form() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = format!("racegate_form_marker_{}", std::process::id());
    let real = dir.path().join("secret.h");
    std::fs::write(&real, format!("#error {marker}\n")).expect("plant the file");
    let missing = dir.path().join("secreX.h");
    let run = |src: &str| {
        let mut req = Request::new("student.cu", src);
        req.scanner = false;
        req.confine = Some(Wanted::default());
        let c = compile(&super::racegate_exe(), &req, &Limits::default())
            .expect("the machine did its part");
        seen(&c.outcome)
    };
    let all = forms(&real.display().to_string());
    // Every seventh form (about a hundred compiles) covers each kind and place of split.
    for (what, src) in all.iter().step_by(7) {
        let got = run(src);
        assert!(
            !got.contains(&marker),
            "{what}: the file's text came back: {got}"
        );
        let other = run(&src.replace("secret.h", "secreX.h"));
        let norm = |s: &str| s.replace("secreX.h", "secret.h");
        assert_eq!(
            norm(&got),
            norm(&other),
            "{what}: an existing file ({}) answers otherwise than a missing one ({})",
            real.display(),
            missing.display()
        );
    }
}
