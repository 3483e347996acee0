//! Schedule jitter plans: which warps the prelude delays, where, and for how long.
//! Part of `run/`: may import `errors`, `proc/`, `source/`, `build/` and the rest of `run/`.
//!
//! A kernel built with jitter (`-DRACEGATE_JITTER`) replaces every `__syncthreads()` with the
//! real barrier followed by a look at `racegate_jitter_plan`, a small table in constant memory
//! that racegate writes before each launch. Three modes:
//!
//! - **pct** (the default): a PCT-like schedule. Each trial's seed picks a depth of 2 or 3
//!   *change points*; each point is one barrier instance (the warp's n-th barrier of the launch),
//!   a random proper subset of a block's warps, and a delay. At that instance those warps sleep,
//!   so the other warps of the block run ahead past the barrier: a missing second barrier, a
//!   read of a neighbour's not-yet-written element, shows at that point. A block that takes
//!   part in no point pays a hash per barrier (block 0 also counts its barriers); one that does
//!   counts its barriers and looks at a mask of the points' instances. The delay and the share of blocks that take part are sized from
//!   the kernel's measured duration ([`Calibration`]), so the added time stays near
//!   [`DEFAULT_BUDGET`] times one bare launch whatever the kernel.
//! - **dense** (kept to compare): three warps in four sleep 0-4 µs at *every*
//!   barrier instance, hashed per warp, barrier line and clock.
//! - **off**: the real barrier only (a jitter build run without jitter).
//!
//! The plan is drawn on the host from the trial's jitter seed alone, so a repro line
//! reproduces it, and host tests check it: the same seed gives the same plan, and over many
//! seeds the points cover every barrier instance and every warp. The device's only decision
//! of its own, which blocks take part, uses [`block_hash`], mirrored here bit for bit
//! ([`Plan::delays`] is the device's rule).
//!
//! ```text
//! use racegate::run::schedule::{Calibration, Plan};
//! let cal = Calibration { kernel_ns: 200_000, instances: 64, warps: 8, blocks: 4096, waves: 4 };
//! let plan = Plan::pct(42, &cal, 0.5);
//! assert_eq!(plan, Plan::pct(42, &cal, 0.5));
//! assert!((2..=3).contains(&plan.points.len()));
//! ```

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// Which jitter a trial gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterMode {
    /// No jitter: the kernel is built without the prelude's barrier wrapper.
    None,
    /// Every warp at every barrier.
    Dense,
    /// A few chosen (barrier instance, warps) points per trial.
    #[default]
    Pct,
}

impl JitterMode {
    pub const ALL: [JitterMode; 3] = [JitterMode::None, JitterMode::Dense, JitterMode::Pct];

    pub fn name(self) -> &'static str {
        match self {
            JitterMode::None => "none",
            JitterMode::Dense => "dense",
            JitterMode::Pct => "pct",
        }
    }
}

impl fmt::Display for JitterMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for JitterMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        JitterMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("`{s}` is not a jitter mode (pct, dense or none)"))
    }
}

/// The most change points a plan holds (the size of the device table).
pub const MAX_POINTS: usize = 4;
/// The added time a pct plan aims at, as a share of one bare launch.
pub const DEFAULT_BUDGET: f64 = 0.5;
/// The shortest and longest delay at a point. On the H200, per-thread delays of a few hundred
/// ns changed nothing, per-warp microseconds did (the dense jitter's 0-4 µs caught the matmul
/// write-after-read race at every size). The shortest is 2 µs: for kernels of short blocks (the
/// reductions' 1.8 µs) the same budget then goes to fewer, longer delays. The launch time that
/// sizes the budget is taken with the prelude off (`Gpu::calibrate`, `calibrate.rs`), so the
/// calibration launch does not count in every block.
pub const MIN_DELAY_NS: u32 = 2_000;
pub const MAX_DELAY_NS: u32 = 20_000;
/// Barrier instances assumed before anything was counted.
pub const DEFAULT_INSTANCES: u32 = 16;

/// The device table's modes (`racegate_jitter_plan.mode`).
pub const MODE_OFF: u32 = 0;
pub const MODE_DENSE: u32 = 1;
pub const MODE_PCT: u32 = 2;

/// Bytes of the device table: mode, points, block threshold, padding, seed, then the points'
/// instances, warp masks and delays (`struct racegate_plan_t` in the prelude).
pub const PLAN_BYTES: usize = 16 + 8 + 3 * 4 * MAX_POINTS;

/// What the host knows about a kernel's launch, to size a plan.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Calibration {
    /// One launch of the problem's steps with the jitter prelude off, in ns.
    pub kernel_ns: u64,
    /// Barrier instances one warp went through (block 0, warp 0, counted by the device).
    pub instances: u32,
    /// Warps per block (the largest over the steps).
    pub warps: u32,
    /// Blocks per launch (the largest over the steps).
    pub blocks: u64,
    /// Rounds of blocks the device needs: blocks / (SMs x resident blocks per SM), at least 1.
    pub waves: u32,
}

/// One change point: at the warp's `instance`-th barrier, the warps in `warps` sleep `delay_ns`
/// in the blocks that take part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Point {
    pub instance: u32,
    /// Bit w: warp w of a block sleeps.
    pub warps: u32,
    pub delay_ns: u32,
}

/// The table the prelude reads before each launch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Plan {
    pub mode: u32,
    pub seed: u64,
    pub points: Vec<Point>,
    /// A block takes part in the points when `block_hash(seed, block) <= block_threshold`
    /// (`u32::MAX`: every block).
    pub block_threshold: u32,
}

/// The hash that decides whether `block` takes part in a plan's points: at most the plan's
/// `block_threshold` (`racegate_block_hash` in the prelude; the fmix32 finalizer of
/// MurmurHash3 over the block's multiple of the golden ratio and the seed's two halves).
#[cfg_attr(not(test), allow(dead_code))]
#[allow(clippy::cast_possible_truncation)] // the device's block index and seed halves are 32-bit
pub fn block_hash(seed: u64, block: u32) -> u32 {
    let mut h = block.wrapping_mul(0x9e37_79b1) ^ (seed as u32) ^ ((seed >> 32) as u32);
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// A splitmix64 stream: the plan's only source of randomness.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n >= 1; the bias of a 64-bit modulus is negligible here).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

impl Plan {
    /// The real barrier only.
    pub fn off() -> Plan {
        Plan {
            mode: MODE_OFF,
            seed: 0,
            points: Vec::new(),
            block_threshold: 0,
        }
    }

    /// The old jitter under `seed`.
    pub fn dense(seed: u64) -> Plan {
        Plan {
            mode: MODE_DENSE,
            seed,
            points: Vec::new(),
            block_threshold: 0,
        }
    }

    /// No delay anywhere, but the device counts barrier instances (what calibration runs):
    /// every block takes part in its (no) points, so every block pays the count.
    pub fn count_only(seed: u64) -> Plan {
        Plan {
            mode: MODE_PCT,
            seed,
            points: Vec::new(),
            block_threshold: u32::MAX,
        }
    }

    /// The plan of `mode` for a trial's jitter `seed`.
    pub fn for_mode(mode: JitterMode, seed: u64, cal: &Calibration, budget: f64) -> Plan {
        match mode {
            JitterMode::None => Plan::off(),
            JitterMode::Dense => Plan::dense(seed),
            JitterMode::Pct => Plan::pct(seed, cal, budget),
        }
    }

    /// A PCT-like plan: 2 or 3 change points at distinct barrier instances among the
    /// `cal.instances` one warp goes through, each with a random proper subset of the block's
    /// warps (the one warp of a one-warp block) and a delay near half a block's lifetime; the
    /// share of blocks that take part keeps the expected added time near `budget` x
    /// `cal.kernel_ns` (every block when that allows, never fewer than about 8 blocks).
    pub fn pct(seed: u64, cal: &Calibration, budget: f64) -> Plan {
        let mut rng = SplitMix(seed ^ 0x5043_545f_706c_616e); // "PCT_plan"
        let instances = cal.instances.max(1);
        let depth = (2 + usize::from(rng.below(2) == 1)).min(instances as usize);
        let warps = cal.warps.clamp(1, 32);
        let all: u32 = if warps == 32 {
            u32::MAX
        } else {
            (1u32 << warps) - 1
        };
        let waves = cal.waves.max(1) as u64;
        let block_ns = cal.kernel_ns / waves;
        // bounded: clamped into MIN_DELAY_NS..=MAX_DELAY_NS.
        let base = (block_ns / 2).clamp(MIN_DELAY_NS.into(), MAX_DELAY_NS.into());
        let base = u32::try_from(base).unwrap_or(MAX_DELAY_NS);
        let mut chosen: Vec<u32> = Vec::with_capacity(depth);
        let mut points = Vec::with_capacity(depth);
        while points.len() < depth {
            // bounded: below `instances`, a u32.
            #[allow(clippy::cast_possible_truncation)]
            let instance = rng.below(instances as u64) as u32;
            if chosen.contains(&instance) {
                continue;
            }
            chosen.push(instance);
            let mask = if warps == 1 {
                1
            } else {
                // A proper, non-empty subset: some warps sleep, the others run ahead.
                loop {
                    // bounded: a random word's low 32 bits; the truncation is the point.
                    #[allow(clippy::cast_possible_truncation)]
                    let m = rng.next() as u32 & all;
                    if m != 0 && m != all {
                        break m;
                    }
                }
            };
            // 0.5x to 1.5x the base delay, so successive trials stretch different gaps.
            // bounded: at most `base`, a u32 of at most MAX_DELAY_NS.
            #[allow(clippy::cast_possible_truncation)]
            let delay_ns = base / 2 + rng.below(base as u64 + 1) as u32;
            points.push(Point {
                instance,
                warps: mask,
                delay_ns,
            });
        }
        points.sort_by_key(|p| p.instance);
        // Each taking-part block holds its slot `sum(delay)` longer; spread over the device,
        // that adds share x waves x sum(delay) to the launch.
        let slept: u64 = points.iter().map(|p| p.delay_ns as u64).sum();
        let budget_ns = cal.kernel_ns as f64 * budget.max(0.0);
        let share = if slept == 0 {
            1.0
        } else {
            (budget_ns / (slept as f64 * waves as f64)).min(1.0)
        };
        let floor = (8.0 / cal.blocks.max(1) as f64).min(1.0);
        let share = share.max(floor);
        // bounded: 0 <= share < 1 in the second branch; toward zero, as the device compares.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let block_threshold = if share >= 1.0 {
            u32::MAX
        } else {
            (share * u32::MAX as f64) as u32
        };
        Plan {
            mode: MODE_PCT,
            seed,
            points,
            block_threshold,
        }
    }

    /// How long warp `warp` of block `block` sleeps after its `instance`-th barrier under this
    /// plan: the prelude's decision, mirrored (pct mode only; dense mode hashes the clock).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn delays(&self, block: u32, warp: u32, instance: u32) -> u32 {
        if self.mode != MODE_PCT || block_hash(self.seed, block) > self.block_threshold {
            return 0;
        }
        let bit = instance.min(31);
        if (self.instance_mask() >> bit) & 1 == 0 {
            return 0;
        }
        self.points
            .iter()
            .take(MAX_POINTS)
            .filter(|pt| pt.instance == instance && warp < 32 && (pt.warps >> warp) & 1 == 1)
            .map(|pt| pt.delay_ns)
            .sum()
    }

    /// Bit i: some point is at barrier instance i (bit 31: at 31 or later). The device looks
    /// at it before the points.
    pub fn instance_mask(&self) -> u32 {
        self.points
            .iter()
            .take(MAX_POINTS)
            .fold(0, |m, p| m | 1 << p.instance.min(31))
    }

    /// The device table's bytes (`struct racegate_plan_t`, little-endian).
    pub fn to_bytes(&self) -> [u8; PLAN_BYTES] {
        let mut b = [0u8; PLAN_BYTES];
        let n = self.points.len().min(MAX_POINTS);
        // bounded: at most MAX_POINTS.
        #[allow(clippy::cast_possible_truncation)]
        let count = n as u32;
        b[0..4].copy_from_slice(&self.mode.to_le_bytes());
        b[4..8].copy_from_slice(&count.to_le_bytes());
        b[8..12].copy_from_slice(&self.block_threshold.to_le_bytes());
        b[12..16].copy_from_slice(&self.instance_mask().to_le_bytes());
        b[16..24].copy_from_slice(&self.seed.to_le_bytes());
        for (i, p) in self.points.iter().take(n).enumerate() {
            let at = |k: usize| 24 + 4 * (k * MAX_POINTS + i);
            b[at(0)..at(0) + 4].copy_from_slice(&p.instance.to_le_bytes());
            b[at(1)..at(1) + 4].copy_from_slice(&p.warps.to_le_bytes());
            b[at(2)..at(2) + 4].copy_from_slice(&p.delay_ns.to_le_bytes());
        }
        b
    }
}

impl Calibration {
    /// Before anything was measured: a 100 µs launch of one wave, [`DEFAULT_INSTANCES`].
    pub fn unknown(warps: u32, blocks: u64) -> Calibration {
        Calibration {
            kernel_ns: 100_000,
            instances: DEFAULT_INSTANCES,
            warps,
            blocks,
            waves: 1,
        }
    }

    /// This calibration moved to another input set of the same kernel: the launch time scaled
    /// by the blocks, the new geometry, and the instances counted since (when known).
    #[must_use]
    pub fn rescaled(&self, warps: u32, blocks: u64, waves: u32, instances: Option<u32>) -> Self {
        let per_block = self.kernel_ns as f64 / self.blocks.max(1) as f64;
        Calibration {
            // Toward zero, saturating (a time is never negative).
            kernel_ns: crate::source::values::f64_to_u64(per_block * blocks.max(1) as f64),
            instances: instances.filter(|i| *i > 0).unwrap_or(self.instances),
            warps,
            blocks,
            waves,
        }
    }
}

#[cfg(test)]
mod tests;
