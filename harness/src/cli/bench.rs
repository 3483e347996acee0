//! `racegate bench`: the full stress path against a bare cudarc launch loop, side by side in one
//! run, per kernel; prints ratios, never a pass/fail on time.

use crate::errors::exit;
use crate::run::launch::Gpu;
use crate::{report, run::bench, Result};

use super::output::JsonArg;
use super::settings::Global;
use super::settings::{self, Settings};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Cases (default: every correct kernel).
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
    #[command(flatten)]
    out: JsonArg,
}

pub fn run(global: &Global, a: BenchArgs) -> Result<u8> {
    a.out.claim_stdout();
    let catalog = settings::catalog(global, None)?;
    a.out.check(&catalog)?;
    let selected: Vec<_> = if a.cases.is_empty() {
        catalog.cases.iter().filter(|c| !c.is_variant()).collect()
    } else {
        catalog.select(&a.cases)?
    };
    let gpu = Gpu::open()?;
    let s = Settings::new(None)?;
    let mut rows = Vec::new();
    for c in selected {
        let n = a.size.unwrap_or_else(|| bench::default_size(&c.exercise));
        let row = bench::measure(&catalog, &gpu, c, n, a.iters, a.rounds, &s.arch)?;
        if !a.out.on_stdout() {
            eprintln!(
                "{}: {:.2}x ({:.1} us bare, {:.1} us stress)",
                row.case, row.ratio, row.bare_us, row.stress_us
            );
        }
        rows.push(row);
    }
    a.out.text(&report::markdown::bench_table(&rows))?;
    a.out.write(&rows)?;
    Ok(exit::OK)
}
