//! `racegate merge` of `mutate --partition K/N --json` shards: the mutation report one run writes.
//! Part of `cli/`: may import every stage and product, as the rest of `cli/`.
//!
//! A mutate shard's JSON is the report (or, without a device, the mutants as listed) with its
//! stamp ([`super::stamp`]) and the places of what it ran in the whole run ([`stamped`]): each
//! kernel's place among the run's kernels, each mutant's among its kernel's mutants. The merge
//! puts every mutant back at its place, scores each kernel and the run again over all of them,
//! and keeps one control per kernel (each shard that had mutants of a kernel ran its control:
//! a flagged one wins, then an inconclusive one). An equivalent is stale only when no shard had
//! its mutant. The text summary, `--table`, `--json` and `--html` are then the ones `racegate
//! mutate` writes, less timings, with its exit code.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{one_split, MergeArgs, Stamp};
use crate::cli::settings::{self, Global};
use crate::errors::exit;
use crate::mutate::score::{Control, KernelResult};
use crate::mutate::{MutantResult, MutationReport, OperatorScore};
use crate::source::partition::Partition;
use crate::{report, Error, Result};

/// Where a shard's kernel and its mutants stand in the whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// The kernel's place among the run's kernels, from 0.
    pub kernel: usize,
    /// Each of its mutants' place among the kernel's mutants, from 0.
    pub mutants: Vec<usize>,
}

/// `json` (what `mutate --json` writes) as a shard: with the stamp and the places of its
/// kernels and mutants (one [`Place`] per kernel of the report, in its order).
pub fn stamped(json: &str, s: &Stamp, places: &[Place]) -> Result<String> {
    let mut v: Value = serde_json::from_str(json)
        .map_err(|e| Error::input("the result is not JSON (racegate's bug)", e))?;
    v["shard"] = serde_json::json!(s);
    v["places"] = serde_json::json!(places);
    Ok(settings::json(&v) + "\n")
}

/// Whether a shard's JSON is mutate's (its stamp's mode `mutate`).
pub fn is_mutate(doc: &Value) -> bool {
    doc["shard"]["mode"] == "mutate"
}

/// One mutate shard as read.
pub(super) struct Shard {
    path: PathBuf,
    doc: Value,
    report: MutationReport,
    places: Vec<Place>,
}

/// Whether a shard's JSON is the not-run result of a machine without a device.
fn no_device(doc: &Value) -> bool {
    doc["verdict"] == "no_device"
}

/// The shards at `paths`, in the order of K, once they make one split of one mutate run (a
/// usage error naming the files otherwise).
pub(super) fn read(paths: &[PathBuf]) -> Result<Vec<Shard>> {
    let mut stamps = Vec::new();
    let mut shards = Vec::new();
    for p in paths {
        let doc = super::read_json(p)?;
        let bad = |e| Error::input(format!("{}: not a mutate shard's JSON", p.display()), e);
        let stamp: Stamp = serde_json::from_value(doc["shard"].clone()).map_err(bad)?;
        if stamp.mode != "mutate" {
            return Err(Error::Usage(format!(
                "{}: a {} shard among mutate shards",
                p.display(),
                stamp.mode
            )));
        }
        let places: Vec<Place> = serde_json::from_value(doc["places"].clone()).map_err(bad)?;
        let report: MutationReport = serde_json::from_value(doc.clone()).map_err(bad)?;
        let fits = places.len() == report.kernels.len()
            && (places.iter().zip(&report.kernels))
                .all(|(pl, k)| pl.mutants.len() == k.mutants.len());
        if !fits {
            return Err(Error::Usage(format!(
                "{}: its places do not match its kernels and mutants",
                p.display()
            )));
        }
        let part = Partition::parse(&stamp.partition)?;
        stamps.push((p.clone(), stamp, part));
        let path = p.clone();
        shards.push((
            part.k,
            Shard {
                path,
                doc,
                report,
                places,
            },
        ));
    }
    one_split(&stamps)?;
    shards.sort_by_key(|(k, _)| *k);
    let shards: Vec<Shard> = shards.into_iter().map(|(_, s)| s).collect();
    let without: Vec<&Shard> = shards.iter().filter(|s| no_device(&s.doc)).collect();
    if let (Some(a), Some(b)) = (without.first(), shards.iter().find(|s| !no_device(&s.doc))) {
        return Err(Error::Usage(format!(
            "{} ran without a CUDA device and {} with one: not one run (run {} again on a \
             machine with a device)",
            a.path.display(),
            b.path.display(),
            a.path.display()
        )));
    }
    Ok(shards)
}

/// The control of a kernel that several shards ran: a flagged one, else an inconclusive one,
/// else the first shard's.
fn one_control(controls: Vec<Control>) -> Option<Control> {
    let flagged = controls.iter().position(|c| c.flagged_by.is_some());
    let unsure = controls.iter().position(|c| c.inconclusive);
    let at = flagged.or(unsure).unwrap_or(0);
    controls.into_iter().nth(at)
}

/// A kernel as the shards that had its mutants give it, whole again.
struct Parts {
    first: KernelResult,
    mutants: Vec<(usize, MutantResult)>,
    controls: Vec<Control>,
    /// The stale equivalents each shard found (relative to its own mutants).
    stale: Vec<Vec<String>>,
    wall: f64,
}

/// The shards' reports as the one report, or why they are not one run's.
pub(super) fn report(shards: Vec<Shard>) -> Result<MutationReport> {
    let names: Vec<String> = shards
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    let not_one =
        |why: &str| Error::Usage(format!("{}: not one run's shards: {why}", names.join(", ")));
    let (ran, operators) = (shards[0].report.ran, shards[0].report.operators.clone());
    let mut wall: f64 = 0.0;
    let mut kernels: BTreeMap<usize, Parts> = BTreeMap::new();
    for s in shards {
        wall = wall.max(s.report.wall_seconds);
        for (k, place) in s.report.kernels.into_iter().zip(s.places) {
            let mut k = k;
            let mutants: Vec<MutantResult> = std::mem::take(&mut k.mutants);
            let parts = kernels.entry(place.kernel).or_insert_with(|| Parts {
                first: k.clone(),
                mutants: Vec::new(),
                controls: Vec::new(),
                stale: Vec::new(),
                wall: 0.0,
            });
            if parts.first.kernel != k.kernel || parts.first.file != k.file {
                return Err(not_one("two kernels at one place"));
            }
            parts.mutants.extend(place.mutants.into_iter().zip(mutants));
            parts.controls.extend(k.control);
            parts.stale.push(k.stale_equivalents);
            parts.wall = parts.wall.max(k.wall_seconds);
        }
    }
    // Each kernel's place once, from 0: every kernel of the run came back.
    if kernels.keys().enumerate().any(|(i, k)| i != *k) {
        return Err(not_one("a kernel of the run is in none of them"));
    }
    let mut out = Vec::new();
    for (_, p) in kernels {
        let mut mutants = p.mutants;
        mutants.sort_by_key(|(j, _)| *j);
        if mutants.iter().enumerate().any(|(i, (j, _))| i != *j) {
            return Err(not_one("the mutants of a kernel are not each there once"));
        }
        let mutants: Vec<MutantResult> = mutants.into_iter().map(|(_, m)| m).collect();
        let first = p.first;
        // Stale in every shard that had the kernel: no shard had its mutant.
        let stale: Vec<String> = (p.stale.first().cloned().unwrap_or_default().into_iter())
            .filter(|e| p.stale.iter().all(|s| s.contains(e)))
            .collect();
        out.push(KernelResult {
            score: OperatorScore::of(&first.kernel, mutants.iter()),
            kernel: first.kernel,
            file: first.file,
            cases: first.cases,
            control: one_control(p.controls),
            mutants,
            wall_seconds: p.wall,
            stale_equivalents: stale,
            unreachable: first.unreachable,
        });
    }
    Ok(MutationReport::new(ran, operators, out, wall))
}

/// `racegate merge` of mutate shards: the reports one `racegate mutate` writes, and its exit
/// code.
pub fn run(global: &Global, a: &MergeArgs) -> Result<u8> {
    super::refuse_others(
        a,
        &["--table", "--html"],
        "mutate's report; mutate's shards merge into --table, --json and --html",
    )?;
    let shards = read(&a.shards)?;
    // The HTML report shows the kernels' source: it reads them from the project's root.
    let root = match a.html.html {
        Some(_) => crate::cli::list::catalog(global)?.root,
        None => PathBuf::new(),
    };
    if no_device(&shards[0].doc) {
        let reason = shards[0].doc["reason"]
            .as_str()
            .unwrap_or("no CUDA device")
            .to_string();
        let r = report(shards)?;
        crate::cli::output::print(&format!(
            "{reason}: {} mutant(s) of {} kernel(s) listed, none run\n",
            r.total.mutants,
            r.kernels.len()
        ))?;
        let mut doc = serde_json::to_value(&r)
            .map_err(|e| Error::input("the report is not JSON (racegate's bug)", e))?;
        doc["verdict"] = "no_device".into();
        doc["exit_code"] = exit::NO_DEVICE.into();
        doc["reason"] = reason.clone().into();
        if let Some(p) = &a.table {
            let text = format!(
                "{reason}: nothing was run; the mutants as listed:\n\n{}",
                report::mutate::markdown(&r)
            );
            settings::write_unmeasured(p, &text)?;
        }
        if let Some(p) = &a.json {
            settings::write_file(p, &(settings::json(&doc) + "\n"))?;
        }
        a.html.write_value(&doc, &root)?;
        return Ok(exit::NO_DEVICE);
    }
    let r = report(shards)?;
    let text = match r.ran {
        true => report::mutate::summary(&r),
        false => report::mutate::listing(&r),
    };
    crate::cli::output::print(&text)?;
    if let (Some(p), true) = (&a.table, r.ran) {
        settings::write_file(p, &report::mutate::markdown(&r))?;
    }
    if let Some(p) = &a.json {
        settings::write_file(p, &(settings::json(&r) + "\n"))?;
    }
    a.html.write_value(&r, &root)?;
    Ok(r.exit_code())
}
