//! The flags several commands share, each defined once: its name, placeholder, parser and help
//! text are here, and a command flattens the struct (`#[command(flatten)]`), as nextest shares
//! its option structs. Where a command's default differs from another's, the command gives it
//! where it is defined, with [`default!`] in a `#[command(mut_arg(...))]` and a comment saying
//! why: one definition of the flag, one default per command, nothing copied.
//!
//! A flag with no default of its own (`--trials`) is required until its command gives one, so a
//! command cannot forget it unseen; one whose absence means something (`--jobs`: the number of
//! cores) is an `Option`.

use super::values;

/// `mut_arg`'s change that gives a shared flag its default in one command:
/// `#[command(mut_arg("trials", flags::default!(50)))]`. The value is any expression that
/// displays as the flag parses it (a constant keeps one source: `default!(SANITIZE_SEED)`);
/// `--help` shows it as `[default: 50]`.
macro_rules! default {
    ($value:expr) => {
        |arg: clap::Arg| {
            // One text per use of the macro, made once: clap keeps a `&'static str`.
            static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
            let text: &'static str = TEXT.get_or_init(|| $value.to_string());
            arg.default_value(text).required(false)
        }
    };
}

pub(crate) use default;

/// `--trials N`: each command gives its own default ([`default!`]).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct TrialsArg {
    /// Stress trials per kernel: each on new random sizes and inputs, every output element
    /// checked.
    ///
    /// A command that stresses a kernel with schedule jitter and again without (`check`) runs
    /// this many of each; `bench --detection` runs this many in each of its --seeds runs.
    #[arg(long, value_parser = values::at_least_one)]
    pub trials: u32,
}

/// `--seed N`: a command gives its default ([`default!`]); without one a seed is drawn at random
/// ([`SeedArg::get`]).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct SeedArg {
    /// Seed of the inputs (trial t of a run uses seed + t).
    ///
    /// `stress` draws one at random when none is given (each failure's repro command names
    /// it); `grade` mixes it with the secret seed; `bench --detection` starts run s at
    /// seed + 1000 s; `sanitize` seeds a case's one run with it (a program makes its own
    /// inputs).
    #[arg(long)]
    pub seed: Option<u64>,
}

impl SeedArg {
    /// The seed given, else the command's default, else one drawn at random.
    pub fn get(self) -> u64 {
        self.seed.unwrap_or_else(super::settings::random_seed)
    }
}

/// `--jobs N`: the processes of one run at once.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct JobsArg {
    /// Processes at once (default: the number of cores): stress workers and sanitizers.
    ///
    /// `gate` runs at most half of them as stress runs (RACEGATE_STRESS_AT_ONCE=N sets another
    /// count): the others run the tools of the kernels already stressed.
    #[arg(long, value_parser = values::jobs)]
    pub jobs: Option<usize>,
}

/// `--stress-timeout SECONDS`, the same default wherever it is taken (`check`, `mutate`).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct StressTimeoutArg {
    /// Deadline of one stress trial, in seconds.
    #[arg(long, default_value_t = 5.0, value_parser = values::seconds)]
    pub stress_timeout: f64,
}

/// `--sanitize-timeout SECONDS`: a command gives its default ([`default!`]) or, without one
/// (`gate`), works it out ([`SanitizeTimeoutArg::seconds`]).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct SanitizeTimeoutArg {
    /// Deadline of one sanitizer run, in seconds.
    ///
    /// A kernel that finished none of its stress trials (the first one missed the trial
    /// deadline) gets at most 10 s per tool run (`check` and `gate`: or the trial deadline, when
    /// longer): it hangs under the tool too, and while it spins it slows every other run; a
    /// kernel that finishes runs the small sanitizer geometry in a few seconds, and racecheck
    /// reports a barrier deadlock after 3 s. `gate` has no fixed default: 120 s for a
    /// manifest's kernels, for a program a multiple of its measured plain run, at least 120 s;
    /// there a sanitizer past its deadline is inconclusive unless the code also hangs without
    /// it (or the tool saw a deadlock).
    #[arg(long, value_parser = values::seconds)]
    pub sanitize_timeout: Option<f64>,
}

impl SanitizeTimeoutArg {
    /// The deadline given, else the command's default, else `otherwise` (a command with no
    /// fixed default).
    pub fn seconds_or(self, otherwise: f64) -> f64 {
        self.sanitize_timeout.unwrap_or(otherwise)
    }
}

#[cfg(test)]
mod tests {
    use super::super::app::Cli;

    /// The arguments of the command `args` names, defaults filled in as clap parses them.
    fn parsed(args: &str) -> clap::ArgMatches {
        let argv = std::iter::once("racegate").chain(args.split_whitespace());
        let m = <Cli as clap::CommandFactory>::command()
            .try_get_matches_from(argv)
            .unwrap_or_else(|e| panic!("{args}: {e}"));
        m.subcommand().expect("a command").1.clone()
    }

    /// Each command's defaults, parsed as they are when the flag is not given: one definition
    /// of each flag, one default per command.
    #[test]
    fn every_command_keeps_its_defaults() {
        let (stress, grade) = ("stress x", "grade --exercise x s.cu");
        let sanitize = "sanitize --tool racecheck x";
        for (args, n) in [
            (stress, 200),
            ("check", 50),
            ("gate", 100),
            ("mutate", 20),
            (grade, 8),
            ("bench", 100),
        ] {
            assert_eq!(parsed(args).get_one::<u32>("trials"), Some(&n), "{args}");
        }
        let seed = crate::judge::sanitize::SANITIZE_SEED;
        for (args, n) in [
            (stress, None),
            ("check", Some(1)),
            ("mutate", Some(1)),
            (grade, Some(1)),
            ("bench", Some(1)),
            (sanitize, Some(seed)),
        ] {
            assert_eq!(parsed(args).get_one::<u64>("seed").copied(), n, "{args}");
        }
        for args in ["check", "gate", "mutate"] {
            assert_eq!(parsed(args).get_one::<usize>("jobs"), None, "{args}");
        }
        for (args, flag, s) in [
            ("check", "stress_timeout", Some(5.0)),
            ("mutate", "stress_timeout", Some(5.0)),
            ("check", "sanitize_timeout", Some(20.0)),
            ("mutate", "sanitize_timeout", Some(20.0)),
            (grade, "sanitize_timeout", Some(60.0)),
            ("gate", "sanitize_timeout", None),
        ] {
            assert_eq!(
                parsed(args).get_one::<f64>(flag).copied(),
                s,
                "{args} {flag}"
            );
        }
    }
}
