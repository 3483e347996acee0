//! Messages built from a submission are bounded and a file for people is escaped: forty kernels
//! whose names token pasting makes 256 KiB long each (a source of a few kilobytes; unbounded,
//! the report listed all 10 MiB of them) give a grade report under 1 MB, saying how much was
//! cut; control bytes a submission makes
//! the compiler echo reach the human `--output` file as visible `\xNN`, never raw.

use crate::runner::racegate;

/// Forty `extern "C"` kernels, each named by 14 doublings of a 16-byte piece (256 KiB).
fn name_flood() -> String {
    let mut s = String::from(
        "#define P(a, b) a##b\n#define X(a, b) P(a, b)\n#define N0 abcdefghijklmnop\n",
    );
    for i in 1..=14 {
        s.push_str(&format!("#define N{i} X(N{}, N{})\n", i - 1, i - 1));
    }
    for k in 0..40 {
        s.push_str(&format!(
            "extern \"C\" __global__ void X(N14, k{k})(float *p) {{ p[0] = 1; }}\n"
        ));
    }
    s
}

fn grade(src: &str, format: &str) -> (Option<i32>, Vec<u8>, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sub = tmp.path().join("flood.cu");
    std::fs::write(&sub, src).expect("write");
    let out = tmp.path().join("grade.out");
    let root = super::package_dir().join("..");
    let r = racegate(["--root"])
        .args([&root])
        .args([
            "grade",
            "--exercise",
            "reduce",
            "--format",
            format,
            "--output",
        ])
        .args([&out, &sub])
        .no_gpu()
        .run();
    let written = std::fs::read(&out).unwrap_or_default();
    (r.code, written, r.stderr)
}

#[test]
fn a_flood_of_long_kernel_names_gives_a_small_report() {
    let src = name_flood();
    assert!(src.len() < 5000, "{} bytes", src.len());
    for format in ["human", "json"] {
        let (code, out, err) = grade(&src, format);
        // No device: exit 4 after the compile item (or 3 without NVRTC, where nothing is
        // compiled and the test cannot show the bound).
        assert!(matches!(code, Some(3 | 4)), "{format}: {code:?} {err}");
        assert!(
            err.len() < 1 << 20,
            "{format}: {} bytes of stderr",
            err.len()
        );
        if code == Some(4) {
            let text = String::from_utf8_lossy(&out);
            assert!(
                out.len() < 1 << 20,
                "{format}: a report of {} bytes",
                out.len()
            );
            assert!(
                text.contains("and 30 more") && text.contains("more bytes)"),
                "{format}: {text}"
            );
        }
    }
}

#[test]
fn control_bytes_a_submission_makes_the_compiler_echo_are_escaped_in_the_human_file() {
    // An error whose line NVRTC quotes back, holding ESC sequences.
    let src = "extern \"C\" __global__ void reduce(const float* in, float* out, int n)\n\
               { \u{1b}[2J\u{1b}]0;pwned\u{7} }\n";
    let (code, out, err) = grade(src, "human");
    assert!(matches!(code, Some(3 | 4)), "{code:?} {err}");
    if code == Some(4) {
        assert!(
            !out.contains(&0x1b) && !out.contains(&0x07),
            "{}",
            String::from_utf8_lossy(&out)
        );
        assert!(
            String::from_utf8_lossy(&out).contains("\\x1b"),
            "{}",
            String::from_utf8_lossy(&out)
        );
    }
}
