//! The battery's flags that `check` and `mutate` share, as one struct each command flattens:
//! the trials, the seed, the processes at once, the devices and the two deadlines. Each flag is
//! defined in [`super::flags`] (or [`super::workers`]); the command gives its defaults with
//! `mut_arg` ([`super::flags::default!`]).

use crate::judge::battery::Battery;

use super::flags::{JobsArg, SanitizeTimeoutArg, SeedArg, StressTimeoutArg, TrialsArg};
use super::settings::Settings;
use super::workers::DevicesArg;

/// `--trials`, `--seed`, `--jobs`, `--devices`, `--stress-timeout` and `--sanitize-timeout`.
#[derive(clap::Args)]
pub struct BatteryArgs {
    #[command(flatten)]
    pub trials: TrialsArg,
    #[command(flatten)]
    pub seed: SeedArg,
    #[command(flatten)]
    pub jobs: JobsArg,
    #[command(flatten)]
    pub devices: DevicesArg,
    #[command(flatten)]
    pub stress_timeout: StressTimeoutArg,
    #[command(flatten)]
    pub sanitize_timeout: SanitizeTimeoutArg,
}

impl BatteryArgs {
    /// The battery these flags ask for on the machine `s` describes; `sanitize_timeout` is the
    /// command's default deadline of a sanitizer run, for when the flag has no value.
    pub fn battery(&self, s: &Settings, sanitize_timeout: f64) -> Battery {
        s.battery(
            self.trials.trials,
            self.seed.get(),
            self.stress_timeout.stress_timeout,
            self.sanitize_timeout.seconds_or(sanitize_timeout),
        )
    }
}
