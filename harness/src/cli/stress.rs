//! `racegate stress CASE`: many trials of one case on random sizes and inputs, each in a worker
//! process with a deadline, every output element checked.

use std::time::Duration;

use crate::errors::exit;
use crate::run::stress::{self, StressConfig, StressEvent};
use crate::run::trial::TrialResult;
use crate::source::exercises::SizeChoice;
use crate::{report, Error, Result};

use super::output::JsonArg;
use super::progress::{Progress, Status};
use super::settings::Global;
use super::settings::{self, Settings};
use super::values;

/// The end of `racegate stress --help`: the exit codes, then examples.
pub const HELP: &str = concat!(
    "Exit codes: 0 every trial passed, 1 a trial failed (wrong output, crash or hang), 2 bad input, 3 inconclusive, 4 no CUDA device (--json still written, verdict no_device).\n",
    "Examples:\n",
    "  racegate stress matmul_tiled16::no_sync_after_compute --trials 500\n",
    "  racegate stress scale --size 1000 --seed 7 --json stress.json   # a racegate.toml kernel"
);

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
pub struct StressArgs {
    /// The case, as `racegate list` names it (e.g. matmul_tiled16::no_sync_after_compute).
    case: String,
    /// Number of trials.
    #[arg(long, default_value_t = 200, value_parser = values::at_least_one)]
    trials: u32,
    /// Seed of the first trial (trial t uses seed + t); random when omitted.
    #[arg(long)]
    seed: Option<u64>,
    /// Problem size: N (every dimension N), LO..HI (each dimension drawn from the range),
    /// or `sanitize` (the small geometry sanitizers use). Default: the family's range.
    #[arg(long, value_parser = stress::parse_size)]
    size: Option<SizeChoice>,
    /// Turn off schedule jitter (per-warp sleeps after every __syncthreads()).
    #[arg(long)]
    no_jitter: bool,
    /// Consecutive trials that reuse one input set (sizes, inputs, reference), each under
    /// its own jitter seed. 1 draws new sizes and inputs for every trial.
    #[arg(long, default_value_t = stress::DEFAULT_PER_SET, value_parser = clap::value_parser!(u32).range(1..))]
    per_set: u32,
    /// Deadline for one trial, in seconds; a trial past it is a Hang.
    #[arg(long, default_value_t = 10.0, value_parser = values::seconds)]
    timeout: f64,
    #[command(flatten)]
    out: JsonArg,
}

pub fn run(global: &Global, a: StressArgs) -> Result<u8> {
    a.out.claim_stdout();
    let catalog = super::list::catalog(global)?;
    a.out.check(&catalog)?;
    let case = catalog.get(&a.case)?;
    if a.trials == 0 {
        return Err(Error::Usage("--trials must be at least 1".into()));
    }
    settings::validate(&catalog, true)?;
    if let Err(e) = settings::require_device() {
        // The JSON is still written: nothing run, and why.
        let json = report::json::not_run(
            "stress",
            &case.name,
            &e.to_string(),
            &["signatures checked"],
            exit::NO_DEVICE,
        );
        a.out.write_text(&json)?;
        return Err(e);
    }
    let s = Settings::new(None)?;
    let cfg = StressConfig {
        size: a.size,
        per_set: a.per_set,
        ..StressConfig::new(
            a.trials,
            a.seed.unwrap_or_else(settings::random_seed),
            !a.no_jitter,
            Duration::from_secs_f64(a.timeout),
            &s.arch,
        )
    };
    let progress = Progress::new(a.trials as u64, "trials", a.out.on_stdout());
    let r = stress::run(&catalog, case, &cfg, &s.worker, |StressEvent::Trial(t)| {
        let (status, detail) = match &t.result {
            TrialResult::Pass => (Status::Pass, None),
            other => (Status::Fail, Some(format!("       {other:?}"))),
        };
        progress.item(
            status,
            &format!("{}::trial-{} (seed {})", case.name, t.trial, t.seed),
            t.micros as f64 / 1e6,
            detail.as_deref(),
        );
    })?;
    progress.finish();
    a.out.text(&report::stress(&r))?;
    a.out.write(&r)?;
    Ok(if r.flagged() { exit::FOUND } else { exit::OK })
}
