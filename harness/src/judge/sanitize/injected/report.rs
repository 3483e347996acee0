//! The tool's report (`report.jsonl`, one JSON object per line: the tool's settings, each
//! loaded module with its functions' addresses, each launch with its findings, errors, notes
//! on launches the tool stepped aside from) -> [`Finding`]s. One report serves globalcheck
//! (`findings`) and sharedcheck (`shared_findings`, with the launch's `shared` window) when
//! both ran in one injection. Program counters become `file:line` through each module's
//! [`LineTable`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::lines::LineTable;
use crate::judge::sanitize::normalize::{self, Finding};

/// A function of a loaded module: where its code starts on the device, and its size.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Function {
    pub name: String,
    pub pc: u64,
    pub size: u64,
}

/// A loaded module: its cubin's file name in the run folder (empty when the image was no ELF).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Module {
    pub module: u32,
    pub cubin: String,
    #[serde(default)]
    pub functions: Vec<Function>,
}

/// An allocation the shadow budget did not cover.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Untracked {
    pub base: u64,
    pub size: u64,
}

/// One distinct conflicting pair as the device saw it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct RawFinding {
    pub kind: String,
    pub scope: String,
    pub pc_now: u64,
    pub pc_then: u64,
    pub addr: u64,
    #[serde(default)]
    pub alloc_name: String,
    pub block_now: u32,
    pub thread_now: u32,
    pub block_then: u32,
    pub thread_then: u32,
    pub count: u64,
}

/// sharedcheck's view of one launch's shared window (present when the tool ran with
/// `RACEGATE_GC_MODE` naming `shared`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
pub struct SharedWindow {
    /// Bytes the shadow covered per block: reserved + static + dynamic.
    pub bytes: u64,
    #[serde(rename = "static")]
    pub static_bytes: u64,
    pub dynamic: u64,
    /// Whether the dynamic size came from the launch call (else 0 was assumed, and a block
    /// with more is counted in `unsized`).
    #[serde(default)]
    pub dynamic_known: bool,
    #[serde(default)]
    pub reserved: u64,
    /// The shadow did not fit the budget: nothing of this launch's shared memory was judged.
    #[serde(default)]
    pub over_budget: bool,
    /// A cluster launch: other blocks' accesses (distributed shared memory) are not seen.
    #[serde(default)]
    pub cluster: bool,
    #[serde(default)]
    pub accesses: u64,
    /// Accesses past the window the shadow covered.
    #[serde(default)]
    pub untracked: u64,
    /// Accesses of blocks with more dynamic shared memory than the shadow was sized for.
    #[serde(default)]
    #[serde(rename = "unsized")]
    pub unsized_accesses: u64,
    /// Writes into shared memory the tool cannot see byte by byte (bulk/TMA copies, stmatrix).
    #[serde(default)]
    pub unseen_writes: u64,
    #[serde(default)]
    pub dropped: u64,
    /// The lowest window offset accessed, for the record.
    #[serde(default)]
    pub min_offset: Option<u64>,
    /// In a confirm run (`RACEGATE_GC_SPOISON`): the reads of unwritten bytes that were given
    /// poison first; `None` in other runs.
    #[serde(default)]
    pub poisoned: Option<u64>,
    /// Where the shared memory the launch declared surely ends (0: not known); an access past
    /// it is a `past-end` finding.
    #[serde(default)]
    pub end: u64,
}

/// One distinct sharedcheck finding as the device saw it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct SharedFinding {
    /// `uninitialized-read`, `atomic-plain` or `past-end`.
    pub kind: String,
    /// `block` for an uninitialized read; `warps` or `lanes` for an atomic/plain pair.
    pub scope: String,
    pub pc_now: u64,
    /// The other access (atomic/plain pairs only; 0 otherwise).
    pub pc_then: u64,
    /// The shared word's offset in the window.
    pub offset: u64,
    pub block_now: u32,
    pub thread_now: u32,
    #[serde(default)]
    pub thread_then: u32,
    /// For an uninitialized read: the bytes of the word read unwritten (bit k = byte k); for an
    /// access past the end: its size in bytes.
    #[serde(default)]
    pub bytes: u32,
    /// For an atomic/plain pair: whether the later access (`pc_now`) is the atomic one; for an
    /// uninitialized read, whether the reading access was an atomic; for an access past the
    /// end, whether it was a write.
    #[serde(default)]
    pub now_atomic: bool,
    pub count: u64,
}

/// A note of the tool: e.g. `{"note":"stepped-aside","reason":"cuda-graph","launches":N}`, kernel
/// launches it did not instrument (kernel nodes of CUDA graphs), so it judged nothing of them.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Note {
    pub note: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub launches: u64,
}

/// One kernel launch.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Launch {
    pub launch: u32,
    pub kernel: String,
    pub module: i64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub accesses: u64,
    pub untracked_accesses: u64,
    pub dropped: u64,
    /// Barriers with an id other than 0 (named or partial): epochs then overstate ordering.
    #[serde(default)]
    pub named_barriers: u64,
    /// Threads that passed 2^15 barriers: epoch comparisons could wrap.
    #[serde(default)]
    pub epoch_overflow: u64,
    #[serde(default)]
    pub untracked_allocations: Vec<Untracked>,
    #[serde(default)]
    pub findings: Vec<RawFinding>,
    /// sharedcheck's window (absent when it did not run).
    #[serde(default)]
    pub shared: Option<SharedWindow>,
    #[serde(default)]
    pub shared_findings: Vec<SharedFinding>,
}

/// Everything in one report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// The tool's first line was there (it was loaded and initialized).
    pub started: bool,
    pub modules: BTreeMap<u32, Module>,
    pub launches: Vec<Launch>,
    pub errors: Vec<String>,
    /// The tool's notes, in order (launches stepped aside).
    pub notes: Vec<Note>,
    /// The kernel launch calls the program made, written at its exit, each of its processes'
    /// together (`None`: no process reached its exit handlers, or an older tool wrote it).
    pub launch_calls: Option<u64>,
    /// The CUDA event times the tool held still (`RACEGATE_GC_FREEZE_TIME`), each process's
    /// together; `None` when it was not asked to, or wrote nothing.
    pub frozen_event_times: Option<u64>,
}

/// `a` and `b` together, either of them when the other is unknown.
fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    }
}

/// Reads `report.jsonl`. A line that is not JSON (a write cut short by a crash) is an error of
/// the report, never skipped silently.
pub fn parse(text: &str) -> Report {
    let mut r = Report::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                r.errors.push(format!("report line {}: {e}", i + 1));
                continue;
            }
        };
        let has = |k: &str| v.get(k).is_some();
        let res = if has("launch") {
            serde_json::from_value::<Launch>(v.clone()).map(|l| r.launches.push(l))
        } else if has("module") && has("cubin") {
            serde_json::from_value::<Module>(v.clone()).map(|m| {
                r.modules.insert(m.module, m);
            })
        } else if has("note") {
            serde_json::from_value::<Note>(v.clone()).map(|n| r.notes.push(n))
        } else if has("tool") {
            r.started = true;
            Ok(())
        } else if let Some(n) = v.get("launch_calls") {
            // One line per process of the target (its children write theirs): all of them.
            r.launch_calls = sum(r.launch_calls, n.as_u64());
            Ok(())
        } else if let Some(n) = v.get("frozen_event_times") {
            r.frozen_event_times = sum(r.frozen_event_times, n.as_u64());
            Ok(())
        } else if let Some(e) = v.get("error") {
            r.errors.push(e.as_str().unwrap_or("?").to_string());
            Ok(())
        } else {
            Ok(())
        };
        if let Err(e) = res {
            r.errors.push(format!("report line {}: {e}", i + 1));
        }
    }
    r
}

impl Report {
    /// The modules whose code a finding points into (they need a line table).
    pub fn modules_with_findings(&self) -> Vec<u32> {
        let mut m: Vec<u32> = self
            .launches
            .iter()
            .filter(|l| !l.findings.is_empty() || !l.shared_findings.is_empty())
            // A negative module is none (no line table to load).
            .filter_map(|l| u32::try_from(l.module).ok())
            .collect();
        m.sort();
        m.dedup();
        m
    }

    /// Kernel launches the tool stepped aside from (kernel nodes of CUDA graphs), all notes
    /// together: none of them was judged or jittered.
    pub fn stepped_aside(&self) -> u64 {
        self.notes
            .iter()
            .filter(|n| n.note == "stepped-aside")
            .map(|n| n.launches)
            .sum()
    }

    /// Accesses no shadow covered, and the allocations the budget left out, for the log.
    pub fn untracked(&self) -> (u64, Vec<Untracked>) {
        let n = self.launches.iter().map(|l| l.untracked_accesses).sum();
        let mut a: Vec<Untracked> = self
            .launches
            .iter()
            .flat_map(|l| l.untracked_allocations.iter().cloned())
            .collect();
        a.sort_by_key(|u| u.base);
        a.dedup();
        (n, a)
    }
}

/// The level of a scope: lanes of one warp are a warning (lockstep assumptions are their own
/// class: they count for an expectation only where a header declares them), the rest errors.
pub fn level(scope: &str) -> &'static str {
    if scope == "lanes" {
        "Warning"
    } else {
        "Error"
    }
}

pub(super) fn directions(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "write-write" => ("Write", "Write"),
        "read-write" => ("Read", "Write"),
        "write-read" => ("Write", "Read"),
        "lost-update" => ("Access", "Read-modify-write"),
        _ => ("Access", "Access"),
    }
}

pub(super) fn describe(kind: &str, scope: &str) -> String {
    let what = match kind {
        "lost-update" => "Lost update (plain read-modify-write) on global memory",
        "write-write" => "Write-write race on global memory",
        "read-write" => "Read-write race on global memory",
        "write-read" => "Write-read race on global memory",
        _ => "Race on global memory",
    };
    let between = match scope {
        "blocks" => "between blocks, with no atomic handoff between them",
        "warps" => "between warps of one block, with no __syncthreads between them",
        "lanes" => "between lanes of one warp, with no __syncwarp between them",
        _ => "between threads",
    };
    format!("{what} {between}")
}

/// `pc` -> (function, offset) in `module`.
pub(super) fn function_at(m: &Module, pc: u64) -> Option<(&str, u64)> {
    m.functions
        .iter()
        .find(|f| pc >= f.pc && pc < f.pc + f.size.max(1))
        .map(|f| (f.name.as_str(), pc - f.pc))
}

/// The module, function and offset of `pc` in a launch of `module`.
pub(super) fn function_of(report: &Report, module: i64, pc: u64) -> Option<(&Module, &str, u64)> {
    let m = u32::try_from(module)
        .ok()
        .and_then(|i| report.modules.get(&i))?;
    let (func, off) = function_at(m, pc)?;
    Some((m, func, off))
}

/// `file:line` of `pc`: the innermost position inside `root` (code inlined from a toolkit
/// header is reported at the user's line that called it), else the innermost one.
pub(crate) fn location(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    module: i64,
    pc: u64,
    root: &Path,
) -> String {
    let Some((m, func, off)) = function_of(report, module, pc) else {
        return "<no line info>".into();
    };
    let Some(pos) = tables.get(&m.module).and_then(|t| t.locate(func, off)) else {
        return format!("{func}+0x{off:x}");
    };
    let root = crate::build::toolchain::normalize(root);
    let pick = pos
        .iter()
        .find(|(f, _)| crate::build::toolchain::normalize(Path::new(f)).starts_with(&root))
        .or(pos.first());
    match pick {
        Some((f, l)) => format!("{f}:{l}"),
        None => format!("{func}+0x{off:x}"),
    }
}

/// Whether `pc` is a strong (volatile or relaxed-atomic) access, by the module's line table.
pub(super) fn strong(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    module: i64,
    pc: u64,
) -> bool {
    function_of(report, module, pc).is_some_and(|(m, func, off)| {
        tables
            .get(&m.module)
            .is_some_and(|t| t.is_strong(func, off))
    })
}

/// Why a finding cannot be trusted either way: the tool could not see what orders its accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Distrust {
    /// The launch used named or partial barriers (`bar.sync N`), which epochs count as
    /// block-wide: a finding between warps of one block may be ordered by one of them.
    NamedBarriers,
    /// The kernel (or a device function of its module) makes strong loads or stores: a volatile
    /// flag or a relaxed/acquire-release `cuda::atomic_ref`, which the device side cannot take as
    /// a handoff. A finding between warps or blocks may be the data such a handoff orders (H200
    /// run 18: a fenced volatile flag handoff between blocks was reported).
    StrongAccesses,
    /// No line table for the module (nvdisasm missing or failed): the finding has no line, and
    /// strong accesses cannot be told apart.
    NoLineTable,
    /// sharedcheck: the launch wrote shared memory in ways it cannot see byte by byte (bulk or
    /// TMA copies, stmatrix, a cluster's distributed shared memory), so a read it finds
    /// unwritten may have been written.
    UnseenWrites,
}

/// Whether `f`, a finding of launch `l`, cannot be trusted, and why. Lane-level findings are
/// warnings that count for nothing, and a pair of two strong accesses is left out anyway.
pub fn distrust(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    l: &Launch,
    f: &RawFinding,
) -> Option<Distrust> {
    if f.scope == "lanes" {
        return None;
    }
    if l.named_barriers > 0 && f.scope != "blocks" {
        return Some(Distrust::NamedBarriers);
    }
    let Some(m) = u32::try_from(l.module)
        .ok()
        .and_then(|i| report.modules.get(&i))
    else {
        return Some(Distrust::NoLineTable);
    };
    let Some(t) = tables.get(&m.module) else {
        return Some(Distrust::NoLineTable);
    };
    let then = pc_then(report, l.module, f.pc_now, f.pc_then);
    if strong(report, tables, l.module, f.pc_now) && strong(report, tables, l.module, then) {
        return None;
    }
    // The launched kernel, and any function of the module that is no kernel (a device function
    // the kernel may call, which -G or noinline keeps apart); other kernels are not its code.
    let kernels: std::collections::BTreeSet<&str> =
        m.functions.iter().map(|f| f.name.as_str()).collect();
    let strong_code = t
        .strong_load_store
        .iter()
        .any(|func| *func == l.kernel || !kernels.contains(func.as_str()));
    strong_code.then_some(Distrust::StrongAccesses)
}

/// The earlier access's full pc. The device keeps its low 32 bits and takes the high half from
/// the later access; where that lands in no function, the code crossed a 4 GiB boundary, and
/// the neighbouring window is tried.
pub(super) fn pc_then(report: &Report, module: i64, pc_now: u64, pc: u64) -> u64 {
    if function_of(report, module, pc).is_some() || pc_now >> 32 != pc >> 32 {
        return pc;
    }
    [pc.wrapping_add(1 << 32), pc.wrapping_sub(1 << 32)]
        .into_iter()
        .find(|p| function_of(report, module, *p).is_some())
        .unwrap_or(pc)
}

#[cfg(any(test, feature = "internals"))]
/// The report's findings, errors and warnings both, normalized like every tool's. A pair of
/// two strong accesses (both `volatile` or relaxed atomics at device or system scope, which the
/// device side cannot tell from plain ones) is no data race and is left out.
pub fn findings(report: &Report, tables: &BTreeMap<u32, LineTable>, root: &Path) -> Vec<Finding> {
    findings_where(report, tables, root, |_, _| true)
}

/// [`findings`], of the raw findings `keep` accepts.
pub fn findings_where(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
    keep: impl Fn(&Launch, &RawFinding) -> bool,
) -> Vec<Finding> {
    let mut raw = Vec::new();
    for l in &report.launches {
        for f in l.findings.iter().filter(|f| keep(l, f)) {
            let then = pc_then(report, l.module, f.pc_now, f.pc_then);
            if strong(report, tables, l.module, f.pc_now) && strong(report, tables, l.module, then)
            {
                continue;
            }
            let (then_dir, now_dir) = directions(&f.kind);
            raw.push(Finding {
                kind: "Global".into(),
                level: level(&f.scope).into(),
                kernel: l.kernel.clone(),
                location: location(report, tables, l.module, f.pc_now, root),
                accesses: format!(
                    "{then_dir} -> {now_dir} {}",
                    location(report, tables, l.module, then, root)
                ),
                what: describe(&f.kind, &f.scope),
            });
        }
    }
    normalize::normalized(raw, root)
}

/// One line per launch and finding with what normalization leaves out (blocks, threads,
/// counts, the memory), for the log people read.
pub fn log(report: &Report) -> String {
    let mut s = String::new();
    for l in &report.launches {
        s.push_str(&format!(
            "globalcheck: launch {} {} grid {:?} block {:?}: {} global accesses, {} untracked, {} finding(s){}\n",
            l.launch,
            l.kernel,
            l.grid,
            l.block,
            l.accesses,
            l.untracked_accesses,
            l.findings.len(),
            if l.dropped > 0 {
                format!(", {} more dropped (table full)", l.dropped)
            } else {
                String::new()
            }
        ));
        for f in &l.findings {
            s.push_str(&format!(
                "  {} ({}) at 0x{:x}{}: block {} thread {} against block {} thread {}, {} time(s)\n",
                f.kind,
                f.scope,
                f.addr,
                if f.alloc_name.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", f.alloc_name)
                },
                f.block_now,
                f.thread_now,
                f.block_then,
                f.thread_then,
                f.count
            ));
        }
    }
    for e in &report.errors {
        s.push_str(&format!("globalcheck error: {e}\n"));
    }
    for n in &report.notes {
        s.push_str(&format!(
            "globalcheck note: {} ({}): {} launch(es)\n",
            n.note, n.reason, n.launches
        ));
    }
    s
}
