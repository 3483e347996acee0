//! Oracle stage: compares what came back from the device with what the exercise expects.

use serde::{Deserialize, Serialize};
use similar::TextDiff;

use crate::exercises::{Buffer, Init};

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
}

/// Checks every buffer: outputs equal their expected bytes, inputs are unchanged.
/// Returns the first buffer that is wrong.
pub fn check(buffers: &[Buffer], actual: &[Vec<u8>]) -> Option<Wrong> {
    check_within(buffers, actual, 0.0)
}

/// Like [`check`], but f32 outputs may differ by up to `tolerance` (absolute). Used only where
/// exactness is impossible: a manifest kernel whose float atomics add in a different order
/// each run declares its tolerance.
pub fn check_within(buffers: &[Buffer], actual: &[Vec<u8>], tolerance: f32) -> Option<Wrong> {
    for (b, got) in buffers.iter().zip(actual) {
        let (want, input) = match (&b.init, &b.expected) {
            (_, Some(e)) => (e.as_slice(), false),
            (Init::Data(d), None) => (d.as_slice(), true),
            _ => continue,
        };
        if let Some(w) = compare(b, want, got, input, tolerance) {
            return Some(w);
        }
    }
    None
}

fn compare(
    b: &Buffer,
    want: &[u8],
    got: &[u8],
    input_modified: bool,
    tolerance: f32,
) -> Option<Wrong> {
    let size = b.elem.size();
    let total = want.len() / size;
    if got.len() != want.len() {
        return Some(Wrong {
            buffer: b.name.to_string(),
            wrong: total,
            total,
            first: vec![],
            diff: format!(
                "length differs: expected {} bytes, got {}",
                want.len(),
                got.len()
            ),
            input_modified,
        });
    }
    // Bitwise equality: exact oracles, and NaN poison never equals a real value.
    let differs = |i: usize| {
        let (w, g) = (
            &want[i * size..(i + 1) * size],
            &got[i * size..(i + 1) * size],
        );
        if w == g {
            return false;
        }
        if tolerance > 0.0 && b.elem == crate::exercises::Elem::F32 && !input_modified {
            let f = |x: &[u8]| f32::from_le_bytes(x.try_into().expect("4 bytes"));
            let d = (f(w) - f(g)).abs();
            return d.is_nan() || d > tolerance;
        }
        true
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
            expected: b.elem.show(want, i),
            actual: b.elem.show(got, i),
        })
        .collect();
    Some(Wrong {
        buffer: b.name.to_string(),
        wrong: bad.len(),
        total,
        first,
        diff: window_diff(b, want, got, bad[0], total),
        input_modified,
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
    use crate::exercises::Elem;

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
            check_within(std::slice::from_ref(&b), &[got(1.0005, 2.0)], 1e-3),
            None
        );
        assert!(check_within(std::slice::from_ref(&b), &[got(1.1, 2.0)], 1e-3).is_some());
        assert!(
            check_within(std::slice::from_ref(&b), &[got(f32::NAN, 2.0)], 1e-3).is_some(),
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
}
