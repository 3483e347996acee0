//! The `sizes` table of a kernel as `parse.rs` reads it: each size a whole number or a
//! `[lo, hi]` range, with a message that names the size and says what fits when a value does not
//! (an untagged enum said "data did not match any variant" for a size over `u32`, and serde's
//! buffering refused one over `i64` as "integer as i128").

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

/// One size: a fixed number, or the range it is drawn from.
#[derive(Clone, Debug)]
pub(super) enum SizeSpec {
    Fixed(u32),
    Range([u32; 2]),
}

/// The `sizes` table, in key order.
#[derive(Clone, Debug, Default)]
pub(super) struct Sizes(pub(super) BTreeMap<String, SizeSpec>);

const FITS: &str = "a whole number from 1 to 4294967295, or a range [lo, hi] of two such numbers";

/// A whole number that fits a size, from whatever integer TOML gave.
fn fit<E: de::Error>(v: i128) -> Result<u32, E> {
    u32::try_from(v).map_err(|_| E::custom(format!("{v} does not fit a size: expected {FITS}")))
}

/// One number of a size.
struct Num(u32);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

struct NumVisitor;

impl Visitor<'_> for NumVisitor {
    type Value = Num;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(FITS)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
        fit(i128::from(v)).map(Num)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
        fit(i128::from(v)).map(Num)
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Num, E> {
        fit(v).map(Num)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Num, E> {
        fit(i128::try_from(v).unwrap_or(i128::MAX)).map(Num)
    }
}

impl<'de> Deserialize<'de> for SizeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SizeSpec, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SizeSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(FITS)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SizeSpec, E> {
                NumVisitor.visit_i64(v).map(|n| SizeSpec::Fixed(n.0))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SizeSpec, E> {
                NumVisitor.visit_u64(v).map(|n| SizeSpec::Fixed(n.0))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<SizeSpec, E> {
                NumVisitor.visit_i128(v).map(|n| SizeSpec::Fixed(n.0))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<SizeSpec, E> {
                NumVisitor.visit_u128(v).map(|n| SizeSpec::Fixed(n.0))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<SizeSpec, A::Error> {
                let two =
                    || de::Error::custom(format!("a range holds two numbers: expected {FITS}"));
                let lo: Num = s.next_element()?.ok_or_else(two)?;
                let hi: Num = s.next_element()?.ok_or_else(two)?;
                if s.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(two());
                }
                Ok(SizeSpec::Range([lo.0, hi.0]))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Sizes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Sizes, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Sizes;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of sizes, as in { n = [1, 1000] }")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Sizes, A::Error> {
                let mut out = BTreeMap::new();
                while let Some(key) = m.next_key::<String>()? {
                    // Name the size: the error of the value alone does not.
                    let v = m
                        .next_value::<SizeSpec>()
                        .map_err(|e| de::Error::custom(format!("`sizes.{key}`: {e}")))?;
                    out.insert(key, v);
                }
                Ok(Sizes(out))
            }
        }
        d.deserialize_map(V)
    }
}
