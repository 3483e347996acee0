//! `lastblock`: out = the sum of in[0..n) (u32, wrapping) in one launch: each block sums its slice
//! into partial[block], takes a ticket with an atomic, and the block that takes the last ticket
//! sums the partials and resets the ticket counter. The handoff between blocks is the lesson: the
//! partial must be visible before the ticket, which takes a `__threadfence()`.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, u32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct LastBlock;

const BLOCKS: [u32; 4] = [64, 128, 256, 512];

/// Each block's sum of its `block`-element slice, and the total (both wrapping).
fn expected(input: &[u32], block: usize) -> (Vec<u32>, u32) {
    let partials: Vec<u32> = input
        .chunks(block)
        .map(|c| c.iter().fold(0u32, |a, &x| a.wrapping_add(x)))
        .collect();
    let total = partials.iter().fold(0u32, |a, &x| a.wrapping_add(x));
    (partials, total)
}

impl Exercise for LastBlock {
    fn name(&self) -> &'static str {
        "lastblock"
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
        let input: Vec<u32> = (0..n).map(|_| rng.random_range(0..1000)).collect();
        let grid = ceil_div(n, block);
        let (partials, total) = expected(&input, block as usize);
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("n={n} grid={grid} block={block}"),
            buffers: vec![
                Buffer::input("in", Elem::U32, u32_bytes(&input)),
                Buffer::output(
                    "partial",
                    Elem::U32,
                    Init::Poison(4 * grid as usize),
                    u32_bytes(&partials),
                ),
                // The host clears the ticket counter once; the last block leaves it at 0.
                Buffer::output("done", Elem::U32, Init::Zero(4), u32_bytes(&[0])),
                Buffer::output("out", Elem::U32, Init::Poison(4), u32_bytes(&[total])),
            ],
            launches: vec![LaunchStep {
                kernel: entry.name.clone(),
                grid: Dim3(grid, 1, 1),
                block: Dim3(block, 1, 1),
                args: vec![
                    Arg::Buf(0),
                    Arg::Buf(1),
                    Arg::Buf(2),
                    Arg::Buf(3),
                    Arg::int(n),
                ],
                shared: 0,
            }],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partials_per_block_and_a_wrapping_total() {
        let (p, t) = expected(&[1, 2, 3, 4, 5], 2);
        assert_eq!(p, vec![3, 7, 5]);
        assert_eq!(t, 15);
        let (_, wrapped) = expected(&[u32::MAX, 2], 1);
        assert_eq!(wrapped, 1);
    }
}
