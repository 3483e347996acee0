//! What the trials share: where the repository and the racegate binary are, running the CLI,
//! the GPU slots, fake programs, the snapshot check and `racegate grade --format json`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use libtest_mimic::Failed;
use racegate::judge::sanitize::snapshot;

/// What `racegate::run::device::probe` found: the device, or why there is none.
pub type Device = Result<racegate::run::device::DeviceInfo, String>;

/// The repository root (the parent of `harness/`).
pub fn root() -> PathBuf {
    // Runtime first: nextest archives remap CARGO_MANIFEST_DIR.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest
        .parent()
        .expect("harness/ has a parent")
        .to_path_buf()
}

pub fn racegate_exe() -> PathBuf {
    std::env::var_os("NEXTEST_BIN_EXE_racegate")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_racegate")))
}

/// What a GPU trial returns when it runs without a device: a failure whose message starts "no
/// CUDA device". Without a device every GPU trial is listed as ignored (`tests.rs`), so it runs
/// only when someone asked for ignored tests (`--ignored`, `--include-ignored`, nextest's
/// `--run-ignored only|all`); nextest judges a test by its exit code, so a runtime "ignored"
/// (exit 0) would count as a pass there. It fails instead, whatever selected it.
pub fn no_device(why: &str) -> Failed {
    Failed::from(format!("no CUDA device: {why}"))
}

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Runs the racegate binary in `root`: its exit code, stdout and stderr.
pub fn run_cli(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(racegate_exe())
        .args(args)
        .current_dir(root)
        .envs(env.iter().copied())
        .output()
        .expect("racegate runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A temporary folder, removed when dropped; `prefix` names it so a leftover is recognizable.
pub fn temp_dir(prefix: &str) -> Result<tempfile::TempDir, Failed> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| Failed::from(format!("no temporary folder: {e}")))
}

/// Writes an executable shell script `dir/name` (a fake compute-sanitizer, a flaky program).
pub fn write_script(dir: &Path, name: &str, body: &str) -> Result<PathBuf, Failed> {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, body).map_err(|e| e.to_string())?;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    Ok(p)
}

/// Bounds how many GPU trials run at once inside one test process (nextest, which runs a
/// process per test, bounds them with the `gpu` test group in .config/nextest.toml).
pub struct Slots {
    free: Mutex<usize>,
    cv: Condvar,
}

impl Slots {
    pub fn take(&self) -> SlotGuard<'_> {
        let mut n = self.free.lock().unwrap();
        while *n == 0 {
            n = self.cv.wait(n).unwrap();
        }
        *n -= 1;
        SlotGuard(self)
    }
}

pub struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap() += 1;
        self.0.cv.notify_one();
    }
}

/// The slots every GPU trial of this process shares.
pub fn gpu_slots() -> Arc<Slots> {
    static SLOTS: OnceLock<Arc<Slots>> = OnceLock::new();
    SLOTS
        .get_or_init(|| {
            let jobs = std::env::var("RACEGATE_GPU_JOBS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(8);
            Arc::new(Slots {
                free: Mutex::new(jobs),
                cv: Condvar::new(),
            })
        })
        .clone()
}

/// Where the sanitizer XML captured by racegate on the H200 lives.
pub fn fixture_dir(root: &Path) -> PathBuf {
    root.join("harness/tests/fixtures/h200")
}

/// The sample submissions, one folder per exercise, each with its expected.toml.
pub fn submissions_dir(root: &Path) -> PathBuf {
    root.join("harness/tests/submissions")
}

/// Compares `text` with the stored snapshot through insta (panics with insta's report on a
/// mismatch, which becomes the trial's failure).
pub fn assert_snapshot(root: &Path, snap_name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshot::dir(root));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_input_file(root.join("harness/src/sanitize/snapshot.rs"));
    settings.bind(|| {
        insta::assert_snapshot!(snap_name, text);
    });
}

/// [`assert_snapshot`] as a trial result: insta's report, then the command that blesses it.
pub fn check_snapshot(root: &Path, stem: &str, text: &str) -> Result<(), Failed> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_snapshot(root, stem, text)
    }));
    r.map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Failed::from(format!(
            "{msg}\nsnapshot {stem} differs; to accept the new output run:\n  {}",
            snapshot::bless_command(None)
        ))
    })
}

/// `racegate grade --exercise EXERCISE --format json [EXTRA] FILE`: its exit code, its JSON, and
/// everything it printed (stdout, then stderr).
pub fn grade_run(
    root: &Path,
    exercise: &str,
    file: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<(i32, serde_json::Value, String), Failed> {
    let mut args = vec![
        "grade",
        "--exercise",
        exercise,
        "--format",
        "json",
        // The sanitizer runs use the small geometry: 20 s is plenty (the default, 60 s,
        // leaves room for big student kernels), and the deadlocked samples end sooner.
        // Trials keep the default 10 s: other GPU trials run beside these, and the H200
        // showed a printf flood missing a 5 s deadline then (docs/h200/run-6).
        "--sanitize-timeout",
        "20",
    ];
    args.extend(extra);
    // After `--`: a file name may start with `-`.
    args.push("--");
    args.push(file.to_str().unwrap());
    let (got, stdout, stderr) = run_cli(root, &args, env);
    let all = format!("{stdout}\n{stderr}");
    let g = serde_json::from_str(&stdout).map_err(|e| format!("{e}: exit {got}\n{all}"))?;
    Ok((got, g, all))
}

/// The item named `item` of a grade's JSON (null when there is none).
pub fn grade_item(g: &serde_json::Value, item: &str) -> serde_json::Value {
    g["items"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["item"] == item))
        .cloned()
        .unwrap_or_default()
}
