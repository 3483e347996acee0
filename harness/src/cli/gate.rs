//! `racegate gate`: a merge gate on a team's own kernels (a `racegate.toml` manifest) or a CUDA
//! program (`-- PROGRAM ARGS`); findings not in the baseline fail.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::errors::exit;
use crate::gate::masks::Masks;
use crate::gate::{self, Baseline, GateConfig, GateRun};
use crate::judge::sanitize::Tool;
use crate::source::catalog::Catalog;
use crate::source::files;
use crate::{build::toolchain, report, Error, Result};

use super::flags::{
    default, JobsArg, NoShrinkArg, PartitionArg, SanitizeTimeoutArg, ShrinkBudgetArg, TrialsArg,
};
use super::gate_args::{oracles, CtestArgs, LibraryArgs, OracleArgs};
use super::output::JsonArg;
use super::progress::Progress;
use super::settings::Global;
use super::settings::{self, Settings};
use super::values;

pub const HELP: &str = concat!(
    "Exit codes: 0 no new finding, 1 new findings, 2 bad input, 3 inconclusive (a tool missing or \
failing), 4 no CUDA device; when several hold, the first of 2, 4, 3, 1 wins.\n",
    "Baselines: racegate-baseline.json beside racegate.toml; racegate-program-baseline.json in the \
current folder for `gate -- PROGRAM`. Findings match by fingerprint (no line numbers).\n",
    "Examples:\n",
    "  racegate gate\n",
    "  racegate gate --update-baseline\n",
    "  racegate gate --github --sarif racegate.sarif --junit gate-junit.xml --json gate.json\n",
    "  racegate gate -- ctest --test-dir build\n",
    "  racegate gate --mask 'seed [0-9]+' --tools racecheck,memcheck -- ./build/tests --gtest_filter=Reduce.*\n",
    "  racegate gate --sanitizer-arg=--racecheck-detect-level=error -- ./app"
);

/// `--trials`' default here: the gate stresses with jitter only, as many trials as `check` runs
/// with and without it.
const TRIALS: u32 = 100;
/// `--shrink-budget`'s default here, in seconds: per failing kernel, and a run may have several.
const SHRINK_BUDGET: f64 = 20.0;

#[derive(clap::Args)]
#[command(
    mut_arg("trials", default!(TRIALS)),
    mut_arg("shrink_budget", default!(SHRINK_BUDGET)),
    // In --help only: gate's -h is a screen already.
    mut_arg("devices", |a| a.hide_short_help(true))
)]
pub struct GateArgs {
    /// Accept every current finding: write the baseline from this run, keeping the entries of
    /// detectors that could not judge (inconclusive or not run); an unchanged baseline is not
    /// rewritten.
    #[arg(long)]
    update_baseline: bool,
    /// The baseline file (default: racegate-baseline.json beside the manifest;
    /// racegate-program-baseline.json in the current folder for a program).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    #[command(flatten)]
    trials: TrialsArg,
    /// Plain runs of a program (outputs compared across them after masking).
    #[arg(long, default_value_t = 3, value_parser = values::at_least_one)]
    runs: u32,
    #[command(flatten)]
    jobs: JobsArg,
    #[command(flatten)]
    devices: super::workers::DevicesArg,
    /// Deadline of a stress trial (default 10 s) or of a program's plain run, in seconds.
    ///
    /// A program's deadlines are measured by default: its first plain run is timed under a
    /// 30-minute cap (or this deadline, when given), and every later run gets a multiple of
    /// that time with a floor (plain runs 3x, at least 10 s; jittered runs 10x); the report
    /// says each deadline and where it came from. Given, this deadline wins.
    #[arg(long, value_parser = values::seconds)]
    timeout: Option<f64>,
    // No default: 120 s for kernels (`KERNEL_SANITIZE_TIMEOUT`), measured for a program.
    #[command(flatten)]
    sanitize_timeout: SanitizeTimeoutArg,
    #[command(flatten)]
    shard: PartitionArg,
    /// Check every kernel launch of a program under the tools. By default a kernel launched
    /// more than 6 times is sampled: compute-sanitizer checks its first 4 launches and its last
    /// 2, racegate's own tools its first 4 and then each launch numbered by a power of two; the
    /// report names the launches judged.
    #[arg(long)]
    every_launch: bool,
    /// The detectors to run, comma-separated. Default: every one for a program; every one but
    /// streamcheck, which judges a program's own streams, for a manifest's kernels.
    #[arg(long, value_name = "TOOLS", value_delimiter = ',', value_enum)]
    tools: Vec<Tool>,
    /// Pass an option to compute-sanitizer, before the target; repeatable (e.g.
    /// --sanitizer-arg=--racecheck-detect-level=error, or --sanitizer-arg=--kernel-name
    /// --sanitizer-arg=kns=reduce).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    sanitizer_arg: Vec<String>,
    /// A regex for program output that may vary between runs; matches become <masked>.
    /// Repeatable. Built-in masks come first: timestamps (2026-11-29T21:41:04Z, 21:41:04.123),
    /// durations (0.41 sec, 12ms, 15.9 msecs), rates (5.05 GB/s, 263 GFlop/s, Gigaoptions per
    /// second : 56.9), numbers after a word that says time or clocks (Time (ms): 188.1,
    /// Average clocks/block = 80081), counts of polls while waiting (45020 iterations while
    /// waiting for GPU), addresses (0x7ffd4a2b1c30) and pids (pid 4242, PID=4242); other
    /// numbers are compared.
    #[arg(long, value_name = "REGEX")]
    mask: Vec<String>,
    /// Compare program output without the built-in masks.
    #[arg(long)]
    no_builtin_masks: bool,
    /// Run a program's plain runs without schedule jitter. By default each plain run gets
    /// globalcheck's injection in jitter mode: a seeded per-warp delay after every barrier, as
    /// racegate's own kernels get from its prelude (races that need one warp to run ahead
    /// then show); where the tool cannot be built the runs are plain and a note says why.
    #[arg(long)]
    no_jitter: bool,
    #[command(flatten)]
    no_shrink: NoShrinkArg,
    #[command(flatten)]
    shrink_budget: ShrinkBudgetArg,
    /// Boxed: the oracles' flags would make `gate` the one large variant of the commands.
    #[command(flatten)]
    oracle: Box<OracleArgs>,
    #[command(flatten)]
    ctest: Box<CtestArgs>,
    #[command(flatten)]
    library: LibraryArgs,
    /// Write SARIF 2.1.0 here (for GitHub code scanning).
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Write JUnit here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write a GitLab Code Quality report here (new findings; `artifacts:reports:codequality`).
    #[arg(long, value_name = "FILE")]
    codequality: Option<PathBuf>,
    /// Write the markdown summary here.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    #[command(flatten)]
    html: super::output::HtmlArg,
    #[command(flatten)]
    out: JsonArg,
    /// Print GitHub annotations and append the summary to $GITHUB_STEP_SUMMARY.
    #[arg(long)]
    github: bool,
    /// A CUDA program and its arguments, after `--`; a bare name is looked up in PATH.
    #[arg(last = true, value_name = "PROGRAM")]
    program: Vec<OsString>,
}

pub fn run(global: &Global, a: GateArgs) -> Result<u8> {
    super::grade_secret::withhold_from_children();
    a.out.claim_stdout();
    a.devices.select()?;
    if let Some(dir) = &a.ctest.ctest {
        run_ctest(global, &a, dir)
    } else if a.program.is_empty() {
        run_manifest(global, &a)
    } else {
        run_program(global, &a)
    }
}

fn config(a: &GateArgs) -> Result<(GateConfig, Settings)> {
    let masks = Masks::new(&a.mask, !a.no_builtin_masks)?;
    if a.runs == 0 {
        return Err(Error::Usage("--runs must be at least 1".into()));
    }
    let s = Settings::new(a.jobs.jobs)?;
    // A program has streams of its own to judge; a manifest's kernels are launched by racegate.
    let programs = !a.program.is_empty() || a.ctest.ctest.is_some();
    let mut tools = if a.tools.is_empty() && programs {
        Tool::ALL.to_vec()
    } else if a.tools.is_empty() {
        Tool::KERNELS.to_vec()
    } else {
        a.tools.clone()
    };
    tools.sort();
    tools.dedup();
    let mut cfg = GateConfig {
        // The gate stresses from seed 1, so a run and its rerun see the same inputs.
        battery: s.battery(
            a.trials.trials,
            1,
            a.timeout.unwrap_or(KERNEL_TIMEOUT),
            a.sanitize_timeout.seconds_or(KERNEL_SANITIZE_TIMEOUT),
        ),
        runs: a.runs,
        tools,
        sanitizer_args: a.sanitizer_arg.clone(),
        masks,
        oracles: oracles(&a.oracle)?,
        jitter: !a.no_jitter,
        shrink: (!a.no_shrink.no_shrink)
            .then(|| std::time::Duration::from_secs_f64(a.shrink_budget.shrink_budget)),
        program_timeout: a.timeout.map(std::time::Duration::from_secs_f64),
        program_sanitize_timeout: (a.sanitize_timeout.sanitize_timeout)
            .map(std::time::Duration::from_secs_f64),
        sampling: (!a.every_launch).then(Default::default),
        tools_chosen: !a.tools.is_empty(),
    };
    // A pool of the default size on each device, unless --jobs says the whole count.
    cfg.battery.jobs = (a.devices.select()?).workers(cfg.battery.jobs, a.jobs.jobs.is_some());
    Ok((cfg, s))
}

/// A stress trial's deadline when `--timeout` is not given, in seconds.
const KERNEL_TIMEOUT: f64 = 10.0;
/// A kernel's sanitizer run's deadline when `--sanitize-timeout` is not given, in seconds.
const KERNEL_SANITIZE_TIMEOUT: f64 = 120.0;

/// Where the run and its files are, for the reports.
struct Place {
    root: PathBuf,
    baseline: PathBuf,
    /// Baseline entries of subjects the run did not have are stale (manifest mode).
    stale_subjects: bool,
    /// Why there is no device, when there is none (program mode runs anyway).
    no_device: Option<String>,
    /// A shard's stamp (`--partition`), written into its JSON for `racegate merge`.
    stamp: Option<super::merge::Stamp>,
    /// A manifest's gate (its kernels, then its programs), not a program's or a CTest suite's.
    manifest: bool,
}

impl Place {
    /// The baseline as reports name it: relative to the root, normalized.
    fn baseline_shown(&self) -> String {
        let abs = std::path::absolute(&self.baseline).unwrap_or_else(|_| self.baseline.clone());
        toolchain::relative_to(&self.root, &abs).unwrap_or_else(|| abs.display().to_string())
    }
}

/// Bad input found before any work (exit 2): a baseline or `--expect` file that is not a
/// regular file (a FIFO would block the gate at its end), a report destination that cannot take
/// a report, or one that is an input of the run (`inputs`, with the baseline and `--expect`).
fn preflight(a: &GateArgs, place: &Place, mut inputs: Vec<PathBuf>) -> Result<()> {
    files::check_regular(&place.baseline, "the baseline")?;
    inputs.push(place.baseline.clone());
    if let Some(e) = &a.oracle.expect {
        files::check_regular(e, "the expected output (--expect)")?;
        inputs.push(e.clone());
    }
    let summary = match a.github {
        true => std::env::var_os("GITHUB_STEP_SUMMARY").map(PathBuf::from),
        false => None,
    };
    let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let outputs = [
        ("--sarif", a.sarif.as_deref()),
        ("--junit", a.junit.as_deref()),
        ("--codequality", a.codequality.as_deref()),
        ("--summary", a.summary.as_deref()),
        ("--json", a.out.json.as_deref()),
        ("$GITHUB_STEP_SUMMARY", summary.as_deref()),
    ];
    settings::check_outputs(&outputs, &inputs)?;
    a.html.check(&outputs)?;
    // Before any work: a baseline is never updated from a run that could judge nothing.
    match (a.update_baseline, &place.no_device) {
        (true, Some(why)) => Err(super::gate_no_device::no_baseline(
            why,
            &place.baseline_shown(),
        )),
        // A manifest's gate looks for its device after this; a program's has looked already.
        (true, None) if place.manifest => match crate::run::device::probe() {
            Err(why) => Err(super::gate_no_device::no_baseline(
                &why,
                &place.baseline_shown(),
            )),
            Ok(_) => Ok(()),
        },
        _ => Ok(()),
    }
}

fn run_manifest(global: &Global, a: &GateArgs) -> Result<u8> {
    let catalog = settings::catalog(global, Some(Path::new(crate::source::manifest::FILE)))?;
    let catalog = match a.shard.partition {
        Some(p) => crate::source::partition::catalog(catalog, p),
        None => catalog,
    };
    // A shard's stamp hashes the manifest as read now (the one its kernels came from).
    let stamp = match (a.shard.partition, &catalog.manifest) {
        (Some(p), Some(m)) => {
            let bytes =
                std::fs::read(&m.path).map_err(|e| Error::io("reading", m.path.clone(), e))?;
            Some(super::merge::stamp(
                p,
                &gate_args(),
                &catalog.root,
                &bytes,
                "manifest",
            ))
        }
        (Some(p), None) => Some(super::merge::stamp(
            p,
            &gate_args(),
            &catalog.root,
            b"",
            "manifest",
        )),
        (None, _) => None,
    };
    let place = Place {
        root: catalog.root.clone(),
        baseline: a
            .baseline
            .clone()
            .unwrap_or_else(|| catalog.manifest_dir().join(gate::BASELINE)),
        // A shard judges its own subjects only: the others' entries are not stale.
        stale_subjects: a.shard.partition.is_none(),
        no_device: None,
        stamp,
        manifest: true,
    };
    let programs = catalog.manifest.iter().flat_map(|m| &m.programs);
    for e in programs.filter_map(|p| p.expect.as_deref()) {
        files::check_regular(e, "the expected output")?;
    }
    preflight(a, &place, settings::inputs_of(&catalog))?;
    settings::validate(&catalog, true)?;
    let (cfg, s) = config(a)?;
    if let Err(why) = crate::run::device::probe() {
        // The reports are still written: every run not done, with why, and what the host did.
        let run = super::gate_no_device::no_device_run(&catalog, &cfg, &why, a.out.on_stdout());
        let place = Place {
            no_device: Some(why),
            ..place
        };
        return finish(run, &place, a);
    }
    a.out.text(&format!(
        "racegate gate: {} kernel(s) from {}\n",
        catalog.cases.len(),
        manifest_shown(&catalog)
    ))?;
    // One line per (kernel, detector): every sanitizer, and stress where the oracle is not
    // `none`.
    let stressed = catalog
        .cases
        .iter()
        .filter(|c| {
            c.kernel_spec()
                .is_some_and(|k| k.check != crate::source::manifest::Check::None)
        })
        .count();
    let progress = Progress::new(
        (catalog.cases.len() * cfg.tools.len() + stressed) as u64,
        "runs",
        a.out.on_stdout(),
    );
    let run = gate::run_manifest(&catalog, &cfg, &s.worker, |e| {
        super::progress::show_gate_event(&progress, e)
    })?;
    progress.finish();
    finish(run, &place, a)
}

fn manifest_shown(catalog: &Catalog) -> String {
    catalog
        .manifest
        .as_ref()
        .map(|m| {
            toolchain::relative_to(&catalog.root, &m.path)
                .unwrap_or_else(|| m.path.display().to_string())
        })
        .unwrap_or_default()
}

/// Where a program's (or a CTest suite's) run and baseline are: the git top of the current
/// folder (or `--root`), and `racegate-program-baseline.json` here unless `--baseline` says.
fn program_place(global: &Global, a: &GateArgs, cwd: &Path) -> Place {
    Place {
        root: global
            .root
            .clone()
            .unwrap_or_else(|| toolchain::report_root(cwd)),
        baseline: a
            .baseline
            .clone()
            .unwrap_or_else(|| cwd.join(gate::PROGRAM_BASELINE)),
        stale_subjects: false,
        no_device: super::gate_no_device::program_device(),
        stamp: None,
        manifest: false,
    }
}

fn run_program(global: &Global, a: &GateArgs) -> Result<u8> {
    let program = &a.program;
    if let Some(p) = a.shard.partition {
        return Err(Error::Usage(format!(
            "--partition {p}: one program is one item; shard a manifest's kernels and programs, \
             or --ctest tests"
        )));
    }
    let cwd = settings::current_dir()?;
    let (cfg, _) = config(a)?;
    // Bad input first: a program that cannot be found is exit 2 whatever the machine.
    let exe = gate::program::resolve(&program[0])?;
    let place = program_place(global, a, &cwd);
    // The program, its arguments that are files and the checker's files are inputs too.
    let mut inputs = vec![exe];
    let words: Vec<String> = program[1..]
        .iter()
        .map(|w| w.to_string_lossy().into_owned())
        .chain(a.oracle.check.clone())
        .collect();
    inputs.extend(settings::files_named_by(
        words.iter().map(String::as_str),
        &cwd,
    ));
    preflight(a, &place, inputs)?;
    // Without a device the tools are not run (each listed as not run, with why), and what the
    // plain runs saw is no finding.
    let (cfg, tools) = super::gate_no_device::without_tools(cfg, place.no_device.is_some());
    a.out.text(&format!(
        "racegate gate: {} under {} sanitizer(s) and {} plain run(s){}\n",
        program
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        tools.len(),
        a.runs,
        match &place.no_device {
            Some(why) => format!(
                " (no CUDA device, {why}: the sanitizers and the schedule jitter are not run, \
                 and what the plain runs show is not judged)"
            ),
            None => String::new(),
        }
    ))?;
    // One line per detector: each sanitizer, then the plain runs' exit, watchdog and output.
    let progress = Progress::new(cfg.tools.len() as u64 + 3, "runs", a.out.on_stdout());
    let no_device = place.no_device.is_some();
    let run = gate::run_program(program, &place.root, &cfg, |e| {
        super::progress::show_gate_event(
            &progress,
            &super::gate_no_device::not_judged(e, no_device),
        )
    })?;
    progress.finish();
    let run = match &place.no_device {
        Some(why) => super::gate_no_device::judged_without_device(run, &tools, why),
        None => run,
    };
    finish(run, &place, a)
}

fn run_ctest(global: &Global, a: &GateArgs, dir: &Path) -> Result<u8> {
    let cwd = settings::current_dir()?;
    let (cfg, _) = config(a)?;
    let mut place = program_place(global, a, &cwd);
    place.stamp = a.shard.partition.map(|p| {
        let input = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let input = input.display().to_string();
        super::merge::stamp(p, &gate_args(), &place.root, input.as_bytes(), "ctest")
    });
    let checker = settings::files_named_by(a.oracle.check.as_deref(), &cwd);
    preflight(a, &place, checker)?;
    // Bad input first: a folder without tests is exit 2 whatever the machine.
    let mut tests = gate::ctest::discover(dir, a.ctest.tests_regex.as_deref())?;
    if let Some(p) = a.shard.partition {
        tests.retain(|t| p.has(&t.name));
    }
    a.out.text(&format!(
        "racegate gate: {} CTest test(s) from {} under {} sanitizer(s) and {} plain run(s)\n",
        tests.len(),
        dir.display(),
        cfg.tools.len(),
        a.runs
    ))?;
    let (cfg, tools) = super::gate_no_device::without_tools(cfg, place.no_device.is_some());
    let run = gate::ctest::run_ctest(&tests, &place.root, &cfg, |_| {})?;
    let run = match &place.no_device {
        Some(why) => super::gate_no_device::judged_without_device(run, &tools, why),
        None => run,
    };
    finish(run, &place, a)
}

/// This command line's words after `gate`: what a shard's settings are hashed from.
fn gate_args() -> Vec<String> {
    std::env::args()
        .skip_while(|a| a != "gate")
        .skip(1)
        .collect()
}

/// The exit code by the one table: 4 without a device, then 3 for undecided runs, then 1 for
/// new findings.
fn code(place: &Place, run: &GateRun, new: usize) -> u8 {
    if place.no_device.is_some() {
        exit::NO_DEVICE
    } else if !run.inconclusive.is_empty() {
        exit::INCONCLUSIVE
    } else if new > 0 {
        exit::FOUND
    } else {
        exit::OK
    }
}

/// Compares the run with the baseline (or updates it), prints and writes the reports, and says
/// the exit code.
fn finish(run: GateRun, place: &Place, a: &GateArgs) -> Result<u8> {
    let run = &gate::library_reports::settled(run, a.library.keep_library_reports);
    let shown = place.baseline_shown();
    if a.update_baseline {
        if let Some(why) = &place.no_device {
            // Refused before the run (preflight); kept here so no path writes one.
            return Err(super::gate_no_device::no_baseline(
                why,
                &place.baseline_shown(),
            ));
        }
        // Read, changed and written under a lock: concurrent updates keep each other's entries.
        let u = Baseline::update(&place.baseline, run, place.stale_subjects)?;
        let (before, after, write) = (u.before, u.after, u.written);
        if let Some(note) = u.replaced {
            a.out.text(&format!("note: {note}\n"))?;
        }
        a.out.text(&report::text::baseline_written(
            run,
            Path::new(&shown),
            &before,
            &after,
            write,
        ))?;
        if let Some(why) = &place.no_device {
            a.out.text(&format!(
                "no CUDA device ({why}): the sanitizers could not judge\n"
            ))?;
        }
        // The JSON of an update: every finding now accepted.
        let code = code(place, run, 0);
        let d = gate::diff(run, &after, place.stale_subjects);
        let json = report::json::gate(run, &d, &shown, code);
        a.out.write_text(&json)?;
        a.html.write(&json, &place.root)?;
        return Ok(code);
    }
    let base = Baseline::load(&place.baseline)?;
    let d = gate::diff(run, &base, place.stale_subjects);
    let code = code(place, run, d.new.len());
    a.out
        .text(&report::text::gate(run, &d, Path::new(&shown)))?;
    let lang = a.html.lang.get();
    a.out.text(&report::explain_text::gate(&d.new, lang))?;
    if let Some(why) = &place.no_device {
        a.out.text(&format!(
            "{}\n",
            match place.manifest {
                true => format!(
                    "no CUDA device ({why}): the kernels were compiled and their signatures \
                     checked, but nothing was run"
                ),
                false => format!(
                    "no CUDA device ({why}): the program ran, but nothing it does on a GPU was \
                     judged"
                ),
            }
        ))?;
    }
    let md = report::markdown::gate_summary(run, &d);
    if let Some(p) = &a.sarif {
        let sarif = report::sarif::gate(run, &d, env!("CARGO_PKG_VERSION"), &shown);
        settings::write_file(p, &sarif)?;
    }
    if let Some(p) = &a.codequality {
        settings::write_file(p, &report::codequality::gate(&d))?;
    }
    if let Some(p) = &a.junit {
        settings::write_file(p, &report::junit::gate(run, &d))?;
    }
    if let Some(p) = &a.summary {
        settings::write_file(p, &md)?;
    }
    let json = report::json::gate(run, &d, &shown, code);
    let json = match &place.stamp {
        Some(s) => super::merge::stamped(&json, s),
        None => json,
    };
    a.out.write_text(&json)?;
    a.html.write(&json, &place.root)?;
    if a.github {
        a.out.text(&report::github::annotations(&d))?;
        if let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY") {
            // Checked before the run; a failed write is reported, not dropped.
            settings::append_file(Path::new(&p), &md)?;
        }
    }
    Ok(code)
}
