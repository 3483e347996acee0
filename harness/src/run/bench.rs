//! The benchmark: the full stress path against a bare cudarc launch loop, side by side in one
//! run, per kernel. It reports ratios; it never fails on a slow day.
//!
//! Both loops use one input set drawn and uploaded once (a stress run reuses each set for
//! `--per-set` trials; the cost of a new set is reported in its own column). The bare loop only
//! launches and synchronizes. The stress path does what every trial does: reset and poison the
//! outputs, poison shared memory, set the jitter seed, launch, and compare every element of
//! every buffer with its reference on the device, reading back one counter per buffer. Rounds alternate (bare, stress, bare, ...) and the
//! median round counts, so clock or load drift hits both sides alike.

use std::time::Duration;

use rand::SeedableRng;
use serde::Serialize;

use crate::source::catalog::{Case, Catalog};
use crate::build::compile::{self, BuildOptions};
use crate::errors::Result;
use crate::source::exercises::SizeChoice;
use crate::run::launch::{Gpu, RunOptions};

/// The default problem size of a family: one where a launch takes tens of microseconds or more,
/// so launch overhead does not dominate the ratio.
pub fn default_size(exercise: &str) -> u32 {
    match exercise {
        "matmul" => 1024,
        "transpose" => 4096,
        "handoff" => 1 << 20,
        _ => 1 << 22,
    }
}

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
    /// Drawing a new input set (sizes, inputs, CPU reference) and uploading it, once per set.
    pub new_set_us: f64,
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
    let family = case.family();
    let draw_start = std::time::Instant::now();
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    let problem = family.problem(&case.entry, SizeChoice::Fixed(size), &mut rng);
    let load = |jitter| -> Result<_> {
        let built = compile::compile(
            &catalog.root,
            &case.path,
            &BuildOptions {
                arch: arch.to_string(),
                jitter,
                extra: case.compile_options(),
            },
        )?;
        gpu.load(&built.ptx)
    };
    let (plain, jittered) = (load(false)?, load(true)?);
    let mut resident = gpu.upload(&problem)?;
    let new_set_us = draw_start.elapsed().as_secs_f64() * 1e6;
    let mut trial = |module, jitter: bool| -> Result<Duration> {
        let opts = RunOptions {
            jitter_seed: jitter.then_some(1),
            poison_shared: true,
            poison_outputs: true,
            poison: crate::run::poison::POISONS[0],
        };
        let t = std::time::Instant::now();
        for _ in 0..iters {
            let counts = gpu.run_resident(module, &problem, &mut resident, opts)?;
            std::hint::black_box(counts);
        }
        Ok(t.elapsed())
    };
    // Warm up both paths (module JIT, allocator).
    gpu.bare_loop(&plain, &problem, 3)?;
    trial(&plain, false)?;
    trial(&jittered, true)?;
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
        new_set_us,
    })
}
