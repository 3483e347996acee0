//! Stress detector, parent side: runs a case's trials in a worker process under a deadline
//! (one kept across cases: `stress_session.rs`), turns the worker's lines into a
//! [`StressReport`]. Nothing here prints: progress goes out
//! as [`StressEvent`]s and the report is rendered by `report`.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::build::compile::{self, BuildOptions};
use crate::errors::Result;
use crate::proc::watchdog::Exit;
use crate::run::schedule::JitterMode;
pub use crate::run::stress_session::{Slot, StressLeft};
use crate::run::stress_worker::Ready;
pub use crate::run::stress_worker::Request;
use crate::run::trial::{TrialOutcome, TrialResult};
use crate::source::catalog::{Case, Catalog};
use crate::source::exercises::SizeChoice;
use crate::source::manifest::Check;

/// Consecutive trials that share one input set unless a command says otherwise.
pub const DEFAULT_PER_SET: u32 = 4;

/// What to run.
#[derive(Clone, Debug)]
pub struct StressConfig {
    pub trials: u32,
    pub seed: u64,
    pub jitter: bool,
    /// Which jitter when `jitter` is on: pct (the default) or dense, kept to compare.
    pub jitter_mode: JitterMode,
    /// `None`: the family's default range.
    pub size: Option<SizeChoice>,
    /// Deadline for one trial (no result line for this long means a hang).
    pub timeout: Duration,
    /// Consecutive trials that reuse one input set (each with its own jitter seed).
    pub per_set: u32,
    pub arch: String,
}

impl StressConfig {
    /// `trials` trials from `seed`, on the default size ranges, [`DEFAULT_PER_SET`] trials per
    /// input set.
    pub fn new(trials: u32, seed: u64, jitter: bool, timeout: Duration, arch: &str) -> Self {
        StressConfig {
            trials,
            seed,
            jitter,
            jitter_mode: JitterMode::Pct,
            size: None,
            timeout,
            per_set: DEFAULT_PER_SET,
            arch: arch.to_string(),
        }
    }
}

/// The verdict of a stress run.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every trial passed.
    Pass,
    /// Some trials gave wrong results.
    Fail,
    /// A trial missed its deadline; the worker's process group was killed.
    Hang { deadline_s: f64, left_behind: bool },
    /// A CUDA error (e.g. 719, an illegal address) or a crashed worker.
    Fault { error: String },
}

/// Progress, for reporters.
#[derive(Clone, Debug)]
pub enum StressEvent<'a> {
    Trial(&'a TrialOutcome),
}

/// Everything a stress run found.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct StressReport {
    pub case: String,
    pub jitter: bool,
    pub seed: u64,
    pub size: String,
    pub trials_requested: u32,
    pub trials_run: u32,
    pub failures: u32,
    /// failures / trials_run.
    pub rate: f64,
    /// With no failure: the exact one-sided 95% upper bound on the rate (Clopper-Pearson with
    /// 0 failures of n: 1 - 0.05^(1/n); 95% for 0 of 1, never above 100%).
    pub upper_bound_95: Option<f64>,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// The first trial that did not pass.
    pub first_failure: Option<TrialOutcome>,
    /// A command that reruns just that trial.
    pub repro: Option<String>,
    pub seconds: f64,
    /// When the run first saw the bug: seconds from its start (compilation included) to the
    /// first failing trial's report, or to the deadline of a hang.
    pub first_detection_seconds: Option<f64>,
    /// Where `seconds` went.
    pub phases: StressPhases,
}

/// Where a stress run's time went, in seconds (the matrix is judged by its wall time,
/// and a cell's fixed costs are not its trials). `start` is the parent's view from spawning the
/// worker to its ready line; `catalog`, `open` and `load` are the worker's own parts of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct StressPhases {
    /// NVRTC or the build cache, in the parent.
    pub compile: f64,
    /// Spawn to the worker's ready line.
    pub start: f64,
    /// The worker reading the catalog or manifest.
    pub catalog: f64,
    /// The worker opening the device (driver start and context).
    pub open: f64,
    /// The worker loading the module(s) (the driver's JIT of the PTX).
    pub load: f64,
    /// Drawing, completing, uploading and calibrating input sets, summed over trials.
    pub sets: f64,
    /// The trials, sets included, as the worker timed them.
    pub trials: f64,
}

impl StressReport {
    pub fn flagged(&self) -> bool {
        self.verdict != Verdict::Pass
    }

    /// The trial that first failed (a hang: the trial that never reported).
    pub fn first_failing_trial(&self) -> Option<u32> {
        match &self.verdict {
            Verdict::Pass => None,
            Verdict::Hang { .. } => Some(self.trials_run.saturating_sub(1)),
            _ => self.first_failure.as_ref().map(|f| f.trial),
        }
    }
}

/// The 95% Wilson score interval of a rate of `k` in `n`, as (low, high).
pub fn wilson_95(k: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n, z) = (k as f64, n as f64, 1.959964);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) + z * z / (4.0 * n)) / n).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Renders a size choice the way `--size` takes it.
pub fn size_arg(size: Option<SizeChoice>) -> Option<String> {
    match size? {
        SizeChoice::Fixed(n) => Some(n.to_string()),
        SizeChoice::Random { lo, hi } => Some(format!("{lo}..{hi}")),
        SizeChoice::Sanitize => Some("sanitize".into()),
    }
}

/// Parses `--size`: `N`, `LO..HI` (inclusive) or `sanitize`.
pub fn parse_size(s: &str) -> std::result::Result<SizeChoice, String> {
    if s == "sanitize" {
        return Ok(SizeChoice::Sanitize);
    }
    let num = |x: &str| -> std::result::Result<u32, String> {
        x.trim()
            .parse::<u32>()
            .ok()
            // Kernels take their sizes as `int`.
            .filter(|v| (1..=i32::MAX.unsigned_abs()).contains(v))
            .ok_or_else(|| format!("`{x}` is not a size (a positive integer up to 2^31 - 1)"))
    };
    match s.split_once("..") {
        Some((lo, hi)) => {
            let (lo, hi) = (num(lo)?, num(hi.trim_start_matches('='))?);
            if lo > hi {
                return Err(format!("empty range {s}"));
            }
            Ok(SizeChoice::Random { lo, hi })
        }
        None => Ok(SizeChoice::Fixed(num(s)?)),
    }
}

impl StressPhases {
    /// Takes the worker's ready line (seen `since_spawn` seconds after the spawn): its start,
    /// and the parts the worker timed, where it says them (a worker that prints
    /// `{"ready":true}` alone leaves those 0). A line that does not parse changes nothing.
    fn read_ready(&mut self, line: &str, since_spawn: f64) {
        if let Ok(r) = serde_json::from_str::<Ready>(line) {
            self.start = since_spawn;
            self.catalog = secs(r.catalog_us);
            self.open = secs(r.open_us);
            self.load = secs(r.load_us);
        }
    }
}

/// Microseconds as seconds.
fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// Runs `cfg.trials` trials of `case` in a worker started from `exe` (the racegate binary)
/// for this case alone.
pub fn run(
    catalog: &Catalog,
    case: &Case,
    cfg: &StressConfig,
    exe: &Path,
    on_event: impl FnMut(StressEvent),
) -> Result<StressReport> {
    run_in(&mut Slot::default(), catalog, case, cfg, exe, on_event)
}

/// [`run`] in `slot`'s worker, kept for the slot's next case when this one ends well (a
/// pool thread's slot: `proc::pool::run_all_with`).
pub fn run_in(
    slot: &mut Slot,
    catalog: &Catalog,
    case: &Case,
    cfg: &StressConfig,
    exe: &Path,
    mut on_event: impl FnMut(StressEvent),
) -> Result<StressReport> {
    let start = std::time::Instant::now();
    let mut phases = StressPhases::default();
    let ptx = compile::compile_to_cache(
        &catalog.root,
        &case.path,
        &BuildOptions::for_case(case, &cfg.arch, cfg.jitter),
    )?;
    let ref_ptx = match case.kernel_spec().map(|k| &k.check) {
        Some(Check::Reference { path, .. }) => Some(compile::compile_to_cache(
            &catalog.root,
            &catalog.manifest_file(path),
            &BuildOptions::for_reference(case, &cfg.arch),
        )?),
        _ => None,
    };
    let request = Request {
        case: case.name.clone(),
        ptx,
        ref_ptx,
        trials: cfg.trials,
        seed: cfg.seed,
        per_set: cfg.per_set,
        size: cfg.size,
        jitter: if cfg.jitter {
            cfg.jitter_mode
        } else {
            JitterMode::None
        },
    };
    phases.compile = start.elapsed().as_secs_f64();
    let mut outcomes: Vec<TrialOutcome> = Vec::new();
    let mut first_seen: Option<f64> = None;
    let spawned = std::time::Instant::now();
    let finished = slot.run_case(exe, &catalog.child_args(), &request, cfg.timeout, |line| {
        match serde_json::from_str::<TrialOutcome>(line) {
            _ if line.starts_with("{\"ready\"") => {
                phases.read_ready(line, spawned.elapsed().as_secs_f64());
            }
            Ok(o) => {
                on_event(StressEvent::Trial(&o));
                if o.result != TrialResult::Pass && first_seen.is_none() {
                    first_seen = Some(start.elapsed().as_secs_f64());
                }
                outcomes.push(o);
            }
            Err(_) => {} // not a protocol line (the worker prints nothing else on stdout)
        }
    })?;
    phases.trials = secs(outcomes.iter().map(|o| o.micros).sum());
    phases.sets = secs(outcomes.iter().map(|o| o.set_micros).sum());
    // Trials that reported (at most `cfg.trials`, a u32).
    let reported = u32::try_from(outcomes.len()).unwrap_or(u32::MAX);
    let trials_run = reported;
    let failures = outcomes
        .iter()
        .filter(|o| o.result != TrialResult::Pass)
        .count();
    let failures = u32::try_from(failures).unwrap_or(u32::MAX);
    let first_failure = outcomes
        .iter()
        .find(|o| o.result != TrialResult::Pass)
        .cloned();
    // A fault ends the worker; it is the verdict even when wrong results came before it.
    let fault = outcomes
        .iter()
        .find(|o| matches!(o.result, TrialResult::Fault { .. }))
        .cloned();
    let verdict = match (&finished.exit, fault.as_ref().or(first_failure.as_ref())) {
        (Exit::TimedOut, _) => Verdict::Hang {
            deadline_s: cfg.timeout.as_secs_f64(),
            left_behind: finished.left_behind,
        },
        (
            _,
            Some(TrialOutcome {
                result: TrialResult::Fault { error },
                ..
            }),
        ) => Verdict::Fault {
            error: error.clone(),
        },
        (Exit::Code(0), Some(_)) => Verdict::Fail,
        (Exit::Code(0), None) if trials_run == cfg.trials => Verdict::Pass,
        (exit, _) => Verdict::Fault {
            error: format!(
                "the worker ended ({}) after {trials_run} of {} trials: {}",
                match exit {
                    Exit::Code(c) => format!("exit code {c}"),
                    Exit::Signal(s) => format!("signal {s}"),
                    Exit::TimedOut => "timed out".into(),
                },
                cfg.trials,
                last_lines(&finished.stderr, 6)
            ),
        },
    };
    // A hang is a failure of the trial that never reported.
    let (trials_run, failures) = match verdict {
        Verdict::Hang { .. } => (trials_run + 1, failures + 1),
        _ => (trials_run, failures),
    };
    let failing_trial = match &verdict {
        Verdict::Hang { .. } => Some(reported),
        _ => first_failure.as_ref().map(|f| f.trial),
    };
    let repro = failing_trial.map(|t| repro_line(catalog, case, cfg, t));
    let verdict_is_hang = matches!(verdict, Verdict::Hang { .. });
    Ok(StressReport {
        case: case.name.clone(),
        jitter: cfg.jitter,
        seed: cfg.seed,
        size: size_arg(cfg.size).unwrap_or_else(|| "default".into()),
        trials_requested: cfg.trials,
        trials_run,
        failures,
        rate: if trials_run == 0 {
            0.0
        } else {
            failures as f64 / trials_run as f64
        },
        upper_bound_95: (failures == 0 && trials_run > 0).then(|| zero_failure_bound(trials_run)),
        verdict,
        first_failure,
        repro,
        first_detection_seconds: match verdict_is_hang {
            true => Some(start.elapsed().as_secs_f64()),
            false => first_seen,
        },
        seconds: start.elapsed().as_secs_f64(),
        phases,
    })
}

/// The command that reruns trial `t`: its input set from the set's seed, up to that trial.
pub fn repro_line(catalog: &Catalog, case: &Case, cfg: &StressConfig, t: u32) -> String {
    let start = crate::run::trial::set_start(t, cfg.per_set);
    let seed = crate::run::trial::seed(cfg.seed, start);
    command_line(catalog, case, cfg, seed, t - start + 1)
}

/// The command that runs `trials` trials of `cfg` from `seed` (the whole of a confirmed
/// few-trial repro, not only the input set of its last trial).
pub fn command_line(
    catalog: &Catalog,
    case: &Case,
    cfg: &StressConfig,
    seed: u64,
    trials: u32,
) -> String {
    let mut s = format!(
        "racegate {}stress {} --seed {seed} --trials {} --per-set {}",
        match &catalog.manifest {
            Some(m) => format!(
                "--manifest {} ",
                manifest_arg(&m.path, std::env::current_dir().ok().as_deref())
            ),
            None => String::new(),
        },
        case.name,
        trials,
        cfg.per_set.max(1)
    );
    if !cfg.jitter {
        s.push_str(" --no-jitter");
    } else if cfg.jitter_mode != JitterMode::Pct {
        s.push_str(&format!(" --jitter {}", cfg.jitter_mode));
    }
    if let Some(size) = size_arg(cfg.size) {
        s.push_str(&format!(" --size {size}"));
    }
    s
}

/// The manifest as a repro line names it: relative to `cwd` (where the user stands) when it is
/// under it, else as it is; quoted for a shell when it needs it.
fn manifest_arg(path: &Path, cwd: Option<&Path>) -> String {
    // Both canonical (a symlinked folder, `..` in the path), else as written without `..`.
    let under = |dir: &Path| -> Option<std::path::PathBuf> {
        if let (Ok(p), Ok(d)) = (path.canonicalize(), dir.canonicalize()) {
            return p.strip_prefix(d).ok().map(Path::to_path_buf);
        }
        let p = crate::build::toolchain::normalize(path);
        p.strip_prefix(dir).ok().map(Path::to_path_buf)
    };
    let shown = match cwd.filter(|_| path.is_absolute()).and_then(under) {
        Some(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,=:@".contains(c);
    if shown.chars().all(plain) {
        shown
    } else {
        format!("'{}'", shown.replace('\'', "'\\''"))
    }
}

fn last_lines(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let tail = lines[lines.len().saturating_sub(n)..].join(" | ");
    if tail.is_empty() {
        "no output on stderr".into()
    } else {
        tail
    }
}

/// The exact one-sided 95% upper bound on a failure rate after `n` trials with no failure
/// (Clopper-Pearson): the rate `p` at which seeing no failure in `n` trials has probability 5%,
/// `1 - 0.05^(1/n)`. 95% for 1 trial (the rule of three, `3 / n`, said 300%), 2.95% for 100.
pub fn zero_failure_bound(n: u32) -> f64 {
    1.0 - 0.05f64.powf(1.0 / f64::from(n.max(1)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_ready_line_is_read_with_its_figures_or_without_them() {
        use super::StressPhases;
        let mut p = StressPhases::default();
        p.read_ready(
            r#"{"ready":true,"catalog_us":2000,"open_us":350000,"load_us":90000}"#,
            0.5,
        );
        assert_eq!(
            (p.start, p.catalog, p.open, p.load),
            (0.5, 0.002, 0.35, 0.09)
        );
        // A bare ready line: the start is known, its parts are not.
        let mut old = StressPhases::default();
        old.read_ready(r#"{"ready":true}"#, 0.7);
        assert_eq!((old.start, old.open, old.load), (0.7, 0.0, 0.0));
        // Not a ready line: nothing changes.
        let mut none = StressPhases::default();
        none.read_ready(r#"{"ready":"#, 0.7);
        assert_eq!(none, StressPhases::default());
    }

    #[test]
    fn the_zero_failure_bound_is_exact_and_never_above_one() {
        assert!((super::zero_failure_bound(1) - 0.95).abs() < 1e-12);
        let b = super::zero_failure_bound(100);
        assert!((b - 0.029513).abs() < 1e-5, "{b}");
        // At the bound, seeing no failure in n trials has probability 5%.
        for n in [1u32, 2, 7, 50, 1000] {
            let p = super::zero_failure_bound(n);
            assert!((0.0..1.0).contains(&p));
            assert!(
                ((1.0 - p).powi(i32::try_from(n).unwrap()) - 0.05).abs() < 1e-9,
                "{n}"
            );
        }
    }

    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("256"), Ok(SizeChoice::Fixed(256)));
        assert_eq!(
            parse_size("64..512"),
            Ok(SizeChoice::Random { lo: 64, hi: 512 })
        );
        assert_eq!(
            parse_size("64..=512"),
            Ok(SizeChoice::Random { lo: 64, hi: 512 })
        );
        assert!(parse_size("0").is_err());
        assert!(parse_size("9..3").is_err());
        assert!(parse_size("big").is_err());
        // Kernels take `int` sizes: 2^31 would reach them as a negative number.
        assert_eq!(
            parse_size("2147483647"),
            Ok(SizeChoice::Fixed(i32::MAX.unsigned_abs()))
        );
        assert!(parse_size("2147483648").is_err());
        assert!(parse_size("1..2147483648").is_err());
    }

    #[test]
    fn size_round_trips_through_the_repro_line() {
        for s in ["256", "64..512", "sanitize"] {
            assert_eq!(size_arg(Some(parse_size(s).unwrap())).as_deref(), Some(s));
        }
    }

    /// Repro lines name the manifest from where the user stands: relative under the current
    /// folder (at any depth, through `..` too), as it is elsewhere or when already relative.
    #[test]
    fn repro_lines_name_the_manifest_relative_to_the_current_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["", "ci", "a/b/c", "with space"] {
            let folder = root.join(sub);
            std::fs::create_dir_all(&folder).unwrap();
            let m = folder.join("racegate.toml");
            std::fs::write(&m, "").unwrap();
            let want = Path::new(sub).join("racegate.toml").display().to_string();
            let want = if sub.contains(' ') {
                format!("'{want}'")
            } else {
                want
            };
            assert_eq!(manifest_arg(&m, Some(&root)), want, "{sub}");
            let dotted = root.join("x/..").join(sub).join("racegate.toml");
            std::fs::create_dir_all(root.join("x")).unwrap();
            assert_eq!(manifest_arg(&dotted, Some(&root)), want, "{sub} through ..");
            // Outside the current folder (a sibling): the path as it is.
            let other = root.join("elsewhere");
            std::fs::create_dir_all(&other).unwrap();
            if !sub.contains(' ') {
                assert_eq!(manifest_arg(&m, Some(&other)), m.display().to_string());
            }
        }
        assert_eq!(
            manifest_arg(Path::new("ci/racegate.toml"), Some(&root)),
            "ci/racegate.toml"
        );
        assert_eq!(
            manifest_arg(Path::new("/etc/racegate.toml"), None),
            "/etc/racegate.toml"
        );
    }

    #[test]
    fn wilson_interval_brackets_the_rate() {
        let (lo, hi) = super::wilson_95(12, 100);
        assert!(
            lo > 0.06 && lo < 0.08 && hi > 0.19 && hi < 0.21,
            "{lo} {hi}"
        );
        assert_eq!(super::wilson_95(0, 0), (0.0, 1.0));
        let (lo, hi) = super::wilson_95(100, 100);
        assert!(lo > 0.96 && hi == 1.0);
    }
}
