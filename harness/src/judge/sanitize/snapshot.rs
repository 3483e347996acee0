//! Snapshots of normalized findings, one per (case, tool), under `snapshots/`: their names, their
//! text and the command that blesses new output. The comparison itself (through insta) lives in
//! the test target, so insta is a dev-dependency only.

use std::path::{Path, PathBuf};

use super::normalize::{self, Finding};
use super::tool::Tool;

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
