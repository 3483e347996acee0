//! `reduce`: per-block sums, out[b] = in[b * BLOCK ..][..BLOCK] summed (past n counts as 0).
//!
//! Inputs are integers 0..=8 stored as f32; a block sum is at most 8 * 1024, so every partial
//! sum is exact and the comparison is exact. The oracle checks each block's sum, which points
//! at the failing block rather than at a grand total.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, f32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct Reduce;

impl Exercise for Reduce {
    fn name(&self) -> &'static str {
        "reduce"
    }

    fn params(&self) -> &'static [&'static str] {
        &["block"]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, 1 << 20)
    }

    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let block = entry.param("block");
        let n = match size {
            // Three blocks, the last one ragged: every step of the tree and the tail run.
            SizeChoice::Sanitize => 3 * block - 37,
            other => other.draw(rng, block),
        };
        let input: Vec<u32> = (0..n).map(|_| rng.random_range(0..=8)).collect();
        let grid = ceil_div(n, block);
        let sums: Vec<f32> = input
            .chunks(block as usize)
            .map(|c| c.iter().sum::<u32>() as f32)
            .collect();
        let input_f: Vec<f32> = input.iter().map(|&x| x as f32).collect();
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("n={n} grid={grid} block={block}"),
            buffers: vec![
                Buffer::input("in", Elem::F32, f32_bytes(&input_f)),
                Buffer::output(
                    "out",
                    Elem::F32,
                    Init::Poison(4 * grid as usize),
                    f32_bytes(&sums),
                ),
            ],
            launches: vec![LaunchStep {
                kernel: entry.name.clone(),
                grid: Dim3(grid, 1, 1),
                block: Dim3(block, 1, 1),
                args: vec![Arg::Buf(0), Arg::Buf(1), Arg::int(n)],
                shared: 0,
            }],
        }
    }
}
