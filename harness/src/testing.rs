//! racegate from a user's own `cargo test` (cargo feature `testing`): each kernel of a
//! `racegate.toml` times each detector (stress with the kernel's oracle, and the
//! compute-sanitizer tools) becomes one libtest-mimic trial, `KERNEL::DETECTOR`, and each kernel
//! gets one host trial, `KERNEL::compile`, that needs no GPU: NVRTC builds its source and the
//! manifest's launches match the PTX (the entry exists, the arguments agree in number and
//! width) and the kernel's declaration (each buffer's element type), the checks `racegate
//! compile` makes. The workers re-execute the test binary itself
//! through racegate's hidden worker subcommands (nextest's double-spawn shape), so no racegate
//! binary is needed; [`main`] therefore recognizes the worker arguments first, before
//! libtest-mimic parses anything.
//!
//! Without a CUDA device every GPU trial is listed as ignored (decided when the list is made, so
//! `cargo nextest run` reports them as skipped) and a note on stderr says why; one run anyway
//! (`--ignored`, `--include-ignored`, nextest's `--run-ignored`) fails with "no CUDA device",
//! never passes. Without NVRTC the compile trials run and fail, CI or not (compiling needs no
//! GPU, and a missing tool is never a pass), naming the one command that installs it from the
//! crate itself: `cargo test --test NAME -- --racegate-setup` ([`SETUP_ARG`]: the test binary
//! runs what `racegate setup` runs, so a dev-dependency needs no racegate binary).
//!
//! A test target with `harness = false` (`tests/racegate.rs`):
//!
//! ```no_run
//! // tests/racegate.rs: the whole file is `fn main` with this one line.
//! racegate::testing::main("racegate.toml");
//! ```
//!
//! Behind a feature so that libtest-mimic is no dependency of the `racegate` binary or of
//! library users who do not write tests this way.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use crate::build::toolchain;
use crate::gate::{GateConfig, GateRun};
use crate::judge::battery::Battery;
use crate::judge::sanitize::Tool;
use crate::source::catalog::{Case, Catalog};
use crate::source::manifest::{Check, Manifest};
use crate::{run::device, Result};

/// What every trial runs with. Defaults: those of `racegate gate` (100 stress trials, a
/// 10 s stress deadline, a 120 s sanitizer deadline, one process per trial).
#[derive(Clone, Debug)]
pub struct Options {
    /// Stress trials per kernel (default 100).
    pub trials: u32,
    /// Deadline of each stress trial (default 10 s).
    pub stress_timeout: Duration,
    /// Deadline of each sanitizer run (default 120 s).
    pub sanitize_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            trials: 100,
            stress_timeout: Duration::from_secs(10),
            sanitize_timeout: Duration::from_secs(120),
        }
    }
}

/// The whole `main` of a `harness = false` test target: serves worker re-executions, else
/// lists and runs the trials of `manifest` with default [`Options`], and exits with
/// libtest's code (a manifest that does not load exits 2 with the error). A relative
/// `manifest` is read from the crate's folder as known when the tests run
/// ([`crate_file`]), so a nextest archive run on another machine finds it.
pub fn main(manifest: impl AsRef<Path>) -> ! {
    run_worker_if_requested();
    setup_if_requested();
    let args = Arguments::from_args();
    match trials_from_manifest(&crate_file(manifest.as_ref()), &Options::default()) {
        Ok(trials) => libtest_mimic::run(&args, trials).exit(),
        Err(e) => {
            eprintln!(
                "error: {}",
                crate::report::visible::visible(&e.chain().to_string())
            );
            std::process::exit(i32::from(e.exit_code()));
        }
    }
}

/// `path` under the crate's folder: `$CARGO_MANIFEST_DIR` at run time (cargo test sets it;
/// nextest sets it too, remapped for an archive run elsewhere, where the folder as it was at
/// build time would name the build machine's), else the current folder.
/// Absolute paths are returned unchanged.
pub fn crate_file(path: &Path) -> std::path::PathBuf {
    match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(dir) if path.is_relative() => Path::new(&dir).join(path),
        _ => path.to_path_buf(),
    }
}

pub use crate::api::run_worker_if_requested;

/// The argument that makes a test binary of [`main`] install NVRTC instead of testing:
/// `cargo test --test NAME -- --racegate-setup` runs what `racegate setup` runs (the pinned
/// 13.0 wheels with `$PYTHON -m pip`, else `python3`, into racegate's cache) and exits 0, or 3
/// when python, pip or the network fails.
pub const SETUP_ARG: &str = "--racegate-setup";

/// Serves [`SETUP_ARG`] when it is this process's first argument, and exits; else returns.
pub fn setup_if_requested() {
    if std::env::args_os().nth(1).as_deref() != Some(std::ffi::OsStr::new(SETUP_ARG)) {
        return;
    }
    let python = std::env::var("PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".to_string());
    eprintln!(
        "racegate setup: installing {} (pip, with {python})",
        crate::build::setup::NVRTC_WHEELS.join(" ")
    );
    match crate::build::setup::install(&python, false) {
        Ok(done) => {
            eprintln!(
                "racegate setup: NVRTC 13.0 {} {}",
                if done.changed {
                    "installed into"
                } else {
                    "already installed in"
                },
                done.dir.display()
            );
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!(
                "error: {}",
                crate::report::visible::visible(&e.chain().to_string())
            );
            std::process::exit(i32::from(e.exit_code()))
        }
    }
}

/// The test target a binary named `name` was built from: cargo writes a target's `-` as `_` in
/// the binary's name, so `tests/my-trials.rs` (target `my-trials`) is found by that file.
fn target_named(name: &str) -> String {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
    let hyphened = dir
        .and_then(|d| std::fs::read_dir(d.join("tests")).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "rs")
                .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))?
        })
        .find(|stem| stem.contains('-') && stem.replace('-', "_") == name);
    hyphened.unwrap_or_else(|| name.to_string())
}

/// The command that installs NVRTC from this crate's own tests: the test target's name is this
/// binary's file name less cargo's `-HASH`.
pub fn setup_command() -> String {
    let target = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|stem| match stem.rsplit_once('-') {
            Some((name, hash))
                if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                name.to_string()
            }
            _ => stem,
        })
        .map(|name| target_named(&name))
        .unwrap_or_else(|| "racegate".to_string());
    format!("cargo test --test {target} -- {SETUP_ARG}")
}

/// The trials of the manifest at `path`: per kernel, first `KERNEL::compile` (host: the
/// kernel builds and its launches match the PTX, as `racegate compile` checks), then one GPU
/// trial per detector, `KERNEL::stress` where the oracle is not `none`, and `KERNEL::racecheck`,
/// `::synccheck`, `::memcheck`, `::initcheck`, `::globalcheck`, `::sharedcheck`, `::fencecheck`. A GPU trial fails on any finding
/// (with the findings as its message) and on an inconclusive run (never counted as clean).
/// Without a CUDA device the GPU trials are listed as ignored, with a note saying why, and fail
/// with "no CUDA device" when run anyway; without NVRTC the compile trials run and fail, naming
/// the command that installs it ([`setup_command`]).
///
/// `KERNEL::globalcheck` and `KERNEL::sharedcheck` share one injected run under `cargo test`
/// (trials are threads of one process): the first of the two to start runs both tools and
/// leaves the other's result for it (a filter that selects only one still makes that run).
/// Under nextest (a process per trial, `NEXTEST` set) each runs its own tool alone.
///
/// A `main` of one's own that calls this calls [`run_worker_if_requested`] and
/// [`setup_if_requested`] first, as [`main`] does: the compile trials' failure without NVRTC
/// names `--racegate-setup`, which only they serve.
pub fn trials_from_manifest(path: &Path, options: &Options) -> Result<Vec<Trial>> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let catalog = Catalog::from_manifest(Manifest::load(&path)?);
    let device = device::probe();
    if let Err(why) = &device {
        eprintln!("note: racegate GPU trials are ignored: no CUDA device: {why}");
    }
    // Looked for once, when the list is made. Compiling needs no GPU: a missing NVRTC fails the
    // compile trials (never ignored: nextest would count a skip, and the crate would be green
    // without a kernel built).
    let no_nvrtc: Option<Arc<str>> = toolchain::nvrtc().err().map(|e| {
        let why = format!(
            "NVRTC is not installed, so no kernel can be compiled ({e}); install it once with \
             `{}` (the pinned NVRTC 13.0 wheels, with pip, into racegate's cache), or install a \
             CUDA toolkit",
            setup_command()
        );
        eprintln!("error: racegate compile trials fail: {why}");
        Arc::from(why)
    });
    let exe = std::env::current_exe()
        .map_err(|e| crate::Error::process("no path to this test binary", e))?;
    let share_own_run = std::env::var_os("NEXTEST").is_none();
    let mut out = Vec::new();
    for case in &catalog.cases {
        let kernel = only(&catalog, &case.name);
        let pair: Arc<OwnPair> = Arc::default();
        out.push(Trial::test(format!("{}::compile", case.name), {
            let no_nvrtc = no_nvrtc.clone();
            move || {
                if let Some(why) = no_nvrtc {
                    return Err(Failed::from(why.to_string()));
                }
                // The check `racegate compile` makes first: it builds, the entry, the arguments.
                device::check_signatures(&kernel, false).map_err(|e| Failed::from(e.to_string()))
            }
        }));
        let stressed = case.kernel_spec().is_some_and(|k| k.check != Check::None);
        let detectors = stressed
            .then_some(None)
            .into_iter()
            .chain(Tool::KERNELS.iter().map(|t| Some(*t)));
        for tool in detectors {
            let name = format!("{}::{}", case.name, tool.map_or("stress", |t| t.name()));
            let (catalog, case, exe, device, options, pair) = (
                catalog.clone(),
                case.clone(),
                exe.clone(),
                device.clone(),
                options.clone(),
                pair.clone(),
            );
            let ignored = device.is_err();
            out.push(
                Trial::ignorable_test(name, move || {
                    // Runs without a device only when asked to run ignored tests: nextest judges
                    // by the exit code, so a runtime "ignored" would pass there. It fails.
                    let dev =
                        device.map_err(|why| Failed::from(format!("no CUDA device: {why}")))?;
                    let arch = dev.arch();
                    match tool {
                        Some(own) if OWN.contains(&own) && share_own_run => {
                            judge(pair.take(own, || {
                                let cfg = gate_config(Some(own), &options, &arch)?;
                                crate::gate::manifest_run::own_tools::run_own_pair(
                                    &catalog, &case, &cfg, &exe,
                                )
                            })?)
                        }
                        _ => judge(one(&catalog, &case, tool, &options, &arch, &exe)?),
                    }
                })
                .with_ignored_flag(ignored),
            );
        }
    }
    Ok(out)
}

/// `catalog` narrowed to the kernel `name`: what the signature check of that kernel alone reads.
fn only(catalog: &Catalog, name: &str) -> Catalog {
    let mut one = catalog.clone();
    one.cases.retain(|c| c.name == name);
    if let Some(m) = &catalog.manifest {
        one.manifest = Some(Arc::new(Manifest {
            kernels: m
                .kernels
                .iter()
                .filter(|k| k.name == name)
                .cloned()
                .collect(),
            ..(**m).clone()
        }));
    }
    one
}

/// racegate's own tools among the trials' detectors (globalcheck, sharedcheck), in the order
/// their results come from [`crate::gate::manifest_run::own_tools::run_own_pair`].
const OWN: [Tool; 2] = [Tool::Globalcheck, Tool::Sharedcheck];

/// The globalcheck and sharedcheck trials of one kernel: whichever starts first makes the one
/// run for both ([`crate::gate::manifest_run::own_tools::run_own_pair`]) and leaves the other's result
/// here; a failure to run is given to both.
#[derive(Default)]
struct OwnPair(std::sync::Mutex<Option<std::result::Result<Vec<GateRun>, String>>>);

impl OwnPair {
    /// `tool`'s result (globalcheck or sharedcheck), running both with `run` if neither has run.
    fn take(
        &self,
        tool: Tool,
        run: impl FnOnce() -> Result<Vec<GateRun>>,
    ) -> std::result::Result<GateRun, Failed> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let runs = slot.get_or_insert_with(|| run().map_err(|e| e.chain().to_string()));
        let runs = runs.as_ref().map_err(|e| Failed::from(e.clone()))?;
        let at = OWN.iter().position(|t| *t == tool);
        at.and_then(|at| runs.get(at))
            .cloned()
            .ok_or_else(|| Failed::from(format!("no {tool} result from the shared run")))
    }
}

/// Runs one detector on one kernel, as `racegate gate` would.
fn one(
    catalog: &Catalog,
    case: &Case,
    tool: Option<Tool>,
    options: &Options,
    arch: &str,
    exe: &Path,
) -> Result<GateRun> {
    let cfg = gate_config(tool, options, arch)?;
    crate::gate::manifest_run::run_one(catalog, case, tool, &cfg, exe)
}

/// The gate's settings for one trial of `tool` (`None`: stress).
fn gate_config(tool: Option<Tool>, options: &Options, arch: &str) -> Result<GateConfig> {
    Ok(GateConfig {
        // Seed 1, as the gate: a rerun sees the same inputs.
        battery: Battery {
            arch: arch.to_string(),
            // One process per trial: libtest runs the trials in parallel.
            ..Battery::for_machine(
                options.trials,
                1,
                options.stress_timeout,
                options.sanitize_timeout,
                Some(1),
            )
        },
        runs: 1,
        tools: tool.into_iter().collect(),
        sanitizer_args: Vec::new(),
        masks: crate::gate::masks::Masks::new(&[], true)?,
        oracles: Default::default(),
        jitter: true,
        shrink: None,
        program_timeout: None,
        program_sanitize_timeout: None,
        sampling: Some(Default::default()),
        tools_chosen: false,
    })
}

/// Clean passes; findings or an inconclusive run fail, each on a line of the message.
fn judge(run: GateRun) -> std::result::Result<Completion, Failed> {
    if run.findings.is_empty() && run.inconclusive.is_empty() {
        return Ok(Completion::Completed);
    }
    let mut lines: Vec<String> = run
        .findings
        .iter()
        .map(|f| {
            format!(
                "{}:{} [{}] {}: {}",
                f.file,
                f.line.unwrap_or(0),
                f.id.detector,
                f.id.kind,
                f.message
            )
        })
        .collect();
    lines.extend(
        run.inconclusive
            .iter()
            .map(|i| format!("inconclusive [{}]: {}", i.detector, i.reason)),
    );
    Err(lines.join("\n").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_of(seconds: f64) -> GateRun {
        GateRun {
            seconds,
            ..Default::default()
        }
    }

    #[test]
    fn the_setup_command_names_the_test_target_without_cargos_hash() {
        // This unit-test binary is `racegate-<16 hex digits>`: the target's name is `racegate`.
        let c = setup_command();
        assert!(c.starts_with("cargo test --test "), "{c}");
        assert!(c.ends_with(" -- --racegate-setup"), "{c}");
        let target = &c["cargo test --test ".len()..c.len() - " -- --racegate-setup".len()];
        assert!(!target.is_empty() && !target.contains('-'), "{c}");
    }

    #[test]
    fn the_own_tools_trials_share_one_run_and_each_gets_its_own_result() {
        let pair = OwnPair::default();
        let calls = std::sync::atomic::AtomicU32::new(0);
        let run = || {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(vec![run_of(1.0), run_of(2.0)])
        };
        assert_eq!(pair.take(Tool::Sharedcheck, run).unwrap().seconds, 2.0);
        assert_eq!(pair.take(Tool::Globalcheck, run).unwrap().seconds, 1.0);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        // A run that could not be made fails both trials, with its reason.
        let broken = OwnPair::default();
        let fail = || Err(crate::Error::Child("no tool".into()));
        for t in OWN {
            let e = broken.take(t, fail).unwrap_err();
            assert!(format!("{e:?}").contains("no tool"), "{e:?}");
        }
    }
}
