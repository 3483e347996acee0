//! Running the battery on mutants: each mutant's source in a temporary file, compiled on the
//! host first (a mutant NVRTC refuses is stillborn), then the detectors in order, stress with
//! jitter first, then the sanitizers, stopping at the first detection. A mutant inside a
//! `__global__` function runs as that entry point only; one in a device helper as every entry of
//! its file. The unmutated kernel runs
//! the same battery as a control. Runs go side by side through the worker pool, `jobs` at a time,
//! the mutants of one kernel next to each other; every detector keeps its deadline
//! ([`crate::judge::battery`]), and a `budget` stops starting new runs.
//!
//! The worker children load the original catalog (or manifest) and find the case by name; only
//! the PTX they are handed is the mutant's, so a mutant is judged by exactly the oracle, sizes and
//! geometry of its kernel. A manifest kernel's mutant keeps its includes: the original file's
//! folder is added as an include folder.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::equivalent::Equivalents;
use super::mutant::Mutant;
use super::operators::Operator;
use super::reach::Reach;
use super::score::{Control, KernelResult, MutantResult, MutationReport, OperatorScore, Outcome};
use crate::build::compile::{self, BuildOptions};
use crate::errors::{Error, Result};
use crate::judge::battery::Battery;
use crate::judge::sanitize::{self, Tool};
use crate::run::stress::{self, Verdict};
use crate::source::catalog::{Case, Catalog, Detector, Origin};
use crate::source::manifest::Check;

/// One kernel to mutate: a file with the cases (entries) it is run as.
#[derive(Clone, Debug)]
pub struct Unit<'a> {
    /// The catalog file, or the manifest kernel's name.
    pub kernel: String,
    /// The file, relative to the catalog's root.
    pub file: String,
    pub source: String,
    pub cases: Vec<&'a Case>,
    pub mutants: Vec<Mutant>,
    pub equivalents: Equivalents,
    /// `__global__` functions of the file that no tested entry reaches, set by
    /// [`keep_reachable`]: their code is not mutated.
    pub unreachable: Vec<String>,
}

/// How to run.
#[derive(Clone, Debug)]
pub struct MutateConfig {
    pub battery: Battery,
    /// The sanitizers, in the order they run.
    pub tools: Vec<Tool>,
    /// No run starts after this long.
    pub budget: Option<Duration>,
    /// `racegate perf` for the mutants that change speed only ([`Operator::speed_only`]);
    /// `None`: they come out inconclusive.
    pub perf: Option<super::speed::PerfJudge>,
}

/// Progress for reporters.
#[derive(Clone, Debug)]
pub enum MutateEvent<'a> {
    Control {
        kernel: &'a str,
        control: &'a Control,
    },
    Mutant {
        result: &'a MutantResult,
    },
}

/// The case to run a mutant as: the same case with its file at `path` (absolute), and for a
/// manifest kernel the original file's folder as an include folder.
fn mutant_case(case: &Case, path: &Path, original_dir: &Path) -> Case {
    let mut c = case.clone();
    c.path = path.display().to_string();
    if let Origin::Manifest(spec) = &case.origin {
        let mut k = (**spec).clone();
        k.include.push(original_dir.to_path_buf());
        c.origin = Origin::Manifest(Arc::new(k));
    }
    c
}

/// Whether NVRTC builds `mutant` of `unit` (the first case's options, `arch`): `None` if it
/// does, else the first line of NVRTC's log. A missing NVRTC is an error (exit 3).
pub fn compiles(
    catalog: &Catalog,
    unit: &Unit,
    mutant: &Mutant,
    arch: &str,
) -> Result<Option<String>> {
    let original = catalog.root.join(&unit.file);
    let dir = original.parent().unwrap_or(Path::new("."));
    let mut extra = unit
        .cases
        .first()
        .map(|c| c.compile_options())
        .unwrap_or_default();
    extra.push(format!("-I{}", dir.display()));
    let opts = BuildOptions {
        arch: arch.to_string(),
        jitter: false,
        extra,
    };
    match compile::compile_source(
        &catalog.root,
        &unit.file,
        &mutant.apply(&unit.source),
        &opts,
    ) {
        Ok(_) => Ok(None),
        Err(Error::Compile { log, .. }) => Ok(Some(
            log.lines()
                .find(|l| l.contains("error"))
                .or_else(|| log.lines().next())
                .unwrap_or("")
                .trim()
                .to_string(),
        )),
        Err(e) => Err(e),
    }
}

/// What the battery saw on one program (a mutant or the control).
enum Seen {
    Detected(Detector, String, bool),
    Clean,
    Inconclusive(String),
}

/// The function an entry point names: `reduce<256>` is `reduce`.
pub fn entry_function(entry: &str) -> &str {
    entry.split('<').next().unwrap_or(entry).trim()
}

/// The cases a mutant in `function` can change: only the case whose entry point that function
/// is (a `__global__` function calls no other), else the cases whose entry reaches it
/// ([`Reach`]: a device helper serves the entries that call it), else every case of the unit.
fn reached<'c>(unit: &Unit<'c>, function: &str) -> Vec<&'c Case> {
    let own: Vec<&Case> = unit
        .cases
        .iter()
        .copied()
        .filter(|c| !function.is_empty() && entry_function(&c.entry.name) == function)
        .collect();
    if !own.is_empty() {
        return own;
    }
    let callers: Vec<&Case> = unit
        .cases
        .iter()
        .copied()
        .filter(|c| Reach::of(&unit.source, &[entry_function(&c.entry.name)]).reaches(function))
        .collect();
    match callers.is_empty() {
        true => unit.cases.clone(),
        false => callers,
    }
}

/// What the unit's entries reach in its file.
pub fn reach(unit: &Unit) -> Reach {
    let entries: Vec<&str> = unit
        .cases
        .iter()
        .map(|c| entry_function(&c.entry.name))
        .collect();
    Reach::of(&unit.source, &entries)
}

/// Drops the mutants no tested entry can reach (a `__global__` function no case launches, a
/// device function none of them calls): they could change nothing the battery runs. The
/// `__global__` functions left out are named in the report ([`KernelResult::unreachable`]),
/// except `tested_elsewhere`: entries of other cases, which their own units mutate. A unit
/// without cases (nothing to run) keeps all.
pub fn keep_reachable(unit: &mut Unit, tested_elsewhere: &[&str]) {
    let r = reach(unit);
    unit.mutants.retain(|m| r.reaches(&m.function));
    unit.unreachable = r
        .unreachable_entries
        .into_iter()
        .filter(|f| !tested_elsewhere.contains(&f.as_str()))
        .collect();
}

/// The detectors in order on `cases` of `unit`, `path` the file to build (the original when
/// `None`): stress with jitter on every case first (where the oracle allows), then each
/// sanitizer on every case, stopping at the first detection.
fn battery(
    slot: &mut stress::Slot,
    catalog: &Catalog,
    unit: &Unit,
    cases: &[&Case],
    path: Option<&Path>,
    cfg: &MutateConfig,
    exe: &Path,
) -> Seen {
    let original = catalog.root.join(&unit.file);
    let dir = original.parent().unwrap_or(Path::new("."));
    let cases: Vec<Case> = cases
        .iter()
        .map(|case| match path {
            Some(p) => mutant_case(case, p, dir),
            None => (*case).clone(),
        })
        .collect();
    let mut unsure = Vec::new();
    for c in &cases {
        if c.kernel_spec().is_some_and(|k| k.check == Check::None) {
            continue;
        }
        match stress::run_in(slot, catalog, c, &cfg.battery.stress(true), exe, |_| {}) {
            Ok(r) => match &r.verdict {
                Verdict::Pass => {}
                Verdict::Fail => {
                    let d = format!("{}/{} trials failed ({})", r.failures, r.trials_run, c.name);
                    return Seen::Detected(Detector::Stress, d, false);
                }
                Verdict::Hang { deadline_s, .. } => {
                    let d = format!("no result within {deadline_s} s ({})", c.name);
                    return Seen::Detected(Detector::Watchdog, d, true);
                }
                Verdict::Fault { error } => {
                    let first = error.lines().next().unwrap_or("");
                    let d = format!("fault: {first} ({})", c.name);
                    return Seen::Detected(Detector::Stress, d, false);
                }
            },
            Err(e) => unsure.push(format!("stress on {}: {e}", c.name)),
        }
    }
    for tool in &cfg.tools {
        for c in &cases {
            let r = match sanitize::runner::run(catalog, c, &cfg.battery.sanitize(*tool), exe) {
                Ok(r) => r,
                Err(e) => {
                    unsure.push(format!("{tool} on {}: {e}", c.name));
                    continue;
                }
            };
            let det = Detector::from(*tool);
            match &r.outcome {
                sanitize::Outcome::Clean => {}
                sanitize::Outcome::Findings(f) => {
                    let first = f.first().map(|x| x.line()).unwrap_or_default();
                    let d = format!("{} finding(s) ({}): {first}", f.len(), c.name);
                    return Seen::Detected(det, d, false);
                }
                sanitize::Outcome::Hang { .. } => {
                    return Seen::Detected(det, format!("hang ({})", c.name), true)
                }
                sanitize::Outcome::Inconclusive(why) => {
                    unsure.push(format!("{tool} on {}: {why}", c.name))
                }
            }
        }
    }
    match unsure.is_empty() {
        true => Seen::Clean,
        false => Seen::Inconclusive(unsure.join("; ")),
    }
}

enum Task<'u> {
    Control(usize),
    Mutant(usize, &'u Mutant),
}

enum Done {
    Control(usize, Control, Instant, Instant),
    Mutant(usize, MutantResult, Instant, Instant),
}

/// Runs every unit's control and mutants; `operators` as asked (the report's order).
pub fn run(
    catalog: &Catalog,
    units: &[Unit],
    operators: Vec<Operator>,
    cfg: &MutateConfig,
    exe: &Path,
    on_event: impl Fn(MutateEvent) + Sync,
) -> Result<MutationReport> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (u, unit) in units.iter().enumerate() {
        tasks.push(Task::Control(u));
        tasks.extend(unit.mutants.iter().map(|m| Task::Mutant(u, m)));
    }
    let over_budget = || cfg.budget.is_some_and(|b| start.elapsed() > b);
    // Each pool thread keeps one stress worker (and its device context) across its runs.
    let results = crate::proc::pool::run_all_with(
        tasks,
        cfg.battery.jobs,
        stress::Slot::default,
        |slot, task| -> Result<Done> {
            // Each mutant's battery shares the GPU with other racegate processes.
            let _gpu = crate::run::lease::job_share()?;
            let t0 = Instant::now();
            match task {
                Task::Control(u) => {
                    let control = match over_budget() {
                        true => Control {
                            flagged_by: None,
                            inconclusive: true,
                            detail: "not run: the budget ran out".into(),
                            seconds: 0.0,
                        },
                        false => control(slot, catalog, &units[u], cfg, exe),
                    };
                    Ok(Done::Control(u, control, t0, Instant::now()))
                }
                Task::Mutant(u, m) => {
                    let r = run_mutant(slot, catalog, &units[u], m, cfg, exe, over_budget())?;
                    Ok(Done::Mutant(u, r, t0, Instant::now()))
                }
            }
        },
        |r| match r {
            Ok(Done::Control(u, c, ..)) => on_event(MutateEvent::Control {
                kernel: &units[*u].kernel,
                control: c,
            }),
            Ok(Done::Mutant(_, m, ..)) => on_event(MutateEvent::Mutant { result: m }),
            Err(_) => {}
        },
    );
    let mut kernels: Vec<KernelResult> =
        units.iter().map(|u| kernel_result(u, Vec::new())).collect();
    let mut spans: Vec<Option<(Instant, Instant)>> = vec![None; units.len()];
    for r in results {
        let (u, a, b) = match r? {
            Done::Control(u, c, a, b) => {
                kernels[u].control = Some(c);
                (u, a, b)
            }
            Done::Mutant(u, m, a, b) => {
                kernels[u].mutants.push(m);
                (u, a, b)
            }
        };
        let s = spans[u].get_or_insert((a, b));
        *s = (s.0.min(a), s.1.max(b));
    }
    for (k, s) in kernels.iter_mut().zip(spans) {
        k.score = OperatorScore::of(&k.kernel, k.mutants.iter());
        k.wall_seconds = s.map_or(0.0, |(a, b)| (b - a).as_secs_f64());
    }
    Ok(MutationReport::new(
        true,
        operators,
        kernels,
        start.elapsed().as_secs_f64(),
    ))
}

/// A unit's result with `mutants` (listing: every mutant not run), scored.
pub fn kernel_result(unit: &Unit, mutants: Vec<MutantResult>) -> KernelResult {
    let ids = unit.mutants.iter().map(|m| m.id.as_str());
    KernelResult {
        kernel: unit.kernel.clone(),
        file: unit.file.clone(),
        cases: unit.cases.iter().map(|c| c.name.clone()).collect(),
        control: None,
        score: OperatorScore::of(&unit.kernel, mutants.iter()),
        mutants,
        wall_seconds: 0.0,
        stale_equivalents: unit.equivalents.stale(ids),
        unreachable: unit.unreachable.clone(),
    }
}

fn control(
    slot: &mut stress::Slot,
    catalog: &Catalog,
    unit: &Unit,
    cfg: &MutateConfig,
    exe: &Path,
) -> Control {
    let t0 = Instant::now();
    let (flagged_by, inconclusive, detail) =
        match battery(slot, catalog, unit, &unit.cases, None, cfg, exe) {
            Seen::Detected(d, why, _) => (Some(d), false, why),
            Seen::Clean => (None, false, "clean".into()),
            Seen::Inconclusive(why) => (None, true, format!("inconclusive: {why}")),
        };
    Control {
        flagged_by,
        inconclusive,
        detail,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

fn run_mutant(
    slot: &mut stress::Slot,
    catalog: &Catalog,
    unit: &Unit,
    m: &Mutant,
    cfg: &MutateConfig,
    exe: &Path,
    over_budget: bool,
) -> Result<MutantResult> {
    let t0 = Instant::now();
    // One mutant's trouble (a folder, a write, NVRTC) is that mutant's inconclusive outcome;
    // it does not throw away every other mutant's finished run.
    let outcome = judge(slot, catalog, unit, m, cfg, exe, over_budget)
        .unwrap_or_else(|e| Outcome::Inconclusive { why: e.to_string() });
    Ok(MutantResult {
        diff: m.diff(&unit.source),
        mutant: m.clone(),
        outcome,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The outcome of one mutant: equivalent, stillborn, out of budget, or what the battery saw.
fn judge(
    slot: &mut stress::Slot,
    catalog: &Catalog,
    unit: &Unit,
    m: &Mutant,
    cfg: &MutateConfig,
    exe: &Path,
    over_budget: bool,
) -> Result<Outcome> {
    Ok(if let Some(reason) = unit.equivalents.reason(&m.id) {
        Outcome::Equivalent {
            reason: reason.to_string(),
        }
    } else if let Some(log) = compiles(catalog, unit, m, &cfg.battery.arch)? {
        Outcome::Stillborn { log }
    } else if over_budget {
        Outcome::Inconclusive {
            why: "not run: the budget ran out".into(),
        }
    } else {
        let dir =
            tempfile::tempdir().map_err(|e| Error::io("creating", "a temporary folder", e))?;
        let name = Path::new(&unit.file)
            .file_name()
            .map_or("mutant.cu".into(), |n| n.to_owned());
        let path = dir.path().join(name);
        std::fs::write(&path, m.apply(&unit.source)).map_err(|e| Error::io("writing", &path, e))?;
        if m.operator.speed_only() {
            // The results stay right: only perf's counters can tell (`super::speed`).
            let original = catalog.root.join(&unit.file);
            let dir = original.parent().unwrap_or(Path::new("."));
            let cases: Vec<Case> = reached(unit, &m.function)
                .into_iter()
                .map(|c| mutant_case(c, &path, dir))
                .collect();
            let perf = cfg.perf.as_ref();
            return Ok(super::speed::judge(
                catalog, &cases, &unit.file, m.line, perf, exe,
            ));
        }
        match battery(
            slot,
            catalog,
            unit,
            &reached(unit, &m.function),
            Some(&path),
            cfg,
            exe,
        ) {
            Seen::Detected(by, _, true) => Outcome::TimedOut { by },
            Seen::Detected(by, detail, false) => Outcome::Killed {
                by,
                detail: detail.replace(&path.display().to_string(), &unit.file),
            },
            Seen::Clean => Outcome::Survived,
            Seen::Inconclusive(why) => Outcome::Inconclusive { why },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> std::path::PathBuf {
        crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap()
    }

    fn unit<'c>(catalog: &'c Catalog, file: &str) -> Unit<'c> {
        Unit {
            kernel: file.into(),
            file: file.into(),
            source: String::new(),
            cases: catalog.cases.iter().filter(|c| c.path == file).collect(),
            mutants: Vec::new(),
            equivalents: Equivalents::default(),
            unreachable: Vec::new(),
        }
    }

    #[test]
    fn a_mutant_runs_as_the_entries_it_can_reach() {
        let catalog = Catalog::discover(&root()).unwrap();
        let u = unit(&catalog, "kernels/transpose.cu");
        let names = |cs: Vec<&Case>| cs.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(reached(&u, "transpose_padded")), ["transpose_padded"]);
        let u = unit(&catalog, "kernels/matmul_tiled.cu");
        assert_eq!(
            names(reached(&u, "matmul_tiled")),
            ["matmul_tiled16", "matmul_tiled32"],
            "a device helper serves every entry"
        );
    }

    #[test]
    fn a_manifest_mutant_keeps_its_includes_and_its_case_name() {
        let m =
            crate::source::manifest::Manifest::load(&root().join("examples/corpus/racegate.toml"))
                .unwrap();
        let catalog = Catalog::from_manifest(m);
        let case = catalog.get("prefix_sum_inplace").unwrap();
        let dir = root().join("examples/corpus/kernels");
        let c = mutant_case(case, Path::new("/tmp/x/prefix_sum_inplace.cu"), &dir);
        assert_eq!(
            (c.name.as_str(), c.path.as_str()),
            ("prefix_sum_inplace", "/tmp/x/prefix_sum_inplace.cu")
        );
        let opts = c.compile_options();
        assert!(opts.contains(&format!("-I{}", dir.display())), "{opts:?}");
        assert!(
            opts.iter().any(|o| o.ends_with("examples/corpus/include")),
            "{opts:?}"
        );
    }
}
