//! Timing for `racegate perf`, on the device: one kernel's problem launched bare (no poison, no
//! jitter, no compare) between two CUDA events, after a warm-up, until the median is stable;
//! and the work model of each family (bytes moved, or FLOPs) that turns a time into GB/s or
//! GFLOP/s. Runs in the perf worker (`racegate __perf-worker`), a child with a deadline; the
//! parent side (`judge/perf/`) reads the one JSON line it prints.
//!
//! ```no_run
//! # fn f(gpu: &racegate::run::launch::Gpu, m: &racegate::run::launch::Module,
//! #      p: &racegate::source::exercises::Problem) -> racegate::Result<()> {
//! use racegate::run::perf::{time_problem, Repetitions};
//! let t = time_problem(gpu, m, p, Repetitions::default())?;
//! println!("median {:.1} us over {} launches", t.median_us, t.samples_us.len());
//! # Ok(()) }
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};

use cudarc::driver::{sys, CudaFunction, CudaSlice};
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::errors::{Error, Result};
use crate::run::launch::{Gpu, Module};
use crate::source::catalog::{Case, Catalog};
use crate::source::exercises::{Init, Problem, SizeChoice};
use crate::source::manifest::Check;

/// The default problem size of a family for `perf`: inputs larger than the H200's 50 MB L2
/// wherever the family is bound by memory, so repeated launches cannot be served from cache
/// (a 4096 x 4096 transpose moves 2 x 64 MiB; a reduction of 2^25 floats reads 128 MiB). Matmul
/// is bound by arithmetic and stays where its CPU reference is quick to draw.
pub fn default_size(exercise: &str) -> u32 {
    match exercise {
        "matmul" => 1024,
        "transpose" => 4096,
        "reduce" | "stencil" => 1 << 25,
        "handoff" => 1 << 20,
        _ => 1 << 24,
    }
}

/// The course's reference kernel of a family: the first rung every other kernel of the family
/// is measured against (the speed-up column of the course tables).
pub fn family_reference(exercise: &str) -> Option<&'static str> {
    match exercise {
        "transpose" => Some("transpose_naive_tile"),
        "reduce" => Some("reduce_interleaved"),
        "matmul" => Some("matmul_naive"),
        "stencil" => Some("stencil3"),
        "histogram" => Some("histogram_global"),
        "counter" => Some("counter_single"),
        _ => None,
    }
}

/// What one launch of a problem does, for a rate: bytes moved or floating-point operations.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Work {
    /// Bytes every correct kernel must move: each buffer read or written once (a transpose:
    /// 2 N^2 x 4; a reduction: the input and the partial sums).
    pub bytes: u64,
    /// Floating-point operations (matmul: 2 M N K); 0 where the family is about bandwidth.
    pub flops: u64,
}

/// The work of `problem`, drawn by family `exercise` at the fixed size `size`.
pub fn work(exercise: &str, problem: &Problem, size: u32) -> Work {
    let bytes = problem
        .buffers
        .iter()
        .map(|b| match &b.init {
            Init::Data(d) => d.len() as u64,
            Init::Poison(n) | Init::Zero(n) => *n as u64,
        })
        .sum();
    let flops = match exercise {
        // M = N = K = size (a fixed size draws every dimension alike).
        "matmul" => 2 * (size as u64).pow(3),
        _ => 0,
    };
    Work { bytes, flops }
}

/// How many timed launches: at least `min`, then more until `budget_ms` of kernel time, at most
/// `max`, after `warmup` untimed ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repetitions {
    pub warmup: u32,
    pub min: u32,
    pub max: u32,
    pub budget_ms: u32,
}

impl Default for Repetitions {
    /// 5 warm-up launches, then 25 to 1000 timed ones within 300 ms of kernel time.
    fn default() -> Self {
        Repetitions {
            warmup: 5,
            min: 25,
            max: 1000,
            budget_ms: 300,
        }
    }
}

/// One kernel's timing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_us: f64,
    /// The interquartile range over the median: how stable the median is.
    pub spread: f64,
    pub samples_us: Vec<f64>,
}

/// The median of `v` (the mean of the middle two for an even count); NaN when empty.
pub fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

/// The `q` quantile of `v` by linear interpolation between order statistics; NaN when empty.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    // bounded: 0 <= pos <= len - 1, so both are indices of `s`.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

/// The timing of a list of samples in microseconds.
pub fn timing(samples_us: Vec<f64>) -> Timing {
    let m = median(&samples_us);
    let iqr = quantile(&samples_us, 0.75) - quantile(&samples_us, 0.25);
    Timing {
        median_us: m,
        spread: if m > 0.0 { iqr / m } else { f64::NAN },
        samples_us,
    }
}

/// Launches `problem`'s steps on buffers uploaded once: `reps.warmup` untimed, then each timed
/// one between two events on the launch stream. No poison, jitter or compare: only the kernel.
pub fn time_problem(
    gpu: &Gpu,
    module: &Module,
    problem: &Problem,
    reps: Repetitions,
) -> Result<Timing> {
    let stream = gpu.stream();
    let bufs: Vec<CudaSlice<u8>> = problem
        .buffers
        .iter()
        .map(|b| match &b.init {
            Init::Data(d) => stream.clone_htod(d),
            Init::Poison(n) | Init::Zero(n) => stream.alloc_zeros::<u8>((*n).max(1)),
        })
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::cuda("uploading", e))?;
    let funcs: Vec<CudaFunction> = problem
        .launches
        .iter()
        .map(|s| gpu.function(module, &s.kernel))
        .collect::<Result<_>>()?;
    let launch_all = || -> Result<()> {
        for (f, s) in funcs.iter().zip(&problem.launches) {
            // SAFETY: the family sizes every buffer for the geometry it drew (as in `Gpu::run`);
            // a kernel that faults anyway ends this worker with a CUDA error, not host damage.
            unsafe { gpu.launch(f, s, &bufs, s.shared) }?;
        }
        Ok(())
    };
    for _ in 0..reps.warmup {
        launch_all()?;
    }
    stream
        .synchronize()
        .map_err(|e| Error::cuda("warming up", e))?;
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let mut samples = Vec::new();
    let mut total_ms = 0.0f64;
    while samples.len() < reps.max.max(1) as usize
        && (samples.len() < reps.min.max(1) as usize || total_ms < reps.budget_ms as f64)
    {
        let start = stream
            .record_event(flags)
            .map_err(|e| Error::cuda("recording an event", e))?;
        launch_all()?;
        let end = stream
            .record_event(flags)
            .map_err(|e| Error::cuda("recording an event", e))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(|e| Error::cuda("running the kernel", e))? as f64;
        total_ms += ms;
        samples.push(ms * 1000.0);
    }
    Ok(timing(samples))
}

/// What the perf worker is asked to run (its hidden command line).
#[derive(Clone, Debug)]
pub struct WorkerArgs {
    pub case: String,
    pub ptx: PathBuf,
    /// Time the manifest's reference kernel (from this PTX) instead of the case's own.
    pub reference_ptx: Option<PathBuf>,
    pub size: u32,
    pub reps: Repetitions,
}

/// The worker's one line: what was timed, on what, and how long it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// The kernel timed: the case's entry, or the manifest reference's.
    pub kernel: String,
    pub problem: String,
    pub size: u32,
    pub work: Work,
    pub timing: Timing,
}

/// Worker side: draws the case's problem at `size` (fixed seed), times it, prints one JSON line.
pub fn worker(catalog: &Catalog, w: &WorkerArgs) -> Result<()> {
    let case = catalog.get(&w.case)?;
    let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(7);
    let mut problem = case
        .family()
        .problem(&case.entry, SizeChoice::Fixed(w.size), &mut rng);
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| Error::io("reading", p, e));
    let gpu = Gpu::open()?;
    let (module, kernel) = match &w.reference_ptx {
        None => (gpu.load(&read(&w.ptx)?)?, case.entry.name.clone()),
        Some(p) => {
            let Some(Check::Reference { entry, .. }) = case.kernel_spec().map(|k| &k.check) else {
                return Err(Error::Usage(format!(
                    "`{}` has no reference kernel to time",
                    case.name
                )));
            };
            // As the stress judge runs a reference: its own launches, else ours renamed.
            if problem.reference_launches.is_empty() {
                for step in &mut problem.launches {
                    step.kernel = entry.clone();
                }
            } else {
                problem.launches = std::mem::take(&mut problem.reference_launches);
            }
            (gpu.load(&read(p)?)?, entry.clone())
        }
    };
    let timing = time_problem(&gpu, &module, &problem, w.reps)?;
    let m = Measured {
        kernel,
        work: work(&case.exercise, &problem, w.size),
        problem: problem.label,
        size: w.size,
        timing,
    };
    let line = serde_json::to_string(&m).map_err(|e| Error::Child(e.to_string()))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").map_err(|e| Error::io("writing", "stdout", e))?;
    out.flush().map_err(|e| Error::io("writing", "stdout", e))
}

/// The case to compare `case` with: the catalog's family reference (itself when it is the
/// reference), or, for a manifest kernel, its `check` reference (timed by the same case).
pub fn reference_of<'a>(catalog: &'a Catalog, case: &'a Case) -> Option<&'a Case> {
    if case.kernel_spec().is_some() {
        return None;
    }
    let name = family_reference(&case.exercise)?;
    catalog.cases.iter().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_quantiles_interpolate_between_order_statistics() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        // 1..=5: the quartiles are 2 and 4.
        let v = [5.0, 4.0, 3.0, 2.0, 1.0];
        assert_eq!(quantile(&v, 0.25), 2.0);
        assert_eq!(quantile(&v, 0.75), 4.0);
        let t = timing(v.to_vec());
        assert_eq!(t.median_us, 3.0);
        assert!((t.spread - 2.0 / 3.0).abs() < 1e-12, "{t:?}");
        // One outlier moves the median by nothing.
        assert_eq!(median(&[10.0, 10.0, 10.0, 10.0, 900.0]), 10.0);
    }

    #[test]
    fn a_transpose_moves_each_matrix_once_and_matmul_counts_2_n_cubed() {
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(1);
        let entry = crate::source::entry::Entry {
            name: "transpose_padded".into(),
            params: Default::default(),
        };
        let t = crate::source::exercises::by_name("transpose").unwrap();
        let p = t.problem(&entry, SizeChoice::Fixed(64), &mut rng);
        assert_eq!(
            work("transpose", &p, 64),
            Work {
                bytes: 2 * 64 * 64 * 4,
                flops: 0
            }
        );
        let m = crate::source::exercises::by_name("matmul").unwrap();
        let entry = crate::source::entry::Entry {
            name: "matmul_naive".into(),
            params: [("tile".to_string(), 16)].into_iter().collect(),
        };
        let p = m.problem(&entry, SizeChoice::Fixed(32), &mut rng);
        assert_eq!(work("matmul", &p, 32).flops, 2 * 32 * 32 * 32);
    }

    #[test]
    fn every_family_reference_is_a_catalog_kernel_of_that_family() {
        let dir = crate::source::paths::package_dir();
        let catalog = Catalog::discover(dir.parent().unwrap()).unwrap();
        for c in catalog.cases.iter().filter(|c| !c.is_variant()) {
            if let Some(r) = reference_of(&catalog, c) {
                assert_eq!(r.exercise, c.exercise, "{}", c.name);
                assert!(!r.is_variant());
            }
        }
        for ex in ["transpose", "reduce", "matmul"] {
            let name = family_reference(ex).unwrap();
            assert!(
                catalog.cases.iter().any(|c| c.name == name),
                "{name} is not in the catalog"
            );
        }
    }
}
