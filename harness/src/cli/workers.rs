//! The hidden subcommands racegate runs itself through: the stress worker, the sanitizer's
//! target, the grading worker and the compile child. Their names are [`crate::proc::subcommands`]'
//! constants, the same ones the spawning parents use. In the library, not the binary, because
//! several programs are workers: the `racegate` binary, a user's test binary (`testing.rs`,
//! the nextest double-spawn shape) and a user's program running a `Gate`; the last two
//! through `api.rs` (`run_worker_if_requested`). All parse them here.

use std::path::PathBuf;

use crate::errors::{exit, Result};
use crate::proc::subcommands::{
    COMPILE_CHILD, GRADE_WORKER, PERF_WORKER, SANITIZE_TARGET, STRESS_WORKER,
};
use crate::source::catalog::Catalog;
use crate::source::exercises::SizeChoice;
use crate::{judge::sanitize, run::stress};

/// The options a parent passes before the subcommand ([`Catalog::child_args`]): which catalog
/// the child loads.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct CatalogArgs {
    #[arg(long, global = true, value_name = "DIR", hide = true)]
    pub root: Option<PathBuf>,
    #[arg(long, global = true, value_name = "FILE", hide = true)]
    pub manifest: Option<PathBuf>,
}

impl CatalogArgs {
    /// The catalog the parent named: its manifest, else the built-in catalog under its root.
    pub fn catalog(&self) -> Result<Catalog> {
        match (&self.manifest, &self.root) {
            (Some(m), _) => Ok(Catalog::from_manifest(
                crate::source::manifest::Manifest::load(m)?,
            )),
            (None, Some(r)) => Catalog::discover(r),
            (None, None) => Err(crate::Error::Usage(
                "a worker needs --manifest FILE or --root DIR from its parent".into(),
            )),
        }
    }
}

/// `--devices LIST`: where a command's pools of workers run ([`crate::run::lease_devices`]).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct DevicesArg {
    /// CUDA devices to run on: a count or a list.
    ///
    /// `2` runs on devices 0 and 1, `0,2` on those two, `3,` on device 3 alone: each device gets
    /// a pool of workers (of --jobs' default size, or --jobs shared among them) and a GPU lease
    /// of its own, and each child is told its device in CUDA_VISIBLE_DEVICES; results do not
    /// depend on which device ran what. Default: RACEGATE_DEVICES, else device 0.
    #[arg(long, value_name = "LIST")]
    pub devices: Option<String>,
}

impl DevicesArg {
    /// Chooses the devices for this process, checked against what the driver sees (a usage
    /// error, exit 2, for one it does not).
    pub fn select(&self) -> Result<&'static crate::run::lease_devices::Devices> {
        crate::run::lease_devices::select(self.devices.as_deref())
    }
}

/// A worker's whole command line, for programs other than `racegate` (a test binary).
#[derive(clap::Parser)]
#[command(no_binary_name = true)]
pub struct WorkerCli {
    #[command(flatten)]
    pub catalog: CatalogArgs,
    #[command(subcommand)]
    pub internal: Internal,
}

/// Whether `args` (without the program name) are a worker's: a hidden subcommand after the
/// catalog options.
pub fn is_worker(args: &[std::ffi::OsString]) -> bool {
    let names = [
        STRESS_WORKER,
        SANITIZE_TARGET,
        GRADE_WORKER,
        COMPILE_CHILD,
        PERF_WORKER,
    ];
    args.iter().take(3).any(|a| names.iter().any(|n| a == *n))
}

#[derive(clap::Subcommand)]
pub enum Internal {
    /// (internal) Run stress cases asked on stdin (one JSON request a line) on one device
    /// context, printing one JSON line per trial and a done line per case.
    #[command(name = STRESS_WORKER, hide = true)]
    Worker,
    /// (internal) The target compute-sanitizer runs: one launch on the sanitizer geometry.
    #[command(name = SANITIZE_TARGET, hide = true)]
    SanitizeTarget {
        /// A case, once per case (its PTX is the `--ptx` at the same place).
        #[arg(long, required = true)]
        case: Vec<String>,
        #[arg(long, required = true)]
        ptx: Vec<PathBuf>,
        #[arg(long)]
        seed: u64,
        #[arg(long, value_parser = stress::parse_size)]
        size: Option<SizeChoice>,
        /// Keep every case's device memory allocated to the end (initcheck's batches).
        #[arg(long)]
        keep_memory: bool,
        /// A batch's nonce, put on each result line and on a last line after every case.
        #[arg(long)]
        nonce: Option<String>,
    },
    /// (internal) Runs a submission on problems from a request file.
    #[command(name = GRADE_WORKER, hide = true)]
    GradeWorker {
        #[arg(long)]
        ptx: PathBuf,
        #[arg(long)]
        request: PathBuf,
        #[arg(long)]
        response: Option<PathBuf>,
        #[arg(long)]
        time: bool,
    },
    /// (internal) Times one kernel with CUDA events and prints one JSON line.
    #[command(name = PERF_WORKER, hide = true)]
    PerfWorker {
        #[arg(long)]
        case: String,
        #[arg(long)]
        ptx: PathBuf,
        /// Time the manifest reference kernel of the case, built into this PTX.
        #[arg(long)]
        reference_ptx: Option<PathBuf>,
        #[arg(long)]
        size: u32,
        #[arg(long, default_value_t = 5)]
        warmup: u32,
        #[arg(long, default_value_t = 25)]
        min_reps: u32,
        #[arg(long, default_value_t = 1000)]
        max_reps: u32,
        #[arg(long, default_value_t = 300)]
        budget_ms: u32,
    },
    /// (internal) Compiles one source under limits and writes the reply file.
    #[command(name = COMPILE_CHILD, hide = true)]
    Compile {
        #[arg(long)]
        request: PathBuf,
        #[arg(long)]
        reply: PathBuf,
        #[arg(long)]
        memory_mib: u64,
        #[arg(long)]
        stack_mib: u64,
        /// The source, after `--`.
        #[arg(last = true, required = true)]
        source: PathBuf,
    },
}

/// Runs one hidden subcommand; the `u8` is the exit code.
pub fn run(global: &CatalogArgs, i: Internal) -> Result<u8> {
    // A worker's jobs are part of the run of the racegate that started it: reaped with that
    // run's leftovers, never while it lives.
    crate::proc::identity::join_parent_run();
    match i {
        Internal::Worker => {
            let read = std::time::Instant::now();
            let catalog = global.catalog()?;
            let catalog_us = u64::try_from(read.elapsed().as_micros()).unwrap_or(u64::MAX);
            crate::run::stress_worker::session(&catalog, catalog_us)?;
        }
        Internal::SanitizeTarget {
            case,
            ptx,
            seed,
            size,
            keep_memory,
            nonce,
        } => {
            let read = std::time::Instant::now();
            let catalog = global.catalog()?;
            let catalog_ms = read.elapsed().as_secs_f64() * 1e3;
            if case.len() != ptx.len() {
                return Err(crate::errors::Error::Usage(format!(
                    "{} --case but {} --ptx: one PTX per case",
                    case.len(),
                    ptx.len()
                )));
            }
            let cases: Vec<_> = case.into_iter().zip(ptx).collect();
            sanitize::runner::targets(
                &catalog,
                &cases,
                seed,
                size,
                catalog_ms,
                keep_memory,
                nonce.as_deref(),
            )?;
        }
        Internal::GradeWorker {
            ptx,
            request,
            response,
            time,
        } => crate::grade::worker(&ptx, &request, response.as_deref(), time)?,
        Internal::PerfWorker {
            case,
            ptx,
            reference_ptx,
            size,
            warmup,
            min_reps,
            max_reps,
            budget_ms,
        } => {
            let reps = crate::run::perf::Repetitions {
                warmup,
                min: min_reps,
                max: max_reps,
                budget_ms,
            };
            let w = crate::run::perf::WorkerArgs {
                case,
                ptx,
                reference_ptx,
                size,
                reps,
            };
            crate::run::perf::worker(&global.catalog()?, &w)?;
        }
        Internal::Compile {
            request,
            reply,
            memory_mib,
            stack_mib,
            source,
        } => crate::build::compile_jail::child(&request, &source, &reply, memory_mib, stack_mib)?,
    }
    Ok(exit::OK)
}
