//! Turns a checked kernel into problems: sizes from the range (or the sanitizer sizes), each
//! buffer's data from its generator, each launch's arguments in its declared order, and the
//! reference's own launch when the oracle gives one. Outputs carry no expected bytes: the
//! trial's judge fills them in on the device.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use super::spec::{
    ArgSpec, BufKind, KernelSpec, LaunchSpec, BLOCK_MAX, GRID_MAX, MAX_SHARED_BYTES,
};
use crate::source::entry::Entry;
use crate::source::exercises::{
    Arg, Bits, Buffer, Dim3, Exercise, Init, LaunchStep, Problem, SizeChoice,
};
use crate::source::expr::{self, Env};

impl KernelSpec {
    /// The sizes of one problem: the sanitizer sizes, `n` for every size (kept inside each
    /// size's range, the only sizes the manifest was checked at), or drawn from the ranges.
    pub fn sizes_for(&self, size: SizeChoice, rng: &mut ChaCha8Rng) -> Env {
        match size {
            SizeChoice::Sanitize => self
                .sanitize_sizes
                .iter()
                .map(|(k, v)| (k.clone(), *v as i64))
                .collect(),
            SizeChoice::Fixed(n) => self
                .sizes
                .iter()
                .map(|(k, (lo, hi))| (k.clone(), n.clamp(*lo, *hi) as i64))
                .collect(),
            SizeChoice::Random { .. } => self
                .sizes
                .iter()
                .map(|(k, (lo, hi))| (k.clone(), rng.random_range(*lo..=*hi) as i64))
                .collect(),
        }
    }

    /// Clamped into the limits `validate.rs` checks, in case a size its sample of points
    /// missed gives a value outside them.
    fn dims(exprs: &[String], env: &Env, max: [i64; 3]) -> Dim3 {
        let v: Vec<u32> = exprs
            .iter()
            .zip(max)
            // bounded: clamped into 1..=m, and every limit fits a u32.
            .map(|(e, m)| {
                let v = expr::eval(e, env).unwrap_or(1).clamp(1, m);
                u32::try_from(v).unwrap_or(1)
            })
            .collect();
        Dim3(v[0], *v.get(1).unwrap_or(&1), *v.get(2).unwrap_or(&1))
    }

    /// Dynamic shared memory in bytes, clamped like the dimensions.
    fn shared(expr: &str, env: &Env) -> u32 {
        let bytes = expr::eval(expr, env)
            .unwrap_or(0)
            .clamp(0, MAX_SHARED_BYTES);
        // bounded: clamped into 0..=MAX_SHARED_BYTES, which fits a u32.
        u32::try_from(bytes).unwrap_or(0)
    }

    fn step(&self, l: &LaunchSpec, env: &Env, args: &BTreeMap<&str, Arg>) -> LaunchStep {
        LaunchStep {
            kernel: l.entry.clone(),
            grid: KernelSpec::dims(&l.grid, env, GRID_MAX),
            block: KernelSpec::dims(&l.block, env, BLOCK_MAX),
            shared: KernelSpec::shared(&l.shared, env),
            args: l.args.iter().map(|n| args[n.as_str()]).collect(),
        }
    }

    /// Draws a problem.
    pub fn draw(&self, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        let env = self.sizes_for(size, rng);
        let mut buffers = Vec::new();
        let mut by_name: BTreeMap<&str, Arg> = BTreeMap::new();
        for a in &self.args {
            let arg = match a {
                ArgSpec::Scalar { elem, value, .. } => Arg::Scalar(if elem.is_float() {
                    Bits::of(*elem, expr::eval_float(value, &env).unwrap_or(0.0))
                } else {
                    Bits::of_int(*elem, expr::eval(value, &env).unwrap_or(0))
                }),
                ArgSpec::Buffer {
                    name,
                    kind,
                    elem,
                    len,
                    gen,
                    compare,
                    unwritten,
                } => {
                    // A negative length (checked against at validation) is an empty buffer.
                    let n = usize::try_from(expr::eval(len, &env).unwrap_or(0)).unwrap_or(0);
                    let name = Arc::<str>::from(name.as_str());
                    let buffer = match kind {
                        BufKind::Out => Buffer {
                            compare: compare.clone(),
                            may_stay_unwritten: *unwritten,
                            name,
                            elem: *elem,
                            init: Init::Poison(n * elem.size()),
                            expected: None,
                            judge_fills: true,
                        },
                        BufKind::In | BufKind::InOut => {
                            // Validation evaluated the generator's bounds at these sizes'
                            // corners; zeros keep a draw going should a point in between fail.
                            let bytes = gen
                                .draw(n, &env, rng)
                                .map(|v| v.encode(*elem))
                                .unwrap_or_else(|_| vec![0; n * elem.size()]);
                            if *kind == BufKind::In {
                                Buffer::input(name, *elem, bytes)
                            } else {
                                Buffer {
                                    compare: compare.clone(),
                                    may_stay_unwritten: false,
                                    name,
                                    elem: *elem,
                                    init: Init::Data(bytes),
                                    expected: None,
                                    judge_fills: true,
                                }
                            }
                        }
                    };
                    buffers.push(buffer);
                    Arg::Buf(buffers.len() - 1)
                }
            };
            by_name.insert(a.name(), arg);
        }
        let launches: Vec<LaunchStep> = self
            .launches
            .iter()
            .map(|l| self.step(l, &env, &by_name))
            .collect();
        let reference_launches = self
            .reference_launch
            .iter()
            .map(|l| self.step(l, &env, &by_name))
            .collect();
        let sizes = env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let geometry = launches
            .iter()
            .map(|s| {
                let shared = if s.shared > 0 {
                    format!(" shared={}", s.shared)
                } else {
                    String::new()
                };
                format!("grid={} block={}{shared}", s.grid, s.block)
            })
            .collect::<Vec<_>>()
            .join("; ");
        Problem {
            label: format!("{sizes} {geometry}"),
            buffers,
            launches,
            reference_launches,
            sizes: env,
        }
    }
}

impl Exercise for KernelSpec {
    fn name(&self) -> &'static str {
        "manifest"
    }

    fn params(&self) -> &'static [&'static str] {
        &[]
    }

    fn default_sizes(&self) -> (u32, u32) {
        (1, u32::MAX)
    }

    fn problem(&self, _entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem {
        // A random choice draws from the manifest's own ranges, whatever range it carries.
        self.draw(size, rng)
    }
}
