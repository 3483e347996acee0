//! `handoff`: out[i] = 2 * in[i], one producer and one consumer warp per 32 elements.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, i32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct Handoff;

impl Exercise for Handoff {
    fn name(&self) -> &'static str {
        "handoff"
    }

    fn params(&self) -> &'static [&'static str] {
        &[]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, 1 << 16)
    }

    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let n = match size {
            SizeChoice::Sanitize => 100,
            other => other.draw(rng, 32),
        };
        let input: Vec<i32> = (0..n).map(|_| rng.random_range(-1000..=1000)).collect();
        let out: Vec<i32> = input.iter().map(|x| 2 * x).collect();
        let grid = ceil_div(n, 32);
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("n={n} grid={grid} block=64"),
            buffers: vec![
                Buffer::input("in", Elem::I32, i32_bytes(&input)),
                Buffer::output(
                    "out",
                    Elem::I32,
                    Init::Poison(4 * n as usize),
                    i32_bytes(&out),
                ),
            ],
            launches: vec![LaunchStep {
                kernel: entry.name.clone(),
                grid: Dim3(grid, 1, 1),
                block: Dim3(64, 1, 1),
                args: vec![Arg::Buf(0), Arg::Buf(1), Arg::int(n)],
                shared: 0,
            }],
        }
    }
}
