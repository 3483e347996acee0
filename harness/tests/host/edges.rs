//! Edge values of issue #25 through the real binary: `--jobs 0` and manifests that nest or
//! repeat operators without bound.

use std::process::Command;

fn racegate(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(super::racegate_exe())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("racegate runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn project(grid: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void k(float* y, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = 1.0f;\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        format!(
            r#"[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = {{ n = [1, 1000] }}
sanitize_sizes = {{ n = 100 }}
grid = ["{grid}"]
block = ["128"]
oracle = "determinism"
args = [
  {{ name = "y", kind = "out", type = "f32", len = "n" }},
  {{ name = "n", kind = "scalar", type = "i32", value = "n" }},
]
"#
        ),
    )
    .unwrap();
    dir
}

/// `--jobs 0` would run nothing: bad input, on any machine (it was exit 4 without a device).
#[test]
fn jobs_zero_is_refused() {
    let dir = project("ceil_div(n, 128)");
    for cmd in ["gate", "check"] {
        let (code, err) = racegate(dir.path(), &[cmd, "--jobs", "0"]);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains("--jobs"), "{cmd}: {err}");
    }
}
