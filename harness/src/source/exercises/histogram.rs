//! `histogram`: bins[v] = count of bytes equal to v, 256 bins.
//!
//! Contract: the host does not clear `bins` (racegate poisons it); the file's own
//! `histogram_zero` kernel is launched first with <<<1, 256>>>, then the entry with a random
//! block size and a random grid (the kernels use a grid-stride loop). Half the trials draw
//! bytes from only four values, so many threads hit the same bins at once.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, u32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct Histogram;

const BINS_U32: u32 = 256;
const BINS: usize = BINS_U32 as usize;
const BLOCKS: [u32; 5] = [64, 128, 256, 512, 1024];

impl Exercise for Histogram {
    fn name(&self) -> &'static str {
        "histogram"
    }

    fn params(&self) -> &'static [&'static str] {
        &[]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, 1 << 20)
    }

    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let (n, block, grid, data) = match size {
            SizeChoice::Sanitize => {
                // Every byte value at least once (every bin is touched), more than one block.
                let n = 3000u32;
                let data: Vec<u8> = (0..n)
                    .map(|i| u8::try_from(i).unwrap_or_else(|_| rng.random()))
                    .collect();
                (n, 256, 4, data)
            }
            other => {
                let n = other.draw(rng, 256);
                let block = BLOCKS[rng.random_range(0..BLOCKS.len())];
                let grid = rng.random_range(1..=ceil_div(n, block).min(1024));
                let skewed = rng.random_range(0..2) == 0;
                let data: Vec<u8> = (0..n)
                    .map(|_| {
                        if skewed {
                            rng.random_range(0..4)
                        } else {
                            rng.random()
                        }
                    })
                    .collect();
                (n, block, grid, data)
            }
        };
        let mut counts = vec![0u32; BINS];
        for &b in &data {
            counts[b as usize] += 1;
        }
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("n={n} grid={grid} block={block}"),
            buffers: vec![
                Buffer::input("data", Elem::U8, data),
                Buffer::output(
                    "bins",
                    Elem::U32,
                    Init::Poison(4 * BINS),
                    u32_bytes(&counts),
                ),
            ],
            launches: vec![
                LaunchStep {
                    kernel: "histogram_zero".into(),
                    grid: Dim3(1, 1, 1),
                    block: Dim3(BINS_U32, 1, 1),
                    args: vec![Arg::Buf(1)],
                    shared: 0,
                },
                LaunchStep {
                    kernel: entry.name.clone(),
                    grid: Dim3(grid, 1, 1),
                    block: Dim3(block, 1, 1),
                    args: vec![Arg::Buf(0), Arg::Buf(1), Arg::int(n)],
                    shared: 0,
                },
            ],
        }
    }
}
