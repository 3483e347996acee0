//! Checks a kernel over its whole size range on the CPU, before anything is launched: every
//! length, generator bound, scalar value, prefix, grid, block and shared-memory expression is
//! evaluated at every corner of the size ranges, at the sanitizer sizes and at a few seeded
//! random points inside, with overflow-checked arithmetic. A value the GPU would refuse (a
//! zero grid, a block over 1024 threads, too much shared memory), a negative length or a value
//! its type cannot hold is an error naming the key and the sizes where it happens.

use std::ops::Range;

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use super::spec::{
    ArgSpec, BufKind, KernelSpec, LaunchSpec, BLOCK_MAX, BLOCK_THREADS_MAX, GRID_MAX,
    MAX_SHARED_BYTES,
};
use crate::source::expr::{self, Env};
use crate::source::values::Elem;

/// Where an item was written: its span in the manifest and its key (`grid`, `args.x`).
#[derive(Clone, Debug)]
pub(super) struct Site {
    pub span: Range<usize>,
    pub key: String,
}

/// Where each part of one launch was written.
#[derive(Clone, Debug)]
pub(super) struct LaunchSites {
    pub grid: Site,
    pub block: Site,
    pub shared: Site,
}

/// Where each checked item of a kernel was written, in the kernel's order.
pub(super) struct Sites {
    /// One per argument; the key is `args.NAME`.
    pub args: Vec<Site>,
    pub launches: Vec<LaunchSites>,
    pub reference: Option<LaunchSites>,
}

/// A check that failed: the span, the full key and the message.
pub(super) type Failure = (Range<usize>, String, String);

/// More sizes than this and only some corners are tried (2^10 of them), plus random points.
const MAX_CORNER_SIZES: usize = 10;
const RANDOM_POINTS: usize = 16;

/// The size assignments every expression is evaluated at.
pub(super) fn points(spec: &KernelSpec) -> Vec<Env> {
    let sizes: Vec<(&String, &(u32, u32))> = spec.sizes.iter().collect();
    let at = |pick: &dyn Fn(usize, u32, u32) -> u32| -> Env {
        sizes
            .iter()
            .enumerate()
            .map(|(i, (n, (lo, hi)))| ((*n).clone(), pick(i, *lo, *hi) as i64))
            .collect()
    };
    let mut out: Vec<Env> = Vec::new();
    let mut push = |e: Env| {
        if !out.contains(&e) {
            out.push(e);
        }
    };
    for mask in 0u32..(1 << sizes.len().min(MAX_CORNER_SIZES)) {
        push(at(&|i, lo, hi| {
            if i < MAX_CORNER_SIZES && mask & (1 << i) != 0 {
                hi
            } else {
                lo
            }
        }));
    }
    push(at(&|_, _, hi| hi));
    push(
        spec.sanitize_sizes
            .iter()
            .map(|(k, v)| (k.clone(), *v as i64))
            .collect(),
    );
    // Fixed, so a manifest passes or fails the same way every time.
    let mut rng = ChaCha8Rng::seed_from_u64(0x7261_6365_6761_7465);
    for _ in 0..RANDOM_POINTS {
        let e: Env = sizes
            .iter()
            .map(|(n, (lo, hi))| ((*n).clone(), rng.random_range(*lo..=*hi) as i64))
            .collect();
        push(e);
    }
    out
}

/// `n=1, m=7`.
pub(super) fn show(env: &Env) -> String {
    env.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An evaluation error with the sizes it happened at, when it depends on them (an overflow, a
/// division by zero, a value of the wrong kind; not a misspelled name or a syntax error).
fn at(p: &Env) -> impl Fn(String) -> String + '_ {
    move |m| {
        let by_value = [
            "overflow",
            "division by zero",
            "divides by zero",
            "the value is",
            "is empty",
            "past the end",
        ];
        if by_value.iter().any(|w| m.contains(w)) {
            format!("{m} (at {})", show(p))
        } else {
            m
        }
    }
}

/// The smallest and largest value of an element type (floats: the largest finite ones).
fn elem_range(e: Elem) -> (f64, f64) {
    match e {
        Elem::I8 => (i8::MIN.into(), i8::MAX.into()),
        Elem::I16 => (i16::MIN.into(), i16::MAX.into()),
        Elem::I32 => (i32::MIN.into(), i32::MAX.into()),
        // -2^63 exactly; i64::MAX and u64::MAX round up to 2^63 and 2^64.
        Elem::I64 => (i64::MIN as f64, i64::MAX as f64),
        Elem::U8 => (0.0, u8::MAX.into()),
        Elem::U16 => (0.0, u16::MAX.into()),
        Elem::U32 => (0.0, u32::MAX.into()),
        Elem::U64 => (0.0, u64::MAX as f64),
        Elem::F16 => (half::f16::MIN.to_f64(), half::f16::MAX.to_f64()),
        Elem::BF16 => (half::bf16::MIN.to_f64(), half::bf16::MAX.to_f64()),
        Elem::F32 => (f32::MIN.into(), f32::MAX.into()),
        Elem::F64 => (f64::MIN, f64::MAX),
    }
}

/// Whether every value in lo..=hi fits `e` (floats: stays finite).
fn fits(e: Elem, lo: f64, hi: f64) -> bool {
    let (min, max) = elem_range(e);
    e == Elem::F64 || (lo >= min && hi <= max)
}

/// Checks every expression of `spec` at every point.
pub(super) fn check(spec: &KernelSpec, sites: &Sites) -> Result<(), Failure> {
    let points = points(spec);
    for (a, site) in spec.args.iter().zip(&sites.args) {
        check_arg(spec, a, site, &points)?;
    }
    for (l, site) in spec.launches.iter().zip(&sites.launches) {
        check_launch(l, site, &points)?;
    }
    if let (Some(l), Some(site)) = (&spec.reference_launch, &sites.reference) {
        check_launch(l, site, &points)?;
    }
    Ok(())
}

fn check_arg(spec: &KernelSpec, a: &ArgSpec, site: &Site, points: &[Env]) -> Result<(), Failure> {
    let fail = |key: &str, m: String| (site.span.clone(), format!("{}.{key}", site.key), m);
    match a {
        ArgSpec::Scalar { elem, value, .. } => {
            for p in points {
                let (lo, hi) = if elem.is_float() {
                    let v = expr::eval_float(value, p).map_err(|m| fail("value", at(p)(m)))?;
                    (v, v)
                } else {
                    let v = expr::eval(value, p).map_err(|m| fail("value", at(p)(m)))?;
                    (v as f64, v as f64)
                };
                if !fits(*elem, lo, hi) {
                    return Err(fail(
                        "value",
                        format!(
                            "`{value}` is {lo} at {}, which {} cannot hold",
                            show(p),
                            elem.name()
                        ),
                    ));
                }
            }
        }
        ArgSpec::Buffer {
            name,
            kind,
            elem,
            len,
            gen,
            compare,
            ..
        } => {
            for p in points {
                let n = expr::eval(len, p).map_err(|m| fail("len", at(p)(m)))?;
                if n < 0 {
                    return Err(fail(
                        "len",
                        format!("`{len}` is {n} at {}: a length cannot be negative", show(p)),
                    ));
                }
                let count = usize::try_from(n).map_err(|_| {
                    fail(
                        "len",
                        format!("`{len}` is {n} at {}: too long for this machine", show(p)),
                    )
                })?;
                if *kind != BufKind::Out {
                    if let Some((lo, hi)) =
                        gen.range(count, p).map_err(|m| fail("gen", at(p)(m)))?
                    {
                        if !fits(*elem, lo, hi) {
                            return Err(fail(
                                "gen",
                                format!(
                                    "values from {lo} to {hi} at {}, which {} cannot hold",
                                    show(p),
                                    elem.name()
                                ),
                            ));
                        }
                    }
                }
                if let Some(prefix) = &compare.prefix {
                    let mut element = |other: &str, i: i64| -> Result<i64, String> {
                        let Some(arg) = spec.arg(other) else {
                            return Err(format!("`{other}` is not an argument"));
                        };
                        let ArgSpec::Buffer { len: olen, .. } = arg else {
                            return Err(format!("`{other}` is a scalar, not a buffer"));
                        };
                        if other == name {
                            return Err("a prefix cannot come from the buffer it limits".into());
                        }
                        let olen = expr::eval(olen, p)?;
                        if !(0..olen).contains(&i) {
                            return Err(format!(
                                "`{other}[{i}]` is past the end of `{other}`, whose length is {olen}"
                            ));
                        }
                        Ok(1) // element values exist only after a run
                    };
                    expr::eval_indexed(prefix, p, &mut element)
                        .map_err(|m| fail("compare.prefix", at(p)(m)))?;
                }
            }
        }
    }
    Ok(())
}

fn check_launch(l: &LaunchSpec, site: &LaunchSites, points: &[Env]) -> Result<(), Failure> {
    let fail = |s: &Site, m: String| (s.span.clone(), s.key.clone(), m);
    for p in points {
        for (what, exprs, max, s) in [
            ("grid", &l.grid, GRID_MAX, &site.grid),
            ("block", &l.block, BLOCK_MAX, &site.block),
        ] {
            let mut threads = 1i64;
            for (i, e) in exprs.iter().enumerate() {
                let v = expr::eval(e, p).map_err(|m| fail(s, at(p)(m)))?;
                let axis = ["x", "y", "z"][i];
                if v < 1 {
                    return Err(fail(
                        s,
                        format!(
                            "`{e}` is {v} at {}: a {what} dimension must be at least 1",
                            show(p)
                        ),
                    ));
                }
                if v > max[i] {
                    return Err(fail(
                        s,
                        format!(
                            "`{e}` is {v} at {}: {what} {axis} is at most {}",
                            show(p),
                            max[i]
                        ),
                    ));
                }
                threads *= v;
            }
            if what == "block" && threads > BLOCK_THREADS_MAX {
                return Err(fail(
                    s,
                    format!(
                        "{threads} threads per block at {}: at most {BLOCK_THREADS_MAX}",
                        show(p)
                    ),
                ));
            }
        }
        let v = expr::eval(&l.shared, p).map_err(|m| fail(&site.shared, at(p)(m)))?;
        if !(0..=MAX_SHARED_BYTES).contains(&v) {
            return Err(fail(
                &site.shared,
                format!(
                    "`{}` is {v} bytes at {}: dynamic shared memory is 0 to {MAX_SHARED_BYTES} \
                     bytes (227 KiB)",
                    l.shared,
                    show(p)
                ),
            ));
        }
    }
    Ok(())
}

/// The most streams a kernel's launches may name (`stream = 0` to `MAX_STREAM`).
pub const MAX_STREAM: i64 = 7;

/// A `[[kernel.launch]]`'s `stream`: a whole number from 0 to [`MAX_STREAM`].
pub fn stream(v: &toml::Value) -> Result<u32, String> {
    let n = v.as_integer().filter(|n| (0..=MAX_STREAM).contains(n));
    match n.and_then(|n| u32::try_from(n).ok()) {
        Some(n) => Ok(n),
        None => Err(format!(
            "`{v}` is no stream: give a whole number from 0 to {MAX_STREAM} (launches with the \
             same number run in order on one stream; 0, the default, is the stream of a kernel's \
             single launch)"
        )),
    }
}

/// The runner launches every step of a kernel on one stream: launches declared on several
/// streams would run ordered, and a race between them (what streamcheck judges) could never
/// show. Refused, `(index of the first launch that differs, why)`, until the runner creates the
/// streams (then this check goes).
pub fn one_stream(streams: &[u32]) -> Result<(), (usize, String)> {
    match streams.iter().position(|s| *s != streams[0]) {
        None => Ok(()),
        Some(i) => Err((
            i,
            format!(
                "stream {} differs from launch #1's stream {}: racegate does not run a kernel's \
                 launches on several streams yet (each run goes to one stream, in order, so a race \
                 between them could never show); give every launch the same `stream`",
                streams[i], streams[0]
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_ranges_are_the_types_finite_ranges() {
        // f32::MAX is about 3.4e38, beyond i128::MAX (1.7e38): an i128 bound refused 3e38.
        assert!(fits(Elem::F32, -3e38, 3e38));
        assert!(!fits(Elem::F32, 0.0, 4e38));
        assert!(fits(Elem::F16, -65504.0, 65504.0));
        assert!(!fits(Elem::F16, 0.0, 65520.0));
        assert!(!fits(Elem::BF16, 0.0, 3.4e38));
        assert!(fits(Elem::F64, -1e300, 1e300));
        assert!(fits(Elem::U64, 0.0, u64::MAX as f64));
        assert!(!fits(Elem::U8, -1.0, 0.0));
        assert!(!fits(Elem::I8, 0.0, 128.0));
    }
}
