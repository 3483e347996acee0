//! `snapshot::<case>::<tool>`: H200 sanitizer XML fixture -> findings -> normalized text -> the
//! snapshot under `snapshots/`, for every (case, tool), with no GPU. A hang has no XML: its
//! fixture is a `.hang` file written by the import.

use libtest_mimic::Trial;
use racegate::catalog::Catalog;
use racegate::sanitize::{snapshot, Tool};

use crate::util::{check_snapshot, fixture_dir};

pub fn trials(catalog: &Catalog) -> Vec<Trial> {
    let dir = fixture_dir(&catalog.root);
    let version = std::fs::read_to_string(dir.join("sanitizer-version.txt"))
        .unwrap_or_default()
        .trim()
        .to_string();
    let mut out = Vec::new();
    for case in &catalog.cases {
        for tool in Tool::ALL {
            let root = catalog.root.clone();
            let stem = snapshot::name(&case.name, tool);
            let xml = dir.join(format!("{stem}.xml"));
            let hang = dir.join(format!("{stem}.hang"));
            let case_name = case.name.clone();
            let version = version.clone();
            out.push(
                Trial::test(format!("snapshot::{}::{}", case.name, tool), move || {
                    let body = if hang.is_file() {
                        "hang (compute-sanitizer and its target killed at the deadline)\n".to_string()
                    } else {
                        let text = std::fs::read_to_string(&xml).map_err(|e| {
                            format!("no fixture {} ({e}); capture it on a GPU with ci/h200_run.py and ci/import-fixtures", xml.display())
                        })?;
                        let records = racegate::sanitize::xml::parse(&text).map_err(|e| format!("{}: {e}", xml.display()))?;
                        let findings = racegate::sanitize::normalize::findings(&records, &root);
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
