//! The settings of a battery of detector runs over many cases (`check`, `gate`): stress trials
//! and their seed, the deadlines, how many processes run at once, the NVRTC architecture and
//! compute-sanitizer. The command line fills one [`Battery`]; this file alone turns it into each
//! detector's configuration.

use std::path::PathBuf;
use std::time::Duration;

use crate::judge::sanitize::{SanitizeConfig, Tool};
use crate::run::stress::StressConfig;
use crate::source::case::Detector;

/// What every run of a battery shares.
#[derive(Clone, Debug)]
pub struct Battery {
    /// Stress trials per case and jitter setting.
    pub trials: u32,
    /// Seed of the first stress trial.
    pub seed: u64,
    /// Stress trials per input set.
    pub per_set: u32,
    pub stress_timeout: Duration,
    pub sanitize_timeout: Duration,
    /// Processes (stress workers and sanitizers) at once.
    pub jobs: usize,
    pub arch: String,
    /// compute-sanitizer; `None` when it is not installed.
    pub sanitizer: Option<PathBuf>,
}

impl Battery {
    /// A battery for this machine: its NVRTC architecture (the device's, else `compute_90`),
    /// its compute-sanitizer if installed, and `jobs` processes at once (default: the number of
    /// cores, [`default_jobs`]); seed and deadlines as given.
    pub fn for_machine(
        trials: u32,
        seed: u64,
        stress_timeout: Duration,
        sanitize_timeout: Duration,
        jobs: Option<usize>,
    ) -> Battery {
        Battery {
            trials,
            seed,
            per_set: crate::run::stress::DEFAULT_PER_SET,
            stress_timeout,
            sanitize_timeout,
            jobs: jobs.unwrap_or_else(default_jobs),
            arch: crate::run::device::arch_or_default(),
            sanitizer: crate::build::toolchain::compute_sanitizer(),
        }
    }

    /// Stress on the family's (or manifest's) size ranges, with or without jitter.
    pub fn stress(&self, jitter: bool) -> StressConfig {
        StressConfig {
            per_set: self.per_set,
            ..StressConfig::new(
                self.trials,
                self.seed,
                jitter,
                self.stress_timeout,
                &self.arch,
            )
        }
    }

    /// One sanitizer tool on the sanitizer geometry.
    pub fn sanitize(&self, tool: Tool) -> SanitizeConfig {
        SanitizeConfig::new(
            tool,
            self.sanitizer.clone(),
            self.sanitize_timeout,
            &self.arch,
        )
    }
}

/// A rough cost of one matrix cell in seconds, for ordering only (long cells first, so the
/// pool's tail is short): compute-sanitizer's process start and its slowdown per tool (the
/// H200 showed racecheck far slower than synccheck, memcheck, then initcheck; globalcheck and
/// sharedcheck about a plain run), stress by its trials, scaled by how heavy the family's
/// problems are. Never a deadline.
pub fn estimated_seconds(det: Detector, exercise: &str, trials: u32) -> f64 {
    let base = match det {
        Detector::Racecheck => 8.0,
        Detector::Synccheck => 3.0,
        Detector::Memcheck => 2.0,
        Detector::Initcheck => 1.5,
        Detector::Globalcheck
        | Detector::Sharedcheck
        | Detector::Fencecheck
        | Detector::Streamcheck => 2.0,
        Detector::Stress | Detector::Watchdog => 1.0 + 0.006 * trials as f64,
        Detector::StressNojitter => 1.0 + 0.004 * trials as f64,
        // A timing worker and one ncu run with its replays.
        Detector::Perf => 10.0,
    };
    let weight = match exercise {
        "matmul" => 1.5,
        "transpose" => 1.3,
        _ => 1.0,
    };
    base * weight
}

/// Builds every PTX the battery's runs of `cases` will ask for (with and without the jitter
/// prelude, the unoptimized build sharedcheck reads, a manifest kernel's reference), and
/// racegate's own tool when `own_tools`, on `jobs` threads, while the runs start beside it
/// ([`ahead_jobs`]): a run whose build is in hand takes it from `compile::compile_to_cache`'s
/// memo, one whose build is under way waits for it, and one whose build has not started builds
/// it itself. Building everything first kept the pool idle for it (H200 run 28: the matrix's
/// first cell started after 4.5 s of builds, and three of racegate's own tool batches waited
/// a further 4 s for the tool's build; before prebuilding at all, H200 run 25, 46 s of the
/// matrix's stress time was compiling at the same time as thirteen other processes). A build
/// that fails is left to the run that needs it, which reports it.
pub fn prebuild(
    cfg: &Battery,
    catalog: &crate::source::catalog::Catalog,
    cases: &[&crate::source::catalog::Case],
    own_tools: bool,
) {
    use crate::build::compile::{compile_to_cache, BuildOptions};
    use crate::source::manifest::Check;
    let mut builds: Vec<(String, BuildOptions)> = Vec::new();
    for c in cases {
        let plain = BuildOptions::for_case(c, &cfg.arch, false);
        builds.push((c.path.clone(), plain.clone().unoptimized()));
        builds.push((c.path.clone(), plain));
        builds.push((c.path.clone(), BuildOptions::for_case(c, &cfg.arch, true)));
        if let Some(Check::Reference { path, .. }) = c.kernel_spec().map(|k| &k.check) {
            builds.push((
                catalog.manifest_file(path),
                BuildOptions::for_reference(c, &cfg.arch),
            ));
        }
    }
    std::thread::scope(|s| {
        if own_tools {
            // ignored: a tool that does not build is reported by every run that needs it
            s.spawn(|| drop(crate::build::globalcheck::ensure(&catalog.root)));
        }
        crate::proc::pool::run_all(
            builds,
            ahead_jobs(cfg.jobs),
            |(file, opts)| {
                // ignored: the run that needs this build compiles it again and reports its error
                let _ = compile_to_cache(&catalog.root, &file, &opts);
            },
            |()| {},
        );
    });
}

/// Builds at once ahead of the runs: half the pool's threads (at least one), since the runs'
/// own processes start beside them; twice the pool's made each build slower (H200 run 28,
/// call B: 176 builds in 4.5 s instead of 3.4 s with the cores half idle either way).
pub fn ahead_jobs(jobs: usize) -> usize {
    jobs.div_ceil(2).max(1)
}

/// The order to start work in: the most expensive first by `cost`; equal costs keep their
/// given order (a stable sort: the same input, the same order); as
/// [`crate::proc::pool::run_all_ranked`] picks them when the ranks do not change meanwhile.
#[cfg(test)]
pub fn long_first<T>(mut items: Vec<T>, cost: impl Fn(&T) -> f64) -> Vec<T> {
    items.sort_by(|a, b| cost(b).total_cmp(&cost(a)));
    items
}

/// The default number of processes at once: the number of cores.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// The running executable, as the worker the engine re-executes through the hidden worker
/// subcommands: the racegate binary, or a program that serves them first thing in `main`.
pub fn current_worker() -> crate::Result<PathBuf> {
    std::env::current_exe().map_err(|e| crate::Error::process("cannot find racegate itself", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cells_start_first_and_ties_keep_their_order() {
        let cells = vec![
            ("a", Detector::Initcheck, "reduce"),
            ("b", Detector::Stress, "reduce"),
            ("c", Detector::Racecheck, "reduce"),
            ("d", Detector::Racecheck, "matmul"),
            ("e", Detector::Initcheck, "reduce"),
            ("f", Detector::StressNojitter, "reduce"),
        ];
        let order: Vec<&str> = long_first(cells.clone(), |(_, d, x)| estimated_seconds(*d, x, 100))
            .iter()
            .map(|c| c.0)
            .collect();
        // racecheck (matmul weighs more), stress with jitter (1.6 s at 100 trials), initcheck
        // (1.5 s, twice in their given order), stress without jitter (1.4 s).
        assert_eq!(order, ["d", "c", "b", "a", "e", "f"]);
        // Deterministic: the same input gives the same order, whatever ran before.
        let again: Vec<&str> = long_first(cells, |(_, d, x)| estimated_seconds(*d, x, 100))
            .iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(order, again);
        // More trials make a stress cell longer than a cheap sanitizer cell.
        assert!(
            estimated_seconds(Detector::Stress, "reduce", 1000)
                > estimated_seconds(Detector::Synccheck, "reduce", 1000)
        );
    }
}
