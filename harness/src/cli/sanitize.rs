//! `racegate sanitize CASE --tool TOOL`: one compute-sanitizer tool on one case, on the family's
//! small sanitizer geometry (or `--size`), with the normalized findings; `racegate sanitize --tool
//! TOOL -- PROGRAM ARGS` runs an existing program under it instead (its raw report kept with
//! `--save-xml`, which `gate --` does not keep). racegate's own tools may be given together
//! (`--tool globalcheck,sharedcheck`): one injected run, a result for each.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::errors::exit;
use crate::judge::sanitize::{self, Outcome, SanitizeConfig, Tool};
use crate::{report, Result};

use super::flags::{default, SeedArg};
use super::output::JsonArg;
use super::settings::Global;
use super::settings::{self, Settings};
use super::values;

/// The end of `racegate sanitize --help`: the exit codes, then examples.
pub const HELP: &str = concat!(
    "Exit codes: 0 clean, 1 findings or a hang, 2 bad input, 3 inconclusive (the tool missing or failing), 4 no CUDA device (--json and --save-log still written).\n",
    "Examples:\n",
    "  racegate sanitize --tool racecheck scale\n",
    "  racegate sanitize --tool memcheck --save-xml memcheck.xml -- ./build/app --small\n",
    "  racegate sanitize --tool globalcheck,sharedcheck --size 1024 matmul_tiled32 --json -   # one run, two results"
);

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
// A case's inputs from the seed every sanitizer run of racegate's uses; a program makes its own.
#[command(
    mut_arg("seed", default!(sanitize::SANITIZE_SEED)),
    mut_arg("seed", |a| a.conflicts_with("program"))
)]
#[command(
    override_usage = "racegate sanitize [OPTIONS] --tool <TOOL> <CASE>\n       racegate sanitize [OPTIONS] --tool <TOOL> -- <PROGRAM>..."
)]
pub struct SanitizeArgs {
    /// The case, as `racegate list` names it.
    #[arg(required_unless_present = "program", conflicts_with = "program")]
    case: Option<String>,
    /// The tool to run. racegate's own tools may be listed together, comma-separated
    /// (`globalcheck,sharedcheck`): they then share one run, and --json holds `{"seconds": the
    /// run's, "runs": [one per tool]}`. streamcheck judges programs (after `--`).
    #[arg(long, value_enum, value_delimiter = ',', required = true)]
    tool: Vec<Tool>,
    /// Problem size of a case's run instead of the sanitizer geometry: N (every dimension N),
    /// as `stress --size` (e.g. 4096 for a 4096x4096 transpose); a racegate.toml kernel clamps
    /// it into each size's range.
    #[arg(long, value_parser = crate::run::stress::parse_size, conflicts_with = "program")]
    size: Option<crate::source::exercises::SizeChoice>,
    /// Keep compute-sanitizer's raw XML here (for globalcheck: its JSON-lines report, with
    /// nvdisasm's line table of each module beside it as FILE.module-K.lines.txt).
    #[arg(long, value_name = "FILE")]
    save_xml: Option<PathBuf>,
    /// Keep compute-sanitizer's text output (and the target's) here.
    #[arg(long, value_name = "FILE")]
    save_log: Option<PathBuf>,
    /// Deadline in seconds; past it the sanitizer and its target are killed (Hang).
    #[arg(long, default_value_t = 120.0, value_parser = values::seconds)]
    timeout: f64,
    #[command(flatten)]
    seed: SeedArg,
    #[command(flatten)]
    lang: super::flags::LangArg,
    #[command(flatten)]
    out: JsonArg,
    /// A program to run under the tool instead of a case, after `--` (found through PATH like a
    /// shell would; build it with -lineinfo so findings name lines). Finding paths are relative to
    /// --root, else to the git top or the current folder.
    #[arg(last = true, value_name = "PROGRAM")]
    program: Vec<OsString>,
}

fn config(a: &SanitizeArgs, s: &Settings) -> SanitizeConfig {
    SanitizeConfig {
        keep_xml: a.save_xml.clone(),
        seed: a.seed.get(),
        size: a.size,
        ..SanitizeConfig::new(
            a.tool[0],
            s.sanitizer.clone(),
            Duration::from_secs_f64(a.timeout),
            &s.arch,
        )
    }
}

/// Without a device, the files asked for are still written (the JSON: nothing run, and why;
/// the log: why) before the error (exit 4).
fn no_device(a: &SanitizeArgs, subject: &str, done: &[&str]) -> Result<()> {
    let Err(why) = crate::run::device::probe() else {
        return Ok(());
    };
    let reason = format!("no CUDA device: {why}");
    if let Some(p) = &a.save_log {
        settings::write_file(p, &format!("{reason}\n"))?;
    }
    let json = report::json::not_run("sanitize", subject, &reason, done, exit::NO_DEVICE);
    a.out.write_text(&json)?;
    Err(crate::Error::NoDevice(why))
}

pub fn run(global: &Global, a: SanitizeArgs) -> Result<u8> {
    super::grade_secret::withhold_from_children();
    a.out.claim_stdout();
    let mut tools = a.tool.clone();
    tools.dedup();
    if tools.len() > 1 {
        if let Some(t) = tools.iter().find(|t| !t.is_own()) {
            let own: Vec<&str> = (Tool::ALL.iter())
                .filter(|t| t.is_own())
                .map(|t| t.name())
                .collect();
            return Err(crate::Error::Usage(format!(
                "--tool {t} cannot share a run with other tools: only racegate's own tools ({}) \
                 can be given together",
                own.join(", ")
            )));
        }
    }
    let outputs = |inputs: &[PathBuf]| {
        let inputs: Vec<&std::path::Path> = inputs.iter().map(PathBuf::as_path).collect();
        settings::check_outputs(
            &[
                ("--save-xml", a.save_xml.as_deref()),
                ("--save-log", a.save_log.as_deref()),
                ("--json", a.out.json.as_deref()),
            ],
            &inputs,
        )
    };
    let r = if a.program.is_empty() {
        let catalog = super::list::catalog(global)?;
        outputs(&settings::inputs_of(&catalog))?;
        let case = catalog.get(a.case.as_deref().unwrap_or_default())?;
        settings::validate(&catalog, true)?;
        no_device(&a, &case.name, &["signatures checked"])?;
        let s = Settings::new(None)?;
        let cfg = config(&a, &s);
        if tools.len() > 1 {
            sanitize::runner::run_own(&catalog, case, &cfg, &s.worker, &tools)?
        } else {
            vec![sanitize::runner::run(&catalog, case, &cfg, &s.worker)?]
        }
    } else {
        let exe = crate::gate::program::resolve(&a.program[0])?;
        let exe = std::path::absolute(&exe).unwrap_or(exe);
        outputs(std::slice::from_ref(&exe))?;
        no_device(&a, &exe.display().to_string(), &[])?;
        let s = Settings::new(None)?;
        let mut cfg = config(&a, &s);
        // sharedcheck's confirm runs compare the program's output as the gate does: after the
        // built-in masks (timings, rates, addresses), so a printed time is not taken for a
        // value read from unwritten shared memory.
        let masks = crate::gate::masks::Masks::new(&[], true)?;
        cfg.output_view = Some(sanitize::tool::OutputView(std::sync::Arc::new(
            move |out: &[u8]| masks.apply(out),
        )));
        let cwd = settings::current_dir()?;
        let root = global
            .root
            .clone()
            .unwrap_or_else(|| crate::build::toolchain::report_root(&cwd));
        let label = exe
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "program".into());
        let mut target: Vec<OsString> = vec![exe.into_os_string()];
        target.extend(a.program[1..].iter().cloned());
        if tools.len() > 1 {
            sanitize::injected::run::run_tools(&label, &target, &cfg, &root, &tools)?
        } else {
            vec![sanitize::runner::run_target(&label, &target, &cfg, &root)?]
        }
    };
    if let Some(p) = &a.save_log {
        // One run: its command once, then each tool's reading of it.
        let logs: Vec<&str> = r.iter().map(|r| r.log.as_str()).collect();
        settings::write_file(p, &format!("$ {}\n{}", r[0].command, logs.join("\n")))?;
    }
    let text: Vec<String> = r.iter().map(report::sanitizer).collect();
    let lang = a.lang.get();
    a.out.text(&format!(
        "{}{}",
        text.join("\n"),
        crate::report::explain_text::sanitizer(&r, lang)
    ))?;
    match r.as_slice() {
        [one] => a.out.write(one)?,
        runs => a.out.write(&SharedRun {
            seconds: runs.iter().map(|r| r.seconds).sum(),
            runs,
        })?,
    }
    // The exit-code table's precedence: inconclusive before found.
    let code = |o: &Outcome| match o {
        Outcome::Clean => exit::OK,
        Outcome::Findings(_) | Outcome::Hang { .. } => exit::FOUND,
        Outcome::Inconclusive(_) => exit::INCONCLUSIVE,
    };
    let inconclusive = r
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Inconclusive(_)));
    Ok(if inconclusive {
        exit::INCONCLUSIVE
    } else {
        r.iter().map(|r| code(&r.outcome)).max().unwrap_or(exit::OK)
    })
}

/// `--json` of several tools in one run: the run's whole time and each tool's result (each
/// with its share of the time).
#[derive(serde::Serialize)]
struct SharedRun<'a> {
    seconds: f64,
    runs: &'a [sanitize::SanitizerRun],
}
