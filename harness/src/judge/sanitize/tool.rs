//! What a sanitizer run is: the tools ([`Tool`]), how to run one ([`SanitizeConfig`]) and what
//! it concluded ([`Outcome`], [`SanitizerRun`]). Shared by the compute-sanitizer runner
//! and globalcheck.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::normalize::Finding;
use crate::source::catalog::Detector;

/// A compute-sanitizer tool.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Tool {
    /// Shared-memory data races.
    Racecheck,
    /// Misused synchronization: `__syncthreads` in divergent code, bad barriers.
    Synccheck,
    /// Out-of-bounds and misaligned accesses, leaks.
    Memcheck,
    /// Reads of uninitialized global memory.
    Initcheck,
    /// racegate's own race detector for global memory (not a compute-sanitizer tool: a
    /// Sanitizer API tool injected into the target, see `sanitize::injected`).
    Globalcheck,
    /// racegate's own detector for shared memory, in the same injected tool as globalcheck:
    /// reads of shared bytes no thread of the block wrote, and atomics racing plain accesses
    /// to one shared word.
    Sharedcheck,
    /// racegate's own check of the fences in handoffs between blocks, in the same injected
    /// tool: each handoff globalcheck's rule orders, checked on the SASS for a GPU-scope fence
    /// between the store and its releasing atomic; a handoff whose data is stored and read with
    /// accesses atomic between blocks needs none. On by default.
    Fencecheck,
    /// racegate's own check of the order between streams, copies and the host, in the same
    /// injected tool: a happens-before model of the CUDA calls the program makes (events,
    /// synchronizations, default-stream rules). On by default for programs; kernels launched by
    /// racegate itself have no streams of their own to judge ([`Tool::KERNELS`]).
    Streamcheck,
}

impl Tool {
    /// All eight, in the order racegate runs them: what a program's gate runs by default
    /// (`gate -- PROGRAM`, `gate --ctest`).
    pub const ALL: [Tool; 8] = [
        Tool::Racecheck,
        Tool::Synccheck,
        Tool::Memcheck,
        Tool::Initcheck,
        Tool::Globalcheck,
        Tool::Sharedcheck,
        Tool::Fencecheck,
        Tool::Streamcheck,
    ];

    /// What a kernel's gate runs by default (a manifest's kernels, `mutate`, the detection
    /// matrix, a crate's `cargo test` trials): every tool but streamcheck, which judges a
    /// program's own streams, copies and host accesses: racegate's launches of one kernel free
    /// their memory in stream order, which it does not model, so every such run would be
    /// inconclusive (H200 run 22).
    pub const KERNELS: [Tool; 7] = [
        Tool::Racecheck,
        Tool::Synccheck,
        Tool::Memcheck,
        Tool::Initcheck,
        Tool::Globalcheck,
        Tool::Sharedcheck,
        Tool::Fencecheck,
    ];

    /// Whether the tool is racegate's own injected one (globalcheck, sharedcheck, fencecheck,
    /// streamcheck),
    /// which needs no compute-sanitizer.
    pub fn is_own(self) -> bool {
        matches!(
            self,
            Tool::Globalcheck | Tool::Sharedcheck | Tool::Fencecheck | Tool::Streamcheck
        )
    }

    /// The tool's name as compute-sanitizer's `--tool` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Racecheck => "racecheck",
            Tool::Synccheck => "synccheck",
            Tool::Memcheck => "memcheck",
            Tool::Initcheck => "initcheck",
            Tool::Globalcheck => "globalcheck",
            Tool::Sharedcheck => "sharedcheck",
            Tool::Fencecheck => "fencecheck",
            Tool::Streamcheck => "streamcheck",
        }
    }

    /// What the tool finds, in a few words: the one description `--help` and the README's
    /// tables read.
    pub fn describe(self) -> &'static str {
        match self {
            Tool::Racecheck => "shared-memory data races (compute-sanitizer)",
            Tool::Synccheck => "misused barriers and warp synchronization (compute-sanitizer)",
            Tool::Memcheck => "out-of-bounds and misaligned accesses, leaks (compute-sanitizer)",
            Tool::Initcheck => "reads of uninitialized global memory (compute-sanitizer)",
            Tool::Globalcheck => "races on global memory between blocks and threads (racegate)",
            Tool::Sharedcheck => {
                "reads of unwritten shared memory, atomics racing plain accesses (racegate)"
            }
            Tool::Fencecheck => "a missing fence in a handoff between blocks (racegate)",
            Tool::Streamcheck => "races between streams, copies and the host (racegate; programs)",
        }
    }

    /// The tool named `s` (`racecheck`, ...), if any.
    pub fn from_name(s: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == s)
    }
}

/// The one table between tools and the detection matrix: each tool is the detector of its name.
impl From<Tool> for Detector {
    fn from(t: Tool) -> Detector {
        match t {
            Tool::Racecheck => Detector::Racecheck,
            Tool::Synccheck => Detector::Synccheck,
            Tool::Memcheck => Detector::Memcheck,
            Tool::Initcheck => Detector::Initcheck,
            Tool::Globalcheck => Detector::Globalcheck,
            Tool::Sharedcheck => Detector::Sharedcheck,
            Tool::Fencecheck => Detector::Fencecheck,
            Tool::Streamcheck => Detector::Streamcheck,
        }
    }
}

/// The tool behind a detector; the detectors that are no sanitizer come back as the error.
impl TryFrom<Detector> for Tool {
    type Error = Detector;

    fn try_from(d: Detector) -> std::result::Result<Tool, Detector> {
        Tool::ALL
            .into_iter()
            .find(|t| Detector::from(*t) == d)
            .ok_or(d)
    }
}

impl std::fmt::Display for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How to run.
#[derive(Clone, Debug)]
pub struct SanitizeConfig {
    pub tool: Tool,
    /// The compute-sanitizer executable; `None` means not installed.
    pub sanitizer: Option<PathBuf>,
    pub timeout: Duration,
    pub arch: String,
    /// Where to keep the raw XML (a temporary file otherwise).
    pub keep_xml: Option<PathBuf>,
    /// Seed for the sanitizer problem's inputs.
    pub seed: u64,
    /// More compute-sanitizer options, passed before the target (e.g. racecheck's detect level
    /// or a kernel filter); none by default.
    pub extra_args: Vec<String>,
    /// The problem size of a case's run; `None` (the default) is the family's sanitizer
    /// geometry. Cost measurements use one large launch (`sanitize --size`).
    pub size: Option<crate::source::exercises::SizeChoice>,
    /// How the target's standard output is compared between runs (sharedcheck's confirm runs);
    /// `None`: byte for byte. The gate gives a program's its masks.
    pub output_view: Option<OutputView>,
    /// Whether sharedcheck's confirm runs may spare reads of unwritten shared memory whose value
    /// does not reach the output (off for grading, whose worker writes its results to a file the
    /// grade reads after the run: the confirm runs would overwrite it).
    pub confirm: bool,
    /// racegate's own tools' launch sampling (`RACEGATE_GC_SAMPLE`): each kernel's first this
    /// many launches, then those numbered by a power of two; `None` (the default): every launch.
    pub sample_first: Option<u64>,
}

/// What an [`OutputView`] does: the bytes to compare, from the target's standard output.
pub type ViewFn = dyn Fn(&[u8]) -> Vec<u8> + Send + Sync;

/// A view of a target's standard output for comparing runs (e.g. the gate's masks applied).
#[derive(Clone)]
pub struct OutputView(pub std::sync::Arc<ViewFn>);

impl std::fmt::Debug for OutputView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputView")
    }
}

impl SanitizeConfig {
    /// One run of `tool`, inputs from [`SANITIZE_SEED`], the raw XML in a temporary file.
    pub fn new(tool: Tool, sanitizer: Option<PathBuf>, timeout: Duration, arch: &str) -> Self {
        SanitizeConfig {
            tool,
            sanitizer,
            timeout,
            arch: arch.to_string(),
            keep_xml: None,
            seed: SANITIZE_SEED,
            extra_args: Vec::new(),
            size: None,
            output_view: None,
            confirm: true,
            sample_first: None,
        }
    }
}

/// The seed of a sanitizer run's inputs unless a command says otherwise.
pub const SANITIZE_SEED: u64 = 1;

/// The longest a sanitizer run of a kernel that finished none of its plain trials may take
/// (grading's sanitizer items, the gate's tools), unless a caller's floor is longer. A kernel
/// that finishes runs the small sanitizer geometry in a few seconds under any tool (H200 run
/// 24: about 3 s for a submission's four tools side by side); one that hung at full size
/// usually hangs at the small one too, spins the whole deadline, and while it spins its
/// context takes turns of the GPU from every other process (runs 24-27). 10 s leaves a tool's
/// start (1-4 s on the H200 beside other runs) and racecheck's 3 s before it reports a
/// barrier deadlock.
pub const AFTER_HANG: Duration = Duration::from_secs(10);

/// The deadline of such a run: the `configured` one, cut to [`AFTER_HANG`] or `floor` (the
/// gate's trial deadline), whichever is longer; never longer than `configured`.
pub fn after_hang_deadline(configured: Duration, floor: Duration) -> Duration {
    configured.min(AFTER_HANG.max(floor))
}

/// What a sanitizer run concluded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "outcome", content = "detail", rename_all = "snake_case")]
pub enum Outcome {
    Clean,
    Findings(Vec<Finding>),
    /// The target (and the sanitizer with it) missed the deadline; the group was killed.
    Hang {
        left_behind: bool,
        /// What the tool said before it was killed, e.g. racecheck's "Deadlock detected in
        /// Barrier ... at handoff+0x300 in barrier_before_flag.cu:28" (first such line).
        #[serde(skip_serializing_if = "Option::is_none")]
        said: Option<String>,
    },
    /// Nothing can be concluded; the reason says why.
    Inconclusive(String),
}

/// A finished run with its raw material.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct SanitizerRun {
    pub case: String,
    pub tool: Tool,
    pub outcome: Outcome,
    pub exit: String,
    pub seconds: f64,
    /// The tool's text output and the target's (for people, not parsed).
    pub log: String,
    pub command: String,
}

/// A file a tool run leaves behind (compute-sanitizer's XML, globalcheck's report), read as the
/// target may have left it: the target can write where the tool writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Capture {
    /// No such file.
    Missing,
    /// Its text, bytes that are not UTF-8 replaced.
    Text(String),
    /// Over the limit given: not read.
    TooLarge(u64),
    /// Not a regular file (a FIFO, which would block the read, a link, a device): not read.
    NotAFile,
}

/// Reads `path` if it is a regular file of at most `limit` bytes, without following a link and
/// without blocking on a FIFO: [`crate::source::files::read_raw`], the one reader of files a
/// user or a target names.
pub fn read_capture(path: &std::path::Path, limit: u64) -> Capture {
    use crate::source::files::{self, Refusal};
    match files::read_raw(path, limit, false) {
        Ok(bytes) => Capture::Text(files::lossy_text(&bytes)),
        Err(Refusal::Missing) => Capture::Missing,
        Err(Refusal::TooLarge { .. }) => Capture::TooLarge(limit),
        Err(Refusal::NotRegular(_) | Refusal::Link | Refusal::Io(_)) => Capture::NotAFile,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_is_read_only_as_a_regular_file_within_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.jsonl");
        assert_eq!(read_capture(&p, 10), Capture::Missing);
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_capture(&p, 10), Capture::Text("0123456789".into()));
        std::fs::write(&p, b"0123456789A").unwrap();
        assert_eq!(read_capture(&p, 10), Capture::TooLarge(10));
        std::fs::write(&p, b"a\xffb").unwrap();
        assert_eq!(read_capture(&p, 10), Capture::Text("a\u{fffd}b".into()));
        // A link (to a file that would read forever) and a FIFO nobody writes: refused at once.
        let link = dir.path().join("link.xml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert_eq!(read_capture(&link, 10), Capture::NotAFile);
        let fifo = dir.path().join("fifo.xml");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads one NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let start = std::time::Instant::now();
        assert_eq!(read_capture(&fifo, 10), Capture::NotAFile);
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }
}
