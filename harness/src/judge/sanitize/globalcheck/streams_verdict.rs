//! streamcheck's outcome of a finished run: the trace ([`super::streams::judge`]) -> races with
//! both call sites -> [`Finding`]s, or why the run cannot be judged. Nothing undecidable is
//! clean: no trace, a trace that does not parse, a crash, CUDA graphs, IPC, several contexts,
//! kernels whose arguments could not be read, and possible races that rest only on a kernel's
//! "may touch" are inconclusive.
//!
//! Call sites are program counters in the program's own executable (the recorder keeps the
//! frames of the host backtrace that lie in it); `addr2line` turns them into `file:line` where the
//! program has debug info (`-g`/`-lineinfo` on the host side), else into `function+0xOFFSET`,
//! passing over the CUDA runtime linked into the program and nvcc's launch stubs.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::streams::{self, Access, Judged, Race};
use crate::judge::sanitize::normalize::{self, Finding};
use crate::judge::sanitize::tool::Outcome;
use crate::proc::watchdog::{self, Exit};

/// How every inconclusive outcome of streamcheck that is a limit of the method begins.
pub const STREAM_CANNOT_JUDGE: &str = "streamcheck cannot judge this run: ";

/// The file the recorder writes in the tool's folder.
pub const TRACE: &str = "streams.jsonl";

/// The most of a trace racegate reads (10k operations are a few MiB).
const TRACE_LIMIT: u64 = 256 << 20;

/// The trace in the tool's folder `dir`, read as the target may have left it (none: the recorder
/// was not loaded or not asked, or the file is not a regular one within [`TRACE_LIMIT`]).
pub fn read_trace(dir: &Path) -> Option<String> {
    match crate::judge::sanitize::tool::read_capture(&dir.join(TRACE), TRACE_LIMIT) {
        crate::judge::sanitize::tool::Capture::Text(t) => Some(t),
        _ => None,
    }
}

/// Keeps the trace beside a saved report (`--save-xml FILE`: `FILE.streams.jsonl`).
pub fn keep(report: &Path, trace: Option<&str>) {
    if let Some(t) = trace {
        let mut p = report.as_os_str().to_owned();
        p.push(".streams.jsonl");
        // ignored: the kept copy is for people; the verdict does not depend on it
        let _ = std::fs::write(p, t);
    }
}

/// streamcheck's outcome from the trace's text (`None`: the recorder wrote none).
pub fn decide(
    exit: &Exit,
    left_behind: bool,
    trace: Option<&str>,
    root: &Path,
    log: &mut String,
) -> Outcome {
    if *exit == Exit::TimedOut {
        return Outcome::Hang {
            left_behind,
            said: None,
        };
    }
    let j = streams::judge(trace.unwrap_or_default());
    log.push_str(&summary(&j));
    if !j.started {
        return Outcome::Inconclusive(format!(
            "streamcheck was not loaded into the target (no trace; {})",
            match exit {
                Exit::Code(c) => format!("the target exited {c}"),
                Exit::Signal(s) => format!("the target died of signal {s}"),
                Exit::TimedOut => unreachable!(),
            }
        ));
    }
    if let Some(e) = j.errors.first() {
        return Outcome::Inconclusive(format!("streamcheck: {e}"));
    }
    if let Exit::Signal(s) = exit {
        return Outcome::Inconclusive(format!("the target died of signal {s} under streamcheck"));
    }
    let sites = Sites::resolve(&j, root);
    let (sure, maybe): (Vec<&Race>, Vec<&Race>) = j.races.iter().partition(|r| r.certain);
    let all: Vec<Finding> = j.races.iter().map(|r| finding(r, &sites)).collect();
    let all = normalize::normalized(all, root);
    for f in all.iter().filter(|f| f.level == "Warning") {
        log.push_str(&format!("streamcheck warning (may touch): {}\n", f.line()));
    }
    if !sure.is_empty() {
        return Outcome::Findings(all);
    }
    if let Exit::Code(c) = exit {
        if *c != 0 {
            return Outcome::Inconclusive(format!(
                "the target exited {c} without a streamcheck finding (a failed call leaves nothing to judge)"
            ));
        }
    }
    if !maybe.is_empty() {
        return Outcome::Inconclusive(format!(
            "{STREAM_CANNOT_JUDGE}{} possible race(s) rest on what a kernel may touch (its pointer arguments), not on what it touched: {}",
            maybe.len(),
            all.iter().map(Finding::line).collect::<Vec<_>>().join("; ")
        ));
    }
    if let Some(why) = j.unjudged.first() {
        return Outcome::Inconclusive(format!("{STREAM_CANNOT_JUDGE}{why}"));
    }
    if j.operations <= 1 {
        return Outcome::Inconclusive("streamcheck saw no CUDA operation".into());
    }
    Outcome::Clean
}

fn summary(j: &Judged) -> String {
    let mut s = format!(
        "streamcheck: {} operation(s), {} race(s) ({} near certain)\n",
        j.operations,
        j.races.len(),
        j.races.iter().filter(|r| r.certain).count()
    );
    for u in &j.unjudged {
        s.push_str(&format!("streamcheck: not judged: {u}\n"));
    }
    s
}

fn direction(a: &Access) -> &'static str {
    match (a.write, a.may) {
        (true, false) => "Write",
        (false, false) => "Read",
        (true, true) => "May write",
        (false, true) => "May read",
    }
}

/// One race as a finding: its location is the later access's call site, its accesses name the
/// earlier one's.
pub fn finding(r: &Race, sites: &Sites) -> Finding {
    let kernel = [&r.later, &r.earlier]
        .iter()
        .find_map(|a| a.what.strip_prefix("kernel "))
        .unwrap_or("")
        .to_string();
    let (kind, what) = if r.host {
        (
            "StreamHost",
            format!(
                "Race between the host and a stream: {} on {} and {} on {} touch the same host memory with no synchronization between them",
                r.earlier.what, r.earlier.stream, r.later.what, r.later.stream
            ),
        )
    } else {
        (
            "Stream",
            format!(
                "Race between streams: {} on {} and {} on {} touch the same memory with no event wait or synchronization between them{}",
                r.earlier.what,
                r.earlier.stream,
                r.later.what,
                r.later.stream,
                if r.earlier.thread != r.later.thread { " (issued by different host threads)" } else { "" }
            ),
        )
    };
    Finding {
        kind: kind.into(),
        level: if r.certain { "Error" } else { "Warning" }.into(),
        kernel,
        location: sites.of(&r.later),
        accesses: format!(
            "{} -> {} {}",
            direction(&r.earlier),
            direction(&r.later),
            sites.of(&r.earlier)
        ),
        what,
    }
}

/// Program counters of the executable -> where in the program's source they are.
#[derive(Default)]
pub struct Sites {
    /// offset -> (function, file:line or empty)
    known: BTreeMap<u64, (String, String)>,
    exe: String,
}

impl Sites {
    /// Resolves every call site of `j` with one `addr2line` run (none found: offsets stay).
    pub fn resolve(j: &Judged, root: &Path) -> Sites {
        let mut s = Sites {
            exe: Path::new(&j.exe)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ..Sites::default()
        };
        let mut pcs: Vec<u64> = j
            .races
            .iter()
            .flat_map(|r| r.earlier.site.iter().chain(&r.later.site))
            .copied()
            .collect();
        pcs.sort();
        pcs.dedup();
        if pcs.is_empty() || j.exe.is_empty() {
            return s;
        }
        let Some(tool) = which("addr2line") else {
            return s;
        };
        let mut args: Vec<OsString> = vec!["-f".into(), "-e".into(), j.exe.clone().into()];
        // Return addresses: the call is the byte before.
        args.extend(
            pcs.iter()
                .map(|p| OsString::from(format!("0x{:x}", p.saturating_sub(1)))),
        );
        let Ok((done, out)) = watchdog::run_collecting(&tool, &args, &[], Duration::from_secs(60))
        else {
            return s;
        };
        if done.exit != Exit::Code(0) {
            return s;
        }
        let lines: Vec<&str> = out.lines().collect();
        for (pc, pair) in pcs.iter().zip(lines.chunks(2)) {
            if let [func, at] = pair {
                let at = at.split(" (discriminator").next().unwrap_or(at).trim();
                let at = if at.starts_with("??") || at.ends_with(":0") || at.ends_with(":?") {
                    String::new()
                } else {
                    relative(at, root)
                };
                s.known.insert(*pc, (func.trim().to_string(), at));
            }
        }
        s
    }

    /// The first frame of `a`'s call site that is the program's own code: `file:line`, else
    /// `function+0xPC`, else `exe+0xPC`.
    pub fn of(&self, a: &Access) -> String {
        let kernel = a.what.strip_prefix("kernel ").unwrap_or("");
        let own = |pc: &u64| match self.known.get(pc) {
            Some((f, _)) => !is_runtime(f, kernel),
            None => true,
        };
        let Some(pc) = a.site.iter().find(|p| own(p)).or(a.site.first()) else {
            return "<host>".into();
        };
        match self.known.get(pc) {
            Some((_, at)) if !at.is_empty() => at.clone(),
            Some((f, _)) if f != "??" => format!("{f}+0x{pc:x}"),
            _ => format!(
                "{}+0x{pc:x}",
                if self.exe.is_empty() {
                    "<program>"
                } else {
                    &self.exe
                }
            ),
        }
    }
}

/// Frames of the CUDA runtime linked into the program and of nvcc's launch stubs (the kernel's
/// host-side twin has the kernel's own mangled name).
fn is_runtime(func: &str, kernel: &str) -> bool {
    func.starts_with("cuda")
        || func.starts_with("__cuda")
        || func.starts_with("_ZN6cudart")
        || func.starts_with("cudart")
        || func.starts_with("__device_stub")
        || func.starts_with("_Z16cudaLaunchKernel")
        || func.contains("cudaLaunch")
        || (!kernel.is_empty() && func == kernel)
}

fn relative(at: &str, root: &Path) -> String {
    let root = root.to_string_lossy();
    at.strip_prefix(&format!("{root}/"))
        .unwrap_or(at)
        .to_string()
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
