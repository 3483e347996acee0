//! `racegate list` on a manifest: one row per kernel with the manifest's own columns (kernel,
//! file, entry, oracle, launches), not the catalog's (exercise, bug).

use std::fmt::Write;

use crate::source::catalog::Catalog;
use crate::source::manifest::Check;

/// The manifest's kernels as a table, then a count line naming the manifest.
pub fn manifest_table(catalog: &Catalog, manifest: &str) -> String {
    let mut rows = vec![["KERNEL", "FILE", "ENTRY", "ORACLE", "LAUNCHES"].map(String::from)];
    for c in &catalog.cases {
        let Some(k) = c.kernel_spec() else { continue };
        let oracle = match &k.check {
            Check::Reference { path, entry } => format!("reference {path}:{entry}"),
            Check::Determinism => "determinism".into(),
            Check::None => "none (sanitizers only)".into(),
        };
        let launches = match k.launches.len() {
            0 => k.entry.clone(),
            _ => k.launch_entries().join(" -> "),
        };
        rows.push([
            k.name.clone(),
            c.path.clone(),
            k.entry.clone(),
            oracle,
            format!("{} ({launches})", k.launches.len().max(1)),
        ]);
    }
    let widths: Vec<usize> = (0..4)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        for (i, w) in widths.iter().enumerate() {
            let _ = write!(out, "{:<w$}  ", r[i], w = *w);
        }
        let _ = writeln!(out, "{}", r[4]);
    }
    let _ = writeln!(
        out,
        "\n{} kernel(s) from {manifest}; `racegate gate` checks them all",
        rows.len() - 1
    );
    out
}
