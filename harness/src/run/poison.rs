//! The poison racegate fills memory with before a launch: shared memory (the prelude's
//! `racegate_poison_shared`) and outputs. It changes from trial to trial, so a kernel that reads
//! memory it never wrote gives a different answer each time instead of the same wrong one, and
//! the determinism oracle's own run never shares a pattern with a trial.

/// The poison an output that may stay unwritten always gets (the oracle recognizes it).
pub const FIXED_POISON: u32 = 0xFFFF_FFFF;

/// `n` bytes of `pattern`, repeated little-endian.
pub fn poison_bytes(pattern: u32, n: usize) -> Vec<u8> {
    pattern
        .to_le_bytes()
        .iter()
        .copied()
        .cycle()
        .take(n)
        .collect()
}

/// The poison patterns trials rotate through (then a seeded random word), and the one the
/// judge's own run of a determinism oracle uses, which no trial uses: a kernel that reads
/// memory it never wrote then gives a different answer in every trial than in the judge's run.
pub const POISONS: [u32; 2] = [0xFFFF_FFFF, 0x0000_0000];
pub const JUDGE_POISON: u32 = 0xA5A5_A5A5;

/// The poison of trial `t` of a run started with `master`: 0xFFFFFFFF, zero, or a random word
/// drawn from the trial's seed, in turn from trial to trial. Chosen from the trial's seed alone
/// (`master + t`, as `trial::seed` says), never from `t`: a repro line starts at the failing
/// trial's input set with another master and another trial number, and its trial must get the
/// same poison. Two trials in a row never share one; never [`JUDGE_POISON`].
pub fn poison(master: u64, t: u32) -> u32 {
    let seed = master.wrapping_add(t as u64);
    // `seed % 3` rotates, except across the wrap: u64::MAX and 0 are both 0 mod 3, so the
    // last seed takes 1 (its neighbours take 2 and 0).
    let turn = if seed == u64::MAX { 1 } else { seed % 3 };
    match turn {
        0 => POISONS[0],
        1 => POISONS[1],
        _ => {
            // splitmix64 of the trial's seed: a word with no relation to the data's.
            let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            // bounded: the hash's low 32 bits are the word; the truncation is the point.
            #[allow(clippy::cast_possible_truncation)]
            let w = (z ^ (z >> 31)) as u32;
            match w {
                JUDGE_POISON | 0xFFFF_FFFF | 0 => w ^ 0x0101_0101,
                w => w,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_rotates_and_never_matches_the_judges_run() {
        for master in [0u64, 1, 42, u64::MAX, 0xdead_beef] {
            let p: Vec<u32> = (0..300).map(|t| poison(master, t)).collect();
            // The same seed and trial give the same poison (a repro line reproduces it).
            assert_eq!(p, (0..300).map(|t| poison(master, t)).collect::<Vec<_>>());
            // Two trials in a row never share a poison, and none is the judge's.
            assert!(p.windows(2).all(|w| w[0] != w[1]), "{master}");
            assert!(!p.contains(&JUDGE_POISON));
            // Every three trials in a row hold 0xFFFFFFFF, zero and a random word (away from
            // the wrap of the seed).
            if master < u64::MAX - 300 {
                for w in p.windows(3) {
                    assert!(
                        w.contains(&0xFFFF_FFFF) && w.contains(&0),
                        "{master}: {w:x?}"
                    );
                }
            }
            // The random words differ from trial to trial.
            let random: std::collections::BTreeSet<u32> = p
                .iter()
                .copied()
                .filter(|w| *w != 0 && *w != 0xFFFF_FFFF)
                .collect();
            assert!(random.len() > 95, "{}", random.len());
        }
    }

    /// Across the seed's wrap (u64::MAX, then 0) two trials in a row still differ.
    #[test]
    fn the_wrap_of_the_seed_keeps_neighbours_apart() {
        let p: Vec<u32> = (0..8).map(|t| poison(u64::MAX - 3, t)).collect();
        assert!(p.windows(2).all(|w| w[0] != w[1]), "{p:x?}");
    }

    #[test]
    fn poison_bytes_repeat_the_word_little_endian() {
        assert_eq!(poison_bytes(0x0403_0201, 6), [1, 2, 3, 4, 1, 2]);
    }
}
