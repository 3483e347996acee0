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

use crate::build::compile::{self, BuildOptions};
use crate::errors::Result;
use crate::run::launch::{Gpu, RunOptions};
use crate::run::schedule::{JitterMode, Plan, DEFAULT_BUDGET};
use crate::source::catalog::{Case, Catalog};
use crate::source::exercises::SizeChoice;

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

/// A row with the dense jitter beside pct: `row.stress_jitter_us` is the default (pct)
/// jitter, `stress_dense_us` the dense one, measured in the same alternating rounds.
#[derive(Clone, Debug, Serialize)]
pub struct JitterRow {
    #[serde(flatten)]
    pub row: BenchRow,
    /// One stress trial with the dense jitter, in microseconds.
    pub stress_dense_us: f64,
    /// stress_dense_us / bare_us.
    pub ratio_dense: f64,
    /// Where a trial's time goes, measured in the same rounds.
    pub parts: Parts,
}

/// A stress trial taken apart (µs per iteration, the same problem and rounds as the row):
/// what the compares add is `stress_us - launch_only_us`; what the pct prelude's bookkeeping
/// costs without a single delay is `count_only_us - stress_us`; `pct_noinline_us` is the pct
/// jitter with the prelude's barrier hook out of line (`-DRACEGATE_PCT_NOINLINE`), so inlining
/// it is measured side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Parts {
    /// Reset and poison outputs, poison shared memory, launch, synchronize: no compare.
    pub launch_only_us: f64,
    /// The full trial on the jitter build under a plan with no change point.
    pub count_only_us: f64,
    /// The full pct trial on the out-of-line prelude build.
    pub pct_noinline_us: f64,
    /// `count_only_us` on a build whose hook counts nothing (`-DRACEGATE_PCT_NOCOUNT`): the
    /// hook's cost without its per-warp barrier count.
    pub no_count_us: f64,
    /// The full trial on the jitter build with jitter off (mode 0): what the build alone costs
    /// (each barrier followed by one look at the plan's mode) beside `stress_us`.
    pub jitter_build_off_us: f64,
}

/// Geometric mean and worst case of each ratio over the rows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub jitter_geomean: f64,
    pub jitter_worst: f64,
    pub dense_geomean: f64,
    pub dense_worst: f64,
    pub nojitter_geomean: f64,
    pub nojitter_worst: f64,
}

fn geomean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

fn worst(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

/// The summary of a run's rows.
pub fn summary(rows: &[JitterRow]) -> Summary {
    let pick = |f: fn(&JitterRow) -> f64| rows.iter().map(f).collect::<Vec<f64>>();
    let (j, d, n) = (
        pick(|r| r.row.ratio_jitter),
        pick(|r| r.ratio_dense),
        pick(|r| r.row.ratio),
    );
    Summary {
        jitter_geomean: geomean(&j),
        jitter_worst: worst(&j),
        dense_geomean: geomean(&d),
        dense_worst: worst(&d),
        nojitter_geomean: geomean(&n),
        nojitter_worst: worst(&n),
    }
}

/// The summary as the lines `docs/benchmark.md` quotes (`jitter geomean: N.NNx`, ...).
pub fn summary_lines(s: &Summary) -> String {
    format!(
        "jitter geomean: {:.2}x\njitter worst: {:.2}x\ndense jitter geomean: {:.2}x\n\
         dense jitter worst: {:.2}x\nno-jitter geomean: {:.2}x\nno-jitter worst: {:.2}x\n",
        s.jitter_geomean,
        s.jitter_worst,
        s.dense_geomean,
        s.dense_worst,
        s.nojitter_geomean,
        s.nojitter_worst
    )
}

/// Measures `case` at `size`: `rounds` alternating rounds of `iters` iterations each of the
/// bare loop, the stress trial without jitter, with the pct jitter, and with the dense jitter.
pub fn measure(
    catalog: &Catalog,
    gpu: &Gpu,
    case: &Case,
    size: u32,
    iters: u32,
    rounds: u32,
    arch: &str,
) -> Result<JitterRow> {
    let family = case.family();
    let load = |jitter, define: Option<&str>| -> Result<_> {
        let mut extra = case.compile_options();
        if let Some(d) = define {
            extra.push(format!("-D{d}"));
        }
        let built = compile::compile(
            &catalog.root,
            &case.path,
            &BuildOptions {
                arch: arch.to_string(),
                jitter,
                extra,
            },
        )?;
        gpu.load(&built.ptx)
    };
    let (plain, jittered) = (load(false, None)?, load(true, None)?);
    let noinline = load(true, Some("RACEGATE_PCT_NOINLINE"))?;
    let nocount = load(true, Some("RACEGATE_PCT_NOCOUNT"))?;
    // The new input set's cost: drawing and uploading it (the builds above are not part of it,
    // so the column does not show NVRTC's time).
    let draw_start = std::time::Instant::now();
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    let problem = family.problem(&case.entry, SizeChoice::Fixed(size), &mut rng);
    let mut resident = gpu.upload(&problem)?;
    let new_set_us = draw_start.elapsed().as_secs_f64() * 1e6;
    // What a stress worker measures once per kernel to size its pct plans.
    let cal = gpu.calibrate(&jittered, &problem, &mut resident)?;
    let opts_for = |jitter_seed| RunOptions {
        jitter_seed,
        poison_shared: true,
        poison_outputs: true,
        poison: crate::run::poison::POISONS[0],
    };
    // `None` as the mode: the jitter build under a plan without change points.
    let mut trial = |module, mode: Option<JitterMode>| -> Result<Duration> {
        let t = std::time::Instant::now();
        for i in 0..iters {
            let seed = 1 + i as u64;
            let plan = match mode {
                Some(m) => Plan::for_mode(m, seed, &cal, DEFAULT_BUDGET),
                None => Plan::count_only(seed),
            };
            let opts = opts_for((plan.mode != super::schedule::MODE_OFF).then_some(seed));
            let counts = gpu.run_planned(module, &problem, &mut resident, opts, Some(&plan))?;
            std::hint::black_box(counts);
        }
        Ok(t.elapsed())
    };
    let launch_only = |module| -> Result<Duration> {
        let mut res = gpu.upload(&problem)?;
        let t = std::time::Instant::now();
        for _ in 0..iters {
            let opts = opts_for(None);
            gpu.reset(&problem, &mut res, opts)?;
            gpu.launch_problem(module, &problem, &res.bufs, opts, Some(&Plan::off()))?;
            gpu.stream()
                .synchronize()
                .map_err(|e| crate::Error::cuda("running the kernel", e))?;
        }
        Ok(t.elapsed())
    };
    // Warm up every path (module JIT, allocator).
    gpu.bare_loop(&plain, &problem, 3)?;
    launch_only(&plain)?;
    trial(&plain, Some(JitterMode::None))?;
    trial(&jittered, Some(JitterMode::Pct))?;
    trial(&jittered, Some(JitterMode::Dense))?;
    trial(&jittered, None)?;
    trial(&noinline, Some(JitterMode::Pct))?;
    trial(&nocount, None)?;
    trial(&jittered, Some(JitterMode::None))?;
    let mut v: [Vec<Duration>; 9] = Default::default();
    for _ in 0..rounds {
        v[0].push(gpu.bare_loop(&plain, &problem, iters)?);
        v[1].push(trial(&plain, Some(JitterMode::None))?);
        v[2].push(trial(&jittered, Some(JitterMode::Pct))?);
        v[3].push(trial(&jittered, Some(JitterMode::Dense))?);
        v[4].push(launch_only(&plain)?);
        v[5].push(trial(&jittered, None)?);
        v[6].push(trial(&noinline, Some(JitterMode::Pct))?);
        v[7].push(trial(&nocount, None)?);
        v[8].push(trial(&jittered, Some(JitterMode::None))?);
    }
    let per = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6 / iters as f64
    };
    let [b, s, j, d, launch_only_us, count_only_us, pct_noinline_us, no_count_us, jitter_build_off_us] =
        v.each_mut().map(per);
    Ok(JitterRow {
        row: BenchRow {
            case: case.name.clone(),
            problem: problem.label,
            bare_us: b,
            stress_us: s,
            stress_jitter_us: j,
            ratio: s / b,
            ratio_jitter: j / b,
            new_set_us,
        },
        stress_dense_us: d,
        ratio_dense: d / b,
        parts: Parts {
            launch_only_us,
            count_only_us,
            pct_noinline_us,
            no_count_us,
            jitter_build_off_us,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ratio: f64, pct: f64, dense: f64) -> JitterRow {
        JitterRow {
            row: BenchRow {
                case: "c".into(),
                problem: String::new(),
                bare_us: 10.0,
                stress_us: 10.0 * ratio,
                stress_jitter_us: 10.0 * pct,
                ratio,
                ratio_jitter: pct,
                new_set_us: 0.0,
            },
            stress_dense_us: 10.0 * dense,
            ratio_dense: dense,
            parts: Parts {
                launch_only_us: 0.0,
                count_only_us: 0.0,
                pct_noinline_us: 0.0,
                jitter_build_off_us: 0.0,
                no_count_us: 0.0,
            },
        }
    }

    #[test]
    fn the_summary_is_the_geometric_mean_and_the_worst_case() {
        let s = summary(&[row(1.0, 2.0, 4.0), row(1.5, 8.0, 16.0)]);
        assert!((s.jitter_geomean - 4.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s.jitter_worst, 8.0);
        assert!((s.dense_geomean - 8.0).abs() < 1e-9);
        assert_eq!(s.dense_worst, 16.0);
        assert_eq!(s.nojitter_worst, 1.5);
        let lines = summary_lines(&s);
        assert!(
            lines.starts_with("jitter geomean: 4.00x\njitter worst: 8.00x\n"),
            "{lines}"
        );
        assert!(lines.contains("no-jitter worst: 1.50x"), "{lines}");
    }
}
