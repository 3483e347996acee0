//! The gate from Rust code: for users who build and launch their kernels themselves and want
//! `racegate gate`'s verdict on a `racegate.toml` as typed results, without the command line.
//!
//! [`Gate::from_manifest`] loads the manifest; builder methods change the defaults (each says
//! its own, the same as `racegate gate`'s flags); [`Gate::run`] runs every kernel under stress
//! and the sanitizers and returns a [`GateRun`]; [`Gate::diff`] compares it with a baseline.
//!
//! ```no_run
//! use racegate::Gate;
//!
//! racegate::api::run_worker_if_requested(); // first in `main`: this program is the worker
//! let gate = Gate::from_manifest("racegate.toml")?.trials(20).jobs(4);
//! let run = gate.run()?;
//! for f in &run.findings {
//!     println!("{} [{}] {}", f.location(), f.detector(), f.message);
//! }
//! let diff = gate.diff(&run, "racegate-baseline.json")?;
//! assert!(diff.new.is_empty(), "new findings: {:?}", diff.new);
//! # Ok::<(), racegate::Error>(())
//! ```
//!
//! The stress workers and sanitizer targets re-execute a worker: by default the running
//! executable, which must then serve racegate's worker subcommands first thing in `main`
//! ([`run_worker_if_requested`]); or name an installed `racegate` with [`Gate::worker`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Parser;

use crate::gate::masks::Masks;
use crate::gate::{self, Baseline, GateConfig};
use crate::judge::battery::{self, Battery};
use crate::source::catalog::Catalog;
use crate::source::manifest::Manifest;
use crate::{cli::workers, run::device, Error, Result};

// Every type the public API reaches is named here: the results and what they hold
// (`Diff::relabelled` holds `Relabelled`, `GateRun::library_reports` a `LibraryReport` and its
// `KnownFalsePositive`) and `GateRun::events`' `GateEvent`. The results are
// `#[non_exhaustive]`: racegate makes them, a user reads them.
pub use crate::gate::finding::LibraryReport;
pub use crate::gate::{
    Accepted, Checked, Detection, Diff, GateEvent, GateFinding, GateRun, Identity, Inconclusive,
    Relabelled,
};
pub use crate::judge::sanitize::known_false_positives::KnownFalsePositive;
pub use crate::judge::sanitize::Tool;

/// A gate on the kernels of one `racegate.toml`, with its options.
#[derive(Clone, Debug)]
pub struct Gate {
    catalog: Catalog,
    trials: u32,
    seed: u64,
    stress_timeout: Duration,
    sanitize_timeout: Duration,
    jobs: Option<usize>,
    tools: Vec<Tool>,
    sanitizer_args: Vec<String>,
    worker: Option<PathBuf>,
    adopt_orphans: bool,
}

impl Gate {
    /// Loads the manifest at `path` (its kernels, sizes, oracles and `[[program]]` tables), with
    /// every option at its default. A missing or malformed manifest is bad input (exit 2).
    pub fn from_manifest(path: impl AsRef<Path>) -> Result<Gate> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(Error::Usage(format!(
                "no manifest at {}; write one (see examples/gate/racegate.toml)",
                path.display()
            )));
        }
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(Gate {
            catalog: Catalog::from_manifest(Manifest::load(&path)?),
            trials: 100,
            seed: 1,
            stress_timeout: Duration::from_secs(10),
            sanitize_timeout: Duration::from_secs(120),
            jobs: None,
            tools: Tool::KERNELS.to_vec(),
            sanitizer_args: Vec::new(),
            worker: None,
            adopt_orphans: false,
        })
    }

    /// Stress trials per kernel. Default: 100.
    #[must_use]
    pub fn trials(mut self, trials: u32) -> Gate {
        self.trials = trials.max(1);
        self
    }

    /// Seed of the first stress trial. Default: 1, so a run and its rerun see the same inputs.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Gate {
        self.seed = seed;
        self
    }

    /// Deadline of one stress trial (or a plain program run). Default: 10 s.
    #[must_use]
    pub fn stress_timeout(mut self, timeout: Duration) -> Gate {
        self.stress_timeout = timeout;
        self
    }

    /// Deadline of one sanitizer run; past it the run is inconclusive unless the kernel also
    /// hangs without the sanitizer. Default: 120 s.
    #[must_use]
    pub fn sanitize_timeout(mut self, timeout: Duration) -> Gate {
        self.sanitize_timeout = timeout;
        self
    }

    /// Processes (stress workers and sanitizers) at once. Default: the number of cores.
    #[must_use]
    pub fn jobs(mut self, jobs: usize) -> Gate {
        self.jobs = Some(jobs.max(1));
        self
    }

    /// The sanitizers to run. Default: every tool a kernel is judged by ([`Tool::KERNELS`]: the
    /// four compute-sanitizer tools, globalcheck, sharedcheck and fencecheck); an empty list runs
    /// stress only.
    #[must_use]
    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> Gate {
        let mut tools: Vec<Tool> = tools.into_iter().collect();
        tools.sort();
        tools.dedup();
        self.tools = tools;
        self
    }

    /// Extra compute-sanitizer options, passed before the target (e.g.
    /// `--racecheck-detect-level=error`). Default: none.
    #[must_use]
    pub fn sanitizer_args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Gate {
        self.sanitizer_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The executable the engine re-executes as its worker: an installed `racegate` binary, or
    /// a program that calls [`run_worker_if_requested`] first in `main`. Default: the running
    /// executable.
    #[must_use]
    pub fn worker(mut self, exe: impl Into<PathBuf>) -> Gate {
        self.worker = Some(exe.into());
        self
    }

    /// Makes this process a child subreaper (`PR_SET_CHILD_SUBREAPER`) when [`Gate::run`]
    /// starts. Default: off, since it changes the whole process, not just the gate.
    ///
    /// racegate keeps each job's processes in a cgroup v2 of its own where it can create one;
    /// where it cannot (no writable cgroup2 mount), a worker's grandchild that leaves its
    /// session and clears its environment (`env -i setsid ...`) and whose parent exits is
    /// re-parented to init and escapes the kill at the end of its job. With this on it is
    /// re-parented to this process instead, and racegate kills it by parent pid at the end of
    /// a job and reaps its zombie. The price: from then on, at the end of each of its jobs,
    /// racegate kills (and reaps) every child of this process that is not one of its running
    /// jobs, is outside this process's process group, and started before every job still
    /// running; that includes a child this process started itself in a process group of its
    /// own. The `racegate` binary always runs this way. It cannot be undone for the process.
    #[must_use]
    pub fn adopt_orphans(mut self, on: bool) -> Gate {
        self.adopt_orphans = on;
        self
    }

    /// The names of the manifest's kernels and programs, in manifest order.
    pub fn subjects(&self) -> Vec<&str> {
        let programs = self.catalog.manifest.iter().flat_map(|m| &m.programs);
        self.catalog
            .cases
            .iter()
            .map(|c| c.name.as_str())
            .chain(programs.map(|p| p.name.as_str()))
            .collect()
    }

    /// Runs every kernel under stress with its oracle (unless it is `none`) and the chosen
    /// sanitizers, then the manifest's programs, as `racegate gate` does. Errors, by
    /// [`Error::exit_code`]: no worker (the default, but [`run_worker_if_requested`] was never
    /// called) or a kernel whose entry or arguments do not match its code is bad input (2); no CUDA device is 4; NVRTC missing is 3. Inconclusive runs are in
    /// [`GateRun::inconclusive`], never counted as clean. Reports inside a library's own code
    /// that are known false positives (CUB's, under initcheck) are no finding: each is named in
    /// [`GateRun::notes`], as `racegate gate` does without `--keep-library-reports`.
    pub fn run(&self) -> Result<GateRun> {
        let worker = self.worker_exe()?;
        if self.adopt_orphans {
            crate::proc::adopt_orphans();
        }
        crate::build::compile_child::compile_in_children(worker.clone());
        device::check_signatures(&self.catalog, true)?;
        device::require()?;
        let run = gate::run_manifest(&self.catalog, &self.config()?, &worker, |_| {})?;
        Ok(gate::library_reports::settled(run, false))
    }

    /// The worker: the one set, else the running executable if it serves the worker
    /// subcommands. Re-executing a program that does not would run its `main` again in every
    /// worker, so that is bad input (exit 2), whatever the machine.
    fn worker_exe(&self) -> Result<PathBuf> {
        if let Some(w) = &self.worker {
            return Ok(w.clone());
        }
        if !SERVES_WORKERS.load(Ordering::Relaxed) {
            return Err(Error::Usage(
                "racegate::Gate: this program cannot be its own worker: call \
                 racegate::api::run_worker_if_requested() first in main, or name an installed \
                 racegate with Gate::worker(PATH)"
                    .into(),
            ));
        }
        battery::current_worker()
    }

    /// Compares `run` with the baseline at `path` (a missing file is an empty baseline): which
    /// findings are new (they fail the gate), accepted, fixed or stale.
    pub fn diff<'a>(&self, run: &'a GateRun, baseline: impl AsRef<Path>) -> Result<Diff<'a>> {
        Ok(gate::diff(run, &Baseline::load(baseline.as_ref())?, true))
    }

    /// The baseline `racegate gate` reads by default: `racegate-baseline.json` beside the
    /// manifest.
    pub fn default_baseline(&self) -> PathBuf {
        self.catalog.manifest_dir().join(gate::BASELINE)
    }

    fn config(&self) -> Result<GateConfig> {
        Ok(GateConfig {
            battery: Battery::for_machine(
                self.trials,
                self.seed,
                self.stress_timeout,
                self.sanitize_timeout,
                self.jobs,
            ),
            runs: 3,
            tools: self.tools.clone(),
            sanitizer_args: self.sanitizer_args.clone(),
            masks: Masks::new(&[], true)?,
            oracles: Default::default(),
            jitter: true,
            shrink: None,
            program_timeout: None,
            program_sanitize_timeout: None,
            sampling: Some(Default::default()),
            tools_chosen: false,
        })
    }
}

/// Whether this process serves the worker subcommands ([`run_worker_if_requested`] ran), so
/// that it can be its own worker.
static SERVES_WORKERS: AtomicBool = AtomicBool::new(false);

/// When this process was started as one of racegate's workers (its arguments are a hidden
/// worker subcommand), runs it and exits; otherwise returns at once. A program that runs a
/// [`Gate`] with itself as the worker (the default) calls it first in `main`.
pub fn run_worker_if_requested() {
    SERVES_WORKERS.store(true, Ordering::Relaxed);
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if !workers::is_worker(&args) {
        // This program serves the compile child too: NVRTC leaves its process from now on.
        if let Ok(exe) = battery::current_worker() {
            crate::build::compile_child::compile_in_children(exe);
        }
        return;
    }
    let code = match workers::WorkerCli::try_parse_from(args) {
        Ok(w) => match workers::run(&w.catalog, w.internal) {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "error: {}",
                    crate::report::visible::visible(&e.chain().to_string())
                );
                e.exit_code()
            }
        },
        Err(e) => {
            eprintln!("error: {e}");
            crate::errors::exit::USAGE
        }
    };
    std::process::exit(i32::from(code));
}
