//! One kernel through `racegate perf`: its PTX built, timed in the perf worker (a child with a
//! deadline), profiled by ncu (a second child with a deadline) when ncu is there, and its
//! `//@ perf:` expectations judged against the counters.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::build::compile::{self, BuildOptions};
use crate::errors::{Error, Result};
use crate::proc::watchdog;
use crate::run::perf::{self, Measured, Repetitions, Work};
use crate::source::case::{perf_lines, PerfExpect};
use crate::source::catalog::{Case, Catalog};
use crate::source::manifest::Check;

use super::expect::{self, Judged};
use super::ncu::{self, Counters, Unavailable};

/// What every kernel of one `racegate perf` run shares.
#[derive(Clone, Debug)]
pub struct PerfConfig {
    pub arch: String,
    /// The problem size; `None`: [`perf::default_size`] of each family.
    pub size: Option<u32>,
    pub reps: Repetitions,
    /// The deadline of one timing worker.
    pub timeout: Duration,
    /// The deadline of one ncu run.
    pub ncu_timeout: Duration,
    /// Where to keep ncu's raw output, one `CASE.csv` per kernel (fixtures).
    pub save_csv: Option<PathBuf>,
}

impl PerfConfig {
    /// For the counters alone (`racegate check`'s expectations, `mutate`'s speed-only
    /// mutants): a short timing, each family's default size, the default deadlines.
    pub fn for_counters(arch: &str) -> PerfConfig {
        PerfConfig {
            arch: arch.to_string(),
            size: None,
            reps: Repetitions {
                warmup: 1,
                min: 3,
                max: 3,
                budget_ms: 0,
            },
            timeout: Duration::from_secs(120),
            ncu_timeout: Duration::from_secs(300),
            save_csv: None,
        }
    }
}

/// One timed kernel: a row of the report and of the course tables.
#[derive(Clone, Debug, Serialize)]
pub struct KernelPerf {
    /// The case, or `CASE (reference ENTRY)` for a manifest kernel's reference.
    pub case: String,
    pub exercise: String,
    pub kernel: String,
    pub path: String,
    pub problem: String,
    pub size: u32,
    pub work: Work,
    pub median_us: f64,
    /// Interquartile range over the median.
    pub spread: f64,
    pub reps: usize,
    /// Bytes moved per second, in GB/s (10^9), where the family is about bandwidth.
    pub gbps: Option<f64>,
    /// FLOP per second, in GFLOP/s, where the family counts FLOPs.
    pub gflops: Option<f64>,
    /// The kernel this one is compared with, and the speed-up over it (its time / ours).
    pub reference: Option<String>,
    pub speedup: Option<f64>,
    pub counters: Option<Counters>,
    /// Why there are no counters.
    pub counters_unavailable: Option<Unavailable>,
    pub expectations: Vec<Judged>,
    /// Lint lines for what the counters show and no header declared.
    pub notes: Vec<String>,
}

/// The rates of `work` done in `median_us`.
pub fn rates(work: &Work, median_us: f64) -> (Option<f64>, Option<f64>) {
    let per_s = |x: u64| (median_us > 0.0).then(|| x as f64 / (median_us * 1e-6) / 1e9);
    if work.flops > 0 {
        (None, per_s(work.flops))
    } else {
        (per_s(work.bytes), None)
    }
}

/// The `//@ perf:` lines of `case`'s source file.
pub fn expectations(catalog: &Catalog, case: &Case) -> Result<Vec<PerfExpect>> {
    let file = catalog.root.join(&case.path);
    let text = std::fs::read_to_string(&file).map_err(|e| Error::io("reading", &file, e))?;
    let all = perf_lines(&text).map_err(|(line, message)| Error::Header {
        path: case.path.clone(),
        line,
        message,
    })?;
    Ok(all
        .into_iter()
        .filter(|e| e.applies_to(&case.entry.name))
        .collect())
}

/// Times `case` (or, with `reference`, its manifest reference kernel) in a perf worker.
fn time(
    catalog: &Catalog,
    case: &Case,
    cfg: &PerfConfig,
    exe: &Path,
    reference: bool,
) -> Result<(Measured, Vec<OsString>)> {
    let opts = |extra| BuildOptions {
        arch: cfg.arch.clone(),
        jitter: false,
        extra,
    };
    let ptx = compile::compile_to_cache(&catalog.root, &case.path, &opts(case.compile_options()))?;
    let size = cfg.size.unwrap_or_else(|| match case.kernel_spec() {
        Some(_) => case.family().default_sizes().1,
        None => perf::default_size(&case.exercise),
    });
    let mut args = catalog.child_args();
    args.extend([
        crate::proc::subcommands::PERF_WORKER.into(),
        "--case".into(),
        case.name.clone().into(),
        "--ptx".into(),
        ptx.into(),
        "--size".into(),
        size.to_string().into(),
    ]);
    if reference {
        let Some(Check::Reference { path, .. }) = case.kernel_spec().map(|k| &k.check) else {
            return Err(Error::Usage(format!(
                "`{}` has no reference kernel",
                case.name
            )));
        };
        let r = compile::compile_to_cache(
            &catalog.root,
            &catalog.manifest_file(path),
            &opts(case.reference_compile_options()),
        )?;
        args.extend(["--reference-ptx".into(), r.into()]);
    }
    let reps = |r: &Repetitions| -> Vec<OsString> {
        [
            ("--warmup", r.warmup),
            ("--min-reps", r.min),
            ("--max-reps", r.max),
            ("--budget-ms", r.budget_ms),
        ]
        .iter()
        .flat_map(|(k, v)| [OsString::from(k), v.to_string().into()])
        .collect()
    };
    let mut timed = args.clone();
    timed.extend(reps(&cfg.reps));
    let (done, stdout) = watchdog::collect(
        exe,
        &timed,
        &watchdog::Spawn::default(),
        watchdog::Deadline::within(cfg.timeout),
        watchdog::Output::bounded(),
    )?;
    let stdout = stdout.text();
    let line = stdout.lines().rev().find(|l| l.starts_with('{'));
    let measured = match (&done.exit, line.map(serde_json::from_str::<Measured>)) {
        (watchdog::Exit::Code(0), Some(Ok(m))) => m,
        _ => {
            let why: Vec<&str> = done.stderr.lines().rev().take(3).collect();
            return Err(Error::Child(format!(
                "the perf worker for `{}` {} without a timing ({})",
                case.name,
                done.exit.describe(cfg.timeout),
                why.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
    };
    // Under ncu: one launch, no warm-up (ncu replays the launch itself).
    args.extend(reps(&Repetitions {
        warmup: 0,
        min: 1,
        max: 1,
        budget_ms: 0,
    }));
    Ok((measured, args))
}

/// Times and profiles `case` (and, with `reference`, its manifest reference instead).
pub fn measure(
    catalog: &Catalog,
    case: &Case,
    cfg: &PerfConfig,
    exe: &Path,
    ncu_exe: std::result::Result<&Path, &Unavailable>,
    reference: bool,
) -> Result<KernelPerf> {
    let (m, ncu_args) = time(catalog, case, cfg, exe, reference)?;
    let (counters, unavailable) = match ncu_exe {
        Err(u) => (None, Some(u.clone())),
        Ok(ncu_path) => {
            let p = ncu::profile(ncu_path, &m.kernel, exe, &ncu_args, cfg.ncu_timeout)?;
            if let Some(dir) = &cfg.save_csv {
                let name = if reference {
                    format!("{}.reference", case.name)
                } else {
                    case.name.clone()
                };
                let file = dir.join(format!("{}.csv", name.replace([':', '/'], "_")));
                std::fs::write(&file, &p.raw).map_err(|e| Error::io("writing", &file, e))?;
            }
            match p.launches {
                Ok(l) => (Some(Counters::of(&ncu::of_kernel(&l, &m.kernel))), None),
                Err(u) => (None, Some(u)),
            }
        }
    };
    let expects = if reference {
        Vec::new()
    } else {
        expectations(catalog, case)?
    };
    let why = unavailable.as_ref().map(|u| u.to_string());
    let judged = expect::judge(
        &case.name,
        &case.entry.name,
        &case.path,
        &expects,
        counters.as_ref().ok_or(why.as_deref().unwrap_or("")),
    );
    let notes = match &counters {
        Some(c) if expects.is_empty() => expect::notes(&case.name, &case.path, c),
        _ => Vec::new(),
    };
    let (gbps, gflops) = rates(&m.work, m.timing.median_us);
    Ok(KernelPerf {
        case: if reference {
            format!("{} (reference {})", case.name, m.kernel)
        } else {
            case.name.clone()
        },
        exercise: case.exercise.clone(),
        kernel: m.kernel,
        path: case.path.clone(),
        problem: m.problem,
        size: m.size,
        work: m.work,
        median_us: m.timing.median_us,
        spread: m.timing.spread,
        reps: m.timing.samples_us.len(),
        gbps,
        gflops,
        reference: None,
        speedup: None,
        counters,
        counters_unavailable: unavailable,
        expectations: judged,
        notes,
    })
}

/// Fills each row's reference and speed-up: a catalog kernel against its family's reference
/// row, a manifest kernel against the row of its own reference (`CASE (reference ...)`).
pub fn link_references(catalog: &Catalog, rows: &mut [KernelPerf]) {
    let times: Vec<(String, f64)> = rows.iter().map(|r| (r.case.clone(), r.median_us)).collect();
    for r in rows.iter_mut() {
        let Some(case) = catalog.cases.iter().find(|c| c.name == r.case) else {
            continue;
        };
        let want = match perf::reference_of(catalog, case) {
            Some(rc) => rc.name.clone(),
            None => format!("{} (reference ", case.name),
        };
        if let Some((name, t)) = times
            .iter()
            .find(|(n, _)| *n == want || (want.ends_with("(reference ") && n.starts_with(&want)))
        {
            r.reference = Some(name.clone());
            r.speedup = (r.median_us > 0.0).then(|| t / r.median_us);
        }
    }
}
