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
//!   query, a free (it synchronizes the device), and a synchronous copy other than device to
//!   device (it returns once done) join into the host thread; a synchronous memset does only
//!   for host-pinned or managed memory (it is asynchronous otherwise).
//!
//! Each access keeps its epoch (its component and that component's count); `a` happens before
//! `b` when `a`'s count is at most `b`'s clock at `a`'s component, an O(1) test. Per allocation
//! the accesses since the last covering write are kept (a later access that covers an earlier
//! one it is ordered after replaces it). Two accesses race when their ranges overlap, at least one
//! writes, and neither happens before the other.
//!
//! A kernel whose arguments were not read ([`blind`]) may have touched anything: the run is
//! inconclusive unless every other access (and every other such launch) is ordered with it, in
//! which case nothing it touched can race. A stream-ordered free (`cudaFreeAsync`) writes its
//! whole allocation on its stream (racing what is not ordered before it); the allocation's
//! history ends there.
//!
//! A kernel's accesses are not recorded: it "may touch" every allocation a pointer word of its
//! arguments points into, reading and writing. Such a race is a warning unless it is near
//! certain: the kernel was given exactly the first byte of the other operation's range, and the
//! other operation writes, or the kernel's parameter is a pointer to non-const (its mangled
//! name says so). Races between host threads are warnings too (threads synchronize in ways no
//! callback sees).

use std::collections::{BTreeMap, HashMap, HashSet};

pub use super::streams_trace::{blind, param_consts, Access, Judged, Op, Race};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Legacy,
    PerThread(u64),
    Handle(u64),
    Host(u64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Legacy,
    Blocking,
    NonBlocking,
}

type Vc = Vec<u32>;

fn join(a: &mut Vc, b: &Vc) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

#[derive(Clone)]
struct Entry {
    lo: u64,
    hi: u64,
    comp: usize,
    epoch: u32,
    /// For a kernel: the pointer words it was given and whether that parameter is a pointer to
    /// const (`None`: not known).
    ptrs: Vec<(u64, Option<bool>)>,
    acc: Access,
}

#[derive(Default)]
struct Model {
    comps: HashMap<Key, usize>,
    clocks: Vec<Vc>,
    kinds: HashMap<usize, Kind>,
    /// Handles that are the legacy or a per-thread default stream.
    alias: HashMap<u64, Key>,
    /// Handles of streams the program created (a public handle other than 0, 1 and 2).
    created: HashSet<u64>,
    /// Per stream component, its latest launch whose arguments were not read: (epoch, what).
    blind: HashMap<usize, (u32, String)>,
    /// A launch not read is unordered with something: the run has been found undecidable.
    blind_hit: bool,
    flags: HashMap<u64, u32>,
    events: HashMap<u64, Vc>,
    allocs: BTreeMap<u64, (u64, String)>,
    shadow: BTreeMap<u64, Vec<Entry>>,
    threads: Vec<u64>,
    out: Judged,
}

/// The trace's lines -> the model's verdict.
pub fn judge(text: &str) -> Judged {
    let mut m = Model::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Op>(line) {
            Ok(op) => m.op(i, op),
            Err(e) => m.out.errors.push(format!("trace line {}: {e}", i + 1)),
        }
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

    fn host(&mut self, t: u64) -> usize {
        if !self.threads.contains(&t) {
            self.threads.push(t);
        }
        self.comp(Key::Host(t))
    }

    /// The stream of handle `s` given as `api` to its call by thread `t`: 0 and 1 are the legacy
    /// default stream, 2 the per-thread one (and the handle is remembered as such).
    fn stream(&mut self, t: u64, s: u64, api: u64) -> usize {
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

    fn name(&self, c: usize) -> String {
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

    fn host_joins(&mut self, t: u64, c: usize) {
        let h = self.host(t);
        let v = self.clocks[c].clone();
        join(&mut self.clocks[h], &v);
    }

    fn alloc_of(&self, addr: u64) -> Option<(u64, u64, &str)> {
        let (&b, (size, kind)) = self.allocs.range(..=addr).next_back()?;
        (addr < b + size).then_some((b, *size, kind.as_str()))
    }

    fn op(&mut self, line: usize, op: Op) {
        self.out.operations += 1;
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
                // In stream order: a write of the whole allocation on its stream, then no history.
                let sc = self.stream(t, s, api);
                self.issue(t, sc);
                if let Some((b, size, _)) = self.alloc_of(base) {
                    let acc = self.access(line, "cudaFreeAsync".into(), true, false, sc, site, t);
                    self.touch(b, b, b + size, sc, Vec::new(), acc);
                }
                self.allocs.remove(&base);
                self.shadow.remove(&base);
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
                // A stream the program created is no default stream, whatever `api` says (run 22's
                // recorder wrote 0 for every launch: the launch callback's apiStream is for graphs).
                let api = if api <= 1 && self.created.contains(&s) {
                    s.max(3)
                } else {
                    api
                };
                let sc = self.stream(t, s, api);
                self.issue(t, sc);
                if let Some(why) = blind(&name, &args, args_known, params, &args_why) {
                    let what = format!("kernel {name} on {} ({why})", self.name(sc));
                    self.blind_launch(what, sc);
                }
                let consts = param_consts(&name);
                let mut by_alloc: BTreeMap<u64, Vec<(u64, Option<bool>)>> = BTreeMap::new();
                for (i, p) in args {
                    if let Some((b, _, _)) = self.alloc_of(p) {
                        let konst = consts.get(i as usize).copied().flatten();
                        by_alloc.entry(b).or_default().push((p, konst));
                    }
                }
                for (b, ptrs) in by_alloc {
                    let size = self.allocs[&b].0;
                    // Only pointers to const (by its mangled name) make a kernel a reader.
                    let write = ptrs.iter().any(|(_, k)| *k != Some(true));
                    let acc = self.access(
                        line,
                        format!("kernel {name}"),
                        write,
                        true,
                        sc,
                        site.clone(),
                        t,
                    );
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
                self.issue(t, sc);
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
                let r = self.access(line, how.clone(), false, pitched, sc, site.clone(), t);
                self.range(src, size, sc, r);
                let w = self.access(line, how, true, pitched, sc, site, t);
                self.range(dst, size, sc, w);
                if !is_async && dir != 4 {
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
                let w = self.access(line, what, true, pitched, sc, site, t);
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
                let acc = self.access(line, what.into(), write, false, h, site, t);
                self.range(addr, 1, h, acc);
            }
            Op::Guard { ok, base, size } => {
                if !ok {
                    self.unjudged(format!(
                        "host accesses to the {size} bytes at 0x{base:x} are not seen (their pages could not be guarded)"
                    ));
                }
            }
            Op::Unjudged { why } => self.unjudged(why),
        }
    }

    /// A launch that may have touched anything: undecidable if an access not ordered before it
    /// is still in the history, or another such launch is not.
    fn blind_launch(&mut self, what: String, c: usize) {
        let now = self.clocks[c].clone();
        let before =
            |comp: usize, epoch: u32| comp == c || now.get(comp).is_some_and(|n| *n >= epoch);
        let other = self
            .shadow
            .values()
            .flatten()
            .find(|e| !before(e.comp, e.epoch))
            .map(|e| format!("{} on {}", e.acc.what, e.acc.stream))
            .or_else(|| {
                self.blind
                    .iter()
                    .find(|(k, (epoch, _))| !before(**k, *epoch))
                    .map(|(_, (_, w))| w.clone())
            });
        if let Some(other) = other {
            self.blind_unordered(&what, &other);
        } else if !self.out.blind.contains(&what) {
            self.out.blind.push(what.clone());
        }
        self.blind.insert(c, (now[c], what));
    }

    fn blind_unordered(&mut self, what: &str, other: &str) {
        if !self.blind_hit {
            self.blind_hit = true;
            self.unjudged(format!(
                "{what} may have touched any memory, and it is not ordered with {other}"
            ));
        }
    }

    fn unjudged(&mut self, why: String) {
        if !self.out.unjudged.contains(&why) {
            self.out.unjudged.push(why);
        }
    }

    fn device_sync(&mut self, t: u64) {
        let streams: Vec<usize> = self
            .comps
            .iter()
            .filter(|(k, _)| !matches!(k, Key::Host(_)))
            .map(|(_, c)| *c)
            .collect();
        for c in streams {
            self.host_joins(t, c);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn access(
        &self,
        line: usize,
        what: String,
        write: bool,
        may: bool,
        c: usize,
        site: Vec<u64>,
        t: u64,
    ) -> Access {
        Access {
            line,
            what,
            write,
            may,
            stream: self.name(c),
            site,
            thread: t,
        }
    }

    fn range(&mut self, addr: u64, size: u64, c: usize, acc: Access) {
        if size == 0 {
            return;
        }
        // Memory no allocation callback announced (pageable host memory) shares one list.
        let key = self.alloc_of(addr).map_or(0, |(b, _, _)| b);
        self.touch(key, addr, addr.saturating_add(size), c, Vec::new(), acc);
    }

    fn touch(
        &mut self,
        key: u64,
        lo: u64,
        hi: u64,
        c: usize,
        ptrs: Vec<(u64, Option<bool>)>,
        acc: Access,
    ) {
        let now = self.clocks[c].clone();
        if !self.blind_hit {
            let unordered = self
                .blind
                .iter()
                .find(|(k, (epoch, _))| **k != c && now.get(**k).is_none_or(|n| n < epoch))
                .map(|(_, (_, w))| w.clone());
            if let Some(w) = unordered {
                self.blind_unordered(&w, &format!("{} on {}", acc.what, acc.stream));
            }
        }
        let e = Entry {
            lo,
            hi,
            comp: c,
            epoch: now[c],
            ptrs,
            acc,
        };
        let host_mem = self
            .alloc_of(lo)
            .is_some_and(|(_, _, k)| matches!(k, "pinned" | "mapped" | "managed"));
        let list = self.shadow.entry(key).or_default();
        let mut found = Vec::new();
        for old in list.iter() {
            let overlap = old.lo < hi && lo < old.hi;
            let ordered = old.comp == c || now.get(old.comp).copied().unwrap_or(0) >= old.epoch;
            if overlap && (old.acc.write || e.acc.write) && !ordered {
                found.push(race(old, &e, host_mem));
            }
        }
        // An earlier access ordered before this one and inside its range says nothing more.
        list.retain(|old| {
            let ordered = old.comp == c || now.get(old.comp).copied().unwrap_or(0) >= old.epoch;
            !(ordered
                && old.lo >= lo
                && old.hi <= hi
                && !e.acc.may
                && (e.acc.write || !old.acc.write))
        });
        list.push(e);
        for r in found {
            let dup = self.out.races.iter().any(|x| {
                x.earlier.site == r.earlier.site
                    && x.later.site == r.later.site
                    && x.earlier.what == r.earlier.what
                    && x.later.what == r.later.what
            });
            if !dup {
                self.out.races.push(r);
            }
        }
    }
}

fn race(old: &Entry, new: &Entry, host_mem: bool) -> Race {
    let addr = old.lo.max(new.lo);
    let host = old.acc.what.starts_with("host") || new.acc.what.starts_with("host");
    let kernel_sure = |k: &Entry, other: &Entry| {
        !other.acc.may
            && k.ptrs
                .iter()
                .any(|(p, konst)| *p == other.lo && (other.acc.write || *konst == Some(false)))
    };
    let certain = match (old.acc.may, new.acc.may) {
        (false, false) => true,
        (true, false) => kernel_sure(old, new),
        (false, true) => kernel_sure(new, old),
        (true, true) => false,
    } && old.acc.thread == new.acc.thread;
    Race {
        earlier: old.acc.clone(),
        later: new.acc.clone(),
        host: host && host_mem,
        certain,
        addr,
    }
}
