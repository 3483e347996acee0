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
            Elem::F16 => f16_bits(v as f32).to_le_bytes().to_vec(),
            Elem::BF16 => bf16_bits(v as f32).to_le_bytes().to_vec(),
            Elem::F32 => (v as f32).to_le_bytes().to_vec(),
            Elem::F64 => v.to_le_bytes().to_vec(),
            Elem::I8 => (v as i64 as i8).to_le_bytes().to_vec(),
            Elem::I16 => (v as i64 as i16).to_le_bytes().to_vec(),
            Elem::I32 => (v as i64 as i32).to_le_bytes().to_vec(),
            Elem::I64 => (v as i64).to_le_bytes().to_vec(),
            Elem::U8 => (v as i64 as u8).to_le_bytes().to_vec(),
            Elem::U16 => (v as i64 as u16).to_le_bytes().to_vec(),
            Elem::U32 => (v as i64 as u32).to_le_bytes().to_vec(),
            Elem::U64 => (v as i64 as u64).to_le_bytes().to_vec(),
        }
    }

    /// The bytes of an integer `v`, exactly (for integer types; floats via [`Elem::encode`]).
    pub fn encode_int(self, v: i64) -> Vec<u8> {
        match self {
            Elem::I64 => v.to_le_bytes().to_vec(),
            Elem::U64 => (v as u64).to_le_bytes().to_vec(),
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
            Elem::BF16 => f32::from_bits((u16::from_le_bytes(a2()) as u32) << 16) as f64,
            Elem::F32 => f32::from_le_bytes(a4()) as f64,
            Elem::F64 => f64::from_le_bytes(a8()),
            Elem::I8 => b[0] as i8 as f64,
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

/// IEEE half precision, round to nearest even.
pub fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1 << shift) - 1);
        let mut r = m >> shift;
        if rest > half || (rest == half && r & 1 == 1) {
            r += 1;
        }
        return sign | r as u16;
    }
    let mut r = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && r & 1 == 1) {
        r += 1;
    }
    sign | r as u16
}

pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalize.
            let mut e = 127 - 15 + 1;
            let mut m = m;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | ((e as u32) << 23) | ((m & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// bfloat16, round to nearest even.
pub fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
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

    #[test]
    fn scalars_keep_their_width() {
        assert_eq!(Bits::of(Elem::F32, 2.5), Bits::B32(2.5f32.to_bits()));
        assert_eq!(Bits::of(Elem::F64, 2.5), Bits::B64(2.5f64.to_bits()));
        assert_eq!(Bits::of_int(Elem::I64, -1), Bits::B64(u64::MAX));
        assert_eq!(Bits::of_int(Elem::U8, 255), Bits::B8(255));
        assert_eq!(Bits::of(Elem::F16, 1.0), Bits::B16(0x3c00));
    }
}
