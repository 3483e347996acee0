//! `racegate bench`: the full stress path against a bare cudarc launch loop, side by side in one
//! run, per kernel, with no jitter, the pct jitter and the dense jitter; prints ratios and
//! their geometric mean and worst case, never a pass/fail on time. `--detection` instead runs
//! the detection table: every variant stress must flag, under each jitter mode, over seeds.

use std::time::Duration;

use crate::errors::exit;
use crate::run::detection::{self, DetectionConfig};
use crate::run::launch::Gpu;
use crate::run::schedule::JitterMode;
use crate::{report, run::bench, Error, Result};

use super::flags::{default, SeedArg, TrialsArg};
use super::output::JsonArg;
use super::settings::Global;
use super::settings::{self, Settings};

/// The end of `racegate bench --help`: the exit codes, then examples.
pub const HELP: &str = concat!(
    "Exit codes: 0 measured, 2 bad input, 3 inconclusive, 4 no CUDA device.\n",
    "Examples:\n",
    "  racegate bench --iters 20 --rounds 3 --json bench.json\n",
    "  racegate bench --detection --seeds 5 --trials 100 --table docs/detection-table.md --json detection.json"
);

/// `--trials`' default here: one run of the detection table, which runs --seeds of them per
/// case and jitter mode, as many trials as `gate` gives a kernel.
const TRIALS: u32 = 100;

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
#[command(
    mut_arg("trials", default!(TRIALS)),
    mut_arg("seed", default!(1))
)]
pub struct BenchArgs {
    /// Cases (default: every correct kernel; with --detection, every variant stress must flag).
    cases: Vec<String>,
    /// Problem size (the same meaning as `stress --size N`); default: a size per family
    /// where one launch takes tens of microseconds or more.
    #[arg(long)]
    size: Option<u32>,
    /// Iterations per round.
    #[arg(long, default_value_t = 50)]
    iters: u32,
    /// Alternating rounds; the median counts.
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Run the detection table instead: stress under each jitter mode (--modes) over
    /// --seeds seeds of --trials trials, per variant that stress must flag.
    #[arg(long)]
    detection: bool,
    /// Detection: independent stress runs per case and mode.
    #[arg(long, default_value_t = 5)]
    seeds: u32,
    #[command(flatten)]
    trials: TrialsArg,
    #[command(flatten)]
    seed: SeedArg,
    /// Detection: the jitter modes, side by side.
    #[arg(long, value_delimiter = ',', default_value = "dense,pct,none")]
    modes: Vec<JitterMode>,
    /// Detection: the deadline of one trial, in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = super::values::seconds)]
    timeout: f64,
    /// Detection: write the markdown table here (docs/detection-table.md).
    #[arg(long)]
    table: Option<std::path::PathBuf>,
    #[command(flatten)]
    out: JsonArg,
}

pub fn run(global: &Global, a: BenchArgs) -> Result<u8> {
    a.out.claim_stdout();
    let catalog = settings::catalog(global, None)?;
    a.out.check(&catalog)?;
    if a.detection {
        return run_detection(&catalog, a);
    }
    let selected: Vec<_> = if a.cases.is_empty() {
        catalog.cases.iter().filter(|c| !c.is_variant()).collect()
    } else {
        catalog.select(&a.cases)?
    };
    if let Err(e) = settings::require_device() {
        a.out.write_no_device(&e)?;
        return Err(e);
    }
    let gpu = Gpu::open()?;
    let s = Settings::new(None)?;
    let mut rows = Vec::new();
    for c in selected {
        let n = a.size.unwrap_or_else(|| bench::default_size(&c.exercise));
        let row = bench::measure(&catalog, &gpu, c, n, a.iters, a.rounds, &s.arch)?;
        if !a.out.on_stdout() {
            eprintln!(
                "{}: {:.2}x ({:.1} us bare, {:.1} us stress, {:.1} us pct jitter, {:.1} us dense jitter)",
                crate::report::visible::visible(&row.row.case),
                row.row.ratio,
                row.row.bare_us,
                row.row.stress_us,
                row.row.stress_jitter_us,
                row.stress_dense_us
            );
        }
        rows.push(row);
    }
    let plain: Vec<bench::BenchRow> = rows.iter().map(|r| r.row.clone()).collect();
    let summary = bench::summary(&rows);
    let mut text = report::markdown::bench_table(&plain);
    text.push_str(&dense_table(&rows));
    text.push_str(&parts_table(&rows));
    text.push('\n');
    text.push_str(&bench::summary_lines(&summary));
    a.out.text(&text)?;
    a.out
        .write(&serde_json::json!({ "rows": rows, "summary": summary }))?;
    Ok(exit::OK)
}

/// The dense jitter beside pct, per case (the main table's jitter columns are pct).
fn dense_table(rows: &[bench::JitterRow]) -> String {
    let mut s = String::from(
        "\n| case | bare launch (µs) | pct jitter (µs) | ratio | dense jitter (µs) | ratio |\n|---|---|---|---|---|---|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| `{}` | {:.1} | {:.1} | {:.2}x | {:.1} | {:.2}x |\n",
            r.row.case,
            r.row.bare_us,
            r.row.stress_jitter_us,
            r.row.ratio_jitter,
            r.stress_dense_us,
            r.ratio_dense
        ));
    }
    s
}

/// Where a trial's time goes, per case: the launch without compares, the compares, the jitter
/// build with jitter off, the pct prelude's bookkeeping without delays, and the pct jitter with
/// the prelude's barrier hook out of line.
fn parts_table(rows: &[bench::JitterRow]) -> String {
    let mut s = String::from(
        "\n| case | bare (µs) | launch, no compare (µs) | compares add (µs) | stress (µs) | jitter build, jitter off (µs) | pct bookkeeping, no delay (µs) | the same, no barrier count (µs) | pct (µs) | pct, out-of-line prelude (µs) |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let p = &r.parts;
        s.push_str(&format!(
            "| `{}` | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            r.row.case,
            r.row.bare_us,
            p.launch_only_us,
            r.row.stress_us - p.launch_only_us,
            r.row.stress_us,
            p.jitter_build_off_us,
            p.count_only_us,
            p.no_count_us,
            r.row.stress_jitter_us,
            p.pct_noinline_us
        ));
    }
    s
}

fn run_detection(catalog: &crate::source::catalog::Catalog, a: BenchArgs) -> Result<u8> {
    if a.seeds == 0 || a.trials.trials == 0 {
        return Err(Error::Usage(
            "--seeds and --trials must be at least 1".into(),
        ));
    }
    let selected: Vec<_> = if a.cases.is_empty() {
        detection::stress_flagged(catalog)?
    } else {
        catalog.select(&a.cases)?
    };
    if selected.is_empty() {
        return Err(Error::Usage(
            "no case to run: the catalog has no variant that stress must flag".into(),
        ));
    }
    settings::validate(catalog, true)?;
    if let Err(e) = settings::require_device() {
        if let Some(path) = &a.table {
            let md = format!(
                "# Detection per jitter mode\n\n{e}: nothing was measured ({} case(s) selected).\n",
                selected.len()
            );
            settings::write_unmeasured(path, &md)?;
        }
        a.out.write_no_device(&e)?;
        return Err(e);
    }
    let s = Settings::new(None)?;
    let cfg = DetectionConfig {
        seeds: a.seeds,
        trials: a.trials.trials,
        seed: a.seed.get(),
        timeout: Duration::from_secs_f64(a.timeout),
        per_set: crate::run::stress::DEFAULT_PER_SET,
        arch: s.arch.clone(),
        modes: a.modes.clone(),
    };
    let mut rows = Vec::new();
    for c in &selected {
        for m in &cfg.modes {
            let r = detection::run_case(catalog, c, *m, &cfg, &s.worker)?;
            if !a.out.on_stdout() {
                eprintln!(
                    "{} [{m}]: median {} trials to detection, rate {:.1}%, {:.1} us/trial",
                    crate::report::visible::visible(&r.case),
                    r.median_trials_to_detection
                        .map_or("never".into(), |x| x.to_string()),
                    100.0 * r.rate,
                    r.us_per_trial
                );
            }
            rows.push(r);
        }
    }
    let md = detection::markdown(
        &rows,
        &cfg,
        "# Detection per jitter mode\n\nRegenerated by `racegate bench --detection --table docs/detection-table.md` on one GPU.\n",
    );
    if let Some(path) = &a.table {
        std::fs::write(path, &md).map_err(|e| Error::io("writing", path, e))?;
    }
    a.out.text(&md)?;
    a.out.write(&rows)?;
    Ok(exit::OK)
}
