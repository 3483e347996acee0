//! `racegate perf [CASE...]`: each kernel timed with CUDA events in a worker with a deadline,
//! beside its family's reference kernel, with Nsight Compute's counters when ncu is there, the
//! `//@ perf:` expectations checked (`--check`), and the course tables (`--table`).

use std::path::PathBuf;
use std::time::Duration;

use crate::errors::exit;
use crate::judge::perf::expect::Outcome;
use crate::judge::perf::ncu::{self, Unavailable};
use crate::judge::perf::runner::{self, KernelPerf, PerfConfig};
use crate::judge::perf::table;
use crate::run::perf::{self, Repetitions};
use crate::source::catalog::Case;
use crate::source::manifest::Check;
use crate::{Error, Result};

use super::output::JsonArg;
use super::settings::{self, Global, Settings};
use super::values;

/// The end of `racegate perf --help`: the exit codes, then examples.
pub const HELP: &str = concat!(
    "Exit codes: 0 measured (and with --check every expectation held), 1 a `//@ perf:` expectation broken, 2 bad input, 3 inconclusive: no ncu, counters refused (ERR_NVGPUCTRPERM) or a worker failed (the timing is still reported; --no-counters asks for timing alone), 4 no CUDA device.\n",
    "Examples:\n",
    "  racegate perf transpose_naive_tile transpose_padded transpose_swizzled\n",
    "  racegate perf --check                       # every //@ perf: expectation, against ncu's counters\n",
    "  racegate perf --table docs/perf-tables.md --json perf.json --save-csv ncu/\n",
    "  RACEGATE_NCU=/opt/nsight-compute/ncu racegate perf reduce_shuffle --size 33554432"
);

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
pub struct PerfArgs {
    /// Cases (default: every correct kernel; with --check, every kernel with a `//@ perf:`
    /// line). Each family's reference kernel is timed with them.
    cases: Vec<String>,
    /// Problem size (every dimension); default: one per family, inputs larger than the L2 cache
    /// where the family is bound by memory.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    size: Option<u32>,
    /// Judge every `//@ perf:` expectation against the counters; a broken one exits 1.
    #[arg(long)]
    check: bool,
    /// Timing only: do not run ncu (exit 0 without it).
    #[arg(long, conflicts_with = "check")]
    no_counters: bool,
    /// Write the course tables (markdown) here.
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    /// Keep ncu's raw output, one CASE.csv per kernel, in this folder (fixtures).
    #[arg(long, value_name = "DIR")]
    save_csv: Option<PathBuf>,
    /// The fewest timed launches per kernel (more until --budget-ms of kernel time, at most 1000).
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Kernel time to spend timing one kernel, in milliseconds.
    #[arg(long, default_value_t = 300)]
    budget_ms: u32,
    /// Deadline of one timing worker, in seconds.
    #[arg(long, default_value_t = 120.0, value_parser = values::seconds)]
    timeout: f64,
    /// Deadline of one ncu run, in seconds.
    #[arg(long, default_value_t = 300.0, value_parser = values::seconds)]
    ncu_timeout: f64,
    #[command(flatten)]
    out: JsonArg,
}

fn selection<'a>(
    catalog: &'a crate::source::catalog::Catalog,
    a: &PerfArgs,
) -> Result<Vec<&'a Case>> {
    let mut picked: Vec<&Case> = if !a.cases.is_empty() {
        catalog.select(&a.cases)?
    } else if a.check {
        let mut v = Vec::new();
        for c in &catalog.cases {
            if !runner::expectations(catalog, c)?.is_empty() {
                v.push(c);
            }
        }
        if v.is_empty() {
            return Err(Error::Usage(
                "--check: no kernel declares a `//@ perf:` expectation".into(),
            ));
        }
        v
    } else {
        catalog.cases.iter().filter(|c| !c.is_variant()).collect()
    };
    // The references go first in their family, so the tables read from the first rung up.
    let mut out: Vec<&Case> = Vec::new();
    for c in picked.drain(..) {
        if let Some(r) = perf::reference_of(catalog, c) {
            if !out.iter().any(|x| x.name == r.name) {
                out.push(r);
            }
        }
        if !out.iter().any(|x| x.name == c.name) {
            out.push(c);
        }
    }
    Ok(out)
}

fn progress_line(r: &KernelPerf) -> String {
    let rate = match (r.gbps, r.gflops) {
        (Some(g), _) => format!("{g:.0} GB/s"),
        (_, Some(f)) => format!("{f:.0} GFLOP/s"),
        _ => String::new(),
    };
    let mut s = format!(
        "{}: {:.1} µs median of {} (spread {:.1}%), {rate}",
        r.case,
        r.median_us,
        r.reps,
        100.0 * r.spread
    );
    if let Some(c) = &r.counters {
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        s.push_str(&format!(
            "; bank conflicts/request ld {} st {}; sectors/request ld {} st {}; occupancy {}%; branch uniformity {}%",
            f(c.shared_ld_conflicts_per_request),
            f(c.shared_st_conflicts_per_request),
            f(c.global_ld_sectors_per_request),
            f(c.global_st_sectors_per_request),
            f(c.occupancy_pct),
            f(c.branch_uniform_pct)
        ));
    }
    s
}

pub fn run(global: &Global, a: PerfArgs) -> Result<u8> {
    a.out.claim_stdout();
    let catalog = settings::catalog(global, None)?;
    a.out.check(&catalog)?;
    let inputs = settings::inputs_of(&catalog);
    let inputs: Vec<&std::path::Path> = inputs.iter().map(PathBuf::as_path).collect();
    settings::check_outputs(&[("--table", a.table.as_deref())], &inputs)?;
    let selected = selection(&catalog, &a)?;
    settings::validate(&catalog, true)?;
    let device = match settings::require_device() {
        Ok(d) => d,
        Err(e) => {
            a.out.write_no_device(&e)?;
            if let Some(t) = &a.table {
                settings::write_unmeasured(
                    t,
                    &format!(
                        "# Course tables\n\n{e}: nothing was measured ({} kernel(s) selected).\n",
                        selected.len()
                    ),
                )?;
            }
            return Err(e);
        }
    };
    if let Some(d) = &a.save_csv {
        std::fs::create_dir_all(d).map_err(|e| Error::io("creating", d, e))?;
    }
    let s = Settings::new(None)?;
    let ncu_exe: std::result::Result<PathBuf, Unavailable> = if a.no_counters {
        Err(Unavailable::Missing("not asked for (--no-counters)".into()))
    } else {
        ncu::find()
    };
    let cfg = PerfConfig {
        arch: s.arch.clone(),
        size: a.size,
        reps: Repetitions {
            min: a.reps,
            budget_ms: a.budget_ms,
            ..Repetitions::default()
        },
        timeout: Duration::from_secs_f64(a.timeout),
        ncu_timeout: Duration::from_secs_f64(a.ncu_timeout),
        save_csv: a.save_csv.clone(),
    };
    let mut rows = Vec::new();
    for c in &selected {
        let mut one = |reference: bool| -> Result<()> {
            let r = runner::measure(&catalog, c, &cfg, &s.worker, ncu_exe.as_deref(), reference)?;
            eprintln!("{}", crate::report::visible::visible(&progress_line(&r)));
            rows.push(r);
            Ok(())
        };
        if matches!(
            c.kernel_spec().map(|k| &k.check),
            Some(Check::Reference { .. })
        ) {
            one(true)?;
        }
        one(false)?;
    }
    runner::link_references(&catalog, &mut rows);
    let title = format!(
        "# Course tables: `racegate perf` on {}\n\nMedian of CUDA-event timings after a warm-up; \
         bytes are each buffer read or written once; counters from Nsight Compute.",
        device.name
    );
    let md = table::markdown(&rows, &title);
    if let Some(p) = &a.table {
        settings::write_file(p, &md)?;
    }
    let mut text = md.clone();
    let mut broken = false;
    let judged: Vec<_> = rows.iter().flat_map(|r| &r.expectations).collect();
    if !judged.is_empty() {
        text.push_str("\n## Expectations\n\n");
    }
    for j in &judged {
        broken |= matches!(j.outcome, Outcome::Broken { .. });
        text.push_str(&crate::report::text::perf_expectation(j));
        text.push('\n');
    }
    for n in rows.iter().flat_map(|r| &r.notes) {
        text.push_str(&format!("note: {n}\n"));
    }
    let unavailable = rows.iter().find_map(|r| r.counters_unavailable.clone());
    let code = exit::worst([
        if broken { exit::FOUND } else { exit::OK },
        match &unavailable {
            Some(_) if !a.no_counters => exit::INCONCLUSIVE,
            _ => exit::OK,
        },
    ]);
    if let Some(u) = &unavailable {
        text.push_str(&format!(
            "\nno counters: {u}; timing only{}\n",
            if a.no_counters {
                ""
            } else {
                " (exit 3: inconclusive)"
            }
        ));
    }
    a.out.text(&text)?;
    a.out.write(&serde_json::json!({
        "verdict": match code { exit::OK => "ok", exit::FOUND => "broken", _ => "inconclusive" },
        "exit_code": code,
        "device": device.name,
        "counters": unavailable.as_ref().map_or("ok".to_string(), |u| u.to_string()),
        "rows": rows,
    }))?;
    Ok(code)
}
