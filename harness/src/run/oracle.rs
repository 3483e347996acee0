//! Oracle stage: compares what came back from the device with what the exercise expects.

use serde::{Deserialize, Serialize};
use similar::TextDiff;

use std::collections::BTreeMap;

use crate::source::exercises::{Buffer, Compare, Elem, Init, Tolerance};

/// How many mismatches a report keeps.
pub const KEEP: usize = 8;

/// One wrong element.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    pub index: usize,
    pub expected: String,
    pub actual: String,
}

/// Why a trial's results are wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wrong {
    pub buffer: String,
    /// Elements that differ, out of `total`.
    pub wrong: usize,
    pub total: usize,
    /// The first [`KEEP`] mismatches.
    pub first: Vec<Mismatch>,
    /// A unified diff of expected and actual around the first mismatch.
    pub diff: String,
    /// True when an input buffer was modified (the kernel wrote where it must only read).
    pub input_modified: bool,
    /// Why, when racegate could tell: the same trial rerun under the same schedule gave the
    /// same output twice with one poison and another with a different poison, so the kernel
    /// reads memory it never wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// Checks every buffer: outputs equal their expected bytes, inputs are unchanged.
/// Returns the first buffer that is wrong.
pub fn check(buffers: &[Buffer], actual: &[Vec<u8>]) -> Option<Wrong> {
    check_within(buffers, actual, &BTreeMap::new(), 0.0)
}

/// Like [`check`], comparing each output as its [`Compare`] says (`sizes` for a prefix
/// expression). `tolerance` is the manifest's kernel-wide absolute tolerance for float outputs
/// that declare none of their own.
pub fn check_within(
    buffers: &[Buffer],
    actual: &[Vec<u8>],
    sizes: &BTreeMap<String, i64>,
    tolerance: f64,
) -> Option<Wrong> {
    for (b, got) in buffers.iter().zip(actual) {
        let (want, input) = match (&b.init, &b.expected) {
            (_, Some(e)) => (e.as_slice(), false),
            (Init::Data(d), None) => (d.as_slice(), true),
            _ => continue,
        };
        let mut how = if input {
            Compare::default()
        } else {
            b.compare.clone()
        };
        if how.ignore {
            continue;
        }
        if how.tolerance.is_none() && tolerance > 0.0 && b.elem.is_float() && !input {
            how.tolerance = Some(Tolerance {
                abs: tolerance,
                ..Tolerance::default()
            });
        }
        let count = match &how.prefix {
            None => None,
            Some(expr) => match prefix_len(expr, buffers, sizes) {
                Ok(n) => Some(n),
                Err(why) => {
                    return Some(Wrong {
                        buffer: b.name.to_string(),
                        wrong: 0,
                        total: 0,
                        first: vec![],
                        diff: format!("the compared prefix `{expr}` cannot be worked out: {why}"),
                        input_modified: false,
                        cause: None,
                    })
                }
            },
        };
        if let Some(w) = compare(b, want, got, input, &how, count) {
            return Some(w);
        }
    }
    None
}

/// The length of a compared prefix: `expr` over the sizes, where `name[i]` is element `i` of
/// buffer `name`'s expected output (or its data, for an input).
pub(crate) fn prefix_len(
    expr: &str,
    buffers: &[Buffer],
    sizes: &BTreeMap<String, i64>,
) -> Result<usize, String> {
    let mut element = |name: &str, index: i64| -> Result<i64, String> {
        let b = buffers
            .iter()
            .find(|b| &*b.name == name)
            .ok_or_else(|| format!("no buffer `{name}`"))?;
        let bytes = match (&b.expected, &b.init) {
            (Some(e), _) => e,
            (None, Init::Data(d)) => d,
            _ => return Err(format!("`{name}` has no known value")),
        };
        let i = usize::try_from(index).map_err(|_| format!("`{name}[{index}]`: negative index"))?;
        if (i + 1) * b.elem.size() > bytes.len() {
            return Err(format!("`{name}` has no element {i}"));
        }
        // Toward zero, saturating: a float element read as a length.
        Ok(crate::source::values::f64_to_i64(b.elem.value(bytes, i)))
    };
    let n = crate::source::expr::eval_indexed(expr, sizes, &mut element)?;
    usize::try_from(n).map_err(|_| format!("`{expr}` is negative ({n})"))
}

/// Whether `got` is within `t` of `want` (both of `elem`); equal bits always are.
fn close_enough(elem: Elem, want: &[u8], got: &[u8], t: &Tolerance) -> bool {
    if want == got {
        return true;
    }
    let (w, g) = (elem.value(want, 0), elem.value(got, 0));
    if w.is_nan() || g.is_nan() {
        return false;
    }
    let d = (w - g).abs();
    if d <= t.abs || d <= t.rel * w.abs() {
        return true;
    }
    t.ulp > 0 && ulps(elem, want, got).is_some_and(|u| u <= t.ulp)
}

/// Units in the last place between two floats of the same sign (ordered bit patterns).
fn ulps(elem: Elem, want: &[u8], got: &[u8]) -> Option<u64> {
    let bits = |b: &[u8]| -> i64 {
        match elem {
            Elem::F16 | Elem::BF16 => {
                let v = u16::from_le_bytes([b[0], b[1]]) as i64;
                if v & 0x8000 != 0 {
                    -(v & 0x7fff)
                } else {
                    v
                }
            }
            Elem::F32 => {
                let v = u32::from_le_bytes(b.try_into().expect("4 bytes")) as i64;
                if v & 0x8000_0000 != 0 {
                    -(v & 0x7fff_ffff)
                } else {
                    v
                }
            }
            _ => {
                let v = u64::from_le_bytes(b.try_into().expect("8 bytes"));
                // The magnitude's 63 bits: non-negative as an i64.
                let m = (v & 0x7fff_ffff_ffff_ffff).cast_signed();
                if v >> 63 != 0 {
                    -m
                } else {
                    m
                }
            }
        }
    };
    elem.is_float().then(|| bits(want).abs_diff(bits(got)))
}

fn compare(
    b: &Buffer,
    want: &[u8],
    got: &[u8],
    input_modified: bool,
    how: &Compare,
    count: Option<usize>,
) -> Option<Wrong> {
    let size = b.elem.size();
    let full = want.len() / size;
    if got.len() != want.len() {
        return Some(Wrong {
            buffer: b.name.to_string(),
            wrong: full,
            total: full,
            first: vec![],
            diff: format!(
                "length differs: expected {} bytes, got {}",
                want.len(),
                got.len()
            ),
            input_modified,
            cause: None,
        });
    }
    let total = count.map_or(full, |n| n.min(full));
    let (want, got) = (&want[..total * size], &got[..total * size]);
    // An output that may stay partly unwritten: where the judge's run left the poison (every
    // byte 0xFF), the kernel may write anything or nothing.
    let (kept_want, kept_got): (Vec<u8>, Vec<u8>);
    let (want, got, total) = if b.may_stay_unwritten && !input_modified {
        let keep: Vec<usize> = (0..total)
            .filter(|&i| want[i * size..(i + 1) * size].iter().any(|&x| x != 0xFF))
            .collect();
        kept_want = keep
            .iter()
            .flat_map(|&i| want[i * size..(i + 1) * size].to_vec())
            .collect();
        kept_got = keep
            .iter()
            .flat_map(|&i| got[i * size..(i + 1) * size].to_vec())
            .collect();
        (kept_want.as_slice(), kept_got.as_slice(), keep.len())
    } else {
        (want, got, total)
    };
    // Unordered: the same multiset. Sorted by value (bytes for integers), then compared in
    // order, so a tolerance still applies element by element.
    let sorted = |bytes: &[u8]| -> Vec<u8> {
        let mut chunks: Vec<&[u8]> = bytes.chunks(size).collect();
        chunks.sort_by(|x, y| {
            b.elem
                .value(x, 0)
                .total_cmp(&b.elem.value(y, 0))
                .then_with(|| x.cmp(y))
        });
        chunks.concat()
    };
    let (want, got): (std::borrow::Cow<[u8]>, std::borrow::Cow<[u8]>) = if how.unordered {
        (sorted(want).into(), sorted(got).into())
    } else {
        (want.into(), got.into())
    };
    // Bitwise equality unless a tolerance says otherwise: NaN poison never equals a real value.
    let differs = |i: usize| {
        let (w, g) = (
            &want[i * size..(i + 1) * size],
            &got[i * size..(i + 1) * size],
        );
        match &how.tolerance {
            Some(t) if b.elem.is_float() => !close_enough(b.elem, w, g, t),
            _ => w != g,
        }
    };
    let bad: Vec<usize> = (0..total).filter(|&i| differs(i)).collect();
    if bad.is_empty() {
        return None;
    }
    let first = bad
        .iter()
        .take(KEEP)
        .map(|&i| Mismatch {
            index: i,
            expected: b.elem.show(&want, i),
            actual: b.elem.show(&got, i),
        })
        .collect();
    let mut diff = window_diff(b, &want, &got, bad[0], total);
    if how.unordered {
        diff = format!("(both sides sorted: the order is free)\n{diff}");
    }
    Some(Wrong {
        buffer: b.name.to_string(),
        wrong: bad.len(),
        total,
        first,
        diff,
        input_modified,
        cause: None,
    })
}

/// A unified diff of `[index] value` lines from two before to ten after the first mismatch.
fn window_diff(b: &Buffer, want: &[u8], got: &[u8], first: usize, total: usize) -> String {
    let lo = first.saturating_sub(2);
    let hi = (first + 10).min(total);
    let render = |bytes: &[u8]| -> String {
        (lo..hi)
            .map(|i| format!("[{i}] {}\n", b.elem.show(bytes, i)))
            .collect()
    };
    let (e, a) = (render(want), render(got));
    TextDiff::from_lines(&e, &a)
        .unified_diff()
        .context_radius(2)
        .header("expected", "actual")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::exercises::Elem;

    fn out(expected: &[u32]) -> Buffer {
        Buffer::output(
            "bins",
            Elem::U32,
            Init::Poison(4 * expected.len()),
            expected.iter().flat_map(|x| x.to_le_bytes()).collect(),
        )
    }

    fn bytes(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn equal_outputs_pass() {
        assert_eq!(check(&[out(&[1, 2, 3])], &[bytes(&[1, 2, 3])]), None);
    }

    #[test]
    fn a_wrong_element_is_reported_with_index_and_values() {
        let w = check(&[out(&[1, 2, 3])], &[bytes(&[1, 9, 3])]).expect("must fail");
        assert_eq!((w.wrong, w.total), (1, 3));
        assert_eq!(
            w.first[0],
            Mismatch {
                index: 1,
                expected: "2".into(),
                actual: "9".into()
            }
        );
        assert!(
            w.diff.contains("-[1] 2") && w.diff.contains("+[1] 9"),
            "{}",
            w.diff
        );
    }

    #[test]
    fn unwritten_poison_never_matches() {
        let w = check(&[out(&[0])], &[vec![0xFF; 4]]).expect("poison must fail");
        assert_eq!(w.first[0].actual, "4294967295");
    }

    #[test]
    fn a_modified_input_is_caught() {
        let input = Buffer::input("in", Elem::U8, vec![1, 2, 3]);
        let w = check(&[input], &[vec![1, 2, 4]]).expect("input changed");
        assert!(w.input_modified);
    }

    #[test]
    fn a_tolerance_accepts_small_float_differences_only() {
        let b = Buffer::output(
            "s",
            Elem::F32,
            Init::Poison(8),
            [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect(),
        );
        let got = |a: f32, c: f32| [a.to_le_bytes(), c.to_le_bytes()].concat();
        assert_eq!(
            check_within(
                std::slice::from_ref(&b),
                &[got(1.0005, 2.0)],
                &BTreeMap::new(),
                1e-3
            ),
            None
        );
        assert!(check_within(
            std::slice::from_ref(&b),
            &[got(1.1, 2.0)],
            &BTreeMap::new(),
            1e-3
        )
        .is_some());
        assert!(
            check_within(
                std::slice::from_ref(&b),
                &[got(f32::NAN, 2.0)],
                &BTreeMap::new(),
                1e-3
            )
            .is_some(),
            "NaN never passes"
        );
        assert!(
            check(&[b], &[got(1.0005, 2.0)]).is_some(),
            "exact by default"
        );
    }

    #[test]
    fn float_nan_is_shown_with_its_bits() {
        let b = Buffer::output(
            "C",
            Elem::F32,
            Init::Poison(4),
            1.0f32.to_le_bytes().to_vec(),
        );
        let w = check(&[b], &[vec![0xFF; 4]]).unwrap();
        assert_eq!(w.first[0].actual, "NaN(0xffffffff)");
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn with(b: Buffer, compare: Compare) -> Buffer {
        Buffer { compare, ..b }
    }

    #[test]
    fn unordered_accepts_any_order_but_not_another_multiset() {
        let b = with(
            out(&[1, 2, 3, 3]),
            Compare {
                unordered: true,
                ..Compare::default()
            },
        );
        let none = BTreeMap::new();
        let c = |v: &[u32]| check_within(std::slice::from_ref(&b), &[bytes(v)], &none, 0.0);
        assert_eq!(c(&[3, 1, 3, 2]), None);
        let w = c(&[3, 1, 2, 2]).expect("a 3 became a 2");
        assert!(w.diff.contains("order is free"), "{}", w.diff);
    }

    #[test]
    fn a_prefix_reads_its_length_from_another_buffer() {
        let count = out(&[2]);
        let out_ = with(
            Buffer {
                name: "out".into(),
                ..out(&[7, 9, 0xFFFF_FFFF, 0xFFFF_FFFF])
            },
            Compare {
                unordered: true,
                prefix: Some("count[0]".into()),
                ..Compare::default()
            },
        );
        let count = Buffer {
            name: "count".into(),
            ..count
        };
        let bufs = [count, out_];
        let none = BTreeMap::new();
        // The tail past count[0] is free; the first two are a multiset.
        assert_eq!(
            check_within(&bufs, &[bytes(&[2]), bytes(&[9, 7, 5, 5])], &none, 0.0),
            None
        );
        assert!(check_within(&bufs, &[bytes(&[2]), bytes(&[9, 8, 5, 5])], &none, 0.0).is_some());
        let sizes = BTreeMap::from([("n".to_string(), 1)]);
        let half = with(
            Buffer {
                name: "out".into(),
                ..out(&[7, 9])
            },
            Compare {
                prefix: Some("count[0] - n".into()),
                ..Compare::default()
            },
        );
        let bufs = [bufs[0].clone(), half];
        assert_eq!(
            check_within(&bufs, &[bytes(&[2]), bytes(&[7, 1])], &sizes, 0.0),
            None,
            "only count[0] - n = 1 element is compared"
        );
        let bad = with(
            bufs[1].clone(),
            Compare {
                prefix: Some("nothing[0]".into()),
                ..Compare::default()
            },
        );
        let w = check_within(
            &[bufs[0].clone(), bad],
            &[bytes(&[2]), bytes(&[7, 1])],
            &sizes,
            0.0,
        )
        .expect("an unknown buffer is reported");
        assert!(w.diff.contains("no buffer `nothing`"), "{}", w.diff);
    }

    #[test]
    fn tolerances_abs_rel_and_ulp() {
        let b = |t: Tolerance| {
            with(
                Buffer::output("y", Elem::F32, Init::Poison(4), f32s(&[100.0])),
                Compare {
                    tolerance: Some(t),
                    ..Compare::default()
                },
            )
        };
        let none = BTreeMap::new();
        let ok =
            |t: Tolerance, got: f32| check_within(&[b(t)], &[f32s(&[got])], &none, 0.0).is_none();
        let abs = Tolerance {
            abs: 0.5,
            ..Default::default()
        };
        assert!(ok(abs, 100.4) && !ok(abs, 100.6));
        let rel = Tolerance {
            rel: 0.01,
            ..Default::default()
        };
        assert!(ok(rel, 100.9) && !ok(rel, 101.1));
        let ulp = Tolerance {
            ulp: 2,
            ..Default::default()
        };
        let next = |x: f32, k: u32| f32::from_bits(x.to_bits() + k);
        assert!(ok(ulp, next(100.0, 2)) && !ok(ulp, next(100.0, 3)));
        assert!(!ok(abs, f32::NAN), "NaN is never close");
    }

    #[test]
    fn ignore_skips_the_buffer() {
        let b = with(
            out(&[1]),
            Compare {
                ignore: true,
                ..Compare::default()
            },
        );
        assert_eq!(
            check_within(&[b], &[bytes(&[5])], &BTreeMap::new(), 0.0),
            None
        );
    }

    #[test]
    fn inputs_are_always_exact() {
        let input = with(
            Buffer::input("in", Elem::U32, bytes(&[1, 2])),
            Compare {
                unordered: true,
                ..Compare::default()
            },
        );
        assert!(check_within(&[input], &[bytes(&[2, 1])], &BTreeMap::new(), 0.0).is_some());
    }

    #[test]
    fn where_the_judge_left_poison_an_unwritten_output_is_free() {
        let b = Buffer {
            may_stay_unwritten: true,
            ..out(&[5, 0xFFFF_FFFF, 7])
        };
        let none = BTreeMap::new();
        assert_eq!(
            check_within(std::slice::from_ref(&b), &[bytes(&[5, 123, 7])], &none, 0.0),
            None,
            "the middle element is don't-care"
        );
        assert!(check_within(&[b], &[bytes(&[5, 123, 8])], &none, 0.0).is_some());
        let strict = out(&[5, 0xFFFF_FFFF, 7]);
        assert!(
            check_within(&[strict], &[bytes(&[5, 123, 7])], &none, 0.0).is_some(),
            "without `unwritten`, poison must stay poison"
        );
    }
}
