//! The flags several commands share, each defined once: its name, placeholder, parser and help
//! text are here, and a command flattens the struct (`#[command(flatten)]`), as nextest shares
//! its option structs. Where a command's default differs from another's, the command gives it
//! where it is defined, with [`default!`] in a `#[command(mut_arg(...))]` and a comment saying
//! why: one definition of the flag, one default per command, nothing copied.
//!
//! A flag with no default of its own (`--trials`) is required until its command gives one, so a
//! command cannot forget it unseen; one whose absence means something (`--jobs`: the number of
//! cores) is an `Option`. The tests of `app` parse every command and check each default.

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
/// (`gate`), works it out ([`SanitizeTimeoutArg::seconds_or`]; the others pass the constant their
/// default was made from).
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

/// `--no-shrink`: no minimal-repro search after a failure.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct NoShrinkArg {
    /// Do not look for a minimal repro after a failure.
    ///
    /// By default a kernel that fails (wrong results, or in `stress` and `gate` a fault; never a
    /// hang) gets the smallest failing size: `stress` and `gate` search, within --shrink-budget,
    /// for it and a seed that fails on its first trial, re-check them a few times and give the
    /// command (`stress` prints it, `gate` puts it in the finding's message); `grade` runs one
    /// more worker that tries the exercise's sizes from the smallest up, three runs each, and
    /// names the smallest that fails in the feedback (the score does not change).
    #[arg(long)]
    pub no_shrink: bool,
}

/// `--shrink-budget SECONDS`: each command gives its default ([`default!`]).
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct ShrinkBudgetArg {
    /// Seconds the minimal-repro search may take (`gate`: per failing kernel).
    #[arg(long, value_parser = values::seconds)]
    pub shrink_budget: f64,
}

/// `--partition K/N`: one shard of a command's items.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct PartitionArg {
    /// Run one shard of the work: K/N (1 <= K <= N).
    ///
    /// Each item goes to the shard its name hashes to, so N jobs (a CI matrix) together run
    /// every item exactly once: `check`'s cases, `gate`'s manifest kernels and programs or
    /// --ctest tests (one program after `--` is one item, and refuses it), `grade`'s
    /// submissions, `mutate`'s mutants (by file and id, listed or run). A shard of `gate`,
    /// `grade` or `mutate` writes its stamp (partition, commit, settings) into its JSON, and
    /// `racegate merge` joins the shards of a `gate` or `grade` run into the one result; a
    /// `gate` shard keeps the baseline's entries of the other shards.
    #[arg(long, value_name = "K/N", value_parser = crate::source::partition::parse_flag)]
    pub partition: Option<crate::source::partition::Partition>,
}

/// `--lang LANG`: the language of the explanations, wherever a command gives them.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct LangArg {
    /// Language of the explanations: en or ko.
    ///
    /// What each kind of finding means, its usual cause and its fix: under the text report
    /// (`stress`, `sanitize`, `gate`), in the HTML report (--html, `report`) and in each failed
    /// item's feedback (`grade`, in the course's words). Default: from LC_ALL, LC_MESSAGES or
    /// LANG, else English.
    #[arg(long, value_name = "LANG", value_parser = values::lang)]
    pub lang: Option<crate::report::explain::Lang>,
}

impl LangArg {
    /// The language given, else the environment's ([`crate::report::explain::Lang::from_env`]).
    pub fn get(self) -> crate::report::explain::Lang {
        self.lang
            .unwrap_or_else(crate::report::explain::Lang::from_env)
    }
}
