//! The `Exercise` trait every family implements, and what a family hands the launcher:
//! buffers, launch steps and expected outputs. The list of families is `registry.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use crate::entry::Entry;

/// Element type of a buffer, for comparing and printing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    F32,
    U32,
    I32,
    U8,
}

impl Elem {
    pub fn size(self) -> usize {
        match self {
            Elem::U8 => 1,
            _ => 4,
        }
    }

    /// Formats element `i` of `bytes`.
    pub fn show(self, bytes: &[u8], i: usize) -> String {
        let s = self.size();
        let b = &bytes[i * s..(i + 1) * s];
        match self {
            Elem::U8 => b[0].to_string(),
            Elem::U32 => u32::from_le_bytes(b.try_into().expect("4 bytes")).to_string(),
            Elem::I32 => i32::from_le_bytes(b.try_into().expect("4 bytes")).to_string(),
            Elem::F32 => {
                let v = f32::from_le_bytes(b.try_into().expect("4 bytes"));
                if v.is_nan() {
                    format!("NaN(0x{:08x})", v.to_bits())
                } else {
                    format!("{v}")
                }
            }
        }
    }
}

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
}

impl Buffer {
    pub fn input(name: impl Into<Arc<str>>, elem: Elem, data: Vec<u8>) -> Buffer {
        Buffer {
            name: name.into(),
            elem,
            init: Init::Data(data),
            expected: None,
            judge_fills: false,
        }
    }

    pub fn output(name: impl Into<Arc<str>>, elem: Elem, init: Init, expected: Vec<u8>) -> Buffer {
        Buffer {
            name: name.into(),
            elem,
            init,
            expected: Some(expected),
            judge_fills: false,
        }
    }

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
}

/// One kernel launch of a problem; `kernel` is looked up in the case's module.
#[derive(Clone, Debug)]
pub struct LaunchStep {
    pub kernel: String,
    pub grid: Dim3,
    pub block: Dim3,
    pub args: Vec<Arg>,
}

/// A fully drawn problem: what to allocate, what to launch, what must come out.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Sizes and geometry in one line, e.g. `M=40 N=33 K=70 grid=3x3 block=16x16`.
    pub label: String,
    pub buffers: Vec<Buffer>,
    pub launches: Vec<LaunchStep>,
}

/// How a trial picks its problem size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
