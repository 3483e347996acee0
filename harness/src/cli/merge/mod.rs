//! `racegate merge SHARD.json...`: the shards of a partitioned gate, check, mutate or grading run.
//! Part of `cli/`: may import every stage and product, as the rest of `cli/`.
//!
//! The shards of a `gate --partition K/N` run (N jobs of a CI matrix) as the one run they make:
//! the verdict and exit code, the text report and the JSON, SARIF, JUnit, markdown summary and
//! GitLab Code Quality a single run would have written, judged against the baseline once, the
//! shards taken in the order of K whatever the command line's. Refused before anything is written
//! (exit 2, naming the files): a file that is no shard, shards of different commits, settings,
//! manifests or shard counts, a shard given twice, a shard missing, shards judged against
//! different baselines (unless `--baseline` names the one). A grading batch's shards
//! ([`stamped_grades`]) merge the same way into the batch's CSV and JSON ([`merged_grades`]),
//! each grade at its place in the batch. Check and mutate shards: [`check`] and [`mutate`].
//!
//! A shard's JSON carries its stamp ([`stamp`]): the partition, the commit of the root, a hash
//! of the settings (the command line less its report flags and the partition) and of the input
//! (the manifest's bytes, the program's command line, or the exercise and its rubric).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::settings::{self, Global};
use crate::errors::exit;
use crate::gate::fingerprint::Identity;
use crate::gate::{Baseline, Checked, Detection, GateFinding, GateRun, Inconclusive};
use crate::source::partition::Partition;
use crate::{report, Error, Result};

pub const HELP: &str = "Examples:
  racegate gate --partition 1/3 --json shard-1.json   # in each of 3 CI jobs, K = 1, 2, 3
  racegate merge shard-1.json shard-2.json shard-3.json --sarif gate.sarif --junit gate.xml
  racegate grade --exercise reduce --partition 1/2 --format json --output g1.json subs/
  racegate merge g1.json g2.json --csv grades.csv --json grades.json
  racegate check --partition 1/4 --json c1.json              # and 2/4, 3/4, 4/4
  racegate merge c1.json c2.json c3.json c4.json --table table.md --junit check.xml
  racegate mutate --run --partition 1/2 --json m1.json
  racegate merge m1.json m2.json --table mutants.md --json mutate.json
Exit codes: 0 no new finding (every grade full, every cell or mutant as expected), 1 new findings \
(a grade below full, a mismatch, a survivor), 2 bad input (shards that do not make one run), 3 \
inconclusive (a grade not given), 4 a shard had no CUDA device; as the one run would exit.";

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The shards' JSON files (`racegate gate --partition K/N --json FILE`, or check's,
    /// mutate's or grade's), one per K.
    #[arg(required = true, value_name = "SHARD")]
    shards: Vec<PathBuf>,
    /// The baseline to judge against (default: the one the shards name, from the current
    /// folder; needed when they name different ones).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write the merged result as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write SARIF 2.1.0 here.
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Write JUnit here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the markdown summary here.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Write a GitLab Code Quality report here.
    #[arg(long, value_name = "FILE")]
    codequality: Option<PathBuf>,
    /// Grading shards (`grade --partition K/N --format json`): write the batch's CSV here (by
    /// default it goes to standard output, as a batch's does).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Check or mutate shards (`--partition K/N --json`): write the course table or the
    /// mutation table (markdown) here, as `check --table` or `mutate --table`.
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    #[command(flatten)]
    html: super::output::HtmlArg,
}

/// One grading shard as read: `grade --partition K/N --format json` ([`stamped_grades`]).
#[derive(Deserialize)]
struct GradeShard {
    shard: Stamp,
    /// Each grade's place in the whole batch (absent from the shards of racegate before it).
    #[serde(default)]
    places: Option<Vec<usize>>,
    grades: Vec<crate::grade::orchestrate::Grade>,
}

/// The JSON of the shard at `path`.
fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = crate::source::files::read_text(path, "a shard", 256 << 20)?;
    serde_json::from_str(&text).map_err(|e| {
        let what = format!(
            "{}: not JSON (a shard is the `--json FILE` of `racegate gate`, `check` or `mutate \
             --run` with `--partition K/N`, or `racegate grade --partition K/N --format json \
             --output FILE`)",
            path.display()
        );
        Error::input(what, e)
    })
}

/// Whether the file at `path` is a grading shard (its JSON an object with `grades`), not a
/// gate's.
fn is_grading(path: &Path) -> Result<bool> {
    Ok(read_json(path)?.get("grades").is_some())
}

/// The grading shards at `paths` as the one batch: its grades in the batch's order (each at
/// the place its shard records: a folder's submissions sorted, files as the command line gave
/// them; by path, as one folder's, for shards that record none), or why they do not make one (a
/// usage error naming the files).
pub fn merged_grades(paths: &[PathBuf]) -> Result<Vec<crate::grade::orchestrate::Grade>> {
    let mut stamps = Vec::new();
    let mut shards = Vec::new();
    for p in paths {
        let text = crate::source::files::read_text(p, "a shard", 256 << 20)?;
        let s: GradeShard = serde_json::from_str(&text).map_err(|e| {
            let what = format!("{}: not a grading shard's JSON", p.display());
            Error::input(what, e)
        })?;
        if s.shard.mode != "grade" {
            return Err(Error::Usage(format!(
                "{}: a {} shard among grading shards",
                p.display(),
                s.shard.mode
            )));
        }
        if s.places.as_ref().is_some_and(|v| v.len() != s.grades.len()) {
            return Err(Error::Usage(format!(
                "{}: a grading shard with {} grades and another number of places",
                p.display(),
                s.grades.len()
            )));
        }
        let part = Partition::parse(&s.shard.partition)?;
        stamps.push((p.clone(), s.shard, part));
        shards.push((part.k, s.places, s.grades));
    }
    one_split(&stamps)?;
    // Whatever order the command line gave the shards in.
    shards.sort_by_key(|(k, _, _)| *k);
    let every_place = shards.iter().all(|(_, places, _)| places.is_some());
    let mut grades: Vec<(usize, crate::grade::orchestrate::Grade)> = Vec::new();
    for (_, places, part) in shards {
        let places = places.unwrap_or_default();
        for (i, g) in part.into_iter().enumerate() {
            grades.push((places.get(i).copied().unwrap_or(0), g));
        }
    }
    if !every_place {
        grades.sort_by(|(_, a), (_, b)| Path::new(&a.submission).cmp(Path::new(&b.submission)));
        return Ok(grades.into_iter().map(|(_, g)| g).collect());
    }
    grades.sort_by_key(|(place, _)| *place);
    // The places of one batch: each of 0..total once.
    if grades.iter().enumerate().any(|(i, (place, _))| *place != i) {
        let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::Usage(format!(
            "{}: not one batch's shards: their {} grades do not hold each place of the batch \
             once (shards of different submissions?)",
            shown.join(", "),
            grades.len()
        )));
    }
    Ok(grades.into_iter().map(|(_, g)| g).collect())
}

/// `racegate merge` of grading shards: the batch's CSV (to `--csv`, else standard output) and
/// JSON (`--json`), and the exit code the batch would have had.
fn run_grading(a: &MergeArgs) -> Result<u8> {
    refuse_others(
        a,
        &["--csv"],
        "a grading batch's report; grading shards merge into --csv and --json",
    )?;
    let grades = merged_grades(&a.shards)?;
    let csv = report::grade::csv(&grades);
    match &a.csv {
        Some(p) => settings::write_file(p, &csv)?,
        None => super::output::print(&csv)?,
    }
    if let Some(p) = &a.json {
        settings::write_file(p, &report::grade::batch_json(&grades))?;
    }
    Ok(exit::worst(grades.iter().map(|g| g.exit_code())))
}

/// Refuses the first flag `a` gives that these shards do not take: `{flag} is not {what}`.
/// `--json` every kind of shard takes; of the others, those in `taken`. The flags are tried in
/// one order for every kind, so the one named is the same whichever kind refuses it.
fn refuse_others(a: &MergeArgs, taken: &[&str], what: &str) -> Result<()> {
    let given = [
        ("--sarif", a.sarif.is_some()),
        ("--junit", a.junit.is_some()),
        ("--summary", a.summary.is_some()),
        ("--codequality", a.codequality.is_some()),
        ("--csv", a.csv.is_some()),
        ("--baseline", a.baseline.is_some()),
        ("--table", a.table.is_some()),
        ("--html", a.html.html.is_some()),
    ];
    match given
        .iter()
        .find(|(flag, given)| *given && !taken.contains(flag))
    {
        Some((flag, _)) => Err(Error::Usage(format!("{flag} is not {what}"))),
        None => Ok(()),
    }
}

/// What makes shards parts of one run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct Stamp {
    /// `K/N`.
    pub partition: String,
    /// `git rev-parse HEAD` of the root, or `none`.
    pub commit: String,
    /// A hash of the command line less its report flags and the partition.
    pub settings: String,
    /// A hash of the input: the manifest's bytes, or the program's command line.
    pub input: String,
    /// `manifest`, `program` or `ctest`.
    pub mode: String,
}

/// Flags that say where reports go or where the work runs, not what runs: left out of the
/// settings' hash (with their values).
const REPORT_FLAGS: [&str; 14] = [
    "--output",
    "--devices",
    "--table",
    "--format",
    "--json",
    "--sarif",
    "--junit",
    "--summary",
    "--codequality",
    "--html",
    "--lang",
    "--partition",
    "--baseline",
    "--github",
];

/// The stamp of a shard run with `args` (the command line after `gate`), in `root`, on
/// `input` (the bytes that name what is gated).
pub fn stamp(p: Partition, args: &[String], root: &Path, input: &[u8], mode: &str) -> Stamp {
    let mut kept: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            kept.push(a);
            kept.extend(it.by_ref().map(String::as_str));
            break;
        }
        let flag = a.split('=').next().unwrap_or(a);
        if REPORT_FLAGS.contains(&flag) {
            if !a.contains('=') && flag != "--github" {
                it.next();
            }
            continue;
        }
        kept.push(a);
    }
    let commit = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "none".into());
    Stamp {
        partition: p.to_string(),
        commit,
        settings: fnv(kept.join("\u{0}").as_bytes()),
        input: fnv(input),
        mode: mode.into(),
    }
}

/// 16 hex digits of the project's one FNV-1a ([`crate::build::compile::fnv`]).
fn fnv(bytes: &[u8]) -> String {
    format!("{:016x}", crate::build::compile::fnv(&[bytes]))
}

/// This command line's words after `command` (`gate`, `grade`, `mutate`): what a shard's
/// settings are hashed from.
pub fn args_after(command: &str) -> Vec<String> {
    std::env::args()
        .skip_while(|a| a != command)
        .skip(1)
        .collect()
}

/// A grading batch's JSON (an array of grades) as a shard: `{"shard": STAMP, "places": [...],
/// "grades": [...]}`, `places` holding each grade's place (from 0) in the whole batch.
pub fn stamped_grades(batch_json: &str, s: &Stamp, places: &[usize]) -> String {
    let grades: serde_json::Value =
        serde_json::from_str(batch_json).expect("racegate's own JSON parses");
    let doc = serde_json::json!({ "shard": s, "places": places, "grades": grades });
    serde_json::to_string_pretty(&doc).expect("serializable") + "\n"
}

/// `json` (a gate's result) with its shard stamp.
pub fn stamped(json: &str, s: &Stamp) -> String {
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(mut v) => {
            v["shard"] = serde_json::to_value(s).expect("serializable");
            serde_json::to_string_pretty(&v).expect("serializable") + "\n"
        }
        Err(_) => json.to_string(),
    }
}

/// A finding as a gate's JSON holds it.
#[derive(Deserialize)]
struct ShardFinding {
    #[serde(flatten)]
    id: Identity,
    file: String,
    line: Option<u32>,
    message: String,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    detection: Option<Detection>,
}

/// One shard as read.
#[derive(Deserialize)]
struct Shard {
    shard: Option<Stamp>,
    verdict: String,
    baseline: String,
    findings: Vec<ShardFinding>,
    inconclusive: Vec<Inconclusive>,
    notes: Vec<String>,
    checked: Vec<Checked>,
    #[serde(default)]
    subjects: Vec<String>,
    seconds: f64,
}

/// The shards at `paths` as one run: (the run, whether a shard had no device, the baseline
/// they name, the mode), or why they do not make one (a usage error naming the files). Shards
/// that name different baselines are refused unless `baseline_given` (`merge --baseline`).
pub fn merged(paths: &[PathBuf], baseline_given: bool) -> Result<(GateRun, bool, String, String)> {
    let mut shards: Vec<(PathBuf, Shard, Stamp, Partition)> = Vec::new();
    for p in paths {
        let text = crate::source::files::read_text(p, "a shard", 256 << 20)?;
        let s: Shard = serde_json::from_str(&text).map_err(|e| {
            let what = format!(
                "{}: not a gate's JSON (a shard is `racegate gate --partition K/N --json FILE`)",
                p.display()
            );
            Error::input(what, e)
        })?;
        let Some(stamp) = s.shard.clone() else {
            return Err(Error::Usage(format!(
                "{}: a gate's JSON without a shard stamp (run gate with --partition K/N)",
                p.display()
            )));
        };
        let part = Partition::parse(&stamp.partition)?;
        shards.push((p.clone(), s, stamp, part));
    }
    let stamps: Vec<(PathBuf, Stamp, Partition)> = shards
        .iter()
        .map(|(p, _, st, part)| (p.clone(), st.clone(), *part))
        .collect();
    one_split(&stamps)?;
    // Notes and checks in the shards' order, whatever order the command line gave them in.
    shards.sort_by_key(|(_, _, _, part)| part.k);
    if !baseline_given {
        let (first_path, first) = (&shards[0].0, &shards[0].1.baseline);
        if let Some((p, s, _, _)) = shards.iter().find(|(_, s, _, _)| &s.baseline != first) {
            return Err(Error::Usage(format!(
                "{} and {} were judged against different baselines ({first} and {}): name the \
                 one to judge the merged run against with --baseline FILE",
                first_path.display(),
                p.display(),
                s.baseline
            )));
        }
    }
    let first = &shards[0].2;
    let (baseline, mode) = (shards[0].1.baseline.clone(), first.mode.clone());
    let mut run = GateRun::default();
    let mut no_device = false;
    for (_, s, _, _) in shards {
        no_device |= s.verdict == "no_device";
        for f in s.findings {
            let mut g = GateFinding::new(f.id, &f.file, f.line, f.message);
            g.detail = f.detail;
            g.detection = f.detection;
            run.findings.push(g);
        }
        run.inconclusive.extend(s.inconclusive);
        run.checked.extend(s.checked);
        run.notes.extend(s.notes);
        run.subjects.extend(s.subjects);
        // The shards ran at once: the run took as long as the longest.
        run.seconds = run.seconds.max(s.seconds);
    }
    run.findings.sort();
    run.inconclusive.sort();
    run.subjects.sort();
    run.subjects.dedup();
    Ok((run, no_device, baseline, mode))
}

/// Whether `stamps` (each shard's file, stamp and partition) make one split of one run: the
/// same commit, settings, input, mode and N; each K once and none missing. A usage error naming
/// the files otherwise.
fn one_split(stamps: &[(PathBuf, Stamp, Partition)]) -> Result<()> {
    let (first_path, first, first_part) = &stamps[0];
    for (p, st, part) in &stamps[1..] {
        for (what, a, b) in [
            ("commit", &first.commit, &st.commit),
            ("settings", &first.settings, &st.settings),
            ("manifest or program", &first.input, &st.input),
            ("mode", &first.mode, &st.mode),
        ] {
            if a != b {
                return Err(Error::Usage(format!(
                    "{} and {} are shards of different runs: their {what} differ ({a} and {b})",
                    first_path.display(),
                    p.display()
                )));
            }
        }
        if part.n != first_part.n {
            return Err(Error::Usage(format!(
                "{} is shard {part} and {} shard {first_part}: not one split",
                p.display(),
                first_path.display()
            )));
        }
    }
    let mut by_k: BTreeMap<u32, &PathBuf> = BTreeMap::new();
    for (p, _, part) in stamps {
        if let Some(other) = by_k.insert(part.k, p) {
            return Err(Error::Usage(format!(
                "shard {part} given twice: {} and {}",
                other.display(),
                p.display()
            )));
        }
    }
    let missing: Vec<String> = (1..=first_part.n)
        .filter(|k| !by_k.contains_key(k))
        .map(|k| format!("{k}/{}", first_part.n))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "shard(s) {} missing: the merge would not be the whole run",
            missing.join(", ")
        )));
    }
    Ok(())
}

pub fn run(global: &Global, a: MergeArgs) -> Result<u8> {
    let outputs = [
        ("--csv", a.csv.as_deref()),
        ("--table", a.table.as_deref()),
        ("--json", a.json.as_deref()),
        ("--sarif", a.sarif.as_deref()),
        ("--junit", a.junit.as_deref()),
        ("--summary", a.summary.as_deref()),
        ("--codequality", a.codequality.as_deref()),
    ];
    let inputs: Vec<&Path> = a.shards.iter().map(PathBuf::as_path).collect();
    settings::check_outputs(&outputs, &inputs)?;
    a.html.check(&outputs)?;
    let first = read_json(&a.shards[0])?;
    if check::is_check(&first) {
        return check::run(global, &a);
    }
    if mutate::is_mutate(&first) {
        return mutate::run(global, &a);
    }
    if is_grading(&a.shards[0])? {
        return run_grading(&a);
    }
    refuse_others(
        &a,
        &[
            "--sarif",
            "--junit",
            "--summary",
            "--codequality",
            "--baseline",
        ],
        "a gate's report; a gate's shards merge into --json, --sarif, --junit, --summary and \
         --codequality",
    )?;
    let (run, no_device, named, mode) = merged(&a.shards, a.baseline.is_some())?;
    let baseline = a.baseline.clone().unwrap_or_else(|| PathBuf::from(&named));
    let base = Baseline::load(&baseline)?;
    let stale = mode == "manifest";
    let d = crate::gate::diff(&run, &base, stale);
    let code = if no_device {
        exit::NO_DEVICE
    } else if !run.inconclusive.is_empty() {
        exit::INCONCLUSIVE
    } else if !d.new.is_empty() {
        exit::FOUND
    } else {
        exit::OK
    };
    let shown = baseline.display().to_string();
    print!("{}", report::text::gate(&run, &d, &baseline));
    if let Some(p) = &a.sarif {
        let sarif = report::sarif::gate(&run, &d, env!("CARGO_PKG_VERSION"), &shown);
        settings::write_file(p, &sarif)?;
    }
    if let Some(p) = &a.codequality {
        settings::write_file(p, &report::codequality::gate(&d))?;
    }
    if let Some(p) = &a.junit {
        settings::write_file(p, &report::junit::gate(&run, &d))?;
    }
    if let Some(p) = &a.summary {
        settings::write_file(p, &report::markdown::gate_summary(&run, &d))?;
    }
    if let Some(p) = &a.json {
        settings::write_file(p, &report::json::gate(&run, &d, &shown, code))?;
    }
    Ok(code)
}

mod check;
mod mutate;

pub use check::{catalog_input, stamped as stamped_check};
pub use mutate::{stamped as stamped_mutate, Place};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_matrix;
