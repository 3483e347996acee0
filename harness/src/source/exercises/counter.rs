//! `counter`: counters[j] = number of i < n with i % slots == j; the host clears `counters`.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, u32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct Counter;

const BLOCKS: [u32; 5] = [64, 128, 256, 512, 1024];

impl Exercise for Counter {
    fn name(&self) -> &'static str {
        "counter"
    }

    fn params(&self) -> &'static [&'static str] {
        &["slots"]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, 1 << 20)
    }

    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let slots = entry.param("slots");
        let (n, block) = match size {
            SizeChoice::Sanitize => (1000, 256),
            other => (
                other.draw(rng, 256),
                BLOCKS[rng.random_range(0..BLOCKS.len())],
            ),
        };
        let counts: Vec<u32> = (0..slots)
            .map(|j| if j < n { (n - 1 - j) / slots + 1 } else { 0 })
            .collect();
        let grid = ceil_div(n, block);
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("n={n} slots={slots} grid={grid} block={block}"),
            buffers: vec![Buffer::output(
                "counters",
                Elem::U32,
                Init::Zero(4 * slots as usize),
                u32_bytes(&counts),
            )],
            launches: vec![LaunchStep {
                kernel: entry.name.clone(),
                grid: Dim3(grid, 1, 1),
                block: Dim3(block, 1, 1),
                args: vec![Arg::Buf(0), Arg::int(n), Arg::int(slots)],
                shared: 0,
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn counts_match_a_direct_count() {
        let entry = Entry {
            name: "k".into(),
            params: [("slots".to_string(), 7)].into(),
        };
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let p = Counter.problem(&entry, SizeChoice::Fixed(30), &mut rng);
        let mut direct = [0u32; 7];
        for i in 0..30 {
            direct[i % 7] += 1;
        }
        assert_eq!(
            p.buffers[0].expected.as_deref(),
            Some(&u32_bytes(&direct)[..])
        );
    }
}
