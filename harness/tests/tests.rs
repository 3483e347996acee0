//! racegate's test target (libtest-mimic). One trial per thing worth knowing:
//!
//! * `compile::<file>` and `compile_jitter::<file>`: NVRTC builds every `.cu` (host, no GPU);
//! * `header::<name>`: the `//@` parser on good and bad headers (host);
//! * `cli::<name>`: the racegate binary end to end (host);
//! * `snapshot::<case>::<tool>`: H200 sanitizer XML fixture -> findings -> normalized text ->
//!   the snapshot under `snapshots/` (host);
//! * `sanitize::<name>`: a fake compute-sanitizer that exits 255, and none at all (host);
//! * `<case>::<detector>`: the case's declared expectation (flag / clean / may) holds on the
//!   GPU; ignored with the reason when there is no CUDA device.
//!
//! Under `CI=true` a missing NVRTC fails the compile trials instead of skipping them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use racegate::catalog::{parse_file, Catalog, Detector};
use racegate::check::{self, CheckConfig, Judgement};
use racegate::compile::{self, BuildOptions};
use racegate::sanitize::{snapshot, Tool};

fn root() -> PathBuf {
    // Runtime first: nextest archives remap CARGO_MANIFEST_DIR.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest
        .parent()
        .expect("harness/ has a parent")
        .to_path_buf()
}

fn racegate_exe() -> PathBuf {
    std::env::var_os("NEXTEST_BIN_EXE_racegate")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_racegate")))
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn main() {
    let args = Arguments::from_args();
    let root = root();
    let catalog = match Catalog::discover(&root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: catalog discovery failed: {e}");
            std::process::exit(101);
        }
    };
    let device = racegate::device::probe();
    let mut trials = Vec::new();
    trials.extend(compile_trials(&catalog));
    trials.extend(header_trials());
    trials.extend(cli_trials(&root));
    trials.extend(snapshot_trials(&catalog));
    trials.extend(template_trials(&root));
    trials.extend(manifest_trials(&root));
    trials.push(gate_program_trial(&root));
    trials.extend(grade_trials(&root, &device));
    trials.extend(sanitizer_trials(&root));
    trials.extend(gpu_trials(&catalog, &device));
    libtest_mimic::run(&args, trials).exit();
}

fn compile_trials(catalog: &Catalog) -> Vec<Trial> {
    let mut out = Vec::new();
    for file in catalog.files() {
        for jitter in [false, true] {
            let root = catalog.root.clone();
            let file = file.to_string();
            let name = format!(
                "{}::{file}",
                if jitter { "compile_jitter" } else { "compile" }
            );
            out.push(
                Trial::ignorable_test(name, move || {
                    if let Err(e) = racegate::toolchain::nvrtc(&root) {
                        if in_ci() {
                            return Err(Failed::from(format!("CI=true but {e}")));
                        }
                        return Ok(Completion::ignored_with(
                            "NVRTC not installed (run ci/setup)",
                        ));
                    }
                    let opts = BuildOptions {
                        jitter,
                        ..Default::default()
                    };
                    let built = compile::compile(&root, &file, &opts).map_err(|e| e.to_string())?;
                    // Line info names the program by its repo-relative path (NVRTC prefixes the
                    // working directory; normalization strips it).
                    if !built
                        .ptx
                        .lines()
                        .any(|l| l.contains(".file") && l.ends_with(&format!("{file}\"")))
                    {
                        return Err(format!("PTX has no .file entry for {file}").into());
                    }
                    if jitter != built.ptx.contains("racegate_jitter_seed") {
                        return Err("the jitter prelude is not applied as asked".into());
                    }
                    Ok(Completion::Completed)
                })
                .with_kind("host"),
            );
        }
    }
    out
}

/// (name, path, text, expected error text or None for success, expected error line)
const HEADERS: &[(&str, &str, &str, Option<&str>, usize)] = &[
    (
        "good_kernel",
        "kernels/k.cu",
        "// racegate: a kernel\n//@ exercise: reduce\n//@ entry: k block=256\n\nvoid f();\n",
        None,
        0,
    ),
    (
        "good_variant",
        "buggy_variants/k/v.cu",
        "// title\n//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ expect: stress=flag racecheck=may\n//@ entry: k block=256\nint a; // BUG: here\n",
        None,
        0,
    ),
    ("unknown_key", "kernels/k.cu", "//@ exercise: reduce\n//@ entree: k\n", Some("unknown key `entree`"), 2),
    ("missing_exercise", "kernels/k.cu", "//@ entry: k block=1\n", Some("missing required key `//@ exercise:`"), 1),
    ("missing_entry", "kernels/k.cu", "//@ exercise: reduce\n", Some("missing required key `//@ entry:`"), 1),
    ("no_colon", "kernels/k.cu", "//@ exercise reduce\n", Some("expected `//@ key: value`"), 1),
    ("empty_value", "kernels/k.cu", "//@ exercise:\n", Some("`exercise` has no value"), 1),
    ("twice", "kernels/k.cu", "//@ exercise: a\n//@ exercise: b\n", Some("given twice (first on line 1)"), 2),
    ("bad_param", "kernels/k.cu", "//@ exercise: reduce\n//@ entry: k block=big\n", Some("must be an integer"), 2),
    ("bad_identifier", "kernels/k.cu", "//@ exercise: reduce\n//@ entry: k-1\n", Some("not a C identifier"), 2),
    (
        "metadata_after_code",
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k block=1\nint x;\n//@ bug: late\n",
        Some("must be in the leading comment block"),
        4,
    ),
    (
        "variant_without_expect",
        "buggy_variants/k/v.cu",
        "//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ entry: k block=1\nint a; // BUG\n",
        Some("missing required key `//@ expect:`"),
        1,
    ),
    (
        "variant_without_marker",
        "buggy_variants/k/v.cu",
        "//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ expect: stress=flag\n//@ entry: k block=1\nint a;\n",
        Some("no `BUG` marker"),
        1,
    ),
    (
        "variant_two_markers",
        "buggy_variants/k/v.cu",
        "//@ exercise: reduce\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ expect: stress=flag\n//@ entry: k block=1\nint a; // BUG\nint b; // BUG\n",
        Some("more than one `BUG` marker"),
        7,
    ),
    (
        "unknown_detector",
        "buggy_variants/k/v.cu",
        "//@ exercise: reduce\n//@ expect: stresss=flag\n",
        Some("unknown detector `stresss`"),
        2,
    ),
    (
        "nothing_must_flag",
        "buggy_variants/k/v.cu",
        "//@ exercise: reduce\n//@ expect: stress=may\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ entry: k block=1\nint a; // BUG\n",
        Some("no detector must flag this variant"),
        2,
    ),
    (
        "escapes_documents_a_blind_spot",
        "buggy_variants/k/v.cu",
        "//@ exercise: reduce\n//@ expect: stress=may\n//@ escapes: nothing sees it\n//@ breaks: kernels/k.cu\n//@ bug: x\n//@ entry: k block=1\nint a; // BUG\n",
        None,
        0,
    ),
    (
        "expect_on_a_correct_kernel",
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k block=1\n//@ expect: stress=flag\n",
        Some("`expect` is only for files under buggy_variants/"),
        3,
    ),
    (
        "marker_in_a_correct_kernel",
        "kernels/k.cu",
        "//@ exercise: reduce\n//@ entry: k block=1\nint a; // BUG\n",
        Some("must not contain a `BUG` marker"),
        3,
    ),
];

fn header_trials() -> Vec<Trial> {
    HEADERS
        .iter()
        .map(|&(name, path, text, want, line)| {
            Trial::test(format!("header::{name}"), move || {
                expect_parse(parse_file(path, text), &format!("{path}:{line}: "), want)
            })
            .with_kind("host")
        })
        .collect()
}

fn run_cli(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
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

fn cli_trials(root: &Path) -> Vec<Trial> {
    let mut out = Vec::new();
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::list_names_every_case", move || {
            let (code, stdout, stderr) = run_cli(&r, &["list"], &[]);
            let catalog = Catalog::discover(&r).map_err(|e| e.to_string())?;
            if code != 0 {
                return Err(format!("exit {code}: {stderr}").into());
            }
            for c in &catalog.cases {
                if !stdout.contains(&c.name) {
                    return Err(format!("`racegate list` does not show {}", c.name).into());
                }
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::list_json_parses", move || {
            let (code, stdout, _) = run_cli(&r, &["list", "--json"], &[]);
            let v: serde_json::Value = serde_json::from_str(&stdout).map_err(|e| e.to_string())?;
            let n = v.as_array().map(|a| a.len()).unwrap_or(0);
            if code != 0 || n == 0 {
                return Err(format!("exit {code}, {n} cases").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::unknown_case_is_a_usage_error", move || {
            let (code, _, stderr) =
                run_cli(&r, &["stress", "matmul_tiled"], &[("RACEGATE_NO_GPU", "1")]);
            if code != 2
                || !stderr.contains("unknown case `matmul_tiled`")
                || !stderr.contains("matmul_tiled16")
            {
                return Err(format!("exit {code}: {stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::ignorable_test("cli::check_without_a_gpu_compiles_and_exits_4", move || {
            if racegate::toolchain::nvrtc(&r).is_err() && !in_ci() {
                return Ok(Completion::ignored_with(
                    "NVRTC not installed (run ci/setup)",
                ));
            }
            let (code, stdout, stderr) = run_cli(&r, &["check"], &[("RACEGATE_NO_GPU", "1")]);
            if code != 4 || !stdout.contains("no CUDA device") || stdout.contains("FAIL") {
                return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
            }
            Ok(Completion::Completed)
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("cli::zero_kernels_fails_loudly", move || {
            let empty = std::env::temp_dir().join(format!("racegate-empty-{}", std::process::id()));
            std::fs::create_dir_all(empty.join("kernels")).map_err(|e| e.to_string())?;
            let (code, _, stderr) = run_cli(&r, &["--root", empty.to_str().unwrap(), "list"], &[]);
            let _ = std::fs::remove_dir_all(&empty);
            if code != 2 || !stderr.contains("no kernels found") {
                return Err(format!("exit {code}: {stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    out
}

/// Bounds how many GPU trials run at once inside one test process (nextest, which runs a
/// process per test, bounds them with the `gpu` test group in .config/nextest.toml).
struct Slots {
    free: std::sync::Mutex<usize>,
    cv: std::sync::Condvar,
}

impl Slots {
    fn take(&self) -> SlotGuard<'_> {
        let mut n = self.free.lock().unwrap();
        while *n == 0 {
            n = self.cv.wait(n).unwrap();
        }
        *n -= 1;
        SlotGuard(self)
    }
}

struct SlotGuard<'a>(&'a Slots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap() += 1;
        self.0.cv.notify_one();
    }
}

/// The slots every GPU trial of this process shares.
fn gpu_slots() -> std::sync::Arc<Slots> {
    static SLOTS: std::sync::OnceLock<std::sync::Arc<Slots>> = std::sync::OnceLock::new();
    SLOTS
        .get_or_init(|| {
            let jobs = std::env::var("RACEGATE_GPU_JOBS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(8);
            std::sync::Arc::new(Slots {
                free: std::sync::Mutex::new(jobs),
                cv: std::sync::Condvar::new(),
            })
        })
        .clone()
}

fn gpu_trials(
    catalog: &Catalog,
    device: &Result<racegate::device::DeviceInfo, String>,
) -> Vec<Trial> {
    let slots = gpu_slots();
    let mut out = Vec::new();
    for case in &catalog.cases {
        for det in Detector::ALL {
            let expect = case.expectation(det);
            let case = case.clone();
            let catalog = catalog.clone();
            let dev = device.clone();
            let slots = slots.clone();
            out.push(
                Trial::ignorable_test(format!("{}::{}", case.name, det.name()), move || {
                    let dev = match dev {
                        Ok(d) => d,
                        Err(why) => {
                            return Ok(Completion::ignored_with(format!("no CUDA device: {why}")))
                        }
                    };
                    let _slot = slots.take();
                    let cfg = CheckConfig {
                        trials: 50,
                        seed: 1,
                        stress_timeout: Duration::from_secs(5),
                        per_set: 4,
                        sanitize_timeout: Duration::from_secs(30),
                        jobs: 1,
                        arch: dev.arch(),
                        sanitizer: racegate::toolchain::compute_sanitizer(),
                    };
                    let cell = check::run_one(&catalog, &case, det, &cfg, &racegate_exe())
                        .map_err(|e| e.to_string())?;
                    match cell.judgement {
                        Judgement::Ok => Ok(Completion::Completed),
                        Judgement::Inconclusive => Err(format!(
                            "inconclusive (never counted as clean): {:?}\n{}",
                            cell.observed, cell.report
                        )
                        .into()),
                        j => Err(format!(
                            "{j:?}: expected {expect:?}, observed {:?} at {}:{}\n{}",
                            cell.observed,
                            cell.file,
                            cell.line.unwrap_or(0),
                            cell.report
                        )
                        .into()),
                    }
                })
                .with_kind("gpu"),
            );
        }
    }
    out
}

/// Where the sanitizer XML captured by racegate on the H200 lives.
fn fixture_dir(root: &Path) -> PathBuf {
    root.join("harness/tests/fixtures/h200")
}

/// fixture -> records -> findings -> normalized text -> snapshot, for every (case, tool),
/// with no GPU. A hang has no XML: its fixture is a `.hang` file written by the import.
fn snapshot_trials(catalog: &Catalog) -> Vec<Trial> {
    let dir = fixture_dir(&catalog.root);
    let version = std::fs::read_to_string(dir.join("sanitizer-version.txt"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut out = Vec::new();
    for case in &catalog.cases {
        for tool in Tool::ALL {
            let root = catalog.root.clone();
            let stem = snapshot::name(&case.name, tool);
            let xml = dir.join(format!("{stem}.xml"));
            let hang = dir.join(format!("{stem}.hang"));
            let case_name = case.name.clone();
            let version = version.clone();
            out.push(
                Trial::test(format!("snapshot::{}::{}", case.name, tool), move || {
                    let body = if hang.is_file() {
                        "hang (compute-sanitizer and its target killed at the deadline)\n".to_string()
                    } else {
                        let text = std::fs::read_to_string(&xml).map_err(|e| {
                            format!("no fixture {} ({e}); capture it on a GPU with ci/h200_run.py and ci/import-fixtures", xml.display())
                        })?;
                        let records = racegate::sanitize::xml::parse(&text).map_err(|e| format!("{}: {e}", xml.display()))?;
                        let findings = racegate::sanitize::normalize::findings(&records, &root);
                        return check_snapshot(&root, &stem, &snapshot::render(&case_name, tool, &version, &findings));
                    };
                    check_snapshot(&root, &stem, &format!("case: {case_name}\ntool: {tool}\nsanitizer: {version}\n---\n{body}"))
                })
                .with_kind("host"),
            );
        }
    }
    out
}

/// Compares `text` with the stored snapshot through insta (panics with insta's report on a
/// mismatch, which becomes the trial's failure).
fn assert_snapshot(root: &Path, snap_name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshot::dir(root));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_input_file(root.join("harness/src/sanitize/snapshot.rs"));
    settings.bind(|| {
        insta::assert_snapshot!(snap_name, text);
    });
}

fn check_snapshot(root: &Path, stem: &str, text: &str) -> Result<(), Failed> {
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

fn sanitizer_trials(root: &Path) -> Vec<Trial> {
    let mut out = Vec::new();
    let r = root.to_path_buf();
    out.push(
        Trial::ignorable_test(
            "sanitize::a_sanitizer_that_exits_255_is_inconclusive",
            move || {
                if racegate::toolchain::nvrtc(&r).is_err() && !in_ci() {
                    return Ok(Completion::ignored_with(
                        "NVRTC not installed (run ci/setup)",
                    ));
                }
                let dir =
                    std::env::temp_dir().join(format!("racegate-fake-{}", std::process::id()));
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                let fake = dir.join("compute-sanitizer");
                std::fs::write(
                    &fake,
                    "#!/bin/sh\necho '========= Error: Device not supported' >&2\nexit 255\n",
                )
                .map_err(|e| e.to_string())?;
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| e.to_string())?;
                let (code, stdout, stderr) = run_cli(
                    &r,
                    &["sanitize", "matmul_naive", "--tool", "racecheck"],
                    &[("RACEGATE_COMPUTE_SANITIZER", fake.to_str().unwrap())],
                );
                let _ = std::fs::remove_dir_all(&dir);
                if code != 3
                    || !stdout.contains("INCONCLUSIVE")
                    || !stdout.contains("Device not supported")
                {
                    return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
                }
                Ok(Completion::Completed)
            },
        )
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("sanitize::no_sanitizer_is_inconclusive", move || {
            let (code, stdout, stderr) = run_cli(
                &r,
                &["sanitize", "matmul_naive", "--tool", "memcheck"],
                &[
                    (
                        "RACEGATE_COMPUTE_SANITIZER",
                        "/nonexistent/compute-sanitizer",
                    ),
                    ("PATH", "/usr/bin:/bin"),
                    ("CUDA_HOME", "/nonexistent"),
                ],
            );
            if code != 3 || !stdout.contains("INCONCLUSIVE: compute-sanitizer not found") {
                return Err(format!("exit {code}\n{stdout}\n{stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    out
}

fn load_yaml(path: &Path) -> Result<yaml_rust2::Yaml, Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut docs = yaml_rust2::YamlLoader::load_from_str(&text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if docs.len() != 1 {
        return Err(format!("{}: expected one YAML document", path.display()).into());
    }
    Ok(docs.remove(0))
}

/// The CI templates parse as YAML and have the shape their CI systems require.
fn template_trials(root: &Path) -> Vec<Trial> {
    let gh = root.join("ci/github/racegate-gpu.yml");
    let gl = root.join("ci/gitlab/racegate.gitlab-ci.yml");
    vec![
        Trial::test("ci::github_workflow_is_valid", move || {
            let y = load_yaml(&gh)?;
            if y["name"].as_str().is_none() || y["on"].is_badvalue() {
                return Err("a workflow needs `name` and `on`".into());
            }
            let jobs = y["jobs"].as_hash().ok_or("no `jobs` mapping")?;
            for (name, job) in jobs {
                let name = name.as_str().unwrap_or("?");
                if job["runs-on"].is_badvalue()
                    || job["steps"].as_vec().is_none_or(|s| s.is_empty())
                {
                    return Err(format!("job `{name}` needs `runs-on` and `steps`").into());
                }
                for step in job["steps"].as_vec().unwrap() {
                    if step["uses"].is_badvalue() == step["run"].is_badvalue() {
                        return Err(format!(
                            "job `{name}`: every step has exactly one of `uses` and `run`"
                        )
                        .into());
                    }
                }
            }
            let gpu = &y["jobs"]["gpu"];
            let labels: Vec<&str> = gpu["runs-on"]
                .as_vec()
                .ok_or("gpu job: runs-on must be a label list")?
                .iter()
                .filter_map(|l| l.as_str())
                .collect();
            if !labels.contains(&"self-hosted")
                || !labels.contains(&"gpu")
                || gpu["concurrency"].is_badvalue()
            {
                return Err(
                    "the gpu job runs on [self-hosted, gpu] runners with a concurrency group"
                        .into(),
                );
            }
            Ok(())
        })
        .with_kind("host"),
        Trial::test("ci::gitlab_job_is_valid", move || {
            let y = load_yaml(&gl)?;
            let stages: Vec<&str> = y["stages"]
                .as_vec()
                .ok_or("no `stages`")?
                .iter()
                .filter_map(|s| s.as_str())
                .collect();
            let map = y.as_hash().ok_or("not a mapping")?;
            let mut jobs = 0;
            for (k, job) in map {
                let k = k.as_str().unwrap_or("");
                if ["stages", "include", "variables", "default", "workflow"].contains(&k) {
                    continue;
                }
                jobs += 1;
                if job["script"].as_vec().is_none_or(|s| s.is_empty()) {
                    return Err(format!("job `{k}` has no script").into());
                }
                let stage = job["stage"]
                    .as_str()
                    .ok_or(format!("job `{k}` has no stage"))?;
                if !stages.contains(&stage) {
                    return Err(format!("job `{k}`: stage `{stage}` is not in `stages`").into());
                }
            }
            let gpu = &y["racegate:gpu"];
            let tags: Vec<&str> = gpu["tags"]
                .as_vec()
                .ok_or("gpu job has no tags")?
                .iter()
                .filter_map(|t| t.as_str())
                .collect();
            if jobs < 2 || !tags.contains(&"gpu") {
                return Err("expected a build job and a `gpu`-tagged job".into());
            }
            if gpu["artifacts"]["when"].as_str() != Some("always")
                || gpu["artifacts"]["reports"]["junit"].is_badvalue()
            {
                return Err("the gpu job must publish JUnit reports `when: always`".into());
            }
            Ok(())
        })
        .with_kind("host"),
    ]
}

const GOOD_KERNEL: &str = r#"
[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = { n = [1, 100] }
grid = ["ceil_div(n, 256)"]
block = ["256"]
oracle = "determinism"
args = [
  { name = "x", kind = "in", type = "f32", len = "n", gen = "int(0, 8)" },
  { name = "y", kind = "out", type = "f32", len = "n" },
  { name = "n", kind = "scalar", type = "i32", value = "n" },
]
"#;

/// (name, manifest text, expected line, expected text in the message); None: parses.
fn manifest_cases() -> Vec<(&'static str, String, usize, Option<&'static str>)> {
    let good = GOOD_KERNEL.to_string();
    vec![
        ("good", good.clone(), 0, None),
        (
            "unknown_key",
            good.replace("entry = \"k\"", "entry = \"k\"\nentree = 1"),
            6,
            Some("unknown field `entree`"),
        ),
        (
            "missing_source_file",
            good.replace("k.cu", "missing.cu"),
            4,
            Some("`source`: "),
        ),
        (
            "bad_oracle",
            good.replace("\"determinism\"", "\"magic\""),
            9,
            Some("`oracle`: `magic`"),
        ),
        (
            "bad_expression",
            good.replace("ceil_div(n, 256)", "ceil_div(m, 256)"),
            7,
            Some("`grid`"),
        ),
        (
            "bad_type",
            good.replace(
                "type = \"f32\", len = \"n\", gen",
                "type = \"f16\", len = \"n\", gen",
            ),
            11,
            Some("`args.x.type`: `f16`"),
        ),
        (
            "bad_generator",
            good.replace("int(0, 8)", "int(8, 0)"),
            11,
            Some("`args.x.gen`"),
        ),
        (
            "no_output",
            good.replace("kind = \"out\"", "kind = \"in\", gen = \"zeros\""),
            2,
            Some("no out or inout buffer"),
        ),
        (
            "empty_size_range",
            good.replace("[1, 100]", "[100, 1]"),
            6,
            Some("`sizes`"),
        ),
        (
            "duplicate_name",
            format!("{good}{good}"),
            17,
            Some("declared twice"),
        ),
        ("not_toml", "[[kernel]\nname = 1".to_string(), 1, Some("")),
    ]
}

fn manifest_trials(_root: &Path) -> Vec<Trial> {
    manifest_cases()
        .into_iter()
        .map(|(name, text, line, want)| {
            Trial::test(format!("manifest::{name}"), move || {
                let dir = std::env::temp_dir()
                    .join(format!("racegate-manifest-{}-{name}", std::process::id()));
                std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                std::fs::write(dir.join("k.cu"), "extern \"C\" __global__ void k() {}\n")
                    .map_err(|e| e.to_string())?;
                let path = dir.join("racegate.toml");
                let r = racegate::manifest::Manifest::parse(&path, &text);
                let _ = std::fs::remove_dir_all(&dir);
                expect_parse(r, &format!("{}:{line}: ", path.display()), want)
            })
            .with_kind("host")
        })
        .collect()
}

/// `gate -- PROGRAM` end to end without a GPU: a fake compute-sanitizer that refuses the device
/// (inconclusive, never clean), a program whose output changes every run (a new finding, exit
/// 1), then `--update-baseline` (accepted: no new finding, exit 3 for the inconclusive tools).
fn gate_program_trial(root: &Path) -> Trial {
    let r = root.to_path_buf();
    Trial::test("gate::program_findings_and_the_baseline_flow", move || {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("racegate-gate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let script = |name: &str, body: &str| -> Result<PathBuf, Failed> {
            let p = dir.join(name);
            std::fs::write(&p, body).map_err(|e| e.to_string())?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| e.to_string())?;
            Ok(p)
        };
        let fake = script(
            "compute-sanitizer",
            "#!/bin/sh\necho 'Device not supported' >&2\nexit 255\n",
        )?;
        let prog = script("flaky", "#!/bin/sh\ndate +%N\n")?;
        let base = dir.join("baseline.json");
        let env = [("RACEGATE_COMPUTE_SANITIZER", fake.to_str().unwrap())];
        let args = |extra: &[&'static str]| {
            let mut a = vec!["gate", "--baseline", base.to_str().unwrap()];
            a.extend_from_slice(extra);
            a.push("--");
            a.push(prog.to_str().unwrap());
            a.into_iter().map(String::from).collect::<Vec<_>>()
        };
        let call =
            |a: Vec<String>| run_cli(&r, &a.iter().map(String::as_str).collect::<Vec<_>>(), &env);
        let (c1, o1, e1) = call(args(&[]));
        let (c2, o2, _) = call(args(&["--update-baseline"]));
        let (c3, o3, _) = call(args(&[]));
        let _ = std::fs::remove_dir_all(&dir);
        if c1 != 1
            || !o1.contains("NEW      flaky [output]")
            || !o1.contains("INCONCLUSIVE flaky [racecheck]")
        {
            return Err(format!("first run: exit {c1}\n{o1}\n{e1}").into());
        }
        if c2 != 3 || !o2.contains("baseline written") {
            return Err(format!("update: exit {c2}\n{o2}").into());
        }
        if c3 != 3 || !o3.contains("accepted flaky [output]") || o3.contains("NEW ") {
            return Err(format!("after the baseline: exit {c3}\n{o3}").into());
        }
        Ok(())
    })
    .with_kind("host")
}

/// Checks a parse result: success when `want` is None, else an error starting with `prefix`
/// (file:line) and containing `want`.
fn expect_parse<T: std::fmt::Debug>(
    r: Result<T, racegate::Error>,
    prefix: &str,
    want: Option<&str>,
) -> Result<(), Failed> {
    match (r, want) {
        (Ok(_), None) => Ok(()),
        (Ok(p), Some(w)) => Err(format!("expected an error containing `{w}`, parsed {p:?}").into()),
        (Err(e), None) => Err(format!("expected success, got: {e}").into()),
        (Err(e), Some(w)) => {
            let msg = e.to_string();
            if msg.starts_with(prefix) && msg.contains(w) {
                Ok(())
            } else {
                Err(format!("expected `{prefix}...{w}...`, got `{msg}`").into())
            }
        }
    }
}

/// The sample submissions and the grade each must get (harness/tests/submissions/EXERCISE/,
/// each folder with its expected.toml).
fn grade_trials(root: &Path, device: &Result<racegate::device::DeviceInfo, String>) -> Vec<Trial> {
    let base = root.join("harness/tests/submissions");
    let mut exercises: Vec<String> = std::fs::read_dir(&base)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    exercises.sort();
    let mut out = Vec::new();
    if exercises.len() < 6 {
        out.push(Trial::test(
            "grade::every_exercise_has_samples",
            move || {
                Err(format!("harness/tests/submissions has samples for {exercises:?} only").into())
            },
        ));
        return out;
    }
    for exercise in exercises {
        let dir = base.join(&exercise);
        let expected: toml::Table = match std::fs::read_to_string(dir.join("expected.toml"))
            .map(|t| t.parse::<toml::Table>())
        {
            Ok(Ok(t)) => t,
            _ => {
                out.push(Trial::test(
                    format!("grade::{exercise}::expected_toml_parses"),
                    move || {
                        Err(format!("{}/expected.toml is missing or invalid", dir.display()).into())
                    },
                ));
                continue;
            }
        };
        let unlisted: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "cu"))
                    .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                    .filter(|stem| !expected.contains_key(stem))
                    .collect()
            })
            .unwrap_or_default();
        out.push(Trial::test(
            format!("grade::host::{exercise}::every_sample_has_an_expected_grade"),
            move || match unlisted.is_empty() {
                true => Ok(()),
                false => Err(format!("no entry in expected.toml for {unlisted:?}").into()),
            },
        ));
        for (name, want) in expected {
            out.extend(sample_trials(
                root,
                device,
                &exercise,
                &dir.join(format!("{name}.cu")),
                want,
            ));
        }
    }
    // GPU: the performance item, timed against the course's reference kernel.
    let r = root.to_path_buf();
    let dev = device.clone();
    out.push(
        Trial::ignorable_test("grade::gpu::reduce::performance", move || {
            if let Err(why) = &dev {
                return Ok(Completion::ignored_with(format!("no CUDA device: {why}")));
            }
            let slots = gpu_slots();
            let _slot = slots.take();
            let dir = r.join("harness/tests/submissions/reduce");
            let rubric = dir.join("rubric-performance.toml");
            let g = grade_json(
                &r,
                "reduce",
                &dir.join("correct.cu"),
                &["--rubric", rubric.to_str().unwrap()],
                &[],
                0,
            )?;
            let perf = g["items"]
                .as_array()
                .and_then(|a| a.iter().find(|i| i["item"] == "performance"))
                .cloned()
                .unwrap_or_default();
            // Timed, not judged: other GPU trials may run beside it, so the ratio varies.
            if g["max_score"] != 110.0
                || !(perf["status"] == "passed" || perf["status"] == "partial")
                || !perf["detail"]
                    .as_str()
                    .unwrap_or("")
                    .contains("vs the reference's")
            {
                return Err(format!("{g}").into());
            }
            Ok(Completion::Completed)
        })
        .with_kind("gpu"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("grade::host::batch_of_student_folders", move || {
            let dir = std::env::temp_dir().join(format!("racegate-batch-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let samples = r.join("harness/tests/submissions/reduce");
            let put = |to: &str, from: &str| -> Result<(), Failed> {
                let to = dir.join(to);
                std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
                std::fs::copy(samples.join(from), to).map_err(|e| e.to_string())?;
                Ok(())
            };
            put("alice/reduce.cu", "correct.cu")?;
            put("bob/reduce.cu", "wrong_name.cu")?;
            put("carol.cu", "correct.cu")?;
            put(".git/hooks.cu", "correct.cu")?;
            put("alice/notes.txt", "correct.cu")?;
            let (code, csv, stderr) = run_cli(
                &r,
                &["grade", "--exercise", "reduce", dir.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            std::fs::create_dir_all(dir.join("empty")).map_err(|e| e.to_string())?;
            let (empty_code, _, empty_err) = run_cli(
                &r,
                &[
                    "grade",
                    "--exercise",
                    "reduce",
                    dir.join("empty").to_str().unwrap(),
                ],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let _ = std::fs::remove_dir_all(&dir);
            let rows: Vec<&str> = csv.lines().skip(1).collect();
            let score = |who: &str| {
                rows.iter()
                    .find(|l| l.contains(who))
                    .and_then(|l| l.split(',').nth(1))
                    .map(str::to_string)
            };
            if code != 4
                || rows.len() != 3
                || score("alice/reduce.cu").as_deref() != Some("10")
                || score("bob/reduce.cu").as_deref() != Some("0")
                || score("carol.cu").as_deref() != Some("10")
            {
                return Err(format!("exit {code}\n{csv}\n{stderr}").into());
            }
            if empty_code != 2 || !empty_err.contains("no .cu submissions in") {
                return Err(format!("empty folder: exit {empty_code}: {empty_err}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("grade::host::huge_file", move || {
            let dir = std::env::temp_dir().join(format!("racegate-huge-{}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let f = dir.join("huge.cu");
            std::fs::write(&f, "// padding\n".repeat(30_000)).map_err(|e| e.to_string())?;
            let (code, stdout, _) = run_cli(
                &r,
                &["grade", "--exercise", "reduce", f.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let _ = std::fs::remove_dir_all(&dir);
            if code != 4
                || !stdout.contains("submissions are limited to 262144 bytes")
                || !stdout.contains(": 0 / 100")
            {
                return Err(format!("exit {code}\n{stdout}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    let r = root.to_path_buf();
    out.push(
        Trial::test("grade::host::batch_csv_and_formats", move || {
            let dir = r.join("harness/tests/submissions/reduce");
            let (code, csv, stderr) = run_cli(
                &r,
                &["grade", "--exercise", "reduce", dir.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let rows: Vec<&str> = csv.lines().collect();
            let files = std::fs::read_dir(&dir)
                .map_err(|e| e.to_string())?
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "cu"))
                .count();
            if code != 4
                || !rows[0].starts_with("submission,score,max_score,compiles,correct")
                || rows.len() != files + 1
            {
                return Err(format!(
                    "exit {code}, {} rows for {files} files\n{csv}\n{stderr}",
                    rows.len()
                )
                .into());
            }
            let one = dir.join("correct.cu");
            let (_, gs, _) = run_cli(
                &r,
                &[
                    "grade",
                    "--exercise",
                    "reduce",
                    "--format",
                    "gradescope",
                    one.to_str().unwrap(),
                ],
                &[("RACEGATE_NO_GPU", "1")],
            );
            let v: serde_json::Value = serde_json::from_str(&gs).map_err(|e| e.to_string())?;
            if v["score"] != 10.0 || v["tests"].as_array().map(|a| a.len()) != Some(6) {
                return Err(format!("gradescope output: {gs}").into());
            }
            let (code, _, stderr) = run_cli(
                &r,
                &["grade", "--exercise", "reduction", one.to_str().unwrap()],
                &[("RACEGATE_NO_GPU", "1")],
            );
            if code != 2 || !stderr.contains("no exercise `reduction`; known exercises:") {
                return Err(format!("unknown exercise: exit {code}: {stderr}").into());
            }
            Ok(())
        })
        .with_kind("host"),
    );
    out
}

/// The host and GPU trials of one sample submission.
fn sample_trials(
    root: &Path,
    device: &Result<racegate::device::DeviceInfo, String>,
    exercise: &str,
    file: &Path,
    want: toml::Value,
) -> Vec<Trial> {
    let name = file
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let file = file.to_path_buf();
    let mut out = Vec::new();
    let want = want.as_table().cloned().unwrap_or_default();
    let r = root.to_path_buf();
    let (f, w, ex) = (file.clone(), want.clone(), exercise.to_string());
    // Host: the file checks, the signature check and compilation, with no GPU.
    out.push(
        Trial::test(format!("grade::host::{exercise}::{name}"), move || {
            let g = grade_json(&r, &ex, &f, &[], &[("RACEGATE_NO_GPU", "1")], 4)?;
            let compiles = &g["items"][0];
            let status = compiles["status"].as_str().unwrap_or("");
            if Some(status) != w.get("compiles").and_then(|v| v.as_str()) {
                return Err(format!(
                    "compiles: {status}, expected {:?}\n{}",
                    w.get("compiles"),
                    compiles["detail"]
                )
                .into());
            }
            if let Some(m) = w.get("message").and_then(|v| v.as_str()) {
                if !compiles["detail"].as_str().unwrap_or("").contains(m) {
                    return Err(format!("the message lacks `{m}`: {}", compiles["detail"]).into());
                }
            }
            Ok(())
        })
        .with_kind("host"),
    );
    // GPU: the whole grade.
    let r = root.to_path_buf();
    let dev = device.clone();
    let ex2 = exercise.to_string();
    out.push(
        Trial::ignorable_test(format!("grade::gpu::{exercise}::{name}"), move || {
            if let Err(why) = &dev {
                return Ok(Completion::ignored_with(format!("no CUDA device: {why}")));
            }
            let slots = gpu_slots();
            let _slot = slots.take();
            let g = grade_json(
                &r,
                &ex2,
                &file,
                &[],
                &[("RACEGATE_GRADE_SECRET", "ci-secret")],
                0,
            )?;
            let stdout = g.to_string();
            let score = g["score"].as_f64().unwrap_or(-1.0);
            if let Some(s) = want
                .get("score")
                .and_then(|v| v.as_integer().map(|i| i as f64).or(v.as_float()))
            {
                if (score - s).abs() > 1e-9 {
                    return Err(format!("score {score}, expected {s}\n{stdout}").into());
                }
            }
            if let Some(m) = want
                .get("max_total")
                .and_then(|v| v.as_integer().map(|i| i as f64).or(v.as_float()))
            {
                if score > m {
                    return Err(format!(
                        "score {score} is above the most it may earn ({m})\n{stdout}"
                    )
                    .into());
                }
            }
            for item in ["correct", "racecheck", "synccheck", "memcheck", "initcheck"] {
                if let Some(st) = want.get(item).and_then(|v| v.as_str()) {
                    let got = g["items"]
                        .as_array()
                        .and_then(|a| a.iter().find(|i| i["item"] == item))
                        .map(|i| i["status"].as_str().unwrap_or("").to_string());
                    let ok = match st {
                        "failed" => matches!(got.as_deref(), Some("failed") | Some("partial")),
                        other => got.as_deref() == Some(other),
                    };
                    if !ok {
                        return Err(format!("{item}: {got:?}, expected {st}\n{stdout}").into());
                    }
                }
            }
            Ok(Completion::Completed)
        })
        .with_kind("gpu"),
    );
    out
}

/// `racegate grade --exercise EXERCISE --format json [EXTRA] FILE`, which must exit with `code`;
/// its JSON.
fn grade_json(
    root: &Path,
    exercise: &str,
    file: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
    code: i32,
) -> Result<serde_json::Value, Failed> {
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
    args.push(file.to_str().unwrap());
    let (got, stdout, stderr) = run_cli(root, &args, env);
    if got != code {
        return Err(format!("exit {got} (expected {code})\n{stderr}").into());
    }
    serde_json::from_str(&stdout).map_err(|e| format!("{e}: {stdout}").into())
}
