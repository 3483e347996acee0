//! `racegate stress CASE`: many trials of one case on random sizes and inputs, each in a worker
//! process with a deadline, every output element checked.

use std::time::Duration;

use crate::errors::exit;
use crate::run::schedule::JitterMode;
use crate::run::shrink;
use crate::run::stress::{self, StressConfig, StressEvent};
use crate::run::trial::TrialResult;
use crate::source::exercises::SizeChoice;
use crate::{report, Error, Result};

use super::flags::{default, NoShrinkArg, SeedArg, ShrinkBudgetArg, TrialsArg};
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

/// `--trials`' default here: one case, so more trials than a cell of `check`'s matrix gets.
const TRIALS: u32 = 200;
/// `--shrink-budget`'s default here, in seconds: one failing case, where `gate`'s is per
/// failing kernel of a run that may have several.
const SHRINK_BUDGET: f64 = 30.0;

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
#[command(
    mut_arg("trials", default!(TRIALS)),
    mut_arg("shrink_budget", default!(SHRINK_BUDGET))
)]
pub struct StressArgs {
    /// The case, as `racegate list` names it (e.g. matmul_tiled16::no_sync_after_compute).
    case: String,
    #[command(flatten)]
    trials: TrialsArg,
    // No default: a seed drawn at random, named in each failure's repro command.
    #[command(flatten)]
    seed: SeedArg,
    /// Problem size: N (every dimension N), LO..HI (each dimension drawn from the range),
    /// or `sanitize` (the small geometry sanitizers use). Default: the family's range.
    #[arg(long, value_parser = stress::parse_size)]
    size: Option<SizeChoice>,
    /// Turn off schedule jitter (the same as --jitter none).
    #[arg(long)]
    no_jitter: bool,
    /// Schedule jitter after __syncthreads(): `pct` (a few seeded change points per trial:
    /// chosen warps sleep at chosen barrier instances, sized from the kernel's measured
    /// duration), `dense` (three warps in four sleep at every barrier, kept to compare) or `none`.
    #[arg(long, default_value = "pct")]
    jitter: JitterMode,
    /// Consecutive trials that reuse one input set (sizes, inputs, reference), each under
    /// its own jitter seed. 1 draws new sizes and inputs for every trial.
    #[arg(long, default_value_t = stress::DEFAULT_PER_SET, value_parser = clap::value_parser!(u32).range(1..))]
    per_set: u32,
    /// Deadline for one trial, in seconds; a trial past it is a Hang.
    #[arg(long, default_value_t = 10.0, value_parser = values::seconds)]
    timeout: f64,
    #[command(flatten)]
    no_shrink: NoShrinkArg,
    #[command(flatten)]
    shrink_budget: ShrinkBudgetArg,
    #[command(flatten)]
    lang: super::flags::LangArg,
    #[command(flatten)]
    out: JsonArg,
}

/// The JSON of a stress run: the report, and the minimal repro when one was searched for.
#[derive(serde::Serialize)]
struct WithShrink<'a> {
    #[serde(flatten)]
    report: &'a stress::StressReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    shrunk: Option<shrink::Shrunk>,
}

pub fn run(global: &Global, a: StressArgs) -> Result<u8> {
    a.out.claim_stdout();
    let catalog = super::list::catalog(global)?;
    a.out.check(&catalog)?;
    let case = catalog.get(&a.case)?;
    if a.trials.trials == 0 {
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
    let mode = if a.no_jitter {
        JitterMode::None
    } else {
        a.jitter
    };
    let cfg = StressConfig {
        size: a.size,
        per_set: a.per_set,
        jitter_mode: mode,
        ..StressConfig::new(
            a.trials.trials,
            a.seed.get(),
            mode != JitterMode::None,
            Duration::from_secs_f64(a.timeout),
            &s.arch,
        )
    };
    let progress = Progress::new(a.trials.trials as u64, "trials", a.out.on_stdout());
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
    let mut text = report::stress(&r);
    text.push_str(&crate::report::explain_text::stress(&r, a.lang.get()));
    // Wrong results and faults shrink (a fault ends its worker at once); a hang would cost a
    // deadline per candidate.
    let shrinkable = matches!(
        r.verdict,
        stress::Verdict::Fail | stress::Verdict::Fault { .. }
    );
    let shrunk = if shrinkable && !a.no_shrink.no_shrink {
        let cfg_shrink = shrink::ShrinkConfig {
            budget: Duration::from_secs_f64(a.shrink_budget.shrink_budget),
            ..Default::default()
        };
        eprintln!(
            "looking for a minimal repro (at most {:.0} s; --no-shrink skips this)",
            a.shrink_budget.shrink_budget
        );
        let found = shrink::shrink(
            &mut stress::Slot::default(),
            &catalog,
            case,
            &cfg,
            &s.worker,
            &cfg_shrink,
            r.repro.as_deref(),
        )?;
        match &found {
            Some(sh) => text.push_str(&crate::report::shrink::describe(sh)),
            None => text.push_str("shrunk: no smaller failing problem found within the budget; the repro above stands\n"),
        }
        found
    } else {
        None
    };
    a.out.text(&text)?;
    a.out.write(&WithShrink { report: &r, shrunk })?;
    Ok(if r.flagged() { exit::FOUND } else { exit::OK })
}
