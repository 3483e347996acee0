//! `racegate grade`: course exercise submissions, one or a batch, graded against a rubric and
//! written for a person or a course platform.

use std::path::{Path, PathBuf};
use std::time::Duration;

use racegate::errors::exit;
use racegate::grade::{self as grading, spec};
use racegate::{report, Error, Result};

use super::settings::Global;
use super::settings::{self, Settings};

pub const HELP: &str = concat!(
    "Exercises are grading/exercises/*.toml (name, signature, launch shape, sizes).\n\
The rubric (grading/rubric.toml) gives the points per item. The secret seed comes from\n\
RACEGATE_GRADE_SECRET (random when unset), mixed with --seed: set it for the same inputs on\n\
every regrade. Submissions run on the GPU one at a time (a lock file), so --jobs overlaps\n\
compilation, not kernels.\n",
    "Exit codes: 0 graded, 2 bad input, 3 inconclusive (a tool missing or failing), 4 no CUDA \
device (only compilation was graded).\n",
    "Examples:\n  racegate grade --exercise reduce alice.cu\n  \
racegate grade --exercise reduce --format gradescope --output /autograder/results/results.json submission/reduce.cu\n  \
racegate grade --exercise reduce submissions/ --output grades.csv"
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
    /// folder per student).
    #[arg(required = true)]
    submissions: Vec<PathBuf>,
    /// The rubric (default: grading/rubric.toml).
    #[arg(long, value_name = "FILE")]
    rubric: Option<PathBuf>,
    /// Output format (default: human for one submission, csv for several); several
    /// submissions take csv or json only.
    #[arg(long, value_enum)]
    format: Option<GradeFormat>,
    /// Write the output here instead of standard output.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Randomized correctness trials.
    #[arg(long, default_value_t = 8)]
    trials: u32,
    /// The public seed (mixed with the secret).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Deadline per trial, in seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Deadline per sanitizer run, in seconds.
    #[arg(long, default_value_t = 60.0)]
    sanitize_timeout: f64,
    /// Submissions graded at once in a batch.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
}

pub fn run(global: &Global, a: GradeArgs) -> Result<u8> {
    let root = settings::root(global)?;
    let spec = spec::Spec::find(&root, &a.exercise)?;
    let rubric = spec::Rubric::load(&a.rubric.unwrap_or_else(|| root.join(spec::RUBRIC)))?;
    let mut files = Vec::new();
    for p in &a.submissions {
        if p.is_dir() {
            let found = submissions_in(p)?;
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
    if files.is_empty() {
        return Err(Error::Usage("no .cu submissions found".into()));
    }
    let batch = files.len() > 1 || a.submissions.iter().any(|p| p.is_dir());
    let format = match (a.format, batch) {
        (None, false) => GradeFormat::Human,
        (None, true) => GradeFormat::Csv,
        (Some(f @ (GradeFormat::Csv | GradeFormat::Json)), true) => f,
        (Some(_), true) => {
            return Err(Error::Usage(format!(
                "--format {} grades one submission; for {} submissions use --format csv or --format json",
                a.format.and_then(|f| clap::ValueEnum::to_possible_value(&f)).map(|v| v.get_name().to_string()).unwrap_or_default(),
                files.len()
            )))
        }
        (Some(f), false) => f,
    };
    let device = racegate::device::probe();
    let secret = match std::env::var("RACEGATE_GRADE_SECRET") {
        Ok(s) if !s.is_empty() => racegate::compile::fingerprint(&s),
        _ => settings::random_seed(),
    };
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
    };
    let bar = settings::progress(files.len() as u64, "submissions", !batch);
    let grades = racegate::pool::run_all(
        files,
        if batch { s.jobs } else { 1 },
        |f| grading::grade(&root, &spec, &rubric, &f, &cfg, &s.worker),
        |_| bar.inc(1),
    );
    bar.finish_and_clear();
    let grades: Vec<grading::Grade> = grades.into_iter().collect::<Result<_, _>>()?;
    let text = if batch {
        match format {
            GradeFormat::Json => report::grade::batch_json(&grades),
            _ => report::grade::csv(&grades),
        }
    } else {
        let g = &grades[0];
        match format {
            GradeFormat::Human => report::grade::human(g),
            GradeFormat::Csv => report::grade::csv(&grades),
            GradeFormat::Json => report::grade::json(g),
            GradeFormat::Gradescope => report::grade::gradescope(g),
            GradeFormat::Prairielearn => report::grade::prairielearn(g),
            GradeFormat::Junit => report::junit::grade(g),
        }
    };
    match &a.output {
        Some(p) => settings::write_file(p, &text)?,
        None => print!("{text}"),
    }
    if let Err(why) = device {
        eprintln!("note: no CUDA device ({why}): only the file checks and compilation were graded");
        return Ok(exit::NO_DEVICE);
    }
    Ok(exit::OK)
}

/// The submissions in a folder: its `.cu` files, and those of each folder inside it (one
/// folder per student, as course platforms export them). Hidden entries are skipped.
fn submissions_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let list = |d: &Path| -> Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|e| Error::Usage(format!("{}: {e}", d.display())))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        v.sort();
        Ok(v)
    };
    let is_cu = |p: &PathBuf| p.is_file() && p.extension().is_some_and(|x| x == "cu");
    let mut out = Vec::new();
    for entry in list(dir)? {
        if entry.is_dir() {
            out.extend(list(&entry)?.into_iter().filter(is_cu));
        } else if is_cu(&entry) {
            out.push(entry);
        }
    }
    Ok(out)
}
