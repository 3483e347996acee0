//! The detection table (`racegate bench --detection`): for every catalog variant that stress
//! must flag, stress under each jitter mode (dense, pct, none) over several seeds, side by side
//! in one run: trials to first detection (median over seeds), the detection rate with its exact
//! 95% interval (Clopper-Pearson), and the time per trial. Nothing here prints; the table is
//! rendered to a string ([`markdown`]) and the rows serialize to JSON.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::errors::Result;
use crate::run::schedule::JitterMode;
use crate::run::stress::{self, StressConfig, StressEvent, Verdict};
use crate::source::case::{Detector, Expect};
use crate::source::catalog::{Case, Catalog};

/// What one detection run does per case and mode.
#[derive(Clone, Debug)]
pub struct DetectionConfig {
    /// Independent stress runs per case and mode, seeds `seed`, `seed + 1000`, ...
    pub seeds: u32,
    /// Trials per run.
    pub trials: u32,
    pub seed: u64,
    pub timeout: Duration,
    pub per_set: u32,
    pub arch: String,
    pub modes: Vec<JitterMode>,
}

/// One case under one jitter mode, over every seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DetectionRow {
    pub case: String,
    pub mode: JitterMode,
    /// Per seed: the 1-based trial that first failed, `None` when none did.
    pub first_detection: Vec<Option<u32>>,
    /// Median of `first_detection` over the seeds, undetected runs counted as never; `None`
    /// when half or more of the runs never detected.
    pub median_trials_to_detection: Option<f64>,
    pub failures: u32,
    pub trials: u32,
    pub rate: f64,
    /// Exact two-sided 95% interval of the rate.
    pub rate_low: f64,
    pub rate_high: f64,
    /// Mean wall time of one trial in the worker (a new input set included where one starts).
    pub us_per_trial: f64,
    /// Median over seeds of the seconds from a run's start to its first detection.
    pub median_seconds_to_detection: Option<f64>,
}

/// The cases stress must flag, in catalog order: the catalog's variants whose header says so,
/// and for a manifest the broken twins its `expected.toml` (beside it, as the corpus has)
/// lists with `stress` among `flag`.
pub fn stress_flagged(catalog: &Catalog) -> crate::Result<Vec<&Case>> {
    let twins = match &catalog.manifest {
        Some(m) => {
            let path = m.dir.join("expected.toml");
            let twins = twins_stress_flags(&path)?;
            // A name that is no kernel of the manifest is a typo or a stale entry: said, not
            // dropped (the table would quietly lack it).
            if let Some(stray) = twins
                .iter()
                .find(|t| catalog.cases.iter().all(|c| &c.name != *t))
            {
                return Err(crate::Error::Usage(format!(
                    "{}: `{stray}` is no kernel of {}",
                    path.display(),
                    m.path.display()
                )));
            }
            twins
        }
        None => Default::default(),
    };
    Ok(catalog
        .cases
        .iter()
        .filter(|c| {
            (c.is_variant() && c.expectation(Detector::Stress) == Expect::Flag)
                || twins.contains(&c.name)
        })
        .collect())
}

/// The names an `expected.toml` says stress must flag (`[name] flag = ["stress", ...]`); none
/// when there is no such file.
fn twins_stress_flags(path: &std::path::Path) -> crate::Result<std::collections::BTreeSet<String>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
        Err(e) => return Err(crate::Error::io("reading", path, e)),
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e| crate::Error::input(path.display().to_string(), e))?;
    Ok(table
        .iter()
        .filter(|(_, v)| {
            v.get("flag")
                .and_then(|f| f.as_array())
                .is_some_and(|f| f.iter().any(|d| d.as_str() == Some("stress")))
        })
        .map(|(k, _)| k.clone())
        .collect())
}

/// The median of per-run values where `None` is "never" (larger than every number); `None`
/// when the median itself is "never".
pub fn median_detection(v: &[Option<f64>]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut sorted: Vec<f64> = v.iter().map(|x| x.unwrap_or(f64::INFINITY)).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let m = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    m.is_finite().then_some(m)
}

/// ln(k!) for k = 0..=n.
fn ln_factorials(n: u32) -> Vec<f64> {
    let mut t = vec![0.0f64; n as usize + 1];
    for k in 1..=n as usize {
        t[k] = t[k - 1] + (k as f64).ln();
    }
    t
}

/// P(X <= k) for X ~ Binomial(n, p).
fn binomial_cdf(k: u32, n: u32, p: f64, lf: &[f64]) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return if k >= n { 1.0 } else { 0.0 };
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    (0..=k.min(n))
        .map(|i| {
            let (i, nn) = (i as usize, n as usize);
            (lf[nn] - lf[i] - lf[nn - i] + i as f64 * lp + (nn - i) as f64 * lq).exp()
        })
        .sum::<f64>()
        .min(1.0)
}

/// The exact (Clopper-Pearson) two-sided 95% interval of a rate of `k` in `n`, as (low,
/// high): low solves P(X >= k) = 2.5%, high solves P(X <= k) = 2.5%. With k = 0 the high end
/// is `1 - 0.025^(1/n)` (the two-sided form of [`stress::zero_failure_bound`]).
pub fn clopper_pearson_95(k: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let k = k.min(n);
    let lf = ln_factorials(n);
    // f is decreasing in p; find f(p) = 0.025 by bisection.
    let solve = |f: &dyn Fn(f64) -> f64| {
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..200 {
            let mid = (lo + hi) / 2.0;
            if f(mid) > 0.025 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo + hi) / 2.0
    };
    // P(X >= k; p) = 2.5% where cdf(k - 1; p) = 97.5% (the cdf decreases in p).
    let low = if k == 0 {
        0.0
    } else {
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..200 {
            let mid = (lo + hi) / 2.0;
            if binomial_cdf(k - 1, n, mid, &lf) > 0.975 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (lo + hi) / 2.0
    };
    let high = if k == n {
        1.0
    } else {
        solve(&|p| binomial_cdf(k, n, p, &lf))
    };
    (low, high)
}

/// Runs `case` under `mode` for every seed of `cfg` (each a full stress run in its own
/// worker), `exe` being the worker.
pub fn run_case(
    catalog: &Catalog,
    case: &Case,
    mode: JitterMode,
    cfg: &DetectionConfig,
    exe: &Path,
) -> Result<DetectionRow> {
    let mut first = Vec::new();
    let mut seconds = Vec::new();
    let (mut failures, mut trials, mut micros) = (0u32, 0u32, 0u64);
    for s in 0..cfg.seeds {
        let sc = StressConfig {
            per_set: cfg.per_set,
            jitter_mode: mode,
            ..StressConfig::new(
                cfg.trials,
                cfg.seed.wrapping_add(1000 * s as u64),
                mode != JitterMode::None,
                cfg.timeout,
                &cfg.arch,
            )
        };
        let mut run_micros = 0u64;
        let r = stress::run(catalog, case, &sc, exe, |StressEvent::Trial(t)| {
            run_micros += t.micros;
        })?;
        micros += run_micros;
        failures += r.failures;
        trials += r.trials_run;
        first.push(r.first_failing_trial().map(|t| t + 1));
        seconds.push(r.first_detection_seconds);
        // A hang's trial reported nothing: count its deadline as its time.
        if let Verdict::Hang { deadline_s, .. } = r.verdict {
            // Whole microseconds, toward zero (a deadline is never negative).
            micros += crate::source::values::f64_to_u64(deadline_s * 1e6);
        }
    }
    let (low, high) = clopper_pearson_95(failures, trials);
    Ok(DetectionRow {
        case: case.name.clone(),
        mode,
        median_trials_to_detection: median_detection(
            &first.iter().map(|x| x.map(f64::from)).collect::<Vec<_>>(),
        ),
        first_detection: first,
        failures,
        trials,
        rate: if trials == 0 {
            0.0
        } else {
            failures as f64 / trials as f64
        },
        rate_low: low,
        rate_high: high,
        us_per_trial: if trials == 0 {
            0.0
        } else {
            micros as f64 / trials as f64
        },
        median_seconds_to_detection: median_detection(&seconds),
    })
}

/// The table as `docs/detection-table.md` holds it: one line per case, the modes side by side.
pub fn markdown(rows: &[DetectionRow], cfg: &DetectionConfig, header: &str) -> String {
    let mut out = String::new();
    out.push_str(header);
    out.push_str(&format!(
        "\n{} seeds x {} trials per case and mode ({} trials per input set), first seed {}.\n\
         Per mode: median trials to first detection over the seeds (`never` when half the runs \
         or more never detected), detection rate with its exact 95% interval, µs per trial.\n\n",
        cfg.seeds, cfg.trials, cfg.per_set, cfg.seed
    ));
    out.push_str("| case |");
    for m in &cfg.modes {
        out.push_str(&format!(
            " {m}: median trials | {m}: rate (95%) | {m}: µs/trial |"
        ));
    }
    out.push('\n');
    out.push_str("|---|");
    for _ in &cfg.modes {
        out.push_str("---|---|---|");
    }
    out.push('\n');
    let mut cases: Vec<&str> = Vec::new();
    for r in rows {
        if !cases.contains(&r.case.as_str()) {
            cases.push(&r.case);
        }
    }
    for c in cases {
        out.push_str(&format!("| `{c}` |"));
        for m in &cfg.modes {
            match rows.iter().find(|r| r.case == c && r.mode == *m) {
                Some(r) => out.push_str(&format!(
                    " {} | {:.1}% ({:.1}-{:.1}) | {:.1} |",
                    r.median_trials_to_detection
                        .map_or("never".to_string(), |x| format!("{x}")),
                    100.0 * r.rate,
                    100.0 * r.rate_low,
                    100.0 * r.rate_high,
                    r.us_per_trial
                )),
                None => out.push_str(" - | - | - |"),
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expected_files_stress_flags_are_read_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("expected.toml");
        assert!(
            twins_stress_flags(&p).unwrap().is_empty(),
            "no file, no twins"
        );
        std::fs::write(
            &p,
            "[a_racy]\nflag = [\"racecheck\", \"stress\"]\n[b_oob]\nflag = [\"memcheck\"]\n\
             [c]\nmay = [\"stress\"]\n[d]\nescapes = \"why\"\n",
        )
        .unwrap();
        let got: Vec<String> = twins_stress_flags(&p).unwrap().into_iter().collect();
        assert_eq!(got, ["a_racy"]);
        std::fs::write(&p, "[a\nflag =").unwrap();
        assert!(
            twins_stress_flags(&p).is_err(),
            "a broken file is an error, not no twins"
        );
    }

    /// A broken `expected.toml` is bad input (exit 2) whose printed chain shows the TOML
    /// parser's line and column once, kept as the error's cause.
    #[test]
    fn a_broken_expected_file_keeps_the_toml_error_as_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("expected.toml");
        std::fs::write(&p, "[a]\nflag =\n").unwrap();
        let e = twins_stress_flags(&p).unwrap_err();
        let cause = std::error::Error::source(&e);
        assert!(
            cause.is_some_and(|c| c.downcast_ref::<toml::de::Error>().is_some()),
            "{e:?}"
        );
        let shown = e.chain().to_string();
        assert!(shown.starts_with(&format!("{}: ", p.display())), "{shown}");
        assert_eq!(shown.matches("line 2, column").count(), 1, "{shown}");
        assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
    }

    /// The corpus's own file names the twins stress must flag (its README's design).
    #[test]
    fn the_corpus_names_its_stress_twins() {
        let p = crate::source::paths::package_dir()
            .parent()
            .unwrap()
            .join("examples/corpus/expected.toml");
        let got = twins_stress_flags(&p).unwrap();
        for twin in [
            "bitonic_sort_segments_racy",
            "compact_positive_racy",
            "deposit_mass_racy",
        ] {
            assert!(got.contains(twin), "{twin}: {got:?}");
        }
    }

    #[test]
    fn clopper_pearson_matches_its_closed_forms_and_brackets_the_rate() {
        let (lo, hi) = clopper_pearson_95(0, 100);
        assert_eq!(lo, 0.0);
        assert!((hi - (1.0 - 0.025f64.powf(0.01))).abs() < 1e-9, "{hi}");
        let (lo, hi) = clopper_pearson_95(100, 100);
        assert!((lo - 0.025f64.powf(0.01)).abs() < 1e-9, "{lo}");
        assert_eq!(hi, 1.0);
        // 12 of 100: R's binom.test gives 0.0636 - 0.2000.
        let (lo, hi) = clopper_pearson_95(12, 100);
        assert!(
            (lo - 0.0636).abs() < 5e-4 && (hi - 0.2000).abs() < 5e-4,
            "{lo} {hi}"
        );
        // 1 of 2: 0.0126 - 0.9874.
        let (lo, hi) = clopper_pearson_95(1, 2);
        assert!(
            (lo - 0.0126).abs() < 5e-4 && (hi - 0.9874).abs() < 5e-4,
            "{lo} {hi}"
        );
        assert_eq!(clopper_pearson_95(0, 0), (0.0, 1.0));
    }

    #[test]
    fn the_median_counts_undetected_runs_as_never() {
        assert_eq!(median_detection(&[Some(3.0), Some(1.0), None]), Some(3.0));
        assert_eq!(median_detection(&[Some(3.0), None, None]), None);
        assert_eq!(median_detection(&[Some(2.0), Some(4.0)]), Some(3.0));
        assert_eq!(median_detection(&[Some(2.0), None]), None);
        assert_eq!(median_detection(&[]), None);
    }

    #[test]
    fn the_table_puts_modes_side_by_side() {
        let cfg = DetectionConfig {
            seeds: 2,
            trials: 10,
            seed: 1,
            timeout: Duration::from_secs(1),
            per_set: 4,
            arch: "sm_90".into(),
            modes: vec![JitterMode::Dense, JitterMode::Pct],
        };
        let row = |mode, median| DetectionRow {
            case: "m::v".into(),
            mode,
            first_detection: vec![Some(1), Some(2)],
            median_trials_to_detection: median,
            failures: 5,
            trials: 20,
            rate: 0.25,
            rate_low: 0.1,
            rate_high: 0.5,
            us_per_trial: 12.0,
            median_seconds_to_detection: Some(0.5),
        };
        let md = markdown(
            &[
                row(JitterMode::Dense, Some(1.5)),
                row(JitterMode::Pct, None),
            ],
            &cfg,
            "# t\n",
        );
        assert!(
            md.contains(
                "| `m::v` | 1.5 | 25.0% (10.0-50.0) | 12.0 | never | 25.0% (10.0-50.0) | 12.0 |"
            ),
            "{md}"
        );
        assert!(md.contains("dense: median trials"), "{md}");
    }
}
