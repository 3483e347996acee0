//! Snapshots of normalized findings, one per (case, tool), under `snapshots/`, through insta.
//! A mismatch shows expected, actual and a diff, and ends with the command that blesses the
//! new output.

use std::path::{Path, PathBuf};

use super::normalize::{self, Finding};
use super::runner::Tool;

/// The snapshot file name (without `.snap`) of a case and tool.
pub fn name(case: &str, tool: Tool) -> String {
    format!("{}__{}", case.replace("::", "__"), tool.name())
}

/// The text stored in a snapshot: a header naming the sanitizer version, then the findings.
pub fn render(case: &str, tool: Tool, sanitizer_version: &str, findings: &[Finding]) -> String {
    let body = if findings.is_empty() {
        "clean\n".to_string()
    } else {
        normalize::text(findings)
    };
    format!("case: {case}\ntool: {tool}\nsanitizer: {sanitizer_version}\n---\n{body}")
}

/// The folder that holds the snapshots.
pub fn dir(root: &Path) -> PathBuf {
    root.join("snapshots")
}

/// The command that accepts new output for one snapshot (or all, with `None`).
pub fn bless_command(case: Option<&str>) -> String {
    match case {
        Some(c) => format!("INSTA_UPDATE=always cargo test --test racegate-tests -- '{c}::' ; cargo insta review"),
        None => "INSTA_UPDATE=always cargo test --test racegate-tests -- snapshot:: ; git diff snapshots/".to_string(),
    }
}

/// Compares `text` with the stored snapshot through insta (panics with insta's report on a
/// mismatch, which libtest-mimic reports as the trial's failure).
pub fn assert_matches(root: &Path, snap_name: &str, text: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir(root));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_input_file(root.join("harness/src/sanitize/snapshot.rs"));
    settings.bind(|| {
        insta::assert_snapshot!(snap_name, text);
    });
}
