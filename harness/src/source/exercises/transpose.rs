//! `transpose`: out (cols x rows) = transpose of in (rows x cols), through a 32 x 32 tile
//! moved by a 32 x 8 block.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, f32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct Transpose;

const TILE: u32 = 32;

impl Exercise for Transpose {
    fn name(&self) -> &'static str {
        "transpose"
    }

    fn params(&self) -> &'static [&'static str] {
        &[]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, 1024)
    }

    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let (rows, cols) = match size {
            // Ragged in both directions, more than one tile each way.
            SizeChoice::Sanitize => (TILE + 8, 2 * TILE + 5),
            other => (other.draw(rng, TILE), other.draw(rng, TILE)),
        };
        // Distinct small integers: a misplaced element cannot match by accident.
        let input: Vec<f32> = (0..rows * cols)
            .map(|i| (i as f32) + rng.random_range(0..2) as f32 * 0.5)
            .collect();
        let mut out = vec![0f32; input.len()];
        for r in 0..rows as usize {
            for c in 0..cols as usize {
                out[c * rows as usize + r] = input[r * cols as usize + c];
            }
        }
        let grid = Dim3(ceil_div(cols, TILE), ceil_div(rows, TILE), 1);
        let block = Dim3(TILE, 8, 1);
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("rows={rows} cols={cols} grid={grid} block={block}"),
            buffers: vec![
                Buffer::input("in", Elem::F32, f32_bytes(&input)),
                Buffer::output(
                    "out",
                    Elem::F32,
                    Init::Poison(4 * input.len()),
                    f32_bytes(&out),
                ),
            ],
            launches: vec![LaunchStep {
                kernel: entry.name.clone(),
                grid,
                block,
                args: vec![Arg::Buf(0), Arg::Buf(1), Arg::int(rows), Arg::int(cols)],
                shared: 0,
            }],
        }
    }
}
