use super::*;

fn cal() -> Calibration {
    Calibration {
        kernel_ns: 280_000,
        instances: 128,
        warps: 8,
        blocks: 4096,
        waves: 4,
    }
}

#[test]
fn the_same_seed_gives_the_same_plan_and_other_seeds_differ() {
    let c = cal();
    for seed in [0u64, 1, 42, u64::MAX] {
        assert_eq!(Plan::pct(seed, &c, 0.5), Plan::pct(seed, &c, 0.5));
        assert_eq!(
            Plan::pct(seed, &c, 0.5).to_bytes(),
            Plan::pct(seed, &c, 0.5).to_bytes()
        );
    }
    let distinct: std::collections::BTreeSet<Vec<(u32, u32)>> = (0..100u64)
        .map(|s| {
            Plan::pct(s, &c, 0.5)
                .points
                .iter()
                .map(|p| (p.instance, p.warps))
                .collect()
        })
        .collect();
    assert!(distinct.len() > 95, "{} distinct plans", distinct.len());
}

#[test]
fn plans_have_depth_two_or_three_at_distinct_instances_with_proper_warp_subsets() {
    let c = cal();
    let mut depths = std::collections::BTreeSet::new();
    for seed in 0..500u64 {
        let p = Plan::pct(seed, &c, 0.5);
        depths.insert(p.points.len());
        let mut at: Vec<u32> = p.points.iter().map(|x| x.instance).collect();
        at.dedup();
        assert_eq!(
            at.len(),
            p.points.len(),
            "distinct, sorted instances: {p:?}"
        );
        for x in &p.points {
            assert!(x.instance < c.instances);
            assert!(
                x.warps != 0 && x.warps != 0xFF,
                "proper subset of 8 warps: {x:?}"
            );
            assert!((MIN_DELAY_NS / 2..=MAX_DELAY_NS * 3 / 2).contains(&x.delay_ns));
        }
    }
    assert_eq!(depths, [2usize, 3].into_iter().collect());
    // Fewer instances than the depth: one point per instance, no endless loop.
    let one = Calibration {
        instances: 1,
        warps: 1,
        ..c
    };
    let p = Plan::pct(9, &one, 0.5);
    assert_eq!(p.points.len(), 1);
    assert_eq!((p.points[0].instance, p.points[0].warps), (0, 1));
}

#[test]
fn over_many_seeds_every_barrier_instance_and_every_warp_is_chosen() {
    for (instances, warps) in [(128u32, 8u32), (9, 8), (3, 2), (40, 32), (7, 1)] {
        let c = Calibration {
            instances,
            warps,
            ..cal()
        };
        let mut inst = vec![false; instances as usize];
        let mut warp = vec![false; warps as usize];
        let mut pair = vec![vec![false; warps as usize]; instances as usize];
        for seed in 0..4000u64 {
            for p in Plan::pct(seed, &c, 0.5).points {
                inst[p.instance as usize] = true;
                for w in 0..warps {
                    if (p.warps >> w) & 1 == 1 {
                        warp[w as usize] = true;
                        pair[p.instance as usize][w as usize] = true;
                    }
                }
            }
        }
        assert!(
            inst.iter().all(|x| *x),
            "{instances}x{warps}: an instance never chosen"
        );
        assert!(
            warp.iter().all(|x| *x),
            "{instances}x{warps}: a warp never delayed"
        );
        assert!(
            pair.iter().flatten().all(|x| *x),
            "{instances}x{warps}: an (instance, warp) pair never chosen"
        );
    }
}

#[test]
fn the_budget_sets_the_share_of_blocks_and_every_block_takes_part_over_seeds() {
    // A long kernel in one wave: every block takes part.
    let long = Plan::pct(3, &Calibration { waves: 1, ..cal() }, 0.5);
    assert_eq!(long.block_threshold, u32::MAX);
    // A short kernel with many waves (a reduction: 27 µs, 16 waves): a share of the
    // blocks, chosen per point by the mirrored hash, and the expected added time near
    // the budget.
    let short = Calibration {
        kernel_ns: 27_000,
        instances: 9,
        warps: 8,
        blocks: 16384,
        waves: 16,
    };
    let p = Plan::pct(5, &short, 0.5);
    assert!(p.block_threshold < u32::MAX, "{p:?}");
    let share = p.block_threshold as f64 / u32::MAX as f64;
    let slept: u64 = p.points.iter().map(|x| x.delay_ns as u64).sum();
    let added = share * slept as f64 * 16.0;
    assert!(added <= 0.5 * 27_000.0 * 1.01, "{added} ns added");
    let taking_part = (0..16384u32)
        .filter(|b| block_hash(p.seed, *b) <= p.block_threshold)
        .count() as f64
        / 16384.0;
    assert!(
        (taking_part - share).abs() < 0.03,
        "{taking_part} vs {share}"
    );
    // Over seeds, every block of a small grid is delayed somewhere.
    let small = Calibration {
        blocks: 64,
        ..short
    };
    let mut hit = [false; 64];
    for seed in 0..2000u64 {
        let p = Plan::pct(seed, &small, 0.5);
        for (b, h) in (0u32..).zip(hit.iter_mut()) {
            *h |= (0..small.instances).any(|i| (0..8).any(|w| p.delays(b, w, i) > 0));
        }
    }
    assert!(hit.iter().all(|h| *h));
}

#[test]
fn delays_follow_the_points_only() {
    let p = Plan::pct(11, &Calibration { waves: 1, ..cal() }, 0.5);
    assert_eq!(p.block_threshold, u32::MAX, "every block takes part");
    let pt = p.points[0];
    let w = pt.warps.trailing_zeros();
    assert_eq!(p.delays(0, w, pt.instance), pt.delay_ns);
    let idle = (0..8).find(|w| (pt.warps >> w) & 1 == 0).unwrap();
    assert_eq!(
        p.delays(0, idle, pt.instance),
        0,
        "a warp outside the subset"
    );
    let elsewhere = (0..128)
        .find(|i| p.points.iter().all(|x| x.instance != *i))
        .unwrap();
    assert_eq!(p.delays(0, w, elsewhere), 0, "an instance with no point");
    assert_eq!(Plan::dense(11).delays(0, w, pt.instance), 0);
    assert_eq!(Plan::off().delays(0, w, pt.instance), 0);
}

#[test]
fn the_instance_mask_and_the_block_hash_only_skip_what_has_no_point() {
    // Points at and past the mask's last bit: the mask sends both to the exact compare.
    let p = Plan {
        mode: MODE_PCT,
        seed: 99,
        points: [3, 31, 40]
            .into_iter()
            .map(|instance| Point {
                instance,
                warps: 0b10,
                delay_ns: 1000 + instance,
            })
            .collect(),
        block_threshold: u32::MAX / 2,
    };
    assert_eq!(p.instance_mask(), 1 << 3 | 1 << 31);
    let (part, out): (Vec<u32>, Vec<u32>) =
        (0..4096u32).partition(|b| block_hash(p.seed, *b) <= p.block_threshold);
    assert!(
        part.len() > 1800 && out.len() > 1800,
        "{} {}",
        part.len(),
        out.len()
    );
    for i in 0..64 {
        let want = match i {
            3 | 31 | 40 => 1000 + i,
            _ => 0,
        };
        assert_eq!(p.delays(part[0], 1, i), want, "instance {i}");
        assert_eq!(p.delays(part[0], 0, i), 0, "warp 0 is not in the subset");
        assert_eq!(p.delays(out[0], 1, i), 0, "a block that takes no part");
    }
    // Neighbouring blocks and seeds decide independently (the hash mixes every bit).
    let agree = (0..4096u32)
        .filter(|b| (block_hash(1, *b) & 1) == (block_hash(1, b + 1) & 1))
        .count();
    assert!((1800..2300).contains(&agree), "{agree} of 4096");
    let agree = (0..4096u32)
        .filter(|b| (block_hash(1, *b) >> 31) == (block_hash(2, *b) >> 31))
        .count();
    assert!((1800..2300).contains(&agree), "{agree} of 4096");
}

/// The prelude's `racegate_block_hash`, cut out of the header as it ships and built for
/// the host with the C compiler Rust links with, gives what [`block_hash`] gives.
#[test]
fn the_block_hash_is_the_preludes_bit_for_bit() {
    let prelude = include_str!("../../../cuda/racegate_prelude.cuh");
    let start = prelude
        .find("__device__ __forceinline__ unsigned int racegate_block_hash")
        .expect("the prelude defines racegate_block_hash");
    let end = start + prelude[start..].find("\n}\n").expect("its end") + 3;
    let seeds = [
        0u64,
        1,
        0x9e37_79b9_7f4a_7c15,
        u64::MAX,
        0x0000_0001_ffff_fffe,
    ];
    let blocks = [0u32, 1, 2, 255, 65_535, 1 << 20, u32::MAX];
    let c = format!(
        "#include <stdio.h>\n#define __device__\n#define __forceinline__ static inline\n\
         struct {{ unsigned long long seed; }} racegate_jitter_plan;\n{}\n\
         int main(void) {{\n\
         unsigned long long seeds[] = {{{}}};\n unsigned int blocks[] = {{{}}};\n\
         for (int s = 0; s < {}; ++s) for (int b = 0; b < {}; ++b) {{\n\
         racegate_jitter_plan.seed = seeds[s];\n\
         printf(\"%u\\n\", racegate_block_hash(blocks[b])); }}\n return 0; }}\n",
        &prelude[start..end],
        seeds.map(|s| format!("{s}ull")).join(","),
        blocks.map(|b| format!("{b}u")).join(","),
        seeds.len(),
        blocks.len()
    );
    let dir = tempfile::tempdir().unwrap();
    let (src, exe) = (dir.path().join("h.c"), dir.path().join("h"));
    std::fs::write(&src, c).unwrap();
    let built = std::process::Command::new("cc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("a C compiler (`cc`: the one Rust links with)");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = std::process::Command::new(&exe).output().unwrap();
    let device: Vec<u32> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let host: Vec<u32> = seeds
        .iter()
        .flat_map(|s| blocks.iter().map(move |b| block_hash(*s, *b)))
        .collect();
    assert_eq!(device, host);
}

#[test]
fn the_table_layout_matches_the_prelude() {
    let p = Plan {
        mode: MODE_PCT,
        seed: 0x0102_0304_0506_0708,
        points: vec![
            Point {
                instance: 5,
                warps: 0b110,
                delay_ns: 3000,
            },
            Point {
                instance: 9,
                warps: 1,
                delay_ns: 7,
            },
        ],
        block_threshold: 77,
    };
    let b = p.to_bytes();
    let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    assert_eq!(
        (word(0), word(4), word(8), word(12)),
        (MODE_PCT, 2, 77, 1 << 5 | 1 << 9)
    );
    assert_eq!(u64::from_le_bytes(b[16..24].try_into().unwrap()), p.seed);
    // instance[4], warps[4], delay_ns[4]
    assert_eq!((word(24), word(28), word(32)), (5, 9, 0));
    assert_eq!((word(40), word(44)), (0b110, 1));
    assert_eq!((word(56), word(60)), (3000, 7));
    assert_eq!(PLAN_BYTES, 72);
}

#[test]
fn modes_parse_and_print() {
    for m in JitterMode::ALL {
        assert_eq!(m.name().parse::<JitterMode>(), Ok(m));
    }
    assert!("sparse".parse::<JitterMode>().is_err());
    assert_eq!(JitterMode::default(), JitterMode::Pct);
}

#[test]
fn a_calibration_rescales_with_the_blocks() {
    let c = cal();
    let r = c.rescaled(4, 8192, 8, None);
    assert_eq!(r.kernel_ns, 560_000);
    assert_eq!((r.warps, r.blocks, r.waves, r.instances), (4, 8192, 8, 128));
    assert_eq!(c.rescaled(8, 4096, 4, Some(3)).instances, 3);
    assert_eq!(c.rescaled(8, 4096, 4, Some(0)).instances, 128);
}
