//! The hidden subcommands racegate runs itself through: the stress worker, the sanitizer's
//! target, the grading worker and the compile child. Their names are `racegate::subcommands`' constants, the same
//! ones the spawning parents use.

use std::path::PathBuf;

use racegate::errors::exit;
use racegate::exercises::SizeChoice;
use racegate::subcommands::{COMPILE_CHILD, GRADE_WORKER, SANITIZE_TARGET, STRESS_WORKER};
use racegate::{sanitize, stress, Result};

use super::settings;
use super::settings::Global;

#[derive(clap::Subcommand)]
pub enum Internal {
    /// (internal) Run trials on the device and print one JSON line per trial.
    #[command(name = STRESS_WORKER, hide = true)]
    Worker {
        #[arg(long)]
        case: String,
        #[arg(long)]
        ptx: PathBuf,
        #[arg(long)]
        ref_ptx: Option<PathBuf>,
        #[arg(long)]
        trials: u32,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        per_set: u32,
        #[arg(long, value_parser = stress::parse_size)]
        size: Option<SizeChoice>,
        #[arg(long)]
        jitter: bool,
    },
    /// (internal) The target compute-sanitizer runs: one launch on the sanitizer geometry.
    #[command(name = SANITIZE_TARGET, hide = true)]
    SanitizeTarget {
        #[arg(long)]
        case: String,
        #[arg(long)]
        ptx: PathBuf,
        #[arg(long)]
        seed: u64,
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

pub fn run(global: &Global, i: Internal) -> Result<u8> {
    match i {
        Internal::Worker {
            case,
            ptx,
            ref_ptx,
            trials,
            seed,
            per_set,
            size,
            jitter,
        } => {
            let catalog = settings::catalog(global, None)?;
            let w = stress::WorkerArgs {
                case,
                ptx,
                ref_ptx,
                trials,
                seed,
                per_set,
                size,
                jitter,
            };
            stress::worker(&catalog, &w)?;
        }
        Internal::SanitizeTarget { case, ptx, seed } => {
            let catalog = settings::catalog(global, None)?;
            println!("{}", sanitize::runner::target(&catalog, &case, &ptx, seed)?);
        }
        Internal::GradeWorker {
            ptx,
            request,
            response,
            time,
        } => racegate::grade::worker(&ptx, &request, response.as_deref(), time)?,
        Internal::Compile {
            request,
            reply,
            memory_mib,
            stack_mib,
            source,
        } => racegate::compile_child::child(&request, &source, &reply, memory_mib, stack_mib)?,
    }
    Ok(exit::OK)
}
