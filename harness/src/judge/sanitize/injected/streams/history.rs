//! streamcheck's model, continued: the per-allocation history of accesses and what makes a
//! run undecidable (launches that may touch anything, guards lifted, module memory): more
//! methods of [`super::model::Model`], whose state is `pub(super)`, private to `streams/`.

use super::model::*;

impl Model {
    /// A launch that may have touched anything: undecidable if an access not ordered before it
    /// is still in the history, or another such launch is not.
    pub(super) fn blind_launch(&mut self, what: String, c: usize) {
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

    pub(super) fn blind_unordered(&mut self, what: &str, other: &str) {
        if !self.blind_hit {
            self.blind_hit = true;
            self.unjudged(format!(
                "{what} may have touched any memory, and it is not ordered with {other}"
            ));
        }
    }

    /// A guard lifted by an access beside it: what the host does to the guarded bytes from here
    /// on is not seen, so a device operation (or a launch not read) that may still touch them,
    /// not ordered before thread `t`, leaves the run undecidable.
    pub(super) fn unguard(&mut self, line: usize, t: u64, base: u64, size: u64, addr: u64) {
        let h = self.host(t);
        let now = self.clocks[h].clone();
        let hi = base.saturating_add(size);
        let key = self.alloc_of(base).map_or(0, |(b, _, _)| b);
        let device = |c: usize| !matches!(self.key_of(c), Some(Key::Host(_)));
        let pending = |comp: usize, epoch: u32| now.get(comp).is_none_or(|n| *n < epoch);
        let open = (self.shadow.get(&key).into_iter().flatten())
            .find(|e| e.lo < hi && base < e.hi && device(e.comp) && pending(e.comp, e.epoch))
            .map(|e| format!("{} on {}", e.acc.what, e.acc.stream))
            .or_else(|| {
                (self.blind.iter())
                    .find(|(c, (epoch, _))| pending(**c, *epoch))
                    .map(|(_, (_, w))| w.clone())
            });
        if let Some(open) = open {
            self.unjudged(format!(
                "host accesses to the {size} bytes at 0x{base:x} are not seen after trace line {}: \
                 an access at 0x{addr:x}, on one of their pages but outside them, lifted their \
                 guard while {open} may still touch them",
                line + 1
            ));
        }
    }

    pub(super) fn key_of(&self, c: usize) -> Option<Key> {
        self.comps.iter().find(|(_, v)| **v == c).map(|(k, _)| *k)
    }

    /// Why any kernel may touch memory no argument names: the program has module memory
    /// (`__device__` and `__constant__` variables), which a kernel uses by name, and whose
    /// pointers lead anywhere.
    pub(super) fn module_memory(&self) -> Option<String> {
        let bytes: u64 = (self.allocs.values())
            .filter(|(_, k)| k == "module")
            .map(|(n, _)| n)
            .sum();
        (bytes > 0).then(|| {
            format!(
                "the program has {bytes} bytes of __device__ or __constant__ variables, which a \
                 kernel may use, and follow the pointers they hold, without naming them"
            )
        })
    }

    pub(super) fn unjudged(&mut self, why: String) {
        if !self.out.unjudged.contains(&why) {
            self.out.unjudged.push(why);
        }
    }

    pub(super) fn device_sync(&mut self, t: u64) {
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

    /// One access of the operation `from`, on component `c`: `what` it is, whether it writes,
    /// and whether it is a kernel's conservative "may touch".
    pub(super) fn access(
        &self,
        from: Origin,
        what: String,
        write: bool,
        may: bool,
        c: usize,
    ) -> Access {
        Access {
            line: from.line,
            what,
            write,
            may,
            stream: self.name(c),
            site: from.site,
            thread: from.thread,
        }
    }

    pub(super) fn range(&mut self, addr: u64, size: u64, c: usize, acc: Access) {
        if size == 0 {
            return;
        }
        // Memory no allocation callback announced (pageable host memory) shares one list.
        let key = self.alloc_of(addr).map_or(0, |(b, _, _)| b);
        self.touch(key, addr, addr.saturating_add(size), c, Vec::new(), acc);
    }

    pub(super) fn touch(
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
        // Memory a stream-ordered free released: touching it is a use after free when ordered
        // after the free, a race with it when not.
        let freed = self.alloc_of(lo).is_some_and(|(_, _, k)| k == "freed");
        let list = self.shadow.entry(key).or_default();
        let mut found = Vec::new();
        for old in list.iter() {
            let overlap = old.lo < hi && lo < old.hi;
            let ordered = old.comp == c || now.get(old.comp).copied().unwrap_or(0) >= old.epoch;
            let after_free = freed && old.acc.what == FREE_ASYNC;
            if overlap && (((old.acc.write || e.acc.write) && !ordered) || after_free) {
                found.push(race(old, &e, host_mem, after_free));
            }
        }
        // An earlier access ordered before this one and inside its range says nothing more: a
        // later access unordered with it is unordered with this one too. A kernel's "may touch"
        // replaces only another of the same thread whose pointers it was all given (so that
        // what makes a race near certain is kept); a stream-ordered free is never replaced.
        list.retain(|old| {
            let ordered = old.comp == c || now.get(old.comp).copied().unwrap_or(0) >= old.epoch;
            let covers = old.lo >= lo && old.hi <= hi && (e.acc.write || !old.acc.write);
            let as_sure = !e.acc.may
                || (old.acc.may
                    && old.acc.thread == e.acc.thread
                    && old.ptrs.iter().all(|p| e.ptrs.contains(p)));
            old.acc.what == FREE_ASYNC || !(ordered && covers && as_sure)
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

fn race(old: &Entry, new: &Entry, host_mem: bool, after_free: bool) -> Race {
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
        after_free,
        certain,
        addr,
    }
}
