//! Element types and how values of them are made, shown and compared: the twelve types a buffer
//! or scalar may have, the raw bits a scalar argument is passed as, and how an output is
//! compared with what it should be (exact by default). Shared by the families, the manifest,
//! the launcher and the oracle, which is why it belongs to none of them.

use serde::Serialize;

/// Element type of a buffer or scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Elem {
    F16,
    BF16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl Elem {
    /// Every type, in the order the manifest's documentation lists them.
    pub const ALL: [Elem; 12] = [
        Elem::F32,
        Elem::F64,
        Elem::F16,
        Elem::BF16,
        Elem::I8,
        Elem::I16,
        Elem::I32,
        Elem::I64,
        Elem::U8,
        Elem::U16,
        Elem::U32,
        Elem::U64,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Elem::F16 => "f16",
            Elem::BF16 => "bf16",
            Elem::F32 => "f32",
            Elem::F64 => "f64",
            Elem::I8 => "i8",
            Elem::I16 => "i16",
            Elem::I32 => "i32",
            Elem::I64 => "i64",
            Elem::U8 => "u8",
            Elem::U16 => "u16",
            Elem::U32 => "u32",
            Elem::U64 => "u64",
        }
    }

    pub fn from_name(s: &str) -> Option<Elem> {
        Elem::ALL.into_iter().find(|e| e.name() == s)
    }

    pub fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 => 1,
            Elem::F16 | Elem::BF16 | Elem::I16 | Elem::U16 => 2,
            Elem::F32 | Elem::I32 | Elem::U32 => 4,
            Elem::F64 | Elem::I64 | Elem::U64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::F16 | Elem::BF16 | Elem::F32 | Elem::F64)
    }

    /// The little-endian bytes of `v` in this type (integers wrap, floats round to nearest).
    pub fn encode(self, v: f64) -> Vec<u8> {
        match self {
            Elem::F16 => f16_bits(v).to_le_bytes().to_vec(),
            Elem::BF16 => bf16_bits(v).to_le_bytes().to_vec(),
            Elem::F32 => f64_to_f32(v).to_le_bytes().to_vec(),
            Elem::F64 => v.to_le_bytes().to_vec(),
            // Toward zero into an i64, then its low bytes: the i64 wrapped to the width.
            int => f64_to_i64(v).to_le_bytes()[..int.size()].to_vec(),
        }
    }

    /// The bytes of an integer `v`, exactly (for integer types; floats via [`Elem::encode`]).
    pub fn encode_int(self, v: i64) -> Vec<u8> {
        match self {
            Elem::I64 | Elem::U64 => v.to_le_bytes().to_vec(),
            e => e.encode(v as f64),
        }
    }

    /// Element `i` of `bytes` as a number (u64 and i64 beyond 2^53 lose precision; only
    /// tolerance comparisons and prefix lengths use this).
    pub fn value(self, bytes: &[u8], i: usize) -> f64 {
        let s = self.size();
        let b = &bytes[i * s..(i + 1) * s];
        let a2 = || [b[0], b[1]];
        let a4 = || b.try_into().expect("4 bytes");
        let a8 = || b.try_into().expect("8 bytes");
        match self {
            Elem::F16 => f16_to_f32(u16::from_le_bytes(a2())) as f64,
            Elem::BF16 => half::bf16::from_bits(u16::from_le_bytes(a2())).to_f64(),
            Elem::F32 => f32::from_le_bytes(a4()) as f64,
            Elem::F64 => f64::from_le_bytes(a8()),
            Elem::I8 => f64::from(i8::from_le_bytes([b[0]])),
            Elem::I16 => i16::from_le_bytes(a2()) as f64,
            Elem::I32 => i32::from_le_bytes(a4()) as f64,
            Elem::I64 => i64::from_le_bytes(a8()) as f64,
            Elem::U8 => b[0] as f64,
            Elem::U16 => u16::from_le_bytes(a2()) as f64,
            Elem::U32 => u32::from_le_bytes(a4()) as f64,
            Elem::U64 => u64::from_le_bytes(a8()) as f64,
        }
    }

    /// Formats element `i` of `bytes`; a NaN shows its bits (0xFF poison reads as NaN).
    pub fn show(self, bytes: &[u8], i: usize) -> String {
        let s = self.size();
        let b = &bytes[i * s..(i + 1) * s];
        match self {
            Elem::I64 => i64::from_le_bytes(b.try_into().expect("8 bytes")).to_string(),
            Elem::U64 => u64::from_le_bytes(b.try_into().expect("8 bytes")).to_string(),
            e if e.is_float() => {
                let v = e.value(bytes, i);
                if v.is_nan() {
                    let hex: String = b.iter().rev().map(|x| format!("{x:02x}")).collect();
                    format!("NaN(0x{hex})")
                } else {
                    format!("{v}")
                }
            }
            e => format!("{}", e.value(bytes, i)),
        }
    }
}

/// `v` rounded to the nearest f32 (ties to even); beyond f32's range it is an infinity.
/// Manifests are checked to fit their element type before anything is encoded.
// bounded: the rounding and the overflow to infinity are the meaning wanted here.
#[allow(clippy::cast_possible_truncation)]
pub fn f64_to_f32(v: f64) -> f32 {
    v as f32
}

/// `v` toward zero as an i64 (the fraction dropped), saturating at i64's ends, NaN as 0: the
/// integer an integer element gets from a float before it is wrapped to its width.
// bounded: `as` truncates toward zero and saturates, which is the encoding's meaning.
#[allow(clippy::cast_possible_truncation)]
pub fn f64_to_i64(v: f64) -> i64 {
    v as i64
}

/// `v` toward zero as a u64, saturating: negatives and NaN are 0, beyond u64::MAX is
/// u64::MAX. Callers round first (`.round()`, `.ceil()`) where they want other than toward zero.
// bounded: `as` truncates toward zero and saturates, which is the meaning wanted.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn f64_to_u64(v: f64) -> u64 {
    v as u64
}

/// The low `N` bytes of `v`, little-endian: `v` wrapped to an `N`-byte integer (`N` <= 8).
pub fn wrapped<const N: usize>(v: i64) -> [u8; N] {
    let b = v.to_le_bytes();
    std::array::from_fn(|i| b[i])
}

/// IEEE half precision, rounded once to nearest even from the f64 (the `half` crate does the
/// narrowing from f32; see [`to_f32_odd`] for why it is not given the f64).
pub fn f16_bits(v: f64) -> u16 {
    half::f16::from_f32(to_f32_odd(v)).to_bits()
}

/// An f16's value, exactly.
pub fn f16_to_f32(h: u16) -> f32 {
    half::f16::from_bits(h).to_f32()
}

/// bfloat16, rounded once to nearest even from the f64.
pub fn bf16_bits(v: f64) -> u16 {
    half::bf16::from_f32(to_f32_odd(v)).to_bits()
}

/// `v` as an f32 rounded to odd: truncated toward zero, its last bit set when anything was cut.
/// Rounding to nearest twice (f64 -> f32 -> f16) can round a value just above a halfway point
/// of f16 down to the halfway point and then to even (`1 + 2^-11 + 2^-40` gives 1.0, not
/// 1.0009766); rounding to odd first keeps the "above" in the last bit, and f32 has more than
/// two bits beyond f16's and bf16's, so the second rounding is the one correct rounding.
/// (`half::f16::from_f64` is not used: it narrows through f32 where the CPU has F16C and drops
/// the f64's low 32 bits elsewhere, both double rounding.)
fn to_f32_odd(v: f64) -> f32 {
    let near = f64_to_f32(v);
    if near.is_nan() || near as f64 == v {
        return near;
    }
    // Inexact: the neighbour toward zero, then its last bit set (an infinity from overflow
    // becomes f32::MAX, whose last bit is set: f16 and bf16 still overflow to infinity).
    let toward_zero = if (near as f64).abs() > v.abs() {
        f32::from_bits(near.to_bits() - 1)
    } else {
        near
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// A scalar kernel argument as the raw bits the kernel's parameter holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bits {
    B8(u8),
    B16(u16),
    B32(u32),
    B64(u64),
}

impl Bits {
    /// `v` as a scalar of type `elem`.
    pub fn of(elem: Elem, v: f64) -> Bits {
        Bits::from_bytes(&elem.encode(v))
    }

    /// An integer `v` as a scalar of type `elem`, exactly.
    pub fn of_int(elem: Elem, v: i64) -> Bits {
        Bits::from_bytes(&elem.encode_int(v))
    }

    fn from_bytes(b: &[u8]) -> Bits {
        match b.len() {
            1 => Bits::B8(b[0]),
            2 => Bits::B16(u16::from_le_bytes([b[0], b[1]])),
            4 => Bits::B32(u32::from_le_bytes(b.try_into().expect("4 bytes"))),
            _ => Bits::B64(u64::from_le_bytes(b.try_into().expect("8 bytes"))),
        }
    }
}

/// How far a float output may be from its expected value: it passes when within `abs`, or
/// within `rel` of the expected magnitude, or within `ulp` units in the last place. NaN never
/// passes unless both are NaN with the same bits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
    pub ulp: u64,
}

/// How an output buffer is compared with its expected bytes. The default is exact: bitwise
/// equal, every element.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compare {
    /// Not compared at all (scratch space, or output whose value is free).
    pub ignore: bool,
    /// Float elements may differ by this much.
    pub tolerance: Option<Tolerance>,
    /// The same multiset of elements, in any order (a stream compaction's output).
    pub unordered: bool,
    /// Only the first N elements count; N is an expression over the sizes and elements of
    /// other buffers' expected outputs, such as `count[0]`.
    pub prefix: Option<String>,
}

impl Compare {
    pub fn is_exact(&self) -> bool {
        *self == Compare::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_round_trips_small_integers() {
        for e in Elem::ALL {
            assert_eq!(Elem::from_name(e.name()), Some(e));
            for v in [-3.0f64, 0.0, 1.0, 7.0, 100.0] {
                let v = if e.name().starts_with('u') {
                    v.abs()
                } else {
                    v
                };
                let b = e.encode(v);
                assert_eq!(b.len(), e.size(), "{e:?}");
                assert_eq!(e.value(&b, 0), v, "{e:?} {v}");
            }
        }
    }

    #[test]
    fn half_and_bfloat_round_to_nearest_even() {
        assert_eq!(f16_bits(1.0), 0x3c00);
        assert_eq!(f16_bits(-2.0), 0xc000);
        assert_eq!(f16_bits(65504.0), 0x7bff);
        assert_eq!(f16_bits(1e6), 0x7c00, "overflow is infinity");
        assert_eq!(f16_to_f32(f16_bits(0.333)), 0.333_007_8);
        assert_eq!(f16_to_f32(0x0001), 5.9604645e-8, "smallest subnormal");
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(bf16_bits(1.0 + 1.0 / 256.0), 0x3f80, "ties to even");
        assert!(Elem::F16.show(&[0xff, 0xff], 0).starts_with("NaN(0xffff"));
    }

    /// f64 -> f32 -> f16 rounded twice. `1 + 2^-11 + 2^-40` lies just above the
    /// halfway point between 1.0 and the next f16 (1 + 2^-10), so it rounds up; as an f32 it
    /// is the halfway point itself, which rounds to even (down).
    #[test]
    fn half_and_bfloat_round_once_from_f64() {
        let above = |one_ulp: f64| 1.0 + one_ulp / 2.0 + 2f64.powi(-40);
        assert_eq!(f16_bits(above(2f64.powi(-10))), 0x3c01);
        assert_eq!(f16_bits(-above(2f64.powi(-10))), 0xbc01);
        assert_eq!(Elem::F16.encode(above(2f64.powi(-10))), vec![0x01, 0x3c]);
        assert_eq!(bf16_bits(above(2f64.powi(-7))), 0x3f81);
        assert_eq!(Elem::BF16.encode(above(2f64.powi(-7))), vec![0x81, 0x3f]);
        // Just above half the smallest subnormal rounds up to it, not to zero.
        assert_eq!(f16_bits(2f64.powi(-25) * (1.0 + 2f64.powi(-40))), 0x0001);
        // Exactly halfway still ties to even; below it rounds down.
        assert_eq!(f16_bits(1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(f16_bits(1.0 + 2f64.powi(-11) - 2f64.powi(-40)), 0x3c00);
        assert_eq!(f16_bits(1e300), 0x7c00, "overflow is infinity");
        assert_eq!(bf16_bits(-1e300), 0xff80, "overflow is infinity");
        assert!(f16_to_f32(f16_bits(f64::NAN)).is_nan());
    }

    #[test]
    fn scalars_keep_their_width() {
        assert_eq!(Bits::of(Elem::F32, 2.5), Bits::B32(2.5f32.to_bits()));
        assert_eq!(Bits::of(Elem::F64, 2.5), Bits::B64(2.5f64.to_bits()));
        assert_eq!(Bits::of_int(Elem::I64, -1), Bits::B64(u64::MAX));
        assert_eq!(Bits::of_int(Elem::U8, 255), Bits::B8(255));
        assert_eq!(Bits::of(Elem::F16, 1.0), Bits::B16(0x3c00));
    }
}
