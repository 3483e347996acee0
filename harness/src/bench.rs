//! The benchmark: the full stress path against a bare cudarc launch loop, side by side in one
//! run, per kernel. It reports ratios; it never fails on a slow day.
//!
//! Both loops use one problem drawn once (the reference result is computed once per input
//! set). The bare loop uploads once and only launches and synchronizes. The stress path does
//! what every trial does: upload inputs, poison outputs and shared memory, launch, read
//! everything back and check every element. Rounds alternate (bare, stress, bare, ...) and the
//! median round counts, so clock or load drift hits both sides alike.

use std::time::Duration;

use rand::SeedableRng;
use serde::Serialize;

use crate::catalog::{Case, Catalog};
use crate::compile::{self, BuildOptions};
use crate::errors::Result;
use crate::exercises::{self, SizeChoice};
use crate::launch::{Gpu, RunOptions};
use crate::oracle;

/// One row of the benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub case: String,
    pub problem: String,
    /// Median time of one bare launch + synchronize, in microseconds.
    pub bare_us: f64,
    /// Median time of one stress trial without jitter (same problem), in microseconds.
    pub stress_us: f64,
    /// The same with jitter on.
    pub stress_jitter_us: f64,
    /// stress_us / bare_us.
    pub ratio: f64,
    pub ratio_jitter: f64,
}

/// Measures `case` at `size`: `rounds` alternating rounds of `iters` iterations each.
pub fn measure(
    catalog: &Catalog,
    gpu: &Gpu,
    case: &Case,
    size: u32,
    iters: u32,
    rounds: u32,
    arch: &str,
) -> Result<BenchRow> {
    let family = exercises::by_name(&case.exercise).expect("checked");
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    let problem = family.problem(&case.entry, SizeChoice::Fixed(size), &mut rng);
    let load = |jitter| -> Result<_> {
        let built = compile::compile(
            &catalog.root,
            &case.path,
            &BuildOptions {
                arch: arch.to_string(),
                jitter,
            },
        )?;
        gpu.load(&built.ptx)
    };
    let (plain, jittered) = (load(false)?, load(true)?);
    let trial = |module, jitter: bool| -> Result<Duration> {
        let opts = RunOptions {
            jitter_seed: jitter.then_some(1),
            poison_shared: true,
            poison_outputs: true,
        };
        let t = std::time::Instant::now();
        for _ in 0..iters {
            let actual = gpu.run(module, &problem, opts)?;
            // The result is not judged here; the check's cost is what is measured.
            std::hint::black_box(oracle::check(&problem.buffers, &actual));
        }
        Ok(t.elapsed())
    };
    // Warm up both paths (module JIT, allocator).
    gpu.bare_loop(&plain, &problem, 3)?;
    trial(&plain, false)?;
    let (mut bare, mut stress, mut stress_j) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        bare.push(gpu.bare_loop(&plain, &problem, iters)?);
        stress.push(trial(&plain, false)?);
        stress_j.push(trial(&jittered, true)?);
    }
    let per = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6 / iters as f64
    };
    let (b, s, j) = (per(&mut bare), per(&mut stress), per(&mut stress_j));
    Ok(BenchRow {
        case: case.name.clone(),
        problem: problem.label,
        bare_us: b,
        stress_us: s,
        stress_jitter_us: j,
        ratio: s / b,
        ratio_jitter: j / b,
    })
}

/// The benchmark table in markdown.
pub fn table(rows: &[BenchRow]) -> String {
    let mut out = String::from(
        "| case | problem | bare launch (µs) | stress trial (µs) | ratio | stress trial, jitter (µs) | ratio, jitter |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| `{}` | {} | {:.1} | {:.1} | {:.2}x | {:.1} | {:.2}x |\n",
            r.case, r.problem, r.bare_us, r.stress_us, r.ratio, r.stress_jitter_us, r.ratio_jitter
        ));
    }
    out
}
