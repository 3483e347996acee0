//! The settings of a battery of detector runs over many cases (`check`, `gate`): stress trials
//! and their seed, the deadlines, how many processes run at once, the NVRTC architecture and
//! compute-sanitizer. The command line fills one [`Battery`]; this file alone turns it into each
//! detector's configuration.

use std::path::PathBuf;
use std::time::Duration;

use crate::judge::sanitize::{SanitizeConfig, Tool};
use crate::run::stress::StressConfig;

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

/// The default number of processes at once: the number of cores.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
}

/// The running executable, as the worker the engine re-executes through the hidden worker
/// subcommands: the racegate binary, or a program that serves them first thing in `main`.
pub fn current_worker() -> crate::Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| crate::Error::Child(format!("cannot find racegate itself: {e}")))
}
