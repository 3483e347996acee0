//! `racegate check`: the detection matrix, every case under every detector, judged against each
//! header's `expect`; without a GPU, the compile pass only (exit 4).

use std::path::PathBuf;

use crate::errors::exit;
use crate::judge::check::{self, CheckEvent, Judgement};
use crate::judge::perf::check as perf_check;
use crate::judge::perf::ncu;
use crate::judge::perf::runner::PerfConfig;
use crate::{report, Result};

use super::battery_args::BatteryArgs;
use super::compile::compile_all;
use super::flags::{default, PartitionArg};
use super::output::{out, outln, JsonArg};
use super::progress::{Progress, Status};
use super::settings::Global;
use super::settings::{self, Settings};

/// The end of `racegate check --help`: the exit codes, then examples.
pub const HELP: &str = concat!(
    "Exit codes: 0 every case judged as its header expects, 1 a mismatch or a broken `//@ perf:` expectation, 2 bad input, 3 inconclusive (a cell, or a perf expectation ncu could not judge: counters refused, ncu failing; without ncu, which is optional, they are listed as skipped and change nothing; --no-perf leaves them out), 4 no CUDA device (compiles only; --junit, --json and --table still written, verdict no_device; the perf expectations listed as skipped).\n",
    "Examples:\n",
    "  racegate check\n",
    "  racegate check matmul_tiled16 --trials 20 --junit check.xml --table table.md"
);

/// `--trials`' default here: each case runs this many with jitter and as many without, for
/// every case of the catalog.
const TRIALS: u32 = 50;
/// `--sanitize-timeout`'s default here, in seconds: the slowest normal run on the H200 took
/// under 10 s, and a deadlocked one is killed at the deadline.
const SANITIZE_TIMEOUT: f64 = 20.0;

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
#[command(
    mut_arg("trials", default!(TRIALS)),
    mut_arg("seed", default!(1)),
    mut_arg("sanitize_timeout", default!(SANITIZE_TIMEOUT))
)]
pub struct CheckArgs {
    /// Cases to check (default: all).
    cases: Vec<String>,
    #[command(flatten)]
    shard: PartitionArg,
    #[command(flatten)]
    battery: BatteryArgs,
    /// Write the course table (markdown: rows are cases, columns detectors) here.
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    /// Write a JUnit report here (testcases carry file and line).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Leave the `//@ perf:` expectations out (by default each is judged against Nsight
    /// Compute's counters, or listed as skipped with the reason: a skipped one exits 3).
    #[arg(long)]
    no_perf: bool,
    #[command(flatten)]
    out: JsonArg,
    #[command(flatten)]
    html: super::output::HtmlArg,
}

pub fn run(global: &Global, a: CheckArgs) -> Result<u8> {
    a.out.claim_stdout();
    let devices = a.battery.devices.select()?;
    let catalog = super::list::catalog(global)?;
    let (catalog, names, stamp) = match a.shard.partition {
        None => (catalog, a.cases.clone(), None),
        Some(p) => {
            // A shard's stamp hashes the whole catalog (or manifest) its cases came from.
            let input = super::merge::catalog_input(&catalog)?;
            let args = super::merge::args_after("check");
            let stamp = super::merge::stamp(p, &args, &catalog.root, &input, "check");
            // The whole run's cases, then this shard's part of them: a case named on the
            // command line that another shard runs is no unknown case here.
            let chosen: Vec<String> = (catalog.select(&a.cases)?.iter())
                .map(|c| c.name.clone())
                .collect();
            let mut catalog = crate::source::partition::catalog(catalog, p);
            catalog.cases.retain(|c| chosen.contains(&c.name));
            (catalog, Vec::new(), Some(stamp))
        }
    };
    let inputs = settings::inputs_of(&catalog);
    let outputs = [
        ("--table", a.table.as_deref()),
        ("--junit", a.junit.as_deref()),
        ("--json", a.out.json.as_deref()),
    ];
    settings::check_outputs(
        &outputs,
        &inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?;
    a.html.check(&outputs)?;
    let selected = catalog.select(&names)?;
    let s = Settings::new(a.battery.jobs.jobs)?;
    let mut cfg = a.battery.battery(&s, SANITIZE_TIMEOUT);
    let dev = crate::run::device::probe();
    let compiled = match compile_all(&catalog, &names, false, None) {
        // Without a device the answer is 4 whatever else is missing (the one table).
        Err(e) if dev.is_err() => {
            println!("{}", e.chain());
            false
        }
        other => other?,
    };
    if !compiled && dev.is_ok() {
        return Ok(exit::FOUND);
    }
    let dev = match dev {
        Err(why) => {
            outln!(
                "\nno CUDA device ({why}): compiled every kernel, but could not run stress, the \
                 watchdog or compute-sanitizer. Nothing was proven about runtime behaviour."
            );
            // Every report asked for is still written: every cell not run, with the reason, and
            // what did run host-side (the compile pass).
            let reason = format!("no CUDA device: {why}");
            // The perf expectations too: each skipped, none held.
            let perf = match a.no_perf {
                true => Vec::new(),
                false => perf_check::skipped(&catalog, &selected, &reason)?,
            };
            out!("{}", report::text::perf_expectations(&perf));
            if let Some(p) = &a.table {
                settings::write_file(
                    p,
                    &report::markdown::course_table_not_run(&selected, &reason),
                )?;
            }
            let done: &[&str] = if compiled {
                &["compiled every kernel"]
            } else {
                &["compiled: some kernels failed (see the output)"]
            };
            let subject = format!("{} case(s)", selected.len());
            let mut more = serde_json::Map::new();
            if !a.no_perf {
                more.insert(
                    "perf".into(),
                    serde_json::to_value(&perf).expect("results serialize"),
                );
            }
            let json =
                report::json::not_run_with("check", &subject, &reason, done, exit::NO_DEVICE, more);
            write_json(&a, &json, stamp.as_ref(), &selected, exit::NO_DEVICE)?;
            if let Some(p) = &a.junit {
                let cells: Vec<(String, String)> = selected
                    .iter()
                    .flat_map(|c| {
                        crate::source::catalog::Detector::ALL
                            .iter()
                            .map(|d| (c.name.clone(), d.name().to_string()))
                    })
                    .collect();
                let why = format!("no CUDA device: {why}");
                settings::write_file(p, &report::junit::not_run("racegate-check", &cells, &why))?;
            }
            return Ok(exit::NO_DEVICE);
        }
        Ok(d) => d,
    };
    if cfg.sanitizer.is_none() {
        let theirs: Vec<&str> = (crate::judge::sanitize::Tool::KERNELS.iter())
            .filter(|t| !t.is_own())
            .map(|t| t.name())
            .collect();
        outln!(
            "compute-sanitizer not found: its columns ({}) will be inconclusive",
            theirs.join(", ")
        );
    }
    cfg.jobs = devices.workers(cfg.jobs, a.battery.jobs.jobs.is_some());
    outln!(
        "device: {}; {} cases, {} processes at a time{}",
        dev.name,
        selected.len(),
        cfg.jobs,
        devices.describe(cfg.jobs)
    );
    // One line per cell (case x detector): a task (stress, or one sanitizer) decides one or
    // more cells, and the count on each line is of cells, as the final table shows them.
    let cells = selected.len() * crate::source::catalog::Detector::ALL.len();
    let progress = Progress::new(cells as u64, "cells", a.out.on_stdout());
    let mut m = check::run(&catalog, &selected, &cfg, &s.worker, |ev| match ev {
        CheckEvent::Done(cells) => {
            for c in cells {
                let status = match c.judgement {
                    Judgement::Missed | Judgement::Unexpected => Status::Fail,
                    Judgement::Inconclusive => Status::Inconclusive,
                    _ => Status::Pass,
                };
                let detail = format!("       {:?} (expected {:?})", c.observed, c.expect);
                progress.item(
                    status,
                    &format!("{}::{}", c.case, c.detector),
                    c.seconds,
                    Some(&detail),
                );
            }
        }
    })?;
    progress.finish();
    // ncu is optional (`racegate doctor`): without it the expectations are listed as skipped,
    // with the reason, and leave the exit code alone; ncu present but failing or refusing its
    // counters makes them inconclusive.
    let mut ncu_missing = false;
    if !a.no_perf {
        // After the matrix: ncu replays each kernel alone, without the pool's other runs.
        let ncu = ncu::find();
        // Not installed at all (an explicit $RACEGATE_NCU that is wrong is not "optional").
        ncu_missing = matches!(ncu, Err(ncu::Unavailable::Missing(_)))
            && std::env::var_os("RACEGATE_NCU").is_none_or(|v| v.is_empty());
        let pcfg = PerfConfig::for_counters(&s.arch);
        m.perf = perf_check::run(&catalog, &selected, &pcfg, &s.worker, ncu.as_deref())?;
    }
    let (perf_broken, perf_skipped) = perf_check::counts(&m.perf);
    let perf_skipped = if ncu_missing { 0 } else { perf_skipped };
    out!("{}", report::text::check_summary(&m));
    if let Some(p) = &a.table {
        settings::write_file(p, &report::markdown::course_table(&m, &catalog))?;
    }
    if let Some(p) = &a.junit {
        settings::write_file(p, &report::junit::check(&m))?;
    }
    let code = if m.count(Judgement::Missed) + m.count(Judgement::Unexpected) + perf_broken > 0 {
        exit::FOUND
    } else if m.count(Judgement::Inconclusive) + perf_skipped > 0 {
        exit::INCONCLUSIVE
    } else {
        exit::OK
    };
    let json = settings::json(&m) + "\n";
    write_json(&a, &json, stamp.as_ref(), &selected, code)?;
    a.html.write_value(&m, &catalog.root)?;
    Ok(code)
}

/// Writes `json` where `--json` says; a shard's (`--partition`) with its stamp, the cases it
/// ran (`selected`) and its exit code, for `racegate merge`.
fn write_json(
    a: &CheckArgs,
    json: &str,
    stamp: Option<&super::merge::Stamp>,
    selected: &[&crate::source::catalog::Case],
    code: u8,
) -> Result<()> {
    match stamp {
        Some(s) => a
            .out
            .write_text(&super::merge::stamped_check(json, s, selected, code)?),
        None => a.out.write_text(json),
    }
}
