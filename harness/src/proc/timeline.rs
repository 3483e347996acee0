//! An optional record of when each job and each child process of a run started and ended, for
//! finding where a run's wall time goes (which jobs overlap, which wait, what the tail is).
//! Off unless `RACEGATE_TIMELINE=FILE` is set; then the command writes FILE when it ends: a
//! first line with the wall-clock time it started, then one line per span: start and end in
//! seconds since the command started, the thread, what it was (`job`, `process`, `alone`, or
//! a `batch` note) and a label (tab-separated, the label last; tabs and newlines in it become
//! spaces).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The variable that turns the record on and names its file.
pub const ENV: &str = "RACEGATE_TIMELINE";

struct Record {
    epoch: Instant,
    /// The same moment as a wall-clock time, for lining the record up with other logs.
    wall: std::time::SystemTime,
    file: PathBuf,
    spans: Mutex<Vec<String>>,
}

static R: OnceLock<Option<Record>> = OnceLock::new();

fn record() -> Option<&'static Record> {
    R.get().and_then(Option::as_ref)
}

/// Starts the clock when `ENV` is set and `on` (a command, not one of racegate's own worker
/// children, which inherit the variable and must not write over their parent's file). Nothing
/// is recorded without this call.
pub fn start(on: bool) {
    R.get_or_init(|| {
        let file = std::env::var_os(ENV).filter(|v| on && !v.is_empty())?;
        Some(Record {
            epoch: Instant::now(),
            wall: std::time::SystemTime::now(),
            file: PathBuf::from(file),
            spans: Mutex::new(Vec::new()),
        })
    });
}

/// A span in progress: recorded when dropped.
pub struct Span {
    kind: &'static str,
    label: String,
    begun: Instant,
}

/// Opens a span of `kind` labelled by `label()` (called only when the record is on).
pub fn span(kind: &'static str, label: impl FnOnce() -> String) -> Option<Span> {
    record()?;
    Some(Span {
        kind,
        label: label().replace(['\t', '\n', '\r'], " "),
        begun: Instant::now(),
    })
}

/// Records an instant of `kind` labelled by `label()`: why something happened (a batch that
/// settled nothing, say), at the time it happened. Nothing when the record is off.
pub fn note(kind: &'static str, label: impl FnOnce() -> String) {
    drop(span(kind, label));
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some(r) = record() else { return };
        let at = |t: Instant| t.saturating_duration_since(r.epoch).as_secs_f64();
        let line = format!(
            "{:.3}\t{:.3}\t{:?}\t{}\t{}",
            at(self.begun),
            at(Instant::now()),
            std::thread::current().id(),
            self.kind,
            self.label
        );
        r.spans.lock().unwrap_or_else(|p| p.into_inner()).push(line);
    }
}

/// Writes the record to its file (when on), sorted by start; a failure is a warning, never the
/// command's.
pub fn finish() {
    let Some(r) = record() else { return };
    let mut lines = r.spans.lock().unwrap_or_else(|p| p.into_inner()).clone();
    lines.sort_by(|a, b| {
        let key = |l: &str| {
            l.split('\t')
                .next()
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        key(a).total_cmp(&key(b))
    });
    let unix = r
        .wall
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let text = format!(
        "# started at unix time {unix:.3}\nstart\tend\tthread\tkind\tlabel\n{}\n",
        lines.join("\n")
    );
    if let Err(e) = std::fs::write(&r.file, text) {
        eprintln!("warning: {ENV}: writing {}: {e}", r.file.display());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn off_without_the_variable_and_the_label_is_never_made() {
        // Never started in the test binary.
        let made = std::cell::Cell::new(false);
        assert!(super::span("job", || {
            made.set(true);
            String::new()
        })
        .is_none());
        assert!(!made.get());
    }
}
