//! The settings of a battery of detector runs over many cases (`check`, `gate`): stress trials
//! and their seed, the deadlines, how many processes run at once, the NVRTC architecture and
//! compute-sanitizer. The command line fills one [`Battery`]; this file alone turns it into each
//! detector's configuration.

use std::path::PathBuf;
use std::time::Duration;

use crate::sanitize::{SanitizeConfig, Tool};
use crate::stress::StressConfig;

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
