//! `racegate merge` of `check --partition K/N --json` shards: the detection matrix one run writes.
//! Part of `cli/`: may import every stage and product, as the rest of `cli/`.
//!
//! A check shard's JSON is the matrix (or, without a device, the not-run result) with its stamp
//! ([`super::stamp`]), the names of the cases it ran and its exit code ([`stamped`]). The merge
//! reads the catalog where it runs (the same `--root` or `--manifest` as the shards), refuses
//! shards of another catalog, and writes the cells in the order one run gives them: the
//! catalog's order of cases, then the detectors'. The text summary, `--table`, `--junit`,
//! `--json` and `--html` are then the ones `racegate check` writes, less timings.

use std::path::PathBuf;

use serde_json::Value;

use super::{one_split, MergeArgs, Stamp};
use crate::cli::settings::{self, Global};
use crate::errors::exit;
use crate::judge::check::Matrix;
use crate::judge::perf::expect::Judged;
use crate::source::catalog::{Case, Catalog, Detector};
use crate::source::partition::Partition;
use crate::{report, Error, Result};

/// The bytes a check shard's stamp hashes as its input: the manifest's, or for the catalog
/// each case's name and file, in catalog order; then the bytes of every case's file, so that
/// shards run on different kernel sources (an edit not yet committed included) do not merge.
pub fn catalog_input(catalog: &Catalog) -> Result<Vec<u8>> {
    let mut out = match &catalog.manifest {
        Some(m) => std::fs::read(&m.path).map_err(|e| Error::io("reading", m.path.clone(), e))?,
        None => Vec::new(),
    };
    let mut files: Vec<&str> = Vec::new();
    for c in &catalog.cases {
        if catalog.manifest.is_none() {
            out.extend_from_slice(c.name.as_bytes());
            out.push(0);
            out.extend_from_slice(c.path.as_bytes());
            out.push(b'\n');
        }
        if !files.contains(&c.path.as_str()) {
            files.push(&c.path);
        }
    }
    for f in files {
        let p = catalog.root.join(f);
        out.extend_from_slice(&std::fs::read(&p).map_err(|e| Error::io("reading", p.clone(), e))?);
        out.push(0);
    }
    Ok(out)
}

/// `json` (what `check --json` writes) as a shard: with the stamp, the cases the shard ran and
/// its exit code.
pub fn stamped(json: &str, s: &Stamp, cases: &[&Case], code: u8) -> Result<String> {
    let mut v: Value = serde_json::from_str(json)
        .map_err(|e| Error::input("the result is not JSON (racegate's bug)", e))?;
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    v["shard"] = serde_json::json!(s);
    v["cases"] = serde_json::json!(names);
    v["exit_code"] = code.into();
    Ok(settings::json(&v) + "\n")
}

/// One check shard as read.
pub(super) struct Shard {
    path: PathBuf,
    doc: Value,
    cases: Vec<String>,
    code: u8,
}

/// Whether a shard's JSON is the not-run result of a machine without a device.
fn no_device(doc: &Value) -> bool {
    doc["verdict"] == "no_device"
}

/// The shards at `paths`, in the order of K, once they make one split of one check run on
/// `catalog` (a usage error naming the files otherwise).
pub(super) fn read(paths: &[PathBuf], catalog: &Catalog) -> Result<Vec<Shard>> {
    let mut stamps = Vec::new();
    let mut shards = Vec::new();
    for p in paths {
        let doc = super::read_json(p)?;
        let stamp: Stamp = serde_json::from_value(doc["shard"].clone()).map_err(|e| {
            let what = format!("{}: a check's JSON without a shard stamp", p.display());
            Error::input(what, e)
        })?;
        if stamp.mode != "check" {
            return Err(Error::Usage(format!(
                "{}: a {} shard among check shards",
                p.display(),
                stamp.mode
            )));
        }
        let cases: Vec<String> = serde_json::from_value(doc["cases"].clone())
            .map_err(|e| Error::input(format!("{}: no list of cases", p.display()), e))?;
        let code = doc["exit_code"]
            .as_u64()
            .and_then(|c| u8::try_from(c).ok())
            .ok_or_else(|| Error::Usage(format!("{}: no exit code", p.display())))?;
        let part = Partition::parse(&stamp.partition)?;
        stamps.push((p.clone(), stamp, part));
        shards.push((
            part.k,
            Shard {
                path: p.clone(),
                doc,
                cases,
                code,
            },
        ));
    }
    one_split(&stamps)?;
    let here = super::fnv(&catalog_input(catalog)?);
    if let Some((p, st, _)) = stamps.iter().find(|(_, st, _)| st.input != here) {
        return Err(Error::Usage(format!(
            "{} ran on another catalog or manifest than the one here (input {} here, {}): \
             merge where the shards ran, with the same --root or --manifest",
            p.display(),
            here,
            st.input
        )));
    }
    shards.sort_by_key(|(k, _)| *k);
    let shards: Vec<Shard> = shards.into_iter().map(|(_, s)| s).collect();
    for s in &shards {
        if let Some(name) = s.cases.iter().find(|n| catalog.get(n).is_err()) {
            return Err(Error::Usage(format!(
                "{}: case {name} is not in the catalog here",
                s.path.display()
            )));
        }
    }
    let without = shards.iter().filter(|s| no_device(&s.doc)).count();
    if without > 0 && without < shards.len() {
        let (a, b) = (
            shards.iter().find(|s| no_device(&s.doc)),
            shards.iter().find(|s| !no_device(&s.doc)),
        );
        if let (Some(a), Some(b)) = (a, b) {
            return Err(Error::Usage(format!(
                "{} ran without a CUDA device and {} with one: not one run (run {} again on \
                 a machine with a device)",
                a.path.display(),
                b.path.display(),
                a.path.display()
            )));
        }
    }
    Ok(shards)
}

/// `catalog`'s order of the case named `name` (after every case when it has none).
fn place(catalog: &Catalog, name: &str) -> usize {
    catalog
        .cases
        .iter()
        .position(|c| c.name == name)
        .unwrap_or(usize::MAX)
}

/// The perf expectations of every shard, in the catalog's order of their cases (each shard's
/// own order kept within a case).
fn perf(catalog: &Catalog, lists: Vec<Vec<Judged>>) -> Vec<Judged> {
    let mut all: Vec<Judged> = lists.into_iter().flatten().collect();
    all.sort_by_key(|j| place(catalog, &j.case));
    all
}

/// The shards' matrices as the one matrix: cells in the order `check::run` gives them, the
/// process time per detector summed again, the wall time the longest shard's (they ran at
/// once).
pub(super) fn matrix(catalog: &Catalog, shards: &[Shard]) -> Result<Matrix> {
    let mut cells = Vec::new();
    let mut perfs = Vec::new();
    let mut wall: f64 = 0.0;
    for s in shards {
        let m: Matrix = serde_json::from_value(s.doc.clone()).map_err(|e| {
            let what = format!("{}: not a check's matrix", s.path.display());
            Error::input(what, e)
        })?;
        cells.extend(m.cells);
        perfs.push(m.perf);
        wall = wall.max(m.wall_seconds);
    }
    cells.sort_by_key(|c| (place(catalog, &c.case), c.detector));
    let seconds_per_detector = Detector::ALL
        .iter()
        .map(|d| {
            let s = cells.iter().filter(|c| c.detector == *d).map(|c| c.seconds);
            (*d, s.sum())
        })
        .collect();
    Ok(Matrix {
        cells,
        wall_seconds: wall,
        seconds_per_detector,
        perf: perf(catalog, perfs),
    })
}

/// The exit code of the one run from its shards': a mismatch anywhere (1) before an
/// inconclusive cell (3), as `racegate check` decides.
pub(super) fn code(shards: &[Shard]) -> u8 {
    let any = |c: u8| shards.iter().any(|s| s.code == c);
    if any(exit::FOUND) {
        exit::FOUND
    } else if any(exit::INCONCLUSIVE) {
        exit::INCONCLUSIVE
    } else {
        exit::OK
    }
}

/// `racegate merge` of check shards: the reports one `racegate check` writes, and its exit
/// code.
pub fn run(global: &Global, a: &MergeArgs) -> Result<u8> {
    super::refuse_others(
        a,
        &["--table", "--junit", "--html"],
        "a check's report; a check's shards merge into --table, --junit, --json and --html",
    )?;
    // The catalog the shards ran on, for the cells' order and the course table.
    let catalog = crate::cli::list::catalog(global).map_err(|e| match e {
        Error::Usage(m) => Error::Usage(format!(
            "a check's shards merge where they ran (the catalog orders the cells): {m}"
        )),
        e => e,
    })?;
    let shards = read(&a.shards, &catalog)?;
    if shards.iter().all(|s| no_device(&s.doc)) {
        return not_run(a, &catalog, &shards);
    }
    let m = matrix(&catalog, &shards)?;
    crate::cli::output::print(&report::text::check_summary(&m))?;
    if let Some(p) = &a.table {
        settings::write_file(p, &report::markdown::course_table(&m, &catalog))?;
    }
    if let Some(p) = &a.junit {
        settings::write_file(p, &report::junit::check(&m))?;
    }
    if let Some(p) = &a.json {
        settings::write_file(p, &(settings::json(&m) + "\n"))?;
    }
    a.html.write_value(&m, &catalog.root)?;
    Ok(code(&shards))
}

/// The merge of shards that all ran without a device: every case of every shard not run, as
/// `racegate check` without a device reports them (exit 4), in the same reports.
fn not_run(a: &MergeArgs, catalog: &Catalog, shards: &[Shard]) -> Result<u8> {
    let names: Vec<&str> = shards
        .iter()
        .flat_map(|s| s.cases.iter().map(String::as_str))
        .collect();
    let selected: Vec<&Case> = catalog
        .cases
        .iter()
        .filter(|c| names.contains(&c.name.as_str()))
        .collect();
    let first = &shards[0].doc;
    let reason = first["reason"]
        .as_str()
        .unwrap_or("no CUDA device")
        .to_string();
    // A shard whose compile failed says so; the merged run did too.
    let done: Vec<String> = shards
        .iter()
        .map(|s| &s.doc["host_checks"])
        .find(|h| *h != &first["host_checks"])
        .unwrap_or(&first["host_checks"])
        .as_array()
        .map(|h| {
            h.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let done: Vec<&str> = done.iter().map(String::as_str).collect();
    let mut more = serde_json::Map::new();
    if first.get("perf").is_some() {
        let mut lists = Vec::new();
        for s in shards {
            let list: Vec<Judged> = serde_json::from_value(s.doc["perf"].clone()).map_err(|e| {
                Error::input(format!("{}: not a check's perf list", s.path.display()), e)
            })?;
            lists.push(list);
        }
        let all = perf(catalog, lists);
        crate::cli::output::print(&report::text::perf_expectations(&all))?;
        more.insert("perf".into(), serde_json::json!(all));
    }
    crate::cli::output::print(&format!(
        "{reason}: {} case(s) compiled, none run\n",
        selected.len()
    ))?;
    if let Some(p) = &a.table {
        let table = report::markdown::course_table_not_run(&selected, &reason);
        settings::write_file(p, &table)?;
    }
    let subject = format!("{} case(s)", selected.len());
    let json = report::json::not_run_with("check", &subject, &reason, &done, exit::NO_DEVICE, more);
    if let Some(p) = &a.junit {
        let cells: Vec<(String, String)> = selected
            .iter()
            .flat_map(|c| {
                Detector::ALL
                    .iter()
                    .map(|d| (c.name.clone(), d.name().to_string()))
            })
            .collect();
        settings::write_file(
            p,
            &report::junit::not_run("racegate-check", &cells, &reason),
        )?;
    }
    if let Some(p) = &a.json {
        settings::write_file(p, &json)?;
    }
    // No HTML report: `check` without a device writes none either.
    Ok(exit::NO_DEVICE)
}

/// Whether a shard's JSON is a check's (its stamp's mode `check`).
pub fn is_check(doc: &Value) -> bool {
    doc["shard"]["mode"] == "check"
}
