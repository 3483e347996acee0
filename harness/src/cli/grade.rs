//! `racegate grade`: course exercise submissions, one or a batch, graded against a rubric and
//! written for a person or a course platform.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::build::compile_child::Limits;
use crate::errors::exit;
use crate::grade::score::Item;
use crate::grade::{self as grading, spec};
use crate::{report, Error, Result};

use super::output::{self, note};
use super::progress::{Progress, Status};
use super::settings::Global;
use super::settings::{self, Settings};
use super::values;

pub const HELP: &str = concat!(
    "Exercises are grading/exercises/*.toml (name, signature, launch shape, sizes).\n\
The rubric (grading/rubric.toml) gives the points per item. The secret seed comes from\n\
RACEGATE_GRADE_SECRET (random when unset; removed from the environment before anything runs),\n\
mixed with --seed: set it for the same inputs on every regrade. Submissions compile in a child\n\
process (an empty folder, a clean environment, --compile-timeout, --compile-memory) and may not\n\
include files. They run on the GPU one at a time (a lock file), so --jobs overlaps compilation,\n\
not kernels. File names that start with `-` go after `--`.\n",
    "Exit codes: 0 every submission earned full points, 1 some lost points, 2 bad input, 3 not \
graded (a tool missing or failing), 4 no CUDA device (not graded; only compilation ran). A \
submission that was not graded gets no score in any format.\n",
    "Examples:\n  racegate grade --exercise reduce alice.cu\n  \
racegate grade --exercise reduce --format gradescope --output /autograder/results/results.json submission/reduce.cu\n  \
racegate grade --exercise reduce submissions/ --output grades.csv\n  \
racegate grade --exercise reduce -- -rf.cu"
);

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum GradeFormat {
    Human,
    Json,
    Gradescope,
    Prairielearn,
    Junit,
    Csv,
}

#[derive(clap::Args)]
pub struct GradeArgs {
    /// The exercise, as grading/exercises/NAME.toml names it.
    #[arg(long)]
    exercise: String,
    /// Submitted .cu files, or folders of them (FOLDER/*.cu, and FOLDER/*/*.cu for one
    /// folder per student; .CU counts too).
    #[arg(required = true)]
    submissions: Vec<PathBuf>,
    /// The rubric (default: grading/rubric.toml).
    #[arg(long, value_name = "FILE")]
    rubric: Option<PathBuf>,
    /// Output format (default: human for one submission, csv for several); several
    /// submissions take csv or json only.
    #[arg(long, value_enum)]
    format: Option<GradeFormat>,
    /// Write the output here instead of standard output (checked before grading starts).
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Randomized correctness trials.
    #[arg(long, default_value_t = 8, value_parser = values::at_least_one)]
    trials: u32,
    /// The public seed (mixed with the secret).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Deadline per trial, in seconds.
    #[arg(long, default_value_t = 10.0, value_parser = values::seconds)]
    timeout: f64,
    /// Deadline per sanitizer run, in seconds.
    #[arg(long, default_value_t = 60.0, value_parser = values::seconds)]
    sanitize_timeout: f64,
    /// Deadline per compile of a submission, in seconds.
    #[arg(long, default_value_t = 30.0, value_parser = values::seconds)]
    compile_timeout: f64,
    /// Address space a submission's compile may use, in MiB.
    #[arg(long, default_value_t = 4096, value_parser = values::mebibytes)]
    compile_memory: u64,
    /// How long to wait for another grader to leave the GPU, in seconds (then: not graded).
    #[arg(long, default_value_t = 3600.0, value_parser = values::seconds)]
    gpu_wait: f64,
    /// Submissions graded at once in a batch.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
}

pub fn run(global: &Global, a: GradeArgs) -> Result<u8> {
    // Read, then removed from our own environment before any thread or child starts: no
    // compile, worker or sanitizer can inherit it.
    let secret = std::env::var("RACEGATE_GRADE_SECRET")
        .ok()
        .filter(|s| !s.is_empty());
    std::env::remove_var("RACEGATE_GRADE_SECRET");
    let secret = match secret {
        Some(s) => crate::build::compile::fingerprint(&s),
        None => settings::random_seed(),
    };
    let root = settings::root(global)?;
    let spec = spec::Spec::find(&root, &a.exercise)?;
    let rubric = spec::Rubric::load(&a.rubric.unwrap_or_else(|| root.join(spec::RUBRIC)))?;
    let mut files = Vec::new();
    for p in &a.submissions {
        if p.is_dir() {
            let (found, skipped) = submissions_in(p)?;
            for (f, why) in &skipped {
                note(&format!("skipped {}: {why}", f.display()));
            }
            if found.is_empty() {
                return Err(Error::Usage(format!(
                    "no .cu submissions in {} (looked at {0}/*.cu and {0}/*/*.cu)",
                    p.display()
                )));
            }
            files.extend(found);
        } else {
            // A missing or unreadable file is graded (as zero, with the reason), not an error.
            files.push(p.clone());
        }
    }
    let batch = files.len() > 1 || a.submissions.iter().any(|p| p.is_dir());
    let format = match (a.format, batch) {
        (None, false) => GradeFormat::Human,
        (None, true) => GradeFormat::Csv,
        (Some(f @ (GradeFormat::Csv | GradeFormat::Json)), true) => f,
        (Some(f), true) => {
            return Err(Error::Usage(format!(
                "--format {} grades one submission; for {} submissions use --format csv or --format json",
                clap::ValueEnum::to_possible_value(&f)
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default(),
                files.len()
            )))
        }
        (Some(f), false) => f,
    };
    if let Some(p) = &a.output {
        check_writable(p)?;
    }
    // The private cache holds the GPU lock and the workers' files: refuse one that is not
    // ours before any submission is graded.
    crate::build::cache::dir()?;
    let device = crate::run::device::probe();
    let s = Settings::new(Some(a.jobs))?;
    let cfg = grading::GradeConfig {
        trials: a.trials,
        seed: a.seed,
        secret,
        timeout: Duration::from_secs_f64(a.timeout),
        sanitize_timeout: Duration::from_secs_f64(a.sanitize_timeout),
        arch: s.arch.clone(),
        sanitizer: s.sanitizer.clone(),
        device: device.is_ok(),
        compile: Limits {
            deadline: Duration::from_secs_f64(a.compile_timeout),
            memory_mib: a.compile_memory,
            ..Limits::default()
        },
        gpu_wait: Duration::from_secs_f64(a.gpu_wait),
        note,
    };
    note(&format!(
        "confinement: each compile runs in a child racegate process in an empty private folder, \
         with a clean environment, a {:.0} s deadline, {} MiB of address space and a {} MiB \
         stack; file-system includes are refused. Kernels run in a worker child without the \
         secret. No Landlock or other kernel-level confinement is applied.",
        a.compile_timeout,
        cfg.compile.memory_mib,
        cfg.compile.stack()
    ));
    let grade = |f: PathBuf| grading::grade(&root, &spec, &rubric, &f, &cfg, &s.worker);
    let grades = if batch {
        grade_batch(files, &format, a.output.as_deref(), &rubric, s.jobs, grade)?
    } else {
        let g = grade(files.remove(0));
        write_one(&g, format, a.output.as_deref())?;
        vec![g]
    };
    if let Err(why) = &device {
        note(&format!(
            "no CUDA device ({why}): nothing was graded; only the file checks and compilation ran"
        ));
    }
    for g in &grades {
        match &g.not_graded {
            Some(n) if n.exit_code != exit::NO_DEVICE => {
                note(&format!("{}: not graded: {}", g.submission, n.reason))
            }
            _ => {}
        }
    }
    let device_code = device.is_err().then_some(exit::NO_DEVICE);
    Ok(exit::worst(
        grades.iter().map(|g| g.exit_code()).chain(device_code),
    ))
}

/// Fails (exit 2) unless `path` can be written, leaving no file behind that was not there.
fn check_writable(path: &Path) -> Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| {
            Error::Usage(format!(
                "--output {}: cannot write there ({e}); nothing was graded",
                path.display()
            ))
        })?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// One submission's grade in `format`, to `output` or stdout. A Gradescope grade that was not
/// given writes nothing (and removes an older file): Gradescope shows a missing results.json
/// as an autograder failure, never as a score.
fn write_one(g: &grading::Grade, format: GradeFormat, output: Option<&Path>) -> Result<()> {
    let text = match format {
        GradeFormat::Human => Some(report::grade::human(g)),
        GradeFormat::Csv => Some(report::grade::csv(std::slice::from_ref(g))),
        GradeFormat::Json => Some(report::grade::json(g)),
        GradeFormat::Gradescope => report::grade::gradescope(g),
        GradeFormat::Prairielearn => Some(report::grade::prairielearn(g)),
        GradeFormat::Junit => Some(report::junit::grade(g)),
    };
    match (text, output) {
        (Some(t), Some(p)) => settings::write_file(p, &t),
        (Some(t), None) => output::print(&t),
        (None, Some(p)) => {
            let _ = std::fs::remove_file(p);
            Ok(())
        }
        (None, None) => Ok(()),
    }
}

/// A batch: CSV rows written (and flushed) as each grade finishes, so a batch cut short keeps
/// what it graded; JSON written whole at the end.
fn grade_batch(
    files: Vec<PathBuf>,
    format: &GradeFormat,
    output: Option<&Path>,
    rubric: &spec::Rubric,
    jobs: usize,
    grade: impl Fn(PathBuf) -> grading::Grade + Sync,
) -> Result<Vec<grading::Grade>> {
    let csv = *format != GradeFormat::Json;
    let columns = Item::graded(rubric);
    let sink: Option<Box<dyn Write + Send>> = match (csv, output) {
        (false, _) => None,
        (true, Some(p)) => Some(Box::new(
            std::fs::File::create(p).map_err(|e| Error::io("creating", p, e))?,
        )),
        (true, None) => Some(Box::new(std::io::stdout())),
    };
    let sink = Mutex::new(sink);
    let failed: Mutex<Option<std::io::Error>> = Mutex::new(None);
    let write = |text: &str| {
        if let Some(w) = sink.lock().expect("sink").as_mut() {
            if let Err(e) = w.write_all(text.as_bytes()).and_then(|_| w.flush()) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    failed.lock().expect("failed").get_or_insert(e);
                }
            }
        }
    };
    write(&report::grade::csv_header(&columns));
    let progress = Progress::new(files.len() as u64, "submissions", csv && output.is_none());
    let grades = crate::proc::pool::run_all(files, jobs, grade, |g| {
        write(&report::grade::csv_row(g, &columns));
        // PASS at full points, FAIL below, INCONCLUSIVE when not graded (never a score).
        let (status, detail) = match &g.not_graded {
            Some(n) => (
                Status::Inconclusive,
                format!("       not graded: {}", n.reason),
            ),
            None if g.score >= g.max_score => (Status::Pass, String::new()),
            None => (
                Status::Fail,
                format!("       {} / {} points", g.score, g.max_score),
            ),
        };
        progress.item(status, &g.submission, g.execution_seconds, Some(&detail));
    });
    progress.finish();
    if let Some(e) = failed.into_inner().expect("failed") {
        let shown = output.map_or("standard output".into(), |p| p.display().to_string());
        return Err(Error::io("writing", shown, e));
    }
    if !csv {
        let text = report::grade::batch_json(&grades);
        match output {
            Some(p) => settings::write_file(p, &text)?,
            None => output::print(&text)?,
        }
    }
    Ok(grades)
}

/// An entry of a batch folder that is not graded, and why.
type Skipped = (PathBuf, &'static str);

/// The submissions in a folder: its `.cu` (or `.CU`) files, and those of each folder inside it
/// (one folder per student, as course platforms export them); and every entry left out, with
/// why (hidden, not a .cu file, a link, nested deeper).
fn submissions_in(dir: &Path) -> Result<(Vec<PathBuf>, Vec<Skipped>)> {
    let list = |d: &Path| -> Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|e| Error::Usage(format!("{}: {e}", d.display())))?
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        Ok(v)
    };
    let (mut found, mut skipped) = (Vec::new(), Vec::new());
    let mut look = |p: PathBuf, top: bool| -> Option<PathBuf> {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        let meta = std::fs::symlink_metadata(&p).ok();
        let why = if name.as_deref().is_some_and(|n| n.starts_with('.')) {
            "a hidden name"
        } else if meta.as_ref().is_some_and(|m| m.file_type().is_symlink()) {
            "a symbolic link"
        } else if meta.as_ref().is_some_and(|m| m.is_dir()) {
            if top {
                return Some(p); // a student's folder
            }
            "a folder nested more than one level deep"
        } else if !p.extension().is_some_and(|x| x.eq_ignore_ascii_case("cu")) {
            "not a .cu file"
        } else if !meta.as_ref().is_some_and(|m| m.is_file()) {
            "not a regular file"
        } else {
            found.push(p);
            return None;
        };
        skipped.push((p, why));
        None
    };
    let mut folders = Vec::new();
    for entry in list(dir)? {
        folders.extend(look(entry, true));
    }
    for folder in folders {
        for entry in list(&folder)? {
            look(entry, false);
        }
    }
    found.sort();
    Ok((found, skipped))
}
