//! `stencil`: out[i] = in[i-1] + in[i] + in[i+1] for i < n, with 0 outside 0..n (a 3-point sum
//! in one launch, every thread one element). Integers, so any mix-up of old and new values shows.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, i32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct Stencil;

const BLOCKS: [u32; 4] = [64, 128, 256, 512];

/// The 3-point sum with zeros outside the array.
fn expected(input: &[i32]) -> Vec<i32> {
    let n = input.len();
    (0..n)
        .map(|i| {
            let left = if i > 0 { input[i - 1] } else { 0 };
            let right = if i + 1 < n { input[i + 1] } else { 0 };
            left + input[i] + right
        })
        .collect()
}

impl Exercise for Stencil {
    fn name(&self) -> &'static str {
        "stencil"
    }

    fn params(&self) -> &'static [&'static str] {
        &[]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, 1 << 20)
    }

    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let (n, block) = match size {
            // Several blocks, the last one ragged.
            SizeChoice::Sanitize => (1000, 128),
            other => (
                other.draw(rng, 64),
                BLOCKS[rng.random_range(0..BLOCKS.len())],
            ),
        };
        let input: Vec<i32> = (0..n).map(|_| rng.random_range(0..100)).collect();
        let grid = ceil_div(n, block);
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("n={n} grid={grid} block={block}"),
            buffers: vec![
                Buffer::input("in", Elem::I32, i32_bytes(&input)),
                Buffer::output(
                    "out",
                    Elem::I32,
                    Init::Poison(4 * n as usize),
                    i32_bytes(&expected(&input)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ends_see_zeros_outside_the_array() {
        assert_eq!(expected(&[1, 2, 3]), vec![3, 6, 5]);
        assert_eq!(expected(&[7]), vec![7]);
    }
}
