//! How each buffer is compared on the device, so a trial whose output matches moves nothing
//! but one counter per buffer across the bus.
//!
//! Decided once per input set from the buffer's [`Compare`] (and the kernel-wide tolerance):
//! exact buffers byte by byte (`racegate_diff`); a tolerance, a prefix, or elements the judge's
//! run left unwritten, element by element with the host oracle's own rules
//! (`racegate_diff_elems`); an unordered output by a sum of per-element hashes against the
//! expected output's sum, computed here ([`hash_sum`] mirrors `racegate_hash_elems`). A device
//! count of zero is a pass; anything else reads the data back and the host oracle
//! (`run/oracle.rs`) decides and writes the report, so a device compare that errs towards
//! "differs" costs time, never a result. Combinations the device does not do (unordered with a
//! tolerance, or with unwritten elements among those compared) fall back to the exact compare,
//! and so to the host; a compaction's prefix of written elements stays on the device.

use std::collections::BTreeMap;

use crate::source::exercises::{Buffer, Elem, Init};

/// A buffer's compare on the device.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceCompare {
    /// Not compared (ignored, or no reference).
    Skip,
    /// The first `bytes` bytes, bitwise.
    Bytes { bytes: u64 },
    /// The first `n` elements with the oracle's elementwise rules.
    Elems {
        n: u64,
        size: u32,
        /// 0 bitwise, 1 f16, 2 bf16, 3 f32, 4 f64.
        kind: u32,
        unwritten: bool,
        abs: f64,
        rel: f64,
        ulp: u64,
    },
    /// The first `n` elements as a multiset: their hash sum must be `expected`.
    Unordered { n: u64, size: u32, expected: u64 },
}

fn kind(elem: Elem) -> u32 {
    match elem {
        Elem::F16 => 1,
        Elem::BF16 => 2,
        Elem::F32 => 3,
        Elem::F64 => 4,
        _ => 0,
    }
}

/// The hash `racegate_hash_elems` adds up for one element: splitmix64 of its bits.
pub fn element_hash(bits: u64) -> u64 {
    let mut z = bits.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The sum of [`element_hash`] over the first `n` elements of `size` bytes (little-endian).
pub fn hash_sum(bytes: &[u8], n: usize, size: usize) -> u64 {
    bytes
        .chunks_exact(size)
        .take(n)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            element_hash(u64::from_le_bytes(b))
        })
        .fold(0u64, u64::wrapping_add)
}

/// How each of `buffers` is compared on the device (`tolerance`: the kernel-wide absolute
/// tolerance for float outputs that declare none, as [`crate::run::oracle::check_within`]).
pub fn plan(
    buffers: &[Buffer],
    sizes: &BTreeMap<String, i64>,
    tolerance: f64,
) -> Vec<DeviceCompare> {
    buffers
        .iter()
        .map(|b| {
            let (want, input) = match (&b.init, &b.expected) {
                (_, Some(e)) => (e, false),
                (Init::Data(d), None) => (d, true),
                _ => return DeviceCompare::Skip,
            };
            let bytes = want.len() as u64;
            if input {
                return DeviceCompare::Bytes { bytes };
            }
            let how = &b.compare;
            if how.ignore {
                return DeviceCompare::Skip;
            }
            let size = b.elem.size();
            // bounded: an element is 1 to 8 bytes.
            #[allow(clippy::cast_possible_truncation)]
            let elem_size = size as u32;
            let full = want.len() / size;
            let n = match &how.prefix {
                None => full,
                Some(expr) => match crate::run::oracle::prefix_len(expr, buffers, sizes) {
                    Ok(n) => n.min(full),
                    // The host reports the bad expression: make the device say "differs".
                    Err(_) => return DeviceCompare::Bytes { bytes },
                },
            };
            let tol = how.tolerance.or_else(|| {
                (tolerance > 0.0 && b.elem.is_float()).then(|| crate::source::values::Tolerance {
                    abs: tolerance,
                    ..Default::default()
                })
            });
            let tol = tol.filter(|_| b.elem.is_float());
            if how.unordered {
                // Elements the judge's run may have left unwritten are compared by the host at
                // their positions only, which a multiset of all `n` cannot say; unless the
                // compared elements (a prefix, as a compaction's count gives) were all written:
                // then the host compares exactly the multiset of those `n`, and so does the hash.
                let all_written = || {
                    want.chunks_exact(size)
                        .take(n)
                        .all(|e| e.iter().any(|&x| x != 0xFF))
                };
                if tol.is_some() || (b.may_stay_unwritten && !all_written()) {
                    return DeviceCompare::Bytes { bytes };
                }
                return DeviceCompare::Unordered {
                    n: n as u64,
                    size: elem_size,
                    expected: hash_sum(want, n, size),
                };
            }
            match (tol, b.may_stay_unwritten, n == full) {
                (None, false, true) => DeviceCompare::Bytes { bytes },
                (tol, unwritten, _) => {
                    let float = if tol.is_some() { kind(b.elem) } else { 0 };
                    let t = tol.unwrap_or_default();
                    DeviceCompare::Elems {
                        n: n as u64,
                        size: elem_size,
                        kind: float,
                        unwritten,
                        abs: t.abs,
                        rel: t.rel,
                        ulp: t.ulp,
                    }
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::exercises::{Buffer, Compare, Elem, Init};
    use crate::source::values::Tolerance;

    fn out(elem: Elem, expected: Vec<u8>, compare: Compare) -> Buffer {
        Buffer {
            compare,
            ..Buffer::output("o", elem, Init::Poison(expected.len()), expected)
        }
    }

    #[test]
    fn each_compare_gets_its_device_form() {
        let none = BTreeMap::new();
        let exact = out(Elem::U32, vec![0; 16], Compare::default());
        let input = Buffer::input("i", Elem::U8, vec![1, 2, 3]);
        let ignored = out(
            Elem::U32,
            vec![0; 4],
            Compare {
                ignore: true,
                ..Default::default()
            },
        );
        let p = plan(&[exact, input, ignored], &none, 0.0);
        assert_eq!(
            p,
            vec![
                DeviceCompare::Bytes { bytes: 16 },
                DeviceCompare::Bytes { bytes: 3 },
                DeviceCompare::Skip
            ]
        );
        // A float output under the kernel-wide tolerance, an integer one stays bitwise.
        let f = out(Elem::F32, vec![0; 8], Compare::default());
        let i = out(Elem::I32, vec![0; 8], Compare::default());
        let p = plan(&[f, i], &none, 1e-3);
        assert!(
            matches!(p[0], DeviceCompare::Elems { n: 2, size: 4, kind: 3, abs, .. } if abs == 1e-3),
            "{p:?}"
        );
        assert_eq!(p[1], DeviceCompare::Bytes { bytes: 8 });
        // A declared tolerance with ulps on f16.
        let h = out(
            Elem::F16,
            vec![0; 6],
            Compare {
                tolerance: Some(Tolerance {
                    ulp: 2,
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        assert!(matches!(
            plan(&[h], &none, 0.0)[0],
            DeviceCompare::Elems {
                n: 3,
                size: 2,
                kind: 1,
                ulp: 2,
                ..
            }
        ));
        // Unwritten elements are free: elementwise, bitwise otherwise.
        let u = Buffer {
            may_stay_unwritten: true,
            ..out(Elem::U32, vec![0; 8], Compare::default())
        };
        assert!(matches!(
            plan(&[u], &none, 0.0)[0],
            DeviceCompare::Elems {
                n: 2,
                kind: 0,
                unwritten: true,
                ..
            }
        ));
    }

    #[test]
    fn a_prefix_counts_elements_from_the_expected_outputs() {
        let count = Buffer {
            name: "count".into(),
            ..out(Elem::U32, 2u32.to_le_bytes().to_vec(), Compare::default())
        };
        let data: Vec<u8> = [7u32, 9, 0, 0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let ordered = out(
            Elem::U32,
            data.clone(),
            Compare {
                prefix: Some("count[0]".into()),
                ..Default::default()
            },
        );
        let free = out(
            Elem::U32,
            data.clone(),
            Compare {
                prefix: Some("count[0]".into()),
                unordered: true,
                ..Default::default()
            },
        );
        let p = plan(&[count, ordered, free], &BTreeMap::new(), 0.0);
        assert!(
            matches!(
                p[1],
                DeviceCompare::Elems {
                    n: 2,
                    kind: 0,
                    unwritten: false,
                    ..
                }
            ),
            "{p:?}"
        );
        assert_eq!(
            p[2],
            DeviceCompare::Unordered {
                n: 2,
                size: 4,
                expected: hash_sum(&data, 2, 4)
            }
        );
    }

    /// A compaction (unordered, a prefix from a count, the rest unwritten): when the judge's run
    /// wrote every compared element, the device hashes them; when one of them reads as unwritten
    /// (all 0xFF), the host compares by position, so the device must not decide.
    #[test]
    fn a_compactions_written_prefix_is_hashed_on_the_device() {
        let count = Buffer {
            name: "count".into(),
            ..out(Elem::U32, 2u32.to_le_bytes().to_vec(), Compare::default())
        };
        let compact = |vals: &[u32]| Buffer {
            may_stay_unwritten: true,
            ..out(
                Elem::U32,
                vals.iter().flat_map(|x| x.to_le_bytes()).collect(),
                Compare {
                    prefix: Some("count[0]".into()),
                    unordered: true,
                    ..Default::default()
                },
            )
        };
        let written = compact(&[7, 9, u32::MAX, u32::MAX]);
        let data = written.expected.clone().unwrap();
        let p = plan(&[count.clone(), written], &BTreeMap::new(), 0.0);
        assert_eq!(
            p[1],
            DeviceCompare::Unordered {
                n: 2,
                size: 4,
                expected: hash_sum(&data, 2, 4)
            }
        );
        // An element inside the prefix that reads as unwritten: the host decides.
        let p = plan(
            &[count, compact(&[7, u32::MAX, 1, 1])],
            &BTreeMap::new(),
            0.0,
        );
        assert_eq!(p[1], DeviceCompare::Bytes { bytes: 16 });
        // Without a prefix every element is compared, the unwritten tail too: the host decides.
        let tail = Buffer {
            may_stay_unwritten: true,
            ..out(
                Elem::U32,
                [7u32, 9, u32::MAX]
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect(),
                Compare {
                    unordered: true,
                    ..Default::default()
                },
            )
        };
        assert_eq!(
            plan(&[tail], &BTreeMap::new(), 0.0)[0],
            DeviceCompare::Bytes { bytes: 12 }
        );
    }

    /// The device's verdict never passes what the host fails: over random compactions (a count,
    /// a written prefix, an unwritten tail) and random outputs (the prefix shuffled, an element
    /// changed, one left unwritten, the tail scribbled), wherever the plan hashes and the hash
    /// matches, the host oracle finds nothing wrong either.
    #[test]
    fn a_matching_hash_is_never_a_host_failure() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::ChaCha8Rng::seed_from_u64(26);
        let words = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        let (mut hashed, mut caught) = (0, 0);
        for _ in 0..4000 {
            let len32 = rng.random_range(1..12u32);
            let n32 = rng.random_range(0..=len32);
            let (len, n) = (len32 as usize, n32 as usize);
            // Small values so that equal elements (and so multisets) are common, and now and
            // then one that reads as unwritten (all 0xFF) inside the prefix.
            let mut want: Vec<u32> = (0..n)
                .map(|_| match rng.random_range(0..12u32) {
                    0 => u32::MAX,
                    v => v % 4,
                })
                .collect();
            want.resize(len, u32::MAX);
            let count = Buffer {
                name: "count".into(),
                ..out(Elem::U32, n32.to_le_bytes().to_vec(), Compare::default())
            };
            let data = Buffer {
                may_stay_unwritten: true,
                ..out(
                    Elem::U32,
                    words(&want),
                    Compare {
                        prefix: Some("count[0]".into()),
                        unordered: true,
                        ..Default::default()
                    },
                )
            };
            let buffers = [count, data];
            let p = plan(&buffers, &BTreeMap::new(), 0.0);
            let DeviceCompare::Unordered { expected, .. } = p[1] else {
                continue;
            };
            let mut got = want.clone();
            rand::seq::SliceRandom::shuffle(&mut got[..n], &mut rng);
            match rng.random_range(0..4) {
                0 if n > 0 => {
                    let i = rng.random_range(0..n);
                    got[i] = got[i].wrapping_add(1);
                }
                1 if n > 0 => got[rng.random_range(0..n)] = u32::MAX,
                2 if len > n => got[rng.random_range(n..len)] = rng.random(),
                _ => {}
            }
            let actual = vec![n32.to_le_bytes().to_vec(), words(&got)];
            let device_pass = hash_sum(&actual[1], n, 4) == expected;
            let host_pass =
                crate::run::oracle::check_within(&buffers, &actual, &BTreeMap::new(), 0.0)
                    .is_none();
            hashed += 1;
            if !device_pass {
                caught += 1;
            }
            assert!(!device_pass || host_pass, "want {want:?} got {got:?} n {n}");
        }
        assert!(
            hashed > 3000 && caught > 500,
            "{hashed} hashed, {caught} caught"
        );
    }

    #[test]
    fn the_hash_sum_ignores_order_and_sees_a_changed_element() {
        let b = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
        assert_eq!(
            hash_sum(&b(&[1, 2, 3, 3]), 4, 4),
            hash_sum(&b(&[3, 1, 3, 2]), 4, 4)
        );
        assert_ne!(
            hash_sum(&b(&[1, 2, 3, 3]), 4, 4),
            hash_sum(&b(&[1, 2, 2, 3]), 4, 4)
        );
        assert_ne!(
            hash_sum(&b(&[1, 2, 3, 3]), 4, 4),
            hash_sum(&b(&[1, 2, 3, 3, 0]), 5, 4)
        );
        assert_eq!(
            hash_sum(&b(&[1, 2, 3, 9]), 3, 4),
            hash_sum(&b(&[3, 2, 1, 5]), 3, 4),
            "prefix"
        );
        // Known values of splitmix64 (its reference outputs for seed 0 and 1).
        assert_eq!(element_hash(0), 0xe220_a839_7b1d_cdaf);
    }
}
