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

/// The poison of trial `t` of a run started with `master`: 0xFFFFFFFF, zero, then a random
/// word drawn from the trial's seed, in turn. Never [`JUDGE_POISON`]; the same for the same
/// seed, so a repro line's seed and trial give the same poison (the trial seed is `master + t`, as `trial::seed` says).
pub fn poison(master: u64, t: u32) -> u32 {
    match t % 3 {
        0 => POISONS[0],
        1 => POISONS[1],
        _ => {
            // splitmix64 of the trial's seed: a word with no relation to the data's.
            let mut z = master
                .wrapping_add(t as u64)
                .wrapping_add(0x9e37_79b9_7f4a_7c15);
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
            assert_eq!(p[0], 0xFFFF_FFFF);
            assert_eq!(p[1], 0);
            // The random words differ from trial to trial.
            let random: std::collections::BTreeSet<u32> =
                (0..100).map(|k| poison(master, 3 * k + 2)).collect();
            assert!(random.len() > 95, "{}", random.len());
        }
    }

    #[test]
    fn poison_bytes_repeat_the_word_little_endian() {
        assert_eq!(poison_bytes(0x0403_0201, 6), [1, 2, 3, 4, 1, 2]);
    }
}
