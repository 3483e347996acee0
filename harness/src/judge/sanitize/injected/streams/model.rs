//! streamcheck's happens-before model: races between streams, copies and the host.
//!
//! The injected tool (`harness/globalcheck/streams.cpp`) only records: one JSON line per CUDA
//! operation it sees (kernel launches with the pointer words of their arguments, copies, memsets,
//! event records and waits, synchronizations, allocations, host accesses caught by guard pages),
//! each with its host thread, stream and call site. This module decides, so that the model is
//! tested on hand-checked and captured traces without a GPU.
//!
//! The model is vector clocks, one component per host thread and per stream:
//! - an operation issued by host thread `t` on stream `S` joins `t`'s clock into `S` first; on the
//!   legacy default stream it also joins every blocking stream (created without
//!   `cudaStreamNonBlocking`; the per-thread default stream is blocking), and an operation on a
//!   blocking stream joins the legacy stream's clock (the legacy stream's implicit barriers);
//! - `cudaEventRecord` snapshots the stream's clock (a later record overwrites it: event reuse),
//!   `cudaStreamWaitEvent` joins the snapshot of that moment into the waiting stream;
//! - `cudaStreamSynchronize`, `cudaEventSynchronize`, `cudaDeviceSynchronize`, a successful
//!   query, a free (it synchronizes the device), and a synchronous copy that returns once done
//!   join into the host thread. CUDA's "API synchronization behavior": a synchronous copy from
//!   pinned memory to the device, from the device to any host memory, or between host buffers
//!   returns once done; from device to device it does not wait (nor, taken the cautious way, does
//!   one of unknown direction); from pageable host memory to the device it synchronizes its
//!   stream first and returns once the source is staged, the write to the device perhaps not
//!   done: the host is ordered after the source's read, not after the write. A synchronous memset
//!   joins only for host-pinned, mapped or managed memory (it is asynchronous otherwise).
//! - An operation on a stream the program created is on that stream whatever its `api` says.
//!
//! Each access keeps its epoch (its component and that component's count); `a` happens before
//! `b` when `a`'s count is at most `b`'s clock at `a`'s component, an O(1) test. Per allocation
//! the accesses since the last covering write are kept (a later access that covers an earlier
//! one it is ordered after replaces it). Two accesses race when their ranges overlap, at least one
//! writes, and neither happens before the other.
//!
//! A kernel whose arguments were not read ([`blind`]), or that may reach memory no argument
//! names ([`reach`]: a parameter that is a pointer to pointers, to `void` or to a struct, a struct
//! by value holding a pointer, types not understood or not mangled; or, when the program has
//! `__device__`/`__constant__` variables, any kernel), may have touched anything: the run is
//! inconclusive unless every other access (and every other such launch) is ordered with it, in
//! which case nothing it touched can race. A stream-ordered free (`cudaFreeAsync`) writes its
//! whole allocation on its stream (racing what is not ordered before it); the allocation then
//! stays as freed memory until an allocation takes it again, and any access to it is reported:
//! a race with the free when not ordered after it, a use after free when ordered.
//!
//! Host accesses are those the recorder's guard pages caught; a guard it could not set, or one
//! lifted by an access beside the guarded bytes while a device operation may still touch them,
//! leaves the run inconclusive.
//!
//! A kernel's accesses are not recorded: it "may touch" every allocation a pointer word of its
//! arguments points into, reading and writing. Such a race is a warning unless it is near
//! certain: the kernel was given exactly the first byte of the other operation's range, and the
//! other operation writes, or the kernel's parameter is a pointer to non-const (its mangled
//! name says so). Races between host threads are warnings too (threads synchronize in ways no
//! callback sees). Either kind is measured before it is reported (streamcheck's `confirm.rs`): in a
//! confirm run's trace a launch line is followed by its footprint, the bytes it read and wrote
//! per allocation, which replace its "may touch" ([`Measured`]).

use std::collections::{BTreeMap, HashMap, HashSet};

pub use super::trace::{blind, param_consts, reach, Access, Judged, Op, Origin, Race};

/// What a stream-ordered free is called in the history (and in findings).
pub(super) const FREE_ASYNC: &str = "cudaFreeAsync";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
    Legacy,
    PerThread(u64),
    Handle(u64),
    Host(u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Legacy,
    Blocking,
    NonBlocking,
}

type Vc = Vec<u32>;

pub(super) fn join(a: &mut Vc, b: &Vc) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

#[derive(Clone)]
pub(super) struct Entry {
    pub(super) lo: u64,
    pub(super) hi: u64,
    pub(super) comp: usize,
    pub(super) epoch: u32,
    /// For a kernel: the pointer words it was given and whether that parameter is a pointer to
    /// const (`None`: not known).
    pub(super) ptrs: Vec<(u64, Option<bool>)>,
    pub(super) acc: Access,
}

#[derive(Default)]
pub(super) struct Model {
    pub(super) comps: HashMap<Key, usize>,
    pub(super) clocks: Vec<Vc>,
    pub(super) kinds: HashMap<usize, Kind>,
    /// Handles that are the legacy or a per-thread default stream.
    pub(super) alias: HashMap<u64, Key>,
    /// Handles of streams the program created (a public handle other than 0, 1 and 2).
    pub(super) created: HashSet<u64>,
    /// Per stream component, its latest launch whose arguments were not read: (epoch, what).
    pub(super) blind: HashMap<usize, (u32, String)>,
    /// A launch not read is unordered with something: the run has been found undecidable.
    pub(super) blind_hit: bool,
    pub(super) flags: HashMap<u64, u32>,
    pub(super) events: HashMap<u64, Vc>,
    pub(super) allocs: BTreeMap<u64, (u64, String)>,
    pub(super) shadow: BTreeMap<u64, Vec<Entry>>,
    pub(super) threads: Vec<u64>,
    pub(super) out: Judged,
    /// What the next kernel launch touched, when the trace measured it (a footprint line).
    pub(super) measured: Option<Measured>,
}

/// A launch's footprint as a confirm run measured it: the bounds of the bytes read and written
/// per allocation, and whether some access fell outside every allocation the tool tracked.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Measured {
    pub(super) untracked: bool,
    pub(super) reads: Vec<(u64, u64)>,
    pub(super) writes: Vec<(u64, u64)>,
}

/// Each footprint line given to its launch: the first footprint of the same kernel and stream
/// after a launch line and before the next launch's (the tool writes it at the launch's end,
/// launches one at a time), keyed by the launch's place among `ops`.
fn footprints(ops: &[(usize, Op)]) -> HashMap<usize, Measured> {
    let mut out = HashMap::new();
    for (i, (_, op)) in ops.iter().enumerate() {
        let Op::Kernel { name, s, .. } = op else {
            continue;
        };
        for (_, later) in &ops[i + 1..] {
            match later {
                Op::Kernel { .. } => break,
                Op::Footprint {
                    name: n,
                    s: fs,
                    untracked,
                    reads,
                    writes,
                } if n == name && fs == s => {
                    out.insert(
                        i,
                        Measured {
                            untracked: *untracked,
                            reads: reads.clone(),
                            writes: writes.clone(),
                        },
                    );
                    break;
                }
                _ => {}
            }
        }
    }
    out
}

/// The trace's lines -> the model's verdict.
pub fn judge(text: &str) -> Judged {
    let mut m = Model::default();
    let mut ops = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Op>(line) {
            Ok(op) => ops.push((i, op)),
            Err(e) => m.out.errors.push(format!("trace line {}: {e}", i + 1)),
        }
    }
    let mut measured = footprints(&ops);
    for (k, (i, op)) in ops.into_iter().enumerate() {
        m.measured = measured.remove(&k);
        m.op(i, op);
    }
    if m.blind_hit {
        m.out.blind.clear();
    }
    m.out
}

impl Model {
    fn comp(&mut self, k: Key) -> usize {
        if let Some(&c) = self.comps.get(&k) {
            return c;
        }
        let c = self.clocks.len();
        self.comps.insert(k, c);
        let mut vc = vec![0; c + 1];
        vc[c] = 1;
        self.clocks.push(vc);
        let kind = match k {
            Key::Legacy => Kind::Legacy,
            Key::Handle(h) if self.flags.get(&h).is_some_and(|f| f & 1 != 0) => Kind::NonBlocking,
            _ => Kind::Blocking,
        };
        self.kinds.insert(c, kind);
        c
    }

    pub(super) fn host(&mut self, t: u64) -> usize {
        if !self.threads.contains(&t) {
            self.threads.push(t);
        }
        self.comp(Key::Host(t))
    }

    /// The stream of handle `s` given as `api` to its call by thread `t`: 0 and 1 are the legacy
    /// default stream, 2 the per-thread one (and the handle is remembered as such).
    /// A stream the program created is that stream whatever `api` says, for every operation
    /// (run 22's recorder wrote 0 for every launch: the launch callback's apiStream is for
    /// graphs).
    fn stream(&mut self, t: u64, s: u64, api: u64) -> usize {
        if self.created.contains(&s) {
            return self.comp(Key::Handle(s));
        }
        let key = match api {
            0 | 1 => Key::Legacy,
            2 => Key::PerThread(t),
            _ => *self.alias.get(&s).unwrap_or(&Key::Handle(s)),
        };
        if api <= 2 && s != 0 {
            self.alias.insert(s, key);
        }
        self.comp(key)
    }

    pub(super) fn name(&self, c: usize) -> String {
        let k = self.comps.iter().find(|(_, v)| **v == c).map(|(k, _)| *k);
        match k {
            Some(Key::Legacy) => "the legacy default stream".into(),
            Some(Key::PerThread(t)) => format!("the per-thread default stream of thread {t}"),
            Some(Key::Handle(h)) => match self.kinds.get(&c) {
                Some(Kind::NonBlocking) => format!("non-blocking stream 0x{h:x}"),
                _ => format!("stream 0x{h:x}"),
            },
            Some(Key::Host(t)) => format!("host thread {t}"),
            None => "?".into(),
        }
    }

    /// Issues an operation on stream component `sc` from thread `t`: the stream's clock after it.
    fn issue(&mut self, t: u64, sc: usize) -> usize {
        let h = self.host(t);
        let hv = self.clocks[h].clone();
        join(&mut self.clocks[sc], &hv);
        let legacy = self.comps.get(&Key::Legacy).copied();
        match (self.kinds[&sc], legacy) {
            (Kind::Legacy, _) => {
                let blocking: Vec<usize> = (0..self.clocks.len())
                    .filter(|c| self.kinds.get(c) == Some(&Kind::Blocking))
                    .collect();
                for b in blocking {
                    let v = self.clocks[b].clone();
                    join(&mut self.clocks[sc], &v);
                }
            }
            (Kind::Blocking, Some(l)) => {
                let v = self.clocks[l].clone();
                join(&mut self.clocks[sc], &v);
            }
            _ => {}
        }
        let vc = &mut self.clocks[sc];
        if vc.len() <= sc {
            vc.resize(sc + 1, 0);
        }
        vc[sc] += 1;
        // The host's later actions are after its earlier ones (its own count moves on).
        self.clocks[h][h] += 1;
        sc
    }

    pub(super) fn host_joins(&mut self, t: u64, c: usize) {
        let h = self.host(t);
        let v = self.clocks[c].clone();
        join(&mut self.clocks[h], &v);
    }

    pub(super) fn alloc_of(&self, addr: u64) -> Option<(u64, u64, &str)> {
        let (&b, (size, kind)) = self.allocs.range(..=addr).next_back()?;
        (addr < b + size).then_some((b, *size, kind.as_str()))
    }

    fn op(&mut self, line: usize, op: Op) {
        if !matches!(op, Op::Footprint { .. }) {
            self.out.operations += 1;
        }
        match op {
            Op::Start { exe, .. } => {
                self.out.started = true;
                self.out.exe = exe;
            }
            Op::Stream { s, cu, flags } => {
                self.flags.insert(s, flags);
                if cu > 2 {
                    self.created.insert(s);
                }
            }
            Op::Alloc { base, size, kind } => {
                // Memory a stream-ordered free released, handed out again: its history ends.
                let end = base.saturating_add(size);
                let reused: Vec<u64> = (self.allocs.range(..end))
                    .filter(|(b, (n, k))| k == "freed" && b.saturating_add(*n) > base)
                    .map(|(b, _)| *b)
                    .collect();
                for b in reused {
                    self.allocs.remove(&b);
                    self.shadow.remove(&b);
                }
                self.allocs.insert(base, (size, kind));
                self.shadow.remove(&base);
            }
            Op::Free {
                base,
                t,
                s,
                api,
                is_async: true,
                site,
            } => {
                // In stream order: a write of the whole allocation on its stream. The allocation
                // stays as freed memory until an allocation takes it again: any later access to
                // it races the free, or is a use after it.
                let sc = self.stream(t, s, api);
                self.issue(t, sc);
                if let Some((b, size, _)) = self.alloc_of(base) {
                    let from = Origin {
                        line,
                        site,
                        thread: t,
                    };
                    let acc = self.access(from, FREE_ASYNC.into(), true, false, sc);
                    self.touch(b, b, b + size, sc, Vec::new(), acc);
                    self.allocs.insert(b, (size, "freed".into()));
                }
            }
            Op::Free { base, t, .. } => {
                // cudaFree and cudaFreeHost synchronize the device first.
                self.device_sync(t);
                self.allocs.remove(&base);
                self.shadow.remove(&base);
            }
            Op::Kernel {
                t,
                s,
                api,
                name,
                args,
                args_known,
                params,
                args_why,
                site,
            } => {
                let sc = self.stream(t, s, api);
                self.issue(t, sc);
                // What it touched is unknown (arguments not read), or it may reach memory that
                // no argument names (through pointers held in memory, or `__device__` variables).
                let why = blind(&name, &args, args_known, params, &args_why)
                    .or_else(|| reach(&name, &args))
                    .or_else(|| self.module_memory());
                if let Some(why) = why {
                    let what = format!("kernel {name} on {} ({why})", self.name(sc));
                    self.blind_launch(what, sc);
                }
                let from = Origin {
                    line,
                    site: site.clone(),
                    thread: t,
                };
                // Measured: what it read and wrote are accesses like a copy's; an allocation its
                // arguments name that it did not touch is no access (unless some access fell
                // where the tool tracked nothing: then that one is still "may touch").
                let mut seen: HashSet<u64> = HashSet::new();
                let measured = self.measured.take();
                if let Some(fp) = &measured {
                    self.out.measured += 1;
                    for (write, ranges) in [(false, &fp.reads), (true, &fp.writes)] {
                        for &(lo, hi) in ranges.iter().filter(|(lo, hi)| lo < hi) {
                            let key = self.alloc_of(lo).map_or(0, |(b, _, _)| b);
                            seen.insert(key);
                            let what = format!("kernel {name}");
                            let acc = self.access(from.clone(), what, write, false, sc);
                            self.touch(key, lo, hi, sc, Vec::new(), acc);
                        }
                    }
                }
                let unmeasured = |b: &u64| match &measured {
                    None => true,
                    Some(fp) => fp.untracked && !seen.contains(b),
                };
                let consts = param_consts(&name);
                let mut by_alloc: BTreeMap<u64, Vec<(u64, Option<bool>)>> = BTreeMap::new();
                for (i, p) in args {
                    if let Some((b, _, _)) = self.alloc_of(p) {
                        let konst = consts.get(i as usize).copied().flatten();
                        by_alloc.entry(b).or_default().push((p, konst));
                    }
                }
                for (b, ptrs) in by_alloc.into_iter().filter(|(b, _)| unmeasured(b)) {
                    let size = self.allocs[&b].0;
                    // Only pointers to const (by its mangled name) make a kernel a reader.
                    let write = ptrs.iter().any(|(_, k)| *k != Some(true));
                    let acc = self.access(from.clone(), format!("kernel {name}"), write, true, sc);
                    self.touch(b, b, b + size, sc, ptrs, acc);
                }
            }
            Op::Memcpy {
                t,
                s,
                api,
                src,
                dst,
                size,
                dir,
                is_async,
                pitched,
                site,
            } => {
                let sc = self.stream(t, s, api);
                let how = format!(
                    "memcpy {}{}",
                    [
                        "unknown direction",
                        "host-to-host",
                        "host-to-device",
                        "device-to-host",
                        "device-to-device"
                    ]
                    .get(dir as usize)
                    .unwrap_or(&"unknown direction"),
                    if is_async { " (async)" } else { "" }
                );
                // CUDA's "API synchronization behavior": a synchronous copy from pageable host
                // memory to the device synchronizes its stream first, and returns once the source
                // is staged, the DMA to the device perhaps not done: the host may reuse the source
                // (its read is over) but is not ordered after the write. From pinned memory to
                // the device, from the device to any host memory, and between host buffers, it
                // returns once done; from device to device it does not wait; nor, taken the
                // cautious way, does a copy of unknown direction.
                let staged = !is_async
                    && dir == 2
                    && !self
                        .alloc_of(src)
                        .is_some_and(|(_, _, k)| matches!(k, "pinned" | "mapped" | "managed"));
                if staged {
                    self.host_joins(t, sc);
                }
                self.issue(t, sc);
                let reader = if staged {
                    let h = self.host(t);
                    self.clocks[h][h] += 1;
                    h
                } else {
                    sc
                };
                let from = Origin {
                    line,
                    site,
                    thread: t,
                };
                let r = self.access(from.clone(), how.clone(), false, pitched, reader);
                self.range(src, size, reader, r);
                let w = self.access(from, how, true, pitched, sc);
                self.range(dst, size, sc, w);
                if !is_async && matches!(dir, 1..=3) && !staged {
                    self.host_joins(t, sc);
                }
            }
            Op::Memset {
                t,
                s,
                api,
                addr,
                size,
                is_async,
                pitched,
                site,
            } => {
                let sc = self.stream(t, s, api);
                self.issue(t, sc);
                let what = format!("memset{}", if is_async { " (async)" } else { "" });
                let from = Origin {
                    line,
                    site,
                    thread: t,
                };
                let w = self.access(from, what, true, pitched, sc);
                self.range(addr, size, sc, w);
                let host_visible = self
                    .alloc_of(addr)
                    .is_some_and(|(_, _, k)| matches!(k, "pinned" | "managed" | "mapped"));
                if !is_async && host_visible {
                    self.host_joins(t, sc);
                }
            }
            Op::Record { t, s, api, ev, .. } => {
                let sc = self.stream(t, s, api);
                self.issue(t, sc);
                self.events.insert(ev, self.clocks[sc].clone());
            }
            Op::Wait { t, s, api, ev, .. } => {
                let sc = self.stream(t, s, api);
                self.issue(t, sc);
                if let Some(v) = self.events.get(&ev).cloned() {
                    join(&mut self.clocks[sc], &v);
                }
            }
            Op::EventSync { t, ev } => {
                if let Some(v) = self.events.get(&ev).cloned() {
                    let h = self.host(t);
                    join(&mut self.clocks[h], &v);
                }
            }
            Op::StreamSync { t, s, api } => {
                let sc = self.stream(t, s, api);
                if self.kinds[&sc] == Kind::Legacy {
                    // Waiting for the legacy stream waits for the blocking streams' work too.
                    self.issue(t, sc);
                }
                self.host_joins(t, sc);
            }
            Op::CtxSync { t } => self.device_sync(t),
            Op::Host {
                t,
                addr,
                write,
                in_api,
                site,
            } => {
                if in_api {
                    return;
                }
                let h = self.host(t);
                self.clocks[h][h] += 1;
                let what = if write { "host write" } else { "host read" };
                let from = Origin {
                    line,
                    site,
                    thread: t,
                };
                let acc = self.access(from, what.into(), write, false, h);
                self.range(addr, 1, h, acc);
            }
            Op::Guard { ok, base, size } => {
                if !ok {
                    self.unjudged(format!(
                        "host accesses to the {size} bytes at 0x{base:x} are not seen (their pages could not be guarded)"
                    ));
                }
            }
            Op::Unguard {
                t,
                base,
                size,
                addr,
            } => self.unguard(line, t, base, size, addr),
            Op::Unjudged { why } => self.unjudged(why),
            // Given to its launch before the launch's line is modelled (`footprints`).
            Op::Footprint { .. } => {}
        }
    }
}
