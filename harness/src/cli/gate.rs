//! `racegate gate`: a merge gate on a team's own kernels (a `racegate.toml` manifest) or a CUDA
//! program (`-- PROGRAM ARGS`); findings not in the baseline fail.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use racegate::catalog::Catalog;
use racegate::errors::exit;
use racegate::gate::{self, GateConfig, GateRun};
use racegate::{report, Error, Result};

use super::output::{out, outln};
use super::settings::Global;
use super::settings::{self, Settings};
use super::values;

pub const HELP: &str = concat!(
    "Exit codes: 0 no new finding, 1 new findings, 2 bad input, 3 inconclusive (a tool missing or \
failing), 4 no CUDA device.\n",
    "Examples:\n  racegate gate                          # ./racegate.toml against ./racegate-baseline.json\n  \
racegate gate --update-baseline        # accept what is found now\n  \
racegate gate --github --sarif r.sarif # in GitHub Actions: annotations, step summary, code scanning\n  \
racegate gate -- ./build/tests --gtest_filter=Reduce.*"
);

#[derive(clap::Args)]
pub struct GateArgs {
    /// Write the baseline from this run (accept every current finding) and exit 0.
    #[arg(long)]
    update_baseline: bool,
    /// The baseline file (default: racegate-baseline.json next to the manifest, or in the
    /// current directory for a program).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Stress trials per kernel.
    #[arg(long, default_value_t = 100, value_parser = values::at_least_one)]
    trials: u32,
    /// Plain runs of a program (output compared across them).
    #[arg(long, default_value_t = 3, value_parser = values::at_least_one)]
    runs: u32,
    /// Processes at once; default: the number of cores.
    #[arg(long)]
    jobs: Option<usize>,
    /// Deadline of a stress trial or a plain program run, in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = values::seconds)]
    timeout: f64,
    /// Deadline of one sanitizer run, in seconds.
    #[arg(long, default_value_t = 120.0, value_parser = values::seconds)]
    sanitize_timeout: f64,
    /// Write SARIF 2.1.0 here (for GitHub code scanning).
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Write JUnit here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the markdown summary here.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Print GitHub annotations and append the summary to $GITHUB_STEP_SUMMARY.
    #[arg(long)]
    github: bool,
    /// A CUDA program and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM")]
    program: Vec<OsString>,
}

pub fn run(global: &Global, a: GateArgs) -> Result<u8> {
    if a.program.is_empty() {
        run_manifest(global, &a)
    } else {
        run_program(global, &a)
    }
}

fn config(a: &GateArgs) -> Result<(GateConfig, Settings)> {
    let s = Settings::new(a.jobs)?;
    let cfg = GateConfig {
        // The gate stresses from seed 1, so a run and its rerun see the same inputs.
        battery: s.battery(a.trials, 1, a.timeout, a.sanitize_timeout),
        runs: a.runs,
    };
    Ok((cfg, s))
}

fn run_manifest(global: &Global, a: &GateArgs) -> Result<u8> {
    let catalog = settings::catalog(global, Some(Path::new(racegate::manifest::FILE)))?;
    settings::require_device()?;
    let (cfg, s) = config(a)?;
    let baseline = a
        .baseline
        .clone()
        .unwrap_or_else(|| catalog.manifest_dir().join(gate::BASELINE));
    outln!(
        "racegate gate: {} kernel(s) from {}",
        catalog.cases.len(),
        catalog
            .manifest
            .as_ref()
            .map(|m| m.path.display().to_string())
            .unwrap_or_default()
    );
    let bar = indicatif::ProgressBar::new((catalog.cases.len() * 5) as u64);
    let run = gate::run_manifest(&catalog, &cfg, &s.worker, |_| bar.inc(1))?;
    bar.finish_and_clear();
    finish(&run, &baseline, a, &uri_prefix(&catalog))
}

/// SARIF paths are relative to the repository: the manifest's folder as seen from the
/// repository's top, with a trailing slash (empty at the top itself).
fn uri_prefix(catalog: &Catalog) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    std::fs::canonicalize(&catalog.root)
        .ok()
        .and_then(|r| r.strip_prefix(repo_top(&cwd)).ok().map(Path::to_path_buf))
        .map(|p| {
            if p.as_os_str().is_empty() {
                String::new()
            } else {
                format!("{}/", p.display())
            }
        })
        .unwrap_or_default()
}

/// The repository top (the nearest ancestor with .git), else the directory itself.
fn repo_top(dir: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
        .unwrap_or(dir)
}

fn run_program(global: &Global, a: &GateArgs) -> Result<u8> {
    let program = &a.program;
    let cwd = settings::current_dir()?;
    let root = global.root.clone().unwrap_or_else(|| cwd.clone());
    let (cfg, _) = config(a)?;
    let exe = Path::new(&program[0]);
    if !exe.exists() && !program[0].to_string_lossy().contains('/') && which(&program[0]).is_none()
    {
        return Err(Error::Usage(format!(
            "program `{}` not found",
            program[0].to_string_lossy()
        )));
    }
    let baseline = a
        .baseline
        .clone()
        .unwrap_or_else(|| cwd.join(gate::BASELINE));
    outln!(
        "racegate gate: {} under 4 sanitizers and {} plain run(s)",
        program
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        a.runs
    );
    let run = gate::run_program(program, &root, &cfg)?;
    finish(&run, &baseline, a, "")
}

fn which(name: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

/// Compares the run with the baseline (or writes it), prints and writes the reports, and says
/// the exit code.
fn finish(run: &GateRun, baseline_path: &Path, a: &GateArgs, uri_prefix: &str) -> Result<u8> {
    if a.update_baseline {
        let b = gate::Baseline::from_run(run);
        b.save(baseline_path)?;
        out!("{}", report::text::baseline_written(run, baseline_path, &b));
        return Ok(if run.inconclusive.is_empty() {
            exit::OK
        } else {
            exit::INCONCLUSIVE
        });
    }
    let base = gate::Baseline::load(baseline_path)?;
    let d = gate::diff(run, &base);
    out!("{}", report::text::gate(run, &d, baseline_path));
    let md = report::markdown::gate_summary(run, &d);
    if let Some(p) = &a.sarif {
        let sarif = report::sarif::gate(&d, env!("CARGO_PKG_VERSION"), uri_prefix);
        settings::write_file(p, &sarif)?;
    }
    if let Some(p) = &a.junit {
        settings::write_file(p, &report::junit::gate(run, &d))?;
    }
    if let Some(p) = &a.summary {
        settings::write_file(p, &md)?;
    }
    if a.github {
        out!("{}", report::github::annotations(&d));
        if let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY") {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&p)
                .map_err(|e| Error::io("opening $GITHUB_STEP_SUMMARY", PathBuf::from(&p), e))?;
            let _ = f.write_all(md.as_bytes());
        }
    }
    Ok(if !d.new.is_empty() {
        exit::FOUND
    } else if !run.inconclusive.is_empty() {
        exit::INCONCLUSIVE
    } else {
        exit::OK
    })
}
