//! fencecheck: the handoffs globalcheck's rule takes as ordering (a plain store of one block,
//! the atomic its block released with, the atomic or poll the reading block acquired with, and
//! the read), checked on the SASS for the fences the CUDA memory model needs between them.
//!
//! The device side (`harness/globalcheck/patches.cu`, mode `fence`) records each distinct
//! handoff as a line `{"handoff":{...}}` of the report, and each launch's
//! `{"handoffs":{"launch":N,"recorded":true,"dropped":0}}`. The Sanitizer API has no patch point
//! for `MEMBAR`, so the fences are read from the module's SASS (`nvdisasm -c`, the text racegate
//! already has for its line tables, see [`super::sass`]):
//!
//! - release side (an error): every path from the store to the releasing atomic passes a
//!   `MEMBAR` of GPU or system scope (`__threadfence()`, or the fence a release atomic such as
//!   `cuda::atomic_ref::fetch_add(.., memory_order_release)` compiles to). A path with only a
//!   `MEMBAR.*.CTA` (`__threadfence_block()`) is its own finding: block scope where blocks hand
//!   off. A path with no fence at all is the missing `__threadfence()`.
//! - acquire side (a warning, not counted: NVIDIA's own last-block samples omit it): every path
//!   from the acquiring atomic or poll to the read passes a GPU fence or the L1 invalidation
//!   (`CCTL.IVALL`) acquire operations leave, or the read itself is strong (`volatile`).
//! - coherent handoffs (neither side judged, [`coherent`]): when the data's store and its read
//!   are both atomic between blocks (an atomic, or a load or store `.STRONG.GPU`/`.STRONG.SYS`:
//!   `volatile`, `cuda::atomic_ref`/`cuda::atomic` of device or system scope, see
//!   [`sass::Instr::is_coherent`]), no access to the data is a data race and no fence is missing:
//!   the log says why it was judged coherent and no finding is made. Both together only: a plain
//!   store read atomically still needs the release side, an atomic store read plainly the acquire
//!   side. Relaxed accesses alone let the reader see the value from before the store (a status
//!   not set yet, which a reader of hints takes as such); a program that counts on the flag to
//!   show it the new value still needs the fences, and is not told apart from one that does not.
//!
//! What it cannot follow (a call, an indirect branch, a pc in no function, store and release
//! in different functions, a release that does not follow the store in the code, no SASS) is
//! inconclusive, never clean.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use super::sass::{self, Paths, Scope};
use crate::judge::sanitize::injected::lines::LineTable;
use crate::judge::sanitize::injected::report::{self, Report};
use crate::judge::sanitize::normalize::{self, Finding};
use crate::judge::sanitize::tool::Outcome;
use crate::proc::watchdog::Exit;

/// One handoff as the device recorded it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Handoff {
    pub launch: u32,
    pub kernel: String,
    pub module: i64,
    pub pc_store: u64,
    pub pc_release: u64,
    pub pc_acquire: u64,
    pub pc_read: u64,
    #[serde(default)]
    pub addr: u64,
    #[serde(default)]
    pub block_store: u32,
    #[serde(default)]
    pub block_read: u32,
    #[serde(default)]
    pub count: u64,
}

/// A launch's handoff summary: whether it was recorded, and how many the table dropped.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Summary {
    pub launch: u32,
    pub kernel: String,
    pub recorded: bool,
    pub dropped: u64,
}

/// fencecheck's part of a report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Handoffs {
    pub handoffs: Vec<Handoff>,
    pub summaries: Vec<Summary>,
    /// Lines that were meant for fencecheck but did not parse.
    pub errors: Vec<String>,
}

/// Reads the `handoff` and `handoffs` lines of `report.jsonl` (the rest is [`report::parse`]'s).
pub fn parse(text: &str) -> Handoffs {
    let mut h = Handoffs::default();
    for (i, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue; // report::parse says so
        };
        let r = if let Some(x) = v.get("handoff") {
            serde_json::from_value::<Handoff>(x.clone()).map(|x| h.handoffs.push(x))
        } else if let Some(x) = v.get("handoffs") {
            serde_json::from_value::<Summary>(x.clone()).map(|x| h.summaries.push(x))
        } else {
            Ok(())
        };
        if let Err(e) = r {
            h.errors.push(format!("report line {}: {e}", i + 1));
        }
    }
    h
}

/// `also` and the modules a handoff points into (they need their SASS), sorted, once each.
pub fn modules(h: &Handoffs, also: Vec<u32>) -> Vec<u32> {
    let s: BTreeSet<u32> = h
        .handoffs
        .iter()
        .filter_map(|x| u32::try_from(x.module).ok())
        .chain(also)
        .collect();
    s.into_iter().collect()
}

/// What the SASS says about one handoff's release side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Release {
    /// A GPU- or system-scope fence lies on every path.
    Fenced,
    /// Some path has no fence at all.
    Missing,
    /// Some path has only fences of block scope (their offsets).
    BlockScope(Vec<u64>),
    /// It cannot be judged: why.
    Unknown(String),
}

/// What the SASS says about one handoff's acquire side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquire {
    Ordered,
    /// Some path from the acquire to the read has neither fence nor invalidation.
    Unordered,
    Unknown(String),
}

/// (module's function, offset) of `pc`, from the module's functions in the report.
fn place(rep: &Report, module: i64, pc: u64) -> Option<(String, u64)> {
    let m = rep.modules.get(&u32::try_from(module).ok()?)?;
    m.functions
        .iter()
        .find(|f| pc >= f.pc && pc < f.pc + f.size.max(1))
        .map(|f| (f.name.clone(), pc - f.pc))
}

/// Two pcs in one function of the module's SASS: the function and both offsets.
fn same_function<'a>(
    rep: &Report,
    sass: &'a BTreeMap<u32, BTreeMap<String, sass::Function>>,
    module: i64,
    a: u64,
    b: u64,
    what: &str,
) -> Result<(&'a sass::Function, u64, u64), String> {
    let (fa, oa) =
        place(rep, module, a).ok_or(format!("the {what}'s first pc is in no function"))?;
    let (fb, ob) =
        place(rep, module, b).ok_or(format!("the {what}'s second pc is in no function"))?;
    if fa != fb {
        return Err(format!(
            "the {what} spans two functions ({fa}, {fb}): it cannot follow a call"
        ));
    }
    let code = u32::try_from(module)
        .ok()
        .and_then(|m| sass.get(&m))
        .and_then(|fs| fs.get(&fa))
        .ok_or(format!("no SASS of {fa} (nvdisasm missing or failed)"))?;
    Ok((code, oa, ob))
}

/// The instruction of the module's SASS at `pc`, when `pc` lies in a function it has.
fn instr_at<'a>(rep: &Report, sass: &'a Sass, module: i64, pc: u64) -> Option<&'a sass::Instr> {
    let (func, off) = place(rep, module, pc)?;
    let f = sass.get(&u32::try_from(module).ok()?)?.get(&func)?;
    f.index_of(off).map(|i| &f.instrs[i])
}

/// Why `h` is coherent, or `None` when it is not: the data's store and its read are both
/// accesses atomic between blocks ([`sass::Instr::is_coherent`]). A side whose instruction is
/// not found is not coherent (the release and acquire sides then say what they can). The device
/// records a handoff only between accesses the Sanitizer API reports as not atomic, which strong
/// loads and stores are; an `ATOM` or `RED` at either pc would count as coherent all the same.
pub fn coherent(rep: &Report, sass: &Sass, h: &Handoff) -> Option<String> {
    let store = instr_at(rep, sass, h.module, h.pc_store)?;
    let read = instr_at(rep, sass, h.module, h.pc_read)?;
    (store.is_coherent() && read.is_coherent()).then(|| {
        format!(
            "the data is stored with {} (/*{:04x}*/) and read with {} (/*{:04x}*/), both atomic between blocks: no access to it races, no fence is missing",
            store.op, store.offset, read.op, read.offset
        )
    })
}

/// The release side of `h`.
pub fn release(
    rep: &Report,
    sass: &BTreeMap<u32, BTreeMap<String, sass::Function>>,
    h: &Handoff,
) -> Release {
    if h.pc_release == 0 {
        return Release::Unknown("no releasing atomic was recorded".into());
    }
    let (f, store, rel) = match same_function(
        rep,
        sass,
        h.module,
        h.pc_store,
        h.pc_release,
        "store and release",
    ) {
        Ok(x) => x,
        Err(why) => return Release::Unknown(why),
    };
    // A fence under a predicate runs only when it holds: it counts for a release under the
    // same predicate (a release atomic compiles to `@P3 MEMBAR.ALL.GPU` + `@P3 ATOM...`).
    let guard = f
        .index_of(rel)
        .map(|i| f.instrs[i].guard.clone())
        .unwrap_or_default();
    let runs = |i: &sass::Instr| i.guard.is_empty() || i.guard == "@PT" || i.guard == guard;
    let device =
        |i: &sass::Instr| matches!(i.fence_scope(), Some(Scope::Gpu | Scope::System)) && runs(i);
    match sass::every_path_passes(f, store, rel, device, |i| i.fence_scope().is_some()) {
        Paths::Covered => Release::Fenced,
        Paths::Open { noted } => {
            let fences: Vec<&sass::Instr> = noted
                .iter()
                .filter_map(|o| f.index_of(*o))
                .map(|i| &f.instrs[i])
                .collect();
            if let Some(i) = fences.iter().find(|i| i.fence_scope() == Some(Scope::Unknown)) {
                return Release::Unknown(format!(
                    "a fence it does not know the scope of ({} at /*{:04x}*/) lies on the way",
                    i.op, i.offset
                ));
            }
            if let Some(i) = fences
                .iter()
                .find(|i| matches!(i.fence_scope(), Some(Scope::Gpu | Scope::System)))
            {
                return Release::Unknown(format!(
                    "a fence under a predicate the release does not share ({} {} at /*{:04x}*/) lies on the way",
                    i.guard, i.op, i.offset
                ));
            }
            // Which is it: no fence on some path, or only block-scope ones? With every fence
            // as a wall, an open path has none at all.
            let any = |i: &sass::Instr| i.fence_scope().is_some();
            match sass::every_path_passes(f, store, rel, any, |_| false) {
                Paths::Covered => Release::BlockScope(fences.iter().map(|i| i.offset).collect()),
                Paths::Open { .. } => Release::Missing,
                Paths::Unreachable => Release::Unknown("no path".into()),
                Paths::Unknown(w) => Release::Unknown(w),
            }
        }
        Paths::Unreachable => Release::Unknown(format!(
            "the releasing atomic it recorded (/*{rel:04x}*/) does not follow the store (/*{store:04x}*/) in the code"
        )),
        Paths::Unknown(why) => Release::Unknown(why),
    }
}

/// The acquire side of `h`.
pub fn acquire(
    rep: &Report,
    sass: &BTreeMap<u32, BTreeMap<String, sass::Function>>,
    h: &Handoff,
) -> Acquire {
    if h.pc_acquire == 0 {
        return Acquire::Unknown("no acquiring access was recorded".into());
    }
    let (f, acq, read) = match same_function(
        rep,
        sass,
        h.module,
        h.pc_acquire,
        h.pc_read,
        "acquire and read",
    ) {
        Ok(x) => x,
        Err(why) => return Acquire::Unknown(why),
    };
    if f.index_of(read)
        .is_some_and(|i| f.instrs[i].is_strong_device())
    {
        return Acquire::Ordered;
    }
    let guard = f
        .index_of(acq)
        .map(|i| f.instrs[i].guard.clone())
        .unwrap_or_default();
    let orders = |i: &sass::Instr| {
        (matches!(i.fence_scope(), Some(Scope::Gpu | Scope::System)) || i.is_invalidate())
            && (i.guard.is_empty() || i.guard == "@PT" || i.guard == guard)
    };
    match sass::every_path_passes(f, acq, read, orders, |_| false) {
        Paths::Covered => Acquire::Ordered,
        Paths::Open { .. } => Acquire::Unordered,
        Paths::Unreachable => Acquire::Unknown(format!(
            "the read (/*{read:04x}*/) does not follow the acquire (/*{acq:04x}*/) in the code"
        )),
        Paths::Unknown(why) => Acquire::Unknown(why),
    }
}

/// What fencecheck concluded from a report, before the run's own conditions.
#[derive(Clone, Debug, Default)]
pub struct Judged {
    /// Release-side findings (errors) and acquire-side ones (warnings), normalized.
    pub findings: Vec<Finding>,
    /// Handoffs it could not judge: why, with the kernel.
    pub unknown: Vec<String>,
    /// Launches whose handoffs were not all recorded: why.
    pub unrecorded: Vec<String>,
    /// Handoffs judged coherent ([`coherent`]), with no finding: why, with the kernel.
    pub coherent: Vec<String>,
}

/// Whether `file` is the user's code: inside `root` (or already relative to it).
fn is_user(file: &str, root: &Path) -> bool {
    use crate::build::toolchain::normalize;
    let p = Path::new(file);
    p.is_relative() || normalize(p).starts_with(normalize(root))
}

/// `file:line` of `pc` as globalcheck names it; where that is a toolkit header with no inlining
/// information (nvdisasm `--print-line-info` prints an inlined `atomicAdd` at
/// `device_atomic_functions.hpp` alone), the nearest line of the user's code before it, which is
/// the call.
fn user_location(
    rep: &Report,
    tables: &BTreeMap<u32, LineTable>,
    module: i64,
    pc: u64,
    root: &Path,
) -> String {
    let loc = report::location(rep, tables, module, pc, root);
    if loc.rsplit_once(':').is_none_or(|(f, _)| is_user(f, root)) {
        return loc;
    }
    let table = u32::try_from(module).ok().and_then(|m| tables.get(&m));
    let Some(((func, off), t)) = place(rep, module, pc).zip(table) else {
        return loc;
    };
    t.functions
        .get(&func)
        .and_then(|m| {
            m.range(..=off)
                .rev()
                .find_map(|(_, pos)| pos.iter().find(|(f, _)| is_user(f, root)))
        })
        .map_or(loc, |(f, l)| format!("{f}:{l}"))
}

/// Judges every recorded handoff of `h` on the modules' SASS.
pub fn judge(
    rep: &Report,
    h: &Handoffs,
    sass: &BTreeMap<u32, BTreeMap<String, sass::Function>>,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
) -> Judged {
    let mut out = Judged::default();
    for l in &rep.launches {
        match h.summaries.iter().find(|s| s.launch == l.launch) {
            None | Some(Summary { recorded: false, .. }) => out.unrecorded.push(format!(
                "launch {} of {}: its handoffs were not recorded (the tool ran without its fence mode)",
                l.launch, l.kernel
            )),
            Some(s) if s.dropped > 0 => out.unrecorded.push(format!(
                "launch {} of {}: its handoff table overflowed ({} dropped)",
                l.launch, l.kernel, s.dropped
            )),
            Some(_) => {}
        }
    }
    let mut raw = Vec::new();
    let mut seen = BTreeSet::new();
    for x in &h.handoffs {
        if !seen.insert((x.module, x.pc_store, x.pc_release, x.pc_acquire, x.pc_read)) {
            continue;
        }
        let at = |pc: u64| user_location(rep, tables, x.module, pc, root);
        if let Some(why) = coherent(rep, sass, x) {
            out.coherent.push(format!(
                "a handoff in {} ({} -> {}): {why}",
                x.kernel,
                at(x.pc_store),
                at(x.pc_read)
            ));
            continue;
        }
        let chain = format!(
            "Write -> Release {} -> Acquire {} -> Read {}",
            at(x.pc_release),
            at(x.pc_acquire),
            at(x.pc_read)
        );
        let what = match release(rep, sass, x) {
            Release::Fenced => None,
            Release::Missing => Some("Global store published to other blocks by an atomic with no __threadfence() between them: the reading block may see the atomic before the store"),
            Release::BlockScope(_) => Some("Fence of block scope where blocks hand off: __threadfence_block() between a global store and the atomic that publishes it to other blocks orders it for the block only; __threadfence() is needed"),
            Release::Unknown(why) => {
                out.unknown.push(format!("a handoff in {} ({}): {why}", x.kernel, at(x.pc_store)));
                None
            }
        };
        if let Some(what) = what {
            raw.push(Finding {
                kind: "Fence".into(),
                level: "Error".into(),
                kernel: x.kernel.clone(),
                location: at(x.pc_store),
                accesses: chain.clone(),
                what: what.into(),
            });
        }
        if acquire(rep, sass, x) == Acquire::Unordered {
            raw.push(Finding {
                kind: "Fence".into(),
                level: "Warning".into(),
                kernel: x.kernel.clone(),
                location: at(x.pc_read),
                accesses: format!("Acquire {} -> Read {}", at(x.pc_acquire), at(x.pc_read)),
                what: "Global read of another block's data after the atomic that acquired it, with no __threadfence() (or acquire load) between them".into(),
            });
        }
    }
    out.findings = normalize::normalized(raw, root);
    out
}

/// One line per launch's handoffs, for the log people read.
pub fn log(h: &Handoffs) -> String {
    let mut s = String::new();
    for x in &h.handoffs {
        s.push_str(&format!(
            "fencecheck: launch {} {}: handoff store 0x{:x} -> release 0x{:x} -> acquire 0x{:x} -> read 0x{:x} at 0x{:x}, block {} to block {}, {} time(s)\n",
            x.launch, x.kernel, x.pc_store, x.pc_release, x.pc_acquire, x.pc_read, x.addr, x.block_store, x.block_read, x.count
        ));
    }
    s
}

/// How every inconclusive outcome of fencecheck that is a limit of the method begins.
pub const FENCE_CANNOT_JUDGE: &str = "fencecheck cannot judge this run: ";

/// Every module's SASS, parsed from nvdisasm's text (the line-table text racegate keeps).
pub type Sass = BTreeMap<u32, BTreeMap<String, sass::Function>>;

/// Every module's SASS from nvdisasm's text of each (`(module, text)`), parsed once per run
/// (a batch judged per case decides every case on it).
pub fn sass_of(texts: &[(u32, String)]) -> Sass {
    texts.iter().map(|(m, t)| (*m, sass::parse(t))).collect()
}

/// fencecheck's outcome of a finished run (the same report as globalcheck's when both ran),
/// once the run's own conditions are judged. Public for tests on captured reports and SASS.
pub fn decide(
    exit: &Exit,
    rep: &Report,
    h: &Handoffs,
    sass: &Sass,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
    log: &mut String,
) -> Outcome {
    if let Some(e) = h.errors.first() {
        return Outcome::Inconclusive(format!("fencecheck: {e}"));
    }
    let j = judge(rep, h, sass, tables, root);
    let (errors, warnings): (Vec<_>, Vec<_>) =
        j.findings.into_iter().partition(|f| f.level == "Error");
    for w in &warnings {
        log.push_str(&format!("fencecheck warning (not counted): {}\n", w.line()));
    }
    for u in &j.unknown {
        log.push_str(&format!("fencecheck: not judged: {u}\n"));
    }
    for c in &j.coherent {
        log.push_str(&format!("fencecheck: judged coherent: {c}\n"));
    }
    if !errors.is_empty() {
        return Outcome::Findings(errors);
    }
    if let Exit::Code(c) = exit {
        if *c != 0 {
            return Outcome::Inconclusive(format!(
                "the target exited {c} without a fencecheck finding (a failed launch leaves nothing to judge)"
            ));
        }
    }
    if let Some(u) = j.unrecorded.first() {
        return Outcome::Inconclusive(format!("{FENCE_CANNOT_JUDGE}{u}"));
    }
    if let Some(u) = j.unknown.first() {
        return Outcome::Inconclusive(format!("{FENCE_CANNOT_JUDGE}{u}"));
    }
    // A handoff through a volatile flag or an atomic_ref store is no handoff to the device
    // (it sees plain stores): its races between blocks stand for handoffs it never checked. A
    // race between two strong accesses (volatile, relaxed `atomic_ref`: CUB's decoupled
    // look-back reads and writes its tile status so) is none: data read atomically needs no
    // fence. Only a pair with a plain access is blind.
    for l in &rep.launches {
        let blind = l.findings.iter().any(|f| {
            f.scope == "blocks"
                && report::distrust(rep, tables, l, f) == Some(report::Distrust::StrongAccesses)
        });
        if blind {
            return Outcome::Inconclusive(format!(
                "{FENCE_CANNOT_JUDGE}launch {} of {} hands data between blocks through volatile or atomic_ref loads and stores, which the tool does not see as handoffs",
                l.launch, l.kernel
            ));
        }
    }
    let n = rep.stepped_aside();
    if n > 0 {
        return Outcome::Inconclusive(format!(
            "{FENCE_CANNOT_JUDGE}{n} kernel launch(es) of CUDA graphs were stepped aside (not instrumented)"
        ));
    }
    Outcome::Clean
}
