//! Values several commands derive from their flags and the machine, worked out in one place
//! (ripgrep's `HiArgs` shape): the root, the catalog (built-in or a manifest), the number of
//! processes at once, racegate's own executable (the worker the engine spawns), the NVRTC
//! architecture and compute-sanitizer. Also the small pieces of I/O every command shares.

use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::judge::battery::Battery;
use crate::source::catalog::Catalog;
use crate::{build::toolchain, run::device, Error, Result};

/// Options every command takes.
#[derive(clap::Args)]
pub struct Global {
    /// Project root (holds kernels/ and buggy_variants/); default: the nearest ancestor of
    /// the current directory that has a kernels/ folder.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Use the kernels of a racegate.toml manifest instead of kernels/ and buggy_variants/
    /// (default: ./racegate.toml when the current folder has one and --root is not given).
    #[arg(long, global = true, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

/// Derived once per invocation.
pub struct Settings {
    /// Processes (stress workers and sanitizers) at once.
    pub jobs: usize,
    /// racegate's own executable, re-run through the hidden worker subcommands.
    pub worker: PathBuf,
    /// NVRTC virtual architecture: the device's, else `compute_90`.
    pub arch: String,
    /// compute-sanitizer; `None` when it is not installed.
    pub sanitizer: Option<PathBuf>,
}

impl Settings {
    /// `jobs`: the flag's value; default: the number of cores.
    pub fn new(jobs: Option<usize>) -> Result<Settings> {
        Ok(Settings {
            jobs: jobs.unwrap_or_else(crate::judge::battery::default_jobs),
            worker: crate::judge::battery::current_worker()?,
            arch: device::arch_or_default(),
            sanitizer: toolchain::compute_sanitizer(),
        })
    }
}

impl Settings {
    /// The battery `check` and `gate` run: deadlines in seconds, as the flags give them.
    pub fn battery(
        &self,
        trials: u32,
        seed: u64,
        stress_timeout: f64,
        sanitize_timeout: f64,
    ) -> Battery {
        Battery {
            arch: self.arch.clone(),
            sanitizer: self.sanitizer.clone(),
            ..Battery::for_machine(
                trials,
                seed,
                Duration::from_secs_f64(stress_timeout),
                Duration::from_secs_f64(sanitize_timeout),
                Some(self.jobs),
            )
        }
    }
}

/// `--root`, else the project root above the current folder, else the current folder: for
/// commands that work anywhere (`doctor`).
pub fn root_or_cwd(global: &Global) -> PathBuf {
    root(global).unwrap_or_else(|_| std::env::current_dir().unwrap_or_else(|_| ".".into()))
}

/// The project root: `--root`, else the nearest ancestor of the current folder with `kernels/`
/// or `racegate.toml`.
pub fn root(global: &Global) -> Result<PathBuf> {
    if let Some(r) = &global.root {
        return Ok(r.clone());
    }
    let cwd = current_dir()?;
    toolchain::find_root(&cwd).ok_or_else(|| {
        Error::Usage(format!(
            "no kernels/ folder in {} or any parent; run racegate from a project, or pass --root DIR",
            cwd.display()
        ))
    })
}

pub fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| Error::Usage(format!("no current directory: {e}")))
}

/// The cases the command works on: the manifest's kernels with `--manifest` (or `manifest`, a
/// command's own default, or `./racegate.toml` when the current folder has one and `--root`
/// does not point elsewhere), else the built-in catalog under the root.
pub fn catalog(global: &Global, manifest: Option<&Path>) -> Result<Catalog> {
    let local = Path::new(crate::source::manifest::FILE);
    // A worker child gets --root or --manifest from its parent, so this never changes which
    // catalog a child loads.
    let found = (global.root.is_none() && local.is_file()).then_some(local);
    match global.manifest.as_deref().or(manifest).or(found) {
        Some(m) => {
            if !m.is_file() {
                return Err(Error::Usage(format!(
                    "no manifest at {}; write one (see examples/gate/racegate.toml) or pass --manifest FILE",
                    m.display()
                )));
            }
            let m = std::fs::canonicalize(m).unwrap_or_else(|_| m.to_path_buf());
            Ok(Catalog::from_manifest(
                crate::source::manifest::Manifest::load(&m)?,
            ))
        }
        None => Catalog::discover(&root(global)?),
    }
}

/// Checks a manifest's kernels against their compiled code (a wrong entry or argument list is
/// bad input, exit 2) before anything runs; a no-op for the built-in catalog. Without NVRTC
/// the check cannot run: a command that needs a device says so first (4 comes before 3).
pub fn validate(catalog: &Catalog, needs_device: bool) -> Result<()> {
    crate::run::device::check_signatures(catalog, needs_device)
}

/// Fails with "no CUDA device" (exit 4) when there is none.
pub fn require_device() -> Result<device::DeviceInfo> {
    device::require()
}

/// A seed nobody chose: different on every call.
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) >> 16
}

/// Writes a report file the user asked for.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io("writing", path, e))
}

/// Serializes a result for `--json`.
pub fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).expect("results serialize")
}

/// A progress bar for `len` steps counted in `unit`; hidden when `hidden`.
pub fn progress(len: u64, unit: &str, hidden: bool) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {{pos}}/{{len}} {unit} [{{elapsed}}] {{msg}}"
        ))
        .expect("valid template"),
    );
    bar
}
