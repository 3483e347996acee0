//! Generators: how an input buffer's data is made (the `gen` key of an argument), drawn from the
//! trial's ChaCha8 generator so that a seed gives the same data every time.
//!
//! ```text
//! int(lo, hi)         uniform integers in lo..=hi; lo and hi are integer expressions over the
//!                     sizes, so `int(0, cols - 1)` draws valid column indices
//! uniform(lo, hi)     uniform floats in [lo, hi) (float types only)
//! normal(mean, sd)    normally distributed floats (float types only)
//! choice([a, b, c])   one of the listed numbers, each equally likely
//! iota                0, 1, 2, ...
//! zeros               all 0
//! permutation         0..len in a random order
//! sorted(G)           G's draws in ascending order
//! prefix_sum(G)       element i is the sum of the first i draws of G, so element 0 is 0 and
//!                     the data never decreases when G is not negative (CSR row pointers:
//!                     `len = "rows + 1"`, `gen = "prefix_sum(int(0, 8))"`)
//! ```
//!
//! Small integers keep float sums exact in any order, so races cannot hide in rounding: prefer
//! `int` over `uniform` and `normal` unless the kernel needs fractions.

use rand::rngs::ChaCha8Rng;
use rand::RngExt;

use crate::source::expr::{self, Env};
use crate::source::values::{f64_to_f32, f64_to_i64, wrapped, Elem};

/// How an argument's data is made.
#[derive(Clone, Debug, PartialEq)]
pub enum Gen {
    /// Uniform integers between two integer expressions over the sizes, both included.
    Int(String, String),
    /// Uniform floats in [lo, hi).
    Uniform(f64, f64),
    Normal {
        mean: f64,
        sd: f64,
    },
    /// One of these numbers each time.
    Choice(Vec<Num>),
    /// 0, 1, 2, ...
    Iota,
    Zeros,
    /// A random permutation of 0..len.
    Permutation,
    Sorted(Box<Gen>),
    /// Exclusive running sum of the inner generator's draws: 0, g0, g0 + g1, ...
    PrefixSum(Box<Gen>),
}

/// A number written in a generator: integers stay exact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// What a generator drew: integers for integer generators (exact in every type), floats for
/// float ones.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Int(Vec<i64>),
    Float(Vec<f64>),
}

impl Values {
    /// The little-endian bytes of every value in `elem`, as [`Elem::encode_int`] and
    /// [`Elem::encode`] give them, written without a vector per element (a buffer may hold
    /// millions).
    pub fn encode(&self, elem: Elem) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len() * elem.size());
        macro_rules! each {
            ($v:expr, $f:expr) => {
                for x in $v {
                    out.extend_from_slice(&$f(*x))
                }
            };
        }
        match (self, elem) {
            (Values::Int(v), Elem::I64 | Elem::U64) => each!(v, |x: i64| x.to_le_bytes()),
            (Values::Int(v), Elem::I32 | Elem::U32) => {
                each!(v, |x: i64| wrapped::<4>(f64_to_i64(x as f64)))
            }
            (Values::Int(v), Elem::F32) => each!(v, |x: i64| f64_to_f32(x as f64).to_le_bytes()),
            (Values::Int(v), Elem::F64) => each!(v, |x: i64| (x as f64).to_le_bytes()),
            (Values::Float(v), Elem::F32) => each!(v, |x: f64| f64_to_f32(x).to_le_bytes()),
            (Values::Float(v), Elem::F64) => each!(v, |x: f64| x.to_le_bytes()),
            (Values::Int(v), e) => v.iter().for_each(|x| out.extend(e.encode_int(*x))),
            (Values::Float(v), e) => v.iter().for_each(|x| out.extend(e.encode(*x))),
        }
        out
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

const FORMS: &str = "int(lo, hi), uniform(lo, hi), normal(mean, sd), choice([a, b, ...]), \
                     iota, zeros, permutation, sorted(G) or prefix_sum(G)";

/// Splits `s` at the commas outside parentheses and brackets.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

fn number(s: &str) -> Result<Num, String> {
    if let Ok(i) = s.parse::<i64>() {
        return Ok(Num::Int(i));
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(Num::Float(f)),
        _ => Err(format!("`{s}` is not a number")),
    }
}

fn float(s: &str) -> Result<f64, String> {
    number(s).map(Num::as_f64)
}

impl Gen {
    /// Parses a generator as the manifest writes it. Nesting, length and runs of signs are
    /// bounded as in size expressions ([`expr::MAX_DEPTH`], [`expr::MAX_LEN`],
    /// [`expr::MAX_SIGNS`]), checked once before the parse recurses: 40,000 `sorted(`
    /// overflowed the stack.
    pub fn parse(s: &str) -> Result<Gen, String> {
        expr::check_shape(s.trim())?;
        Gen::parse_checked(s)
    }

    /// [`Gen::parse`] below the shape check: recursion is at most [`expr::MAX_DEPTH`] deep.
    fn parse_checked(s: &str) -> Result<Gen, String> {
        let s = s.trim();
        match s {
            "zeros" => return Ok(Gen::Zeros),
            "iota" => return Ok(Gen::Iota),
            "permutation" => return Ok(Gen::Permutation),
            _ => {}
        }
        let bad = || format!("`{s}`: expected {FORMS}");
        let open = s.find('(').ok_or_else(bad)?;
        let inner = s[open + 1..].strip_suffix(')').ok_or_else(bad)?;
        let args = split_top(inner);
        let two = |what: &str| -> Result<(&str, &str), String> {
            match args.as_slice() {
                [a, b] if !a.is_empty() && !b.is_empty() => Ok((a, b)),
                _ => Err(format!("`{s}`: {what}")),
            }
        };
        let one = || -> Result<Gen, String> {
            match args.as_slice() {
                [g] if !g.is_empty() => Gen::parse_checked(g),
                _ => Err(format!(
                    "`{s}`: give one inner generator, as in sorted(int(0, 9))"
                )),
            }
        };
        match s[..open].trim() {
            "int" => {
                let (lo, hi) = two("int needs two bounds, int(lo, hi)")?;
                // Literal bounds are checked now; expressions over sizes when validated.
                if let (Ok(l), Ok(h)) = (lo.parse::<i64>(), hi.parse::<i64>()) {
                    if l > h {
                        return Err(format!("`{s}`: empty range"));
                    }
                }
                Ok(Gen::Int(lo.to_string(), hi.to_string()))
            }
            "uniform" => {
                let (lo, hi) = two("uniform needs two bounds, uniform(lo, hi)")?;
                let (lo, hi) = (float(lo)?, float(hi)?);
                if lo > hi {
                    return Err(format!("`{s}`: empty range"));
                }
                Ok(Gen::Uniform(lo, hi))
            }
            "normal" => {
                let (mean, sd) = two("normal needs a mean and a standard deviation")?;
                let (mean, sd) = (float(mean)?, float(sd)?);
                if sd < 0.0 {
                    return Err(format!("`{s}`: the standard deviation is negative"));
                }
                Ok(Gen::Normal { mean, sd })
            }
            "choice" => {
                let list = match args.as_slice() {
                    [l] => l.strip_prefix('[').and_then(|l| l.strip_suffix(']')),
                    _ => None,
                }
                .ok_or_else(|| format!("`{s}`: give a list, as in choice([1, 2, 4])"))?;
                let items = split_top(list);
                if items.iter().any(|i| i.is_empty()) {
                    return Err(format!("`{s}`: the list is empty or has an empty item"));
                }
                Ok(Gen::Choice(
                    items.into_iter().map(number).collect::<Result<_, _>>()?,
                ))
            }
            "sorted" => Ok(Gen::Sorted(Box::new(one()?))),
            "prefix_sum" => Ok(Gen::PrefixSum(Box::new(one()?))),
            _ => Err(bad()),
        }
    }

    /// Draws floats, so only a float buffer can hold its data.
    pub fn is_float(&self) -> bool {
        match self {
            Gen::Uniform(..) | Gen::Normal { .. } => true,
            Gen::Choice(items) => items.iter().any(|i| matches!(i, Num::Float(_))),
            Gen::Sorted(g) | Gen::PrefixSum(g) => g.is_float(),
            Gen::Int(..) | Gen::Iota | Gen::Zeros | Gen::Permutation => false,
        }
    }

    /// The integer bounds of `int(lo, hi)` at these sizes.
    fn int_bounds(lo: &str, hi: &str, env: &Env) -> Result<(i64, i64), String> {
        let (l, h) = (expr::eval(lo, env)?, expr::eval(hi, env)?);
        if l > h {
            return Err(format!("int({lo}, {hi}) is empty: {l} > {h}"));
        }
        Ok((l, h))
    }

    /// The smallest and largest value `len` draws can hold at these sizes, for checking that
    /// they fit the buffer's type; `None` when unbounded (`normal`).
    pub fn range(&self, len: usize, env: &Env) -> Result<Option<(f64, f64)>, String> {
        let top = len.saturating_sub(1) as f64;
        Ok(match self {
            Gen::Int(lo, hi) => {
                let (l, h) = Gen::int_bounds(lo, hi, env)?;
                Some((l as f64, h as f64))
            }
            Gen::Uniform(lo, hi) => Some((*lo, *hi)),
            Gen::Normal { .. } => None,
            Gen::Choice(items) => {
                let v: Vec<f64> = items.iter().map(|i| i.as_f64()).collect();
                Some((
                    v.iter().copied().fold(f64::INFINITY, f64::min),
                    v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                ))
            }
            Gen::Zeros => Some((0.0, 0.0)),
            Gen::Iota | Gen::Permutation => Some((0.0, top)),
            Gen::Sorted(g) => g.range(len, env)?,
            // At most len - 1 draws are summed (the first element is 0).
            Gen::PrefixSum(g) => g
                .range(len, env)?
                .map(|(l, h)| ((l * top).min(0.0), (h * top).max(0.0))),
        })
    }

    /// Draws `len` values at these sizes.
    pub fn draw(&self, len: usize, env: &Env, rng: &mut ChaCha8Rng) -> Result<Values, String> {
        Ok(match self {
            Gen::Int(lo, hi) => {
                let (l, h) = Gen::int_bounds(lo, hi, env)?;
                Values::Int((0..len).map(|_| rng.random_range(l..=h)).collect())
            }
            Gen::Uniform(lo, hi) => Values::Float(
                (0..len)
                    .map(|_| lo + (hi - lo) * rng.random::<f64>())
                    .collect(),
            ),
            Gen::Normal { mean, sd } => Values::Float(
                (0..len)
                    .map(|_| {
                        // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
                        let u1 = 1.0 - rng.random::<f64>();
                        let u2 = rng.random::<f64>();
                        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                        mean + sd * z
                    })
                    .collect(),
            ),
            Gen::Choice(items) => {
                let picks = (0..len).map(|_| items[rng.random_range(0..items.len())]);
                if self.is_float() {
                    Values::Float(picks.map(Num::as_f64).collect())
                } else {
                    Values::Int(
                        picks
                            .map(|n| match n {
                                Num::Int(i) => i,
                                Num::Float(f) => f64_to_i64(f),
                            })
                            .collect(),
                    )
                }
            }
            Gen::Zeros => Values::Int(vec![0; len]),
            Gen::Iota => Values::Int((0..).take(len).collect()),
            Gen::Permutation => {
                let mut v: Vec<i64> = (0..).take(len).collect();
                // Fisher-Yates, written out so the order depends on nothing but the seed.
                for i in (1..len).rev() {
                    v.swap(i, rng.random_range(0..=i));
                }
                Values::Int(v)
            }
            Gen::Sorted(g) => match g.draw(len, env, rng)? {
                Values::Int(mut v) => {
                    v.sort_unstable();
                    Values::Int(v)
                }
                Values::Float(mut v) => {
                    v.sort_unstable_by(f64::total_cmp);
                    Values::Float(v)
                }
            },
            Gen::PrefixSum(g) => match g.draw(len, env, rng)? {
                Values::Int(v) => {
                    let mut acc = 0i64;
                    Values::Int(
                        v.iter()
                            .map(|x| {
                                let here = acc;
                                acc = acc.saturating_add(*x);
                                here
                            })
                            .collect(),
                    )
                }
                Values::Float(v) => {
                    let mut acc = 0.0;
                    Values::Float(
                        v.iter()
                            .map(|x| {
                                let here = acc;
                                acc += x;
                                here
                            })
                            .collect(),
                    )
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    fn env(n: i64) -> Env {
        Env::from([("n".to_string(), n)])
    }

    fn ints(g: &str, len: usize, seed: u64) -> Vec<i64> {
        match Gen::parse(g).unwrap().draw(len, &env(50), &mut rng(seed)) {
            Ok(Values::Int(v)) => v,
            other => panic!("{g}: {other:?}"),
        }
    }

    fn floats(g: &str, len: usize, seed: u64) -> Vec<f64> {
        match Gen::parse(g).unwrap().draw(len, &env(50), &mut rng(seed)) {
            Ok(Values::Float(v)) => v,
            other => panic!("{g}: {other:?}"),
        }
    }

    #[test]
    fn generators_parse() {
        assert_eq!(
            Gen::parse("int(-4, 4)"),
            Ok(Gen::Int("-4".into(), "4".into()))
        );
        assert_eq!(
            Gen::parse("int(0, min(n, 9) - 1)"),
            Ok(Gen::Int("0".into(), "min(n, 9) - 1".into()))
        );
        assert_eq!(Gen::parse("iota"), Ok(Gen::Iota));
        assert_eq!(Gen::parse(" permutation "), Ok(Gen::Permutation));
        assert_eq!(Gen::parse("uniform(-1, 0.5)"), Ok(Gen::Uniform(-1.0, 0.5)));
        assert_eq!(
            Gen::parse("normal(0, 2.5)"),
            Ok(Gen::Normal { mean: 0.0, sd: 2.5 })
        );
        assert_eq!(
            Gen::parse("choice([1, -2, 0.5])"),
            Ok(Gen::Choice(vec![
                Num::Int(1),
                Num::Int(-2),
                Num::Float(0.5)
            ]))
        );
        assert_eq!(
            Gen::parse("prefix_sum(sorted(int(0, 3)))"),
            Ok(Gen::PrefixSum(Box::new(Gen::Sorted(Box::new(Gen::Int(
                "0".into(),
                "3".into()
            ))))))
        );
        for bad in [
            "int(4, -4)",
            "int(4)",
            "int(1, 2, 3)",
            "uniform(2, 1)",
            "uniform(a, 1)",
            "normal(0, -1)",
            "choice(1, 2)",
            "choice([])",
            "choice([1, , 2])",
            "sorted()",
            "sorted(int(0, 1), iota)",
            "random",
            "int(0, 1",
            "gauss(0, 1)",
        ] {
            assert!(Gen::parse(bad).is_err(), "{bad} parsed");
        }
    }

    /// Nesting is bounded as in size expressions, checked once: 40,000 levels of any nesting
    /// generator are refused at once, 64 parse, 65 are refused naming the bound.
    #[test]
    fn nesting_is_bounded() {
        let start = std::time::Instant::now();
        for (open, close) in [("sorted(", ")"), ("prefix_sum(", ")")] {
            let at = |n: usize| Gen::parse(&format!("{}iota{}", open.repeat(n), close.repeat(n)));
            assert!(at(expr::MAX_DEPTH).is_ok());
            assert!(at(expr::MAX_DEPTH + 1)
                .unwrap_err()
                .contains("nested 65 deep"));
            assert!(at(40_000).unwrap_err().contains("at most"));
        }
        assert!(Gen::parse(&format!("int({}1, 2)", "-".repeat(100_000))).is_err());
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn draws_are_deterministic_per_seed() {
        for g in [
            "int(-8, 8)",
            "uniform(0, 1)",
            "normal(1, 2)",
            "choice([1, 2, 4])",
            "permutation",
            "sorted(int(0, 100))",
            "prefix_sum(int(0, 5))",
        ] {
            let gen = Gen::parse(g).unwrap();
            let a = gen.draw(200, &env(50), &mut rng(7)).unwrap();
            let b = gen.draw(200, &env(50), &mut rng(7)).unwrap();
            let c = gen.draw(200, &env(50), &mut rng(8)).unwrap();
            assert_eq!(a, b, "{g}");
            assert_ne!(a, c, "{g}: another seed, other data");
            assert_eq!(a.len(), 200);
        }
    }

    #[test]
    fn draws_stay_in_range() {
        let v = ints("int(-3, 4)", 2000, 1);
        assert!(v.iter().all(|x| (-3..=4).contains(x)));
        assert!(v.contains(&-3) && v.contains(&4), "both ends are drawn");
        let v = ints("int(n - 10, n)", 500, 1);
        assert!(
            v.iter().all(|x| (40..=50).contains(x)),
            "bounds use the sizes"
        );
        let v = floats("uniform(-2, 0.5)", 2000, 1);
        assert!(v.iter().all(|x| (-2.0..0.5).contains(x)));
        let v = ints("choice([1, 2, 4])", 500, 1);
        assert!(v.iter().all(|x| [1, 2, 4].contains(x)));
        assert!([1, 2, 4].iter().all(|c| v.contains(c)));
        let v = floats("normal(10, 2)", 20000, 1);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        assert!((mean - 10.0).abs() < 0.1, "mean {mean}");
        assert!((var.sqrt() - 2.0).abs() < 0.1, "sd {}", var.sqrt());
        assert_eq!(ints("zeros", 3, 1), [0, 0, 0]);
        assert_eq!(ints("iota", 4, 1), [0, 1, 2, 3]);
        assert!(Gen::parse("int(n, 1)")
            .unwrap()
            .draw(1, &env(50), &mut rng(1))
            .unwrap_err()
            .contains("empty"));
    }

    #[test]
    fn sorted_and_prefix_sum_are_monotonic() {
        let v = ints("sorted(int(-50, 50))", 1000, 3);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        let v = floats("sorted(normal(0, 1))", 1000, 3);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        let g = ints("int(0, 8)", 1000, 3);
        let v = ints("prefix_sum(int(0, 8))", 1000, 3);
        assert_eq!(v[0], 0, "a row pointer array starts at 0");
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
        assert!(v.windows(2).zip(&g).all(|(w, d)| w[1] - w[0] == *d));
        let v = floats("prefix_sum(uniform(0, 1))", 100, 3);
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn permutation_is_a_permutation() {
        for len in [0, 1, 2, 17, 1000] {
            let v = ints("permutation", len, 11);
            let mut s = v.clone();
            s.sort_unstable();
            assert_eq!(s, (0..).take(len).collect::<Vec<i64>>());
            if len > 2 {
                assert_ne!(v, s, "shuffled");
            }
        }
    }

    #[test]
    fn ranges_bound_every_draw() {
        let e = env(50);
        let r = |g: &str, len| Gen::parse(g).unwrap().range(len, &e).unwrap();
        assert_eq!(r("int(-1, n)", 10), Some((-1.0, 50.0)));
        assert_eq!(r("permutation", 10), Some((0.0, 9.0)));
        assert_eq!(r("prefix_sum(int(0, 5))", 11), Some((0.0, 50.0)));
        assert_eq!(r("prefix_sum(int(-2, 5))", 11), Some((-20.0, 50.0)));
        assert_eq!(r("choice([3, -1, 2])", 1), Some((-1.0, 3.0)));
        assert_eq!(r("normal(0, 1)", 1), None);
        assert!(Gen::parse("normal(0, 1)").unwrap().is_float());
        assert!(!Gen::parse("sorted(choice([1, 2]))").unwrap().is_float());
        assert!(Gen::parse("prefix_sum(choice([1, 2.5]))")
            .unwrap()
            .is_float());
    }

    #[test]
    fn fast_encoding_matches_elem_encode() {
        let ints = vec![
            0,
            1,
            -1,
            7,
            i32::MAX as i64 + 3,
            -(1 << 40),
            i64::MAX,
            i64::MIN,
        ];
        let floats = vec![0.0, -0.5, 2.5, 1e300, -1e-300, f64::MAX];
        for e in Elem::ALL {
            let want: Vec<u8> = ints.iter().flat_map(|x| e.encode_int(*x)).collect();
            assert_eq!(Values::Int(ints.clone()).encode(e), want, "{e:?}");
            let want: Vec<u8> = floats.iter().flat_map(|x| e.encode(*x)).collect();
            assert_eq!(Values::Float(floats.clone()).encode(e), want, "{e:?}");
        }
    }

    #[test]
    fn values_encode_in_the_buffer_type() {
        assert_eq!(
            Values::Int(vec![-1, 2]).encode(Elem::I16),
            [0xff, 0xff, 2, 0]
        );
        assert_eq!(
            Values::Float(vec![1.5]).encode(Elem::F32),
            1.5f32.to_le_bytes()
        );
        assert_eq!(Values::Int(vec![1]).encode(Elem::F16), [0x00, 0x3c]);
    }
}
