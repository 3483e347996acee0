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

use super::flags::{default, NoShrinkArg, PartitionArg, SanitizeTimeoutArg, SeedArg, TrialsArg};
use super::output::{self, note};
use super::progress::{Progress, Status};
use super::settings::Global;
use super::settings::{self, Settings};
use super::values;

pub const HELP: &str = concat!(
    "Exercises are grading/exercises/*.toml (name, signature, launch shape, sizes) under --root\n\
(an instructor's own course); without --root, the course racegate ships (counter, handoff,\n\
histogram, matmul_tiled, reduce, transpose), never one found above the current folder.\n\
The rubric (grading/rubric.toml) gives the points per item; items may require others\n\
([requires]) and correctness is all-or-nothing unless the rubric says otherwise.\n\n\
The secret seed, mixed with --seed, makes the inputs students cannot predict; set one for the\n\
same inputs on every regrade (random when none is given). Give it in a file, never in an\n\
environment variable: --secret-file FILE or RACEGATE_GRADE_SECRET_FILE=FILE (a file only the\n\
grader can read; the variable holds its path, not the secret). A process's first environment\n\
stays readable in /proc/PID/environ for its whole life, so a secret in RACEGATE_GRADE_SECRET\n\
is still accepted but racegate then re-executes itself without it (the secret passes on an\n\
inherited descriptor); the script that set the variable keeps it in its own environment.\n\n\
Submissions compile in a child process (an empty folder, a clean environment,\n\
--compile-timeout, --compile-memory) that the kernel stops from opening any file once NVRTC is\n\
loaded (seccomp-bpf, Landlock and an empty mount namespace, each where the machine has it;\n\
`racegate doctor` lists them). The include refusal before it is a friendly first line only.\n\
A machine where no such layer holds is an infrastructure failure (not graded, exit 3) unless\n\
--allow-unconfined accepts the risk; with some layers missing, grading goes on and says which.\n\
--jobs submissions run on each GPU side by side (a lock file per device); what others on it\n\
could cause (a trial or sanitizer that missed its deadline, a trial out of device memory)\n\
runs again alone and that run counts, and the performance timing runs alone. One exception:\n\
the sanitizers of a kernel that finished none of its trials (each hang taken alone) run\n\
beside others under their cut deadline. --exclusive-gpu runs each submission alone\n\
throughout. File names that start with `-` go after `--`.\n",
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

/// `--trials`' default here: few, as a batch grades many submissions and the course's kernels
/// are small (the H200 ran a submission's eight `reduce` trials in under a second).
const TRIALS: u32 = 8;
/// `--sanitize-timeout`'s default here, in seconds, longer than `check`'s: a submission's tools
/// share the GPU with other submissions' (`--jobs`), and a neighbour may slow a submission down,
/// not cost it points.
const SANITIZE_TIMEOUT: f64 = 60.0;

#[derive(clap::Args)]
#[command(
    mut_arg("trials", default!(TRIALS)),
    mut_arg("seed", default!(1)),
    mut_arg("sanitize_timeout", default!(SANITIZE_TIMEOUT))
)]
pub struct GradeArgs {
    /// The exercise, as grading/exercises/NAME.toml names it.
    #[arg(long)]
    exercise: String,
    /// Submitted .cu files, or folders of them (FOLDER/*.cu, and FOLDER/*/*.cu for one
    /// folder per student; .CU counts too).
    #[arg(required = true)]
    submissions: Vec<PathBuf>,
    #[command(flatten)]
    shard: PartitionArg,
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
    #[command(flatten)]
    trials: TrialsArg,
    #[command(flatten)]
    no_shrink: NoShrinkArg,
    #[command(flatten)]
    seed: SeedArg,
    /// Deadline per trial, in seconds. The course's kernels take microseconds to milliseconds
    /// a trial (the H200: a whole submission's eight `reduce` trials, worker start included,
    /// under a second), so 5 s ends only infinite loops and deadlocks; raise it for an exercise
    /// whose correct solutions may be far slower.
    #[arg(long, default_value_t = 5.0, value_parser = values::seconds)]
    timeout: f64,
    #[command(flatten)]
    sanitize_timeout: SanitizeTimeoutArg,
    /// Deadline per compile of a submission, in seconds.
    #[arg(long, default_value_t = 30.0, value_parser = values::seconds)]
    compile_timeout: f64,
    /// Address space a submission's compile may use, in MiB.
    #[arg(long, default_value_t = 4096, value_parser = values::mebibytes)]
    compile_memory: u64,
    /// How long to wait for another grader to leave the GPU, in seconds (then: not graded).
    #[arg(long, default_value_t = 3600.0, value_parser = values::seconds)]
    gpu_wait: f64,
    /// Submissions graded at once in a batch (default: 4, on each of --devices): compiled side
    /// by side and run on the GPU side by side (see --exclusive-gpu).
    #[arg(long, value_parser = values::jobs)]
    jobs: Option<usize>,
    #[command(flatten)]
    devices: super::workers::DevicesArg,
    /// Run each submission on the GPU alone, from its first trial to its last sanitizer (the
    /// batch then overlaps only compilation). Without it, submissions share the GPU and what a
    /// neighbour could cause (a trial or a sanitizer that missed its deadline, a trial out of
    /// device memory) is taken again alone, and the performance timing runs alone.
    #[arg(long)]
    exclusive_gpu: bool,
    /// The secret seed, read from this file (first line; see the secret above). Also
    /// RACEGATE_GRADE_SECRET_FILE.
    #[arg(long, value_name = "FILE", env = "RACEGATE_GRADE_SECRET_FILE")]
    secret_file: Option<PathBuf>,
    /// Accepted for older scripts: refusing to grade without kernel-level confinement is the
    /// default.
    #[arg(long, hide = true, conflicts_with = "allow_unconfined")]
    require_confinement: bool,
    /// Grade even where the kernel confines no compile (no seccomp-bpf, no Landlock, no empty
    /// mount namespace applies or holds): a submission's compile is then stopped from reading
    /// files by the token scanner alone, a pattern check. Without this flag such a machine is
    /// an infrastructure failure (exit 3, not graded).
    #[arg(long)]
    allow_unconfined: bool,
    #[command(flatten)]
    lang: super::flags::LangArg,
    /// Also write the grades as an HTML report into this folder: an index of submissions and
    /// items, one page per submission with each item's detail and explanation.
    #[arg(long, value_name = "DIR")]
    html: Option<PathBuf>,
}

/// Grades, then returns the exit code. A file racegate did not create in this run is never
/// deleted, whatever the exit: a grade not given leaves `--output` as it was (a Gradescope
/// container starts without `results.json`, so none is there and Gradescope shows the
/// autograder failure), and says so when a file was already there.
pub fn run(global: &Global, a: GradeArgs) -> Result<u8> {
    grade_all(global, a)
}

fn grade_all(global: &Global, a: GradeArgs) -> Result<u8> {
    // Before any child starts (the only thread besides this one waits for signals): no compile,
    // worker or sanitizer can inherit it, and after the re-execution this process's
    // /proc/PID/environ does not hold it (the first image held it for the moment it took to
    // re-execute, as the shell that exported it still does).
    let secret = super::grade_secret::secret(a.secret_file.as_deref())?;
    let secret = match secret {
        Some(s) => crate::build::compile::fingerprint(&s),
        None => settings::random_seed(),
    };
    if let Some(m) = &global.manifest {
        return Err(Error::Usage(format!(
            "--manifest {}: grade reads no manifest (an exercise comes from \
             grading/exercises/NAME.toml under --root); leave --manifest out",
            m.display()
        )));
    }
    // An instructor's course with --root; without it, the course racegate ships (never one
    // found above the current folder, which a student may control).
    let root = match &global.root {
        Some(_) => settings::root(global)?,
        None => crate::grade::course::root()?,
    };
    // The devices, checked against the driver's before any submission is read.
    let devices = a.devices.select()?;
    let spec = spec::Spec::find(&root, &a.exercise)?;
    let rubric_path = a
        .rubric
        .clone()
        .unwrap_or_else(|| root.join(crate::grade::rubric::RUBRIC));
    let rubric = crate::grade::rubric::Rubric::load(&rubric_path)?;
    let mut files = Vec::new();
    // Each submission's stable id for --partition: its path under the folder given (one folder
    // per student: `alice/reduce.cu`), or its file name.
    let mut ids: Vec<String> = Vec::new();
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
            ids.extend(found.iter().map(|f| {
                f.strip_prefix(p)
                    .unwrap_or(f)
                    .to_string_lossy()
                    .into_owned()
            }));
            files.extend(found);
        } else {
            // A missing or unreadable file is graded (as zero, with the reason), not an error.
            ids.push(
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
            files.push(p.clone());
        }
    }
    let batch = files.len() > 1 || a.submissions.iter().any(|p| p.is_dir());
    // Each kept submission's place in the whole batch: a shard's JSON carries them, so that a
    // merge gives the grades back in the batch's order (folders sorted, files as given).
    let mut places: Vec<usize> = (0..files.len()).collect();
    if let Some(p) = a.shard.partition {
        // By each submission's id, whatever folder the batch sits in.
        (places, files) = files
            .into_iter()
            .zip(&ids)
            .enumerate()
            .filter(|(_, (_, id))| p.has(id))
            .map(|(i, (f, _))| (i, f))
            .unzip();
        note(&format!(
            "shard {p}: {} submission(s) of this batch",
            files.len()
        ));
    }
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
        // Never a submission, the rubric, the exercise or the secret: refused before grading,
        // and never a FIFO, a folder or a device.
        let mut inputs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        inputs.extend(a.submissions.iter().map(PathBuf::as_path));
        inputs.push(&rubric_path);
        inputs.push(&spec.path);
        // The course's reference kernel, timed against for the performance item.
        let reference = spec.reference.as_ref().map(|(file, _)| root.join(file));
        inputs.extend(reference.as_deref());
        inputs.extend(a.secret_file.as_deref());
        settings::check_outputs(&[("--output", Some(p.as_path()))], &inputs)?;
        output::check_writable(p)?;
    }
    if let Some(dir) = &a.html {
        settings::check_html_dir(dir, &[("--output", a.output.as_deref())])?;
    }
    // The private cache holds the GPU lock and the workers' files: refuse one that is not
    // ours before any submission is graded.
    crate::build::cache::dir()?;
    let device = crate::run::device::probe();
    // A thread that grades submissions keeps one device, its lease and its children's
    // (`GpuTurn`): each device grades its share of the batch, and no grade says where.
    let jobs = devices.workers(a.jobs.unwrap_or(4), a.jobs.is_some());
    let s = Settings::new(Some(jobs))?;
    let on = devices.describe(jobs);
    if batch && !on.is_empty() {
        note(&format!("{jobs} submissions at once{on}"));
    }
    let limits = Limits {
        deadline: Duration::from_secs_f64(a.compile_timeout),
        memory_mib: a.compile_memory,
        ..Limits::default()
    };
    grading::config::check_limits(&root, &spec, &limits, &s.worker, &s.arch)?;
    // Shown, not assumed: a compile confined as a submission's, asked to see files. Without
    // NVRTC nothing compiles anyway, and that is reported as such below.
    let confinement = match crate::build::compile_jail::probe_confinement(&s.worker) {
        Ok(p) if p.confined() => Ok(p.describe()),
        Ok(p) => Err(p.describe()),
        Err(e) => Err(format!("confinement not probed: {}", e.chain())),
    };
    let shown = match &confinement {
        Ok(d) | Err(d) => d.clone(),
    };
    note(&format!(
        "confinement: each compile runs in a child racegate process in an empty private folder, \
         with a clean environment, a {:.0} s deadline, {} MiB of address space and a {} MiB \
         stack; {shown}. Kernels run in a worker child without the secret. Containment: {}.",
        a.compile_timeout,
        limits.memory_mib,
        limits.stack(),
        crate::proc::containment().describe(),
    ));
    // Unconfined grading is refused unless the risk is accepted by name. A probe that could
    // not run (no NVRTC) compiles nothing either; that is reported as itself.
    let probed_unconfined = confinement.is_err()
        && !matches!(&confinement, Err(w) if w.starts_with("confinement not probed"));
    if let (false, true, Err(why)) = (a.allow_unconfined, probed_unconfined, &confinement) {
        return Err(Error::Child(format!(
            "no kernel-level confinement holds on this machine: {why}; nothing was graded. \
             Grade where seccomp-bpf or Landlock is available (`racegate doctor` lists the \
             layers), or pass --allow-unconfined to accept that a submission's compile is \
             stopped from reading files by the token scanner alone"
        )));
    }
    let cfg = grading::GradeConfig {
        trials: a.trials.trials,
        seed: a.seed.get(),
        secret,
        timeout: Duration::from_secs_f64(a.timeout),
        sanitize_timeout: Duration::from_secs_f64(a.sanitize_timeout.seconds_or(SANITIZE_TIMEOUT)),
        arch: s.arch.clone(),
        sanitizer: s.sanitizer.clone(),
        device: device.is_ok(),
        compile: limits,
        require_confinement: !a.allow_unconfined,
        confinement: shown,
        gpu_wait: Duration::from_secs_f64(a.gpu_wait),
        note,
        shrink: !a.no_shrink.no_shrink,
        share_gpu: !a.exclusive_gpu,
    };
    let grade = |f: PathBuf| grading::grade(&root, &spec, &rubric, &f, &cfg, &s.worker);
    let fb = report::grade::Feedback {
        lang: a.lang.get(),
        see: spec.see.clone(),
    };
    let grades = if batch {
        // A shard's JSON carries its stamp: the exercise and its rubric are its input.
        let stamp = match a.shard.partition {
            Some(p) => {
                let mut input = a.exercise.clone().into_bytes();
                input.extend(
                    std::fs::read(&rubric_path)
                        .map_err(|e| Error::io("reading", &rubric_path, e))?,
                );
                Some(super::merge::stamp(
                    p,
                    &super::merge::args_after("grade"),
                    &root,
                    &input,
                    "grade",
                ))
            }
            None => None,
        };
        let out = (
            a.output.as_deref(),
            stamp.as_ref().map(|s| (s, places.as_slice())),
        );
        grade_batch(files, &format, out, &rubric, s.jobs, grade)?
    } else {
        let g = grade(files.remove(0));
        write_one(&g, format, a.output.as_deref(), &fb)?;
        vec![g]
    };
    if let Some(dir) = &a.html {
        let doc: serde_json::Value = serde_json::from_str(&report::grade::batch_json(&grades))
            .expect("racegate's own JSON parses");
        let pages = crate::report::html::render(&doc, &root, fb.lang, fb.see.as_deref())
            .map_err(Error::Usage)?;
        crate::report::html::write(dir, &pages)
            .map_err(|e| Error::io("writing the report into", dir, e))?;
    }
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

/// One submission's grade in `format`, to `output` or stdout. A Gradescope grade that was not
/// given writes nothing: Gradescope shows a missing results.json as an autograder failure,
/// never as a score.
fn write_one(
    g: &grading::Grade,
    format: GradeFormat,
    output: Option<&Path>,
    fb: &report::grade::Feedback,
) -> Result<()> {
    let text = match format {
        GradeFormat::Human => Some(report::grade::human_with(g, fb)),
        GradeFormat::Csv => Some(report::grade::csv(std::slice::from_ref(g))),
        GradeFormat::Json => Some(report::grade::json(g)),
        GradeFormat::Gradescope => report::grade::gradescope_with(g, fb),
        GradeFormat::Prairielearn => Some(report::grade::prairielearn_with(g, fb)),
        GradeFormat::Junit => Some(report::junit::grade(g)),
    };
    match (text, output) {
        // A file for people is escaped as the terminal's text is: `cat` of it must not run the
        // control sequences a submission made NVRTC echo.
        (Some(t), Some(p)) if format == GradeFormat::Human => {
            settings::write_file(p, &crate::report::visible::visible(&t))
        }
        (Some(t), Some(p)) => settings::write_file(p, &t),
        (Some(t), None) => output::print(&t),
        (None, Some(p)) => output::leave_untouched(p),
        (None, None) => Ok(()),
    }
}

/// A batch: CSV rows written (and flushed) as each grade finishes, so a batch cut short keeps
/// what it graded; JSON written whole at the end.
fn grade_batch(
    files: Vec<PathBuf>,
    format: &GradeFormat,
    (output, stamp): (Option<&Path>, Option<(&super::merge::Stamp, &[usize])>),
    rubric: &crate::grade::rubric::Rubric,
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
                match report::grade::compile_failure(g) {
                    Some(why) => {
                        format!("       not graded: {}; does not compile: {why}", n.reason)
                    }
                    None => format!("       not graded: {}", n.reason),
                },
            ),
            None if g.score >= g.max_score => (Status::Pass, String::new()),
            None => (
                Status::Fail,
                match report::grade::compile_failure(g) {
                    Some(why) => format!(
                        "       {} / {} points; does not compile: {why}",
                        g.score, g.max_score
                    ),
                    None => format!("       {} / {} points", g.score, g.max_score),
                },
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
        let text = match stamp {
            Some((st, places)) => {
                super::merge::stamped_grades(&report::grade::batch_json(&grades), st, places)
            }
            None => report::grade::batch_json(&grades),
        };
        match output {
            Some(p) => settings::write_file(p, &text)?,
            None => output::print(&text)?,
        }
    }
    Ok(grades)
}

/// An entry of a batch folder that is not graded, and why.
type Skipped = (PathBuf, String);

/// The submissions in a folder: its `.cu` (or `.CU`) files, and those of each folder inside it
/// (one folder per student, as course platforms export them); and every entry left out, with
/// why (hidden, not a .cu file, a link, nested deeper).
fn submissions_in(dir: &Path) -> Result<(Vec<PathBuf>, Vec<Skipped>)> {
    let list = |d: &Path| -> std::io::Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?;
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
        skipped.push((p, why.to_string()));
        None
    };
    let mut folders = Vec::new();
    for entry in list(dir).map_err(|e| Error::input(dir.display().to_string(), e))? {
        folders.extend(look(entry, true));
    }
    // A student's folder that cannot be read is skipped with the reason; the batch goes on
    // (one unreadable folder must not cost every other student the grade).
    let mut unreadable = Vec::new();
    for folder in folders {
        match list(&folder) {
            Ok(entries) => {
                for entry in entries {
                    look(entry, false);
                }
            }
            Err(e) => unreadable.push((folder, format!("a folder that cannot be read: {e}"))),
        }
    }
    skipped.extend(unreadable);
    found.sort();
    Ok((found, skipped))
}

#[cfg(test)]
mod tests {
    /// A batch folder that cannot be listed, or an `--output` that cannot be written, is bad
    /// input (exit 2) and keeps the OS's reason as its cause, printed once.
    #[test]
    fn a_batch_folder_or_output_that_cannot_be_used_keeps_the_os_reason() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("not-a-folder");
        std::fs::write(&file, "").unwrap();
        let listed = super::submissions_in(&file).unwrap_err();
        let written = super::output::check_writable(&file.join("g.json")).unwrap_err();
        for (e, starts) in [
            (listed, format!("{}: ", file.display())),
            (written, "--output ".into()),
        ] {
            let cause =
                std::error::Error::source(&e).and_then(|c| c.downcast_ref::<std::io::Error>());
            assert_eq!(cause.and_then(|c| c.raw_os_error()), Some(libc::ENOTDIR));
            let shown = e.chain().to_string();
            assert!(shown.starts_with(&starts), "{shown}");
            assert_eq!(shown.matches("(os error 20)").count(), 1, "{shown}");
            assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
        }
    }
}
