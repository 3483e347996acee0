//! The `Exercise` trait every family implements, and what a family hands the launcher:
//! buffers, launch steps and expected outputs. The list of families is `registry.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use crate::source::entry::Entry;

pub use crate::source::values::{Bits, Compare, Elem, Tolerance};

/// How a buffer starts out on the device.
#[derive(Clone, Debug)]
pub enum Init {
    /// An input: these bytes, which must be unchanged after the launch.
    Data(Vec<u8>),
    /// An output of this many bytes, filled with 0xFF (NaN as f32, -1 as i32) so that an element
    /// the kernel never writes cannot look right.
    Poison(usize),
    /// An output of this many bytes that the exercise's contract says the host clears.
    Zero(usize),
}

/// One device buffer of a problem.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// Shared, not `&'static`: a manifest names its buffers at run time, and problems are
    /// cloned per input set.
    pub name: Arc<str>,
    pub elem: Elem,
    pub init: Init,
    /// For outputs: the exact bytes a correct kernel leaves there.
    pub expected: Option<Vec<u8>>,
    /// An output whose expected bytes the trial's judge fills in on the device (a reference
    /// kernel, or the kernel's own first run when it is judged on determinism).
    pub judge_fills: bool,
    /// How the output is compared with `expected` (exact unless a manifest says otherwise).
    pub compare: Compare,
    /// The kernel may leave parts of this output unwritten by design: sanitizer runs fill it
    /// first, so initcheck does not report the copy back of bytes nobody was meant to write.
    pub may_stay_unwritten: bool,
}

impl Buffer {
    pub fn input(name: impl Into<Arc<str>>, elem: Elem, data: Vec<u8>) -> Buffer {
        Buffer {
            name: name.into(),
            elem,
            init: Init::Data(data),
            expected: None,
            judge_fills: false,
            compare: Compare::default(),
            may_stay_unwritten: false,
        }
    }

    pub fn output(name: impl Into<Arc<str>>, elem: Elem, init: Init, expected: Vec<u8>) -> Buffer {
        Buffer {
            name: name.into(),
            elem,
            init,
            expected: Some(expected),
            judge_fills: false,
            compare: Compare::default(),
            may_stay_unwritten: false,
        }
    }

    /// The buffer's size in bytes.
    pub fn len_bytes(&self) -> usize {
        match &self.init {
            Init::Data(d) => d.len(),
            Init::Poison(n) | Init::Zero(n) => *n,
        }
    }
}

/// Grid or block dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dim3(pub u32, pub u32, pub u32);

impl std::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim3(x, 1, 1) => write!(f, "{x}"),
            Dim3(x, y, 1) => write!(f, "{x}x{y}"),
            Dim3(x, y, z) => write!(f, "{x}x{y}x{z}"),
        }
    }
}

/// A kernel argument.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// The device pointer of buffer `i` of the problem.
    Buf(usize),
    Int(i32),
    /// A scalar of any type, as the bits its parameter holds.
    Scalar(Bits),
}

impl Arg {
    /// A size or count the kernel takes as an `int`: sizes are at most `i32::MAX` (`--size`
    /// refuses more, the families' defaults are far below) and parameters at most 1024.
    pub fn int(n: u32) -> Arg {
        Arg::Int(i32::try_from(n).expect("sizes are at most i32::MAX: parse_size refuses more"))
    }
}

/// One kernel launch of a problem; `kernel` is looked up in the case's module.
#[derive(Clone, Debug)]
pub struct LaunchStep {
    pub kernel: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub args: Vec<Arg>,
    /// Dynamic shared memory, in bytes.
    pub shared: u32,
}

/// A fully drawn problem: what to allocate, what to launch, what must come out.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Sizes and geometry in one line, e.g. `M=40 N=33 K=70 grid=3x3 block=16x16`.
    pub label: String,
    pub buffers: Vec<Buffer>,
    pub launches: Vec<LaunchStep>,
    /// The launches a reference kernel runs instead of `launches` (a manifest reference with a
    /// launch of its own); empty: the same launches, each naming the reference entry.
    pub reference_launches: Vec<LaunchStep>,
    /// The named sizes it was drawn with (a manifest's; empty for a family), for expressions
    /// that are evaluated after the run, such as a compared prefix.
    pub sizes: BTreeMap<String, i64>,
}

/// How a trial picks its problem size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SizeChoice {
    /// Drawn from this inclusive range (each dimension independently where there are several).
    Random { lo: u32, hi: u32 },
    /// Exactly this size in every dimension.
    Fixed(u32),
    /// The smallest geometry that still runs every loop and branch (for sanitizers).
    Sanitize,
}

impl SizeChoice {
    /// Draws one dimension; `align` makes a third of the draws multiples of it.
    pub fn draw(self, rng: &mut ChaCha8Rng, align: u32) -> u32 {
        match self {
            SizeChoice::Fixed(n) => n,
            SizeChoice::Sanitize => unreachable!("families handle Sanitize themselves"),
            SizeChoice::Random { lo, hi } => {
                let v = rng.random_range(lo..=hi);
                if align > 1 && rng.random_range(0..3) == 0 {
                    let rounded = (v / align).max(1) * align;
                    if rounded >= lo && rounded <= hi {
                        return rounded;
                    }
                }
                v
            }
        }
    }
}

/// An exercise family.
pub trait Exercise: Sync {
    fn name(&self) -> &'static str;
    /// The names of the `key=value` parameters an entry of this family must give.
    fn params(&self) -> &'static [&'static str];
    /// The default range of sizes for random trials.
    fn default_sizes(&self) -> (u32, u32);
    /// Draws a problem: sizes from `size`, geometry and inputs from `rng`.
    fn problem(&self, entry: &Entry, size: SizeChoice, rng: &mut ChaCha8Rng) -> Problem;

    /// Checks an entry's parameters: exactly the family's names, positive values.
    fn check_params(&self, params: &BTreeMap<String, i64>) -> Result<(), String> {
        let want = self.params();
        for k in params.keys() {
            if !want.contains(&k.as_str()) {
                return Err(format!(
                    "exercise `{}` takes no parameter `{k}` (it takes: {})",
                    self.name(),
                    if want.is_empty() {
                        "none".to_string()
                    } else {
                        want.join(", ")
                    }
                ));
            }
        }
        for k in want {
            match params.get(*k) {
                None => {
                    return Err(format!(
                        "exercise `{}` needs `{k}=N` on the entry",
                        self.name()
                    ))
                }
                Some(v) if *v <= 0 || *v > 1024 => {
                    return Err(format!("`{k}={v}` is out of range 1..=1024"))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn u32_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn ceil_div(a: u32, b: u32) -> u32 {
    a.div_ceil(b).max(1)
}
