//! One run of a target under the injected tool: how it ended, its standard output and the
//! tool's report, for the detectors' run (`run.rs`) and sharedcheck's confirm runs alike.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use crate::errors::Result;
use crate::judge::sanitize::tool::{read_capture, Capture};
use crate::proc::watchdog;

/// The most of globalcheck's report racegate reads (a real one is kilobytes: a line per module
/// and launch, findings deduplicated into a fixed table).
const REPORT_LIMIT: u64 = 64 << 20;

/// One run of `program args` under the injected tool, which `env` names with its folder `dir`,
/// within `timeout`: how it ended, its standard output (bounded) and the tool's report. The
/// target can write into the tool's folder too: the report is read only as a regular file, up
/// to [`REPORT_LIMIT`].
pub fn run_once(
    program: &OsString,
    args: &[OsString],
    env: &[(String, String)],
    dir: &Path,
    timeout: Duration,
) -> Result<(watchdog::Finished, watchdog::Output, Capture)> {
    let (done, out) = watchdog::collect(
        Path::new(program),
        args,
        &watchdog::Spawn::with_env(env),
        watchdog::Deadline::within(timeout),
        watchdog::Output::bounded(),
    )?;
    let report = read_capture(&dir.join("report.jsonl"), REPORT_LIMIT);
    Ok((done, out, report))
}
