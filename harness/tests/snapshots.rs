//! `snapshot::<case>::<tool>`: H200 sanitizer XML fixture -> findings -> normalized text -> the
//! snapshot under `snapshots/`, for every (case, tool), with no GPU. A hang has no XML: its
//! fixture is a `.hang` file written by the import. globalcheck's fixture is the tool's
//! `report.jsonl` as `racegate sanitize --save-xml` kept it, with nvdisasm's line table of each
//! module beside it (`<stem>.jsonl.module-K.lines.txt`); sharedcheck's is the same tool's report
//! of a `--tool sharedcheck` run, read for its shared-memory findings.

use libtest_mimic::Trial;
use racegate::judge::sanitize::{snapshot, Tool};
use racegate::source::catalog::Catalog;

use crate::util::{check_snapshot, fixture_dir};

pub fn trials(catalog: &Catalog) -> Vec<Trial> {
    let dir = fixture_dir(&catalog.root);
    let version = std::fs::read_to_string(dir.join("sanitizer-version.txt"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut out = Vec::new();
    for case in &catalog.cases {
        // fencecheck and streamcheck read no sanitizer XML: their own host tests judge them
        // (`tests/host/fencecheck.rs`, `tests/host/streamcheck.rs`).
        for tool in Tool::ALL
            .into_iter()
            .filter(|t| !matches!(t, Tool::Fencecheck | Tool::Streamcheck))
        {
            let root = catalog.root.clone();
            let stem = snapshot::name(&case.name, tool);
            let xml = dir.join(format!("{stem}.xml"));
            let hang = dir.join(format!("{stem}.hang"));
            let case_name = case.name.clone();
            let version = version.clone();
            let fixtures = dir.clone();
            out.push(
                Trial::test(format!("snapshot::{}::{}", case.name, tool), move || {
                    let body = if hang.is_file() {
                        "hang (compute-sanitizer and its target killed at the deadline)\n".to_string()
                    } else if tool.is_own() {
                        let findings = own_tool_findings(&fixtures, &stem, tool, &root)?;
                        return check_snapshot(&root, &stem, &snapshot::render(&case_name, tool, &version, &findings));
                    } else {
                        let text = std::fs::read_to_string(&xml).map_err(|e| {
                            format!("no fixture {} ({e}); capture it on a GPU with ci/h200_run.py and ci/import-fixtures", xml.display())
                        })?;
                        let records = racegate::judge::sanitize::xml::parse(&text).map_err(|e| format!("{}: {e}", xml.display()))?;
                        let findings = racegate::judge::sanitize::normalize::findings(&records, &root);
                        return check_snapshot(&root, &stem, &snapshot::render(&case_name, tool, &version, &findings));
                    };
                    check_snapshot(&root, &stem, &format!("case: {case_name}\ntool: {tool}\nsanitizer: {version}\n---\n{body}"))
                })
                .with_kind("host"),
            );
        }
    }
    out
}

/// globalcheck's (or sharedcheck's) report and line tables -> findings (errors and lane warnings
/// alike), as `racegate sanitize --tool globalcheck|sharedcheck` reads them after a run.
fn own_tool_findings(
    dir: &std::path::Path,
    stem: &str,
    tool: Tool,
    root: &std::path::Path,
) -> Result<Vec<racegate::judge::sanitize::normalize::Finding>, libtest_mimic::Failed> {
    use racegate::judge::sanitize::injected::{lines::LineTable, report, run::lines_path};
    let path = dir.join(format!("{stem}.jsonl"));
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "no fixture {} ({e}); capture it on a GPU with ci/h200_run.py --phases globalcheck",
            path.display()
        )
    })?;
    let rep = report::parse(&text);
    if !rep.started || !rep.errors.is_empty() || rep.launches.is_empty() {
        return Err(format!(
            "{}: not a complete globalcheck report: {:?}",
            path.display(),
            rep.errors
        )
        .into());
    }
    let mut tables = std::collections::BTreeMap::new();
    for m in rep.modules_with_findings() {
        let p = lines_path(&path, m);
        let t = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        tables.insert(m, LineTable::parse(&t));
    }
    Ok(if tool == Tool::Sharedcheck {
        racegate::judge::sanitize::injected::shared::report::shared_findings_where(
            &rep,
            &tables,
            root,
            |_, _| true,
        )
    } else {
        report::findings(&rep, &tables, root)
    })
}
