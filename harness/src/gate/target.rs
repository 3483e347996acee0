//! One program to gate ([`Target`]): the subject of its findings, its command, its working
//! folder and variables, and the deadline of its plain runs when one is given.

use std::ffi::OsString;
use std::path::PathBuf;

/// One program to gate: its name in reports, its command, and where and how it runs.
#[derive(Clone, Debug, Default)]
pub struct Target {
    /// The subject of its findings and baseline entries.
    pub subject: String,
    /// The program (as given: a bare name is looked up in `PATH`) and its arguments.
    pub argv: Vec<OsString>,
    /// Its working folder (default: ours).
    pub cwd: Option<PathBuf>,
    /// Variables set for it.
    pub env: Vec<(String, String)>,
    /// The deadline of one plain run (default: the gate's `--timeout`).
    pub timeout: Option<std::time::Duration>,
}
