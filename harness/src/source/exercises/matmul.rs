//! `matmul`: C = A * B, row-major, A is M x K, B is K x N.
//!
//! Inputs are small integers (-4..=4) stored as f32: every product and every partial sum up
//! to K = 1024 is an integer below 2^24, so the float result is exact whatever the order of
//! additions and any difference from the oracle is a bug, not rounding.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::problem::{
    ceil_div, f32_bytes, Arg, Buffer, Dim3, Elem, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::entry::Entry;

pub struct Matmul;

impl Exercise for Matmul {
    fn name(&self) -> &'static str {
        "matmul"
    }

    fn params(&self) -> &'static [&'static str] {
        &["tile"]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, 512)
    }

    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let tile = entry.param("tile");
        let (m, n, k) = match size {
            // Three tiles along K (the loop reuses the tile twice) and ragged edges.
            SizeChoice::Sanitize => (2 * tile + 8, 2 * tile + 8, 2 * tile + 8),
            other => (
                other.draw(rng, tile),
                other.draw(rng, tile),
                other.draw(rng, tile),
            ),
        };
        // Element counts in usize: m * n of two u32 sizes can pass u32::MAX.
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let a: Vec<i32> = (0..mu * ku).map(|_| rng.random_range(-4..=4)).collect();
        let b: Vec<i32> = (0..ku * nu).map(|_| rng.random_range(-4..=4)).collect();
        let c = reference(&a, &b, mu, nu, ku);
        let as_f32 = |v: &[i32]| f32_bytes(&v.iter().map(|&x| x as f32).collect::<Vec<_>>());
        let grid = Dim3(ceil_div(n, tile), ceil_div(m, tile), 1);
        let block = Dim3(tile, tile, 1);
        Problem {
            reference_launches: Vec::new(),
            sizes: Default::default(),
            label: format!("M={m} N={n} K={k} grid={grid} block={block}"),
            buffers: vec![
                Buffer::input("A", Elem::F32, as_f32(&a)),
                Buffer::input("B", Elem::F32, as_f32(&b)),
                Buffer::output("C", Elem::F32, Init::Poison(4 * mu * nu), as_f32(&c)),
            ],
            launches: vec![LaunchStep {
                kernel: entry.name.clone(),
                grid,
                block,
                args: vec![
                    Arg::Buf(0),
                    Arg::Buf(1),
                    Arg::Buf(2),
                    Arg::int(m),
                    Arg::int(n),
                    Arg::int(k),
                ],
                shared: 0,
            }],
        }
    }
}

/// The exact product in integers (i-k-j order keeps the inner loop contiguous).
pub(crate) fn reference(a: &[i32], b: &[i32], m: usize, n: usize, k: usize) -> Vec<i32> {
    let mut c = vec![0i32; m * n];
    for i in 0..m {
        let row = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let x = a[i * k + p];
            if x == 0 {
                continue;
            }
            for (dst, &y) in row.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *dst += x * y;
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    #[test]
    fn reference_matches_the_definition() {
        // [1 2; 3 4] * [5 6; 7 8] = [19 22; 43 50]
        assert_eq!(
            super::reference(&[1, 2, 3, 4], &[5, 6, 7, 8], 2, 2, 2),
            vec![19, 22, 43, 50]
        );
        // (1 x 3) * (3 x 1)
        assert_eq!(super::reference(&[1, -2, 3], &[4, 0, -1], 1, 1, 3), vec![1]);
    }
}
