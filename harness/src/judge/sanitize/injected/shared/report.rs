//! sharedcheck's part of the tool's report: whether a run's shared-memory shadow can be trusted,
//! its findings (reads of shared bytes no thread wrote; atomic and plain accesses of one word
//! with no barrier between) as normalized findings, and its log.

use std::collections::BTreeMap;
use std::path::Path;

use crate::judge::sanitize::injected::lines::LineTable;
use crate::judge::sanitize::injected::report::*;
use crate::judge::sanitize::normalize::{self, Finding};

/// Whether `f`, a sharedcheck finding of launch `l`, cannot be trusted, and why. Lane-level
/// pairs are warnings that count for nothing.
pub fn shared_distrust(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    l: &Launch,
    f: &SharedFinding,
) -> Option<Distrust> {
    if f.scope == "lanes" {
        return None;
    }
    if f.kind == "uninitialized-read"
        && l.shared
            .as_ref()
            .is_some_and(|w| w.unseen_writes > 0 || w.cluster)
    {
        return Some(Distrust::UnseenWrites);
    }
    if f.kind == "atomic-plain" && l.named_barriers > 0 {
        return Some(Distrust::NamedBarriers);
    }
    let has_table = u32::try_from(l.module)
        .ok()
        .and_then(|i| report.modules.get(&i))
        .is_some_and(|m| tables.contains_key(&m.module));
    (!has_table).then_some(Distrust::NoLineTable)
}

/// sharedcheck's findings that `keep` accepts, normalized like every tool's: an uninitialized
/// read names its line; an atomic/plain pair names both.
pub fn shared_findings_where(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    root: &Path,
    keep: impl Fn(&Launch, &SharedFinding) -> bool,
) -> Vec<Finding> {
    let mut raw = Vec::new();
    for l in &report.launches {
        for f in l.shared_findings.iter().filter(|f| {
            keep(l, f)
                && !plain_side_is_an_atomic(report, tables, l, f)
                && !is_an_exchange(report, tables, l, f)
        }) {
            let here = location(report, tables, l.module, f.pc_now, root);
            let (level, accesses, what) = if f.kind == "past-end" {
                let end = l.shared.as_ref().map_or(0, |w| w.end);
                let declared = l.shared.as_ref().map_or(0, |w| w.static_bytes + w.dynamic);
                (
                    "Error",
                    if f.now_atomic { "Write" } else { "Read" }.to_string(),
                    format!(
                        "Accesses shared memory past the end of what the block declared ({declared} bytes; {} bytes at window offset {}, the end at {end})",
                        f.bytes, f.offset
                    ),
                )
            } else if f.kind == "uninitialized-read" && f.now_atomic {
                (
                    "Error",
                    "Atomic".to_string(),
                    "An atomic updates shared memory no thread of the block wrote since it started"
                        .to_string(),
                )
            } else if f.kind == "uninitialized-read" {
                (
                    "Error",
                    "Read".to_string(),
                    "Reads shared memory no thread of the block wrote since it started".to_string(),
                )
            } else {
                let then = pc_then(report, l.module, f.pc_now, f.pc_then);
                let (a, b) = if f.now_atomic {
                    ("Plain", "Atomic")
                } else {
                    ("Atomic", "Plain")
                };
                let between = if f.scope == "lanes" {
                    "between lanes of one warp, with no __syncwarp between them"
                } else {
                    "between warps of one block, with no __syncthreads between them"
                };
                (
                    level(&f.scope),
                    format!(
                        "{a} -> {b} {}",
                        location(report, tables, l.module, then, root)
                    ),
                    format!("Atomic and plain access to one shared word {between}"),
                )
            };
            raw.push(Finding {
                kind: "Shared".into(),
                level: level.into(),
                kernel: l.kernel.clone(),
                location: here,
                accesses,
                what,
            });
        }
    }
    normalize::normalized(raw, root)
}

/// Whether `f` is an uninitialized read by an atomic that is an exchange (`atomicExch`: it
/// stores, and reads nothing that must have been written first).
fn is_an_exchange(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    l: &Launch,
    f: &SharedFinding,
) -> bool {
    f.kind == "uninitialized-read"
        && f.now_atomic
        && function_of(report, l.module, f.pc_now).is_some_and(|(m, func, off)| {
            tables
                .get(&m.module)
                .is_some_and(|t| t.is_exchange(func, off))
        })
}

/// Whether `f` is an atomic/plain pair whose plain access is the load of a compare-and-swap loop
/// (a float `atomicAdd` on shared memory, [`LineTable::atomic_emulation`]): two atomics, no race.
fn plain_side_is_an_atomic(
    report: &Report,
    tables: &BTreeMap<u32, LineTable>,
    l: &Launch,
    f: &SharedFinding,
) -> bool {
    if f.kind != "atomic-plain" {
        return false;
    }
    let plain = if f.now_atomic {
        pc_then(report, l.module, f.pc_now, f.pc_then)
    } else {
        f.pc_now
    };
    function_of(report, l.module, plain).is_some_and(|(m, func, off)| {
        tables
            .get(&m.module)
            .is_some_and(|t| t.is_atomic_emulation(func, off))
    })
}

/// [`log`]'s lines for sharedcheck: each launch's window and findings.
pub fn shared_log(report: &Report) -> String {
    let mut s = String::new();
    for l in &report.launches {
        let Some(w) = &l.shared else { continue };
        s.push_str(&format!(
            "sharedcheck: launch {} {} grid {:?} block {:?}: window {} bytes ({} static, {} dynamic{}, {} reserved), {} shared accesses, {} finding(s){}{}{}{}\n",
            l.launch,
            l.kernel,
            l.grid,
            l.block,
            w.bytes,
            w.static_bytes,
            w.dynamic,
            if w.dynamic_known { "" } else { " assumed" },
            w.reserved,
            w.accesses,
            l.shared_findings.len(),
            if w.over_budget { ", over the shadow budget (not judged)" } else { "" },
            if w.untracked + w.unsized_accesses > 0 { format!(", {} access(es) outside the window", w.untracked + w.unsized_accesses) } else { String::new() },
            if w.unseen_writes > 0 { format!(", {} write(s) it cannot see", w.unseen_writes) } else { String::new() },
            if w.dropped > 0 { format!(", {} more dropped (table full)", w.dropped) } else { String::new() },
        ));
        for f in &l.shared_findings {
            s.push_str(&format!(
                "  {} ({}) at shared offset 0x{:x}: block {} thread {}{}, {} time(s)\n",
                f.kind,
                f.scope,
                f.offset,
                f.block_now,
                f.thread_now,
                if f.kind == "atomic-plain" {
                    format!(" against thread {}", f.thread_then)
                } else if f.kind == "past-end" {
                    format!(", {} byte(s) past the declared end 0x{:x}", f.bytes, w.end)
                } else {
                    format!(", bytes 0x{:x} unwritten", f.bytes)
                },
                f.count
            ));
        }
    }
    s
}
