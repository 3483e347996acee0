//! `manifest::keys::<name>`: the argument keys (types, scalar values, generators, `compare`,
//! `unwritten`, the kernel-level `tolerance`) and `include`, on a good kernel: what each parses to,
//! what a drawn problem then holds, and the mistakes each can be written with.

use racegate::source::exercises::{Arg, Bits, Elem, Init, Problem, Tolerance};
use racegate::source::manifest::gen::Gen;
use racegate::source::manifest::ArgSpec;

use super::{draw, kernel, rejects_at, set, with_args, GOOD_KERNEL};

fn buffer<'p>(p: &'p Problem, name: &str) -> &'p racegate::source::exercises::Buffer {
    p.buffers
        .iter()
        .find(|b| &*b.name == name)
        .unwrap_or_else(|| panic!("no buffer {name}"))
}

/// The scalar argument a launch passes at `i`.
fn scalar(p: &Problem, i: usize) -> Bits {
    match p.launches[0].args[i] {
        Arg::Scalar(b) => b,
        other => panic!("argument {i} is {other:?}"),
    }
}

#[test]
fn every_type_for_buffers_and_scalars() {
    for e in Elem::ALL {
        let t = e.name();
        let text = with_args(
            GOOD_KERNEL,
            &[
                &format!(
                    r#"{{ name = "x", kind = "in", type = "{t}", len = "n", gen = "int(0, 8)" }}"#
                ),
                &format!(r#"{{ name = "y", kind = "out", type = "{t}", len = "n" }}"#),
                &format!(r#"{{ name = "s", kind = "scalar", type = "{t}", value = "n" }}"#),
            ],
        );
        let k = kernel(&text);
        let p = draw(&k, 1);
        let n = p.sizes["n"] as usize;
        assert_eq!(p.buffers[0].elem, e);
        assert_eq!(p.buffers[0].len_bytes(), n * e.size(), "{t}");
        assert_eq!(p.buffers[1].len_bytes(), n * e.size(), "{t}");
        let want = if e.is_float() {
            Bits::of(e, n as f64)
        } else {
            Bits::of_int(e, n as i64)
        };
        assert_eq!(scalar(&p, 2), want, "{t}");
    }
}

#[test]
fn float_scalars_take_float_values() {
    for (value, want) in [
        ("2.5", 2.5f32),
        ("-0.5", -0.5),
        ("2", 2.0),
        ("n * 0.5", 50.0),
    ] {
        let text = with_args(
            &set("sizes", "sizes = { n = 100 }"),
            &[
                r#"{ name = "y", kind = "out", type = "f32", len = "n" }"#,
                &format!(r#"{{ name = "a", kind = "scalar", type = "f32", value = "{value}" }}"#),
            ],
        );
        let p = draw(&kernel(&text), 1);
        assert_eq!(scalar(&p, 1), Bits::B32(want.to_bits()), "{value}");
    }
    let text = with_args(
        GOOD_KERNEL,
        &[
            r#"{ name = "y", kind = "out", type = "f32", len = "n" }"#,
            r#"{ name = "a", kind = "scalar", type = "f64", value = "-0.25" }"#,
            r#"{ name = "h", kind = "scalar", type = "f16", value = "1" }"#,
            r#"{ name = "m", kind = "scalar", type = "i64", value = "n * 1000000000" }"#,
        ],
    );
    let p = draw(&kernel(&text), 1);
    assert_eq!(scalar(&p, 1), Bits::B64((-0.25f64).to_bits()));
    assert_eq!(scalar(&p, 2), Bits::B16(0x3c00));
    assert_eq!(
        scalar(&p, 3),
        Bits::B64((p.sizes["n"] * 1_000_000_000) as u64)
    );
}

#[test]
fn integer_scalars_refuse_float_values() {
    let text = with_args(
        GOOD_KERNEL,
        &[
            r#"{ name = "y", kind = "out", type = "f32", len = "n" }"#,
            r#"{ name = "a", kind = "scalar", type = "i32", value = "2.5" }"#,
        ],
    );
    rejects_at(
        &text,
        "name = \"a\"",
        "`args.a.value`: `2.5`: the value is 2.5, not an integer",
    );
}

#[test]
fn every_generator_draws_into_its_buffer() {
    for (ty, gen) in [
        ("f32", "uniform(-1, 1)"),
        ("f64", "normal(0, 2)"),
        ("i32", "choice([1, 2, 4])"),
        ("f16", "choice([0.5, 1])"),
        ("u32", "iota"),
        ("i8", "zeros"),
        ("i32", "sorted(int(-5, 5))"),
        ("u32", "prefix_sum(int(0, 8))"),
        ("i64", "permutation"),
        ("i32", "int(0, n - 1)"),
        ("bf16", "int(-4, 4)"),
    ] {
        let text = with_args(
            GOOD_KERNEL,
            &[
                &format!(
                    r#"{{ name = "x", kind = "in", type = "{ty}", len = "n", gen = "{gen}" }}"#
                ),
                r#"{ name = "y", kind = "out", type = "f32", len = "n" }"#,
            ],
        );
        let k = kernel(&text);
        let p = draw(&k, 5);
        let e = Elem::from_name(ty).unwrap();
        let b = &p.buffers[0];
        let Init::Data(bytes) = &b.init else {
            panic!("an input has data")
        };
        assert_eq!(bytes.len(), p.sizes["n"] as usize * e.size(), "{gen}");
        assert_eq!(
            draw(&k, 5).buffers[0].init_bytes(),
            b.init_bytes(),
            "{gen}: seeded"
        );
        let values: Vec<f64> = (0..p.sizes["n"] as usize)
            .map(|i| e.value(bytes, i))
            .collect();
        match gen {
            "iota" => assert!(values.iter().enumerate().all(|(i, v)| *v == i as f64)),
            "zeros" => assert!(values.iter().all(|v| *v == 0.0)),
            "sorted(int(-5, 5))" | "prefix_sum(int(0, 8))" => {
                assert!(values.windows(2).all(|w| w[0] <= w[1]), "{gen}")
            }
            "int(0, n - 1)" | "permutation" => {
                assert!(values.iter().all(|v| *v >= 0.0 && *v < p.sizes["n"] as f64))
            }
            _ => {}
        }
    }
}

trait InitBytes {
    fn init_bytes(&self) -> Vec<u8>;
}

impl InitBytes for racegate::source::exercises::Buffer {
    fn init_bytes(&self) -> Vec<u8> {
        match &self.init {
            Init::Data(d) => d.clone(),
            _ => Vec::new(),
        }
    }
}

#[test]
fn generators_that_do_not_fit_the_type_are_refused() {
    let one = |ty: &str, gen: &str| {
        with_args(
            GOOD_KERNEL,
            &[
                &format!(
                    r#"{{ name = "x", kind = "in", type = "{ty}", len = "n", gen = "{gen}" }}"#
                ),
                r#"{ name = "y", kind = "out", type = "f32", len = "n" }"#,
            ],
        )
    };
    rejects_at(
        &one("i32", "uniform(0, 1)"),
        "name = \"x\"",
        "`args.x.gen`: `uniform(0, 1)` draws floats",
    );
    rejects_at(
        &one("u8", "int(0, 300)"),
        "name = \"x\"",
        "`args.x.gen`: values from 0 to 300",
    );
    rejects_at(
        &one("u32", "int(-1, 3)"),
        "name = \"x\"",
        "which u32 cannot hold",
    );
    rejects_at(
        &one("i8", "prefix_sum(int(0, 8))"),
        "name = \"x\"",
        "which i8 cannot hold",
    );
    rejects_at(
        &one("f16", "int(0, 70000)"),
        "name = \"x\"",
        "which f16 cannot hold",
    );
    rejects_at(
        &one("f32", "gauss(0, 1)"),
        "name = \"x\"",
        "`args.x.gen`: `gauss(0, 1)`: expected int(lo, hi)",
    );
    rejects_at(
        &one("i32", "int(0, m)"),
        "name = \"x\"",
        "`args.x.gen`: `m`: `m` is not a size",
    );
    rejects_at(
        &one("i32", "int(n, 50)"),
        "name = \"x\"",
        "int(n, 50) is empty: 100 > 50",
    );
}

#[test]
fn compare_forms() {
    let text = with_args(
        GOOD_KERNEL,
        &[
            r#"{ name = "a", kind = "out", type = "f32", len = "n" }"#,
            r#"{ name = "b", kind = "out", type = "f32", len = "n", compare = "exact" }"#,
            r#"{ name = "c", kind = "out", type = "f32", len = "n", compare = "ignore" }"#,
            r#"{ name = "d", kind = "out", type = "i32", len = "n", compare = "unordered" }"#,
            r#"{ name = "e", kind = "inout", type = "f64", len = "n", gen = "zeros", compare = { tolerance = { abs = 0.5, rel = 1e-6, ulp = 4 } } }"#,
            r#"{ name = "f", kind = "out", type = "i32", len = "n", compare = { unordered = true, prefix = "count[0]" }, unwritten = true }"#,
            r#"{ name = "count", kind = "inout", type = "u32", len = "1", gen = "zeros" }"#,
        ],
    );
    let k = kernel(&text);
    let p = draw(&k, 1);
    assert!(buffer(&p, "a").compare.is_exact());
    assert!(buffer(&p, "b").compare.is_exact());
    assert!(buffer(&p, "c").compare.ignore);
    assert!(buffer(&p, "d").compare.unordered);
    assert_eq!(
        buffer(&p, "e").compare.tolerance,
        Some(Tolerance {
            abs: 0.5,
            rel: 1e-6,
            ulp: 4
        })
    );
    let f = buffer(&p, "f");
    assert!(f.compare.unordered && f.may_stay_unwritten);
    assert_eq!(f.compare.prefix.as_deref(), Some("count[0]"));
    assert!(!buffer(&p, "a").may_stay_unwritten);
    assert!(matches!(buffer(&p, "f").init, Init::Poison(_)));
    assert!(buffer(&p, "count").judge_fills, "an inout buffer is judged");
}

#[test]
fn compare_mistakes() {
    let one = |arg: &str| {
        with_args(
            GOOD_KERNEL,
            &[
                arg,
                r#"{ name = "n", kind = "scalar", type = "i32", value = "n" }"#,
                r#"{ name = "z", kind = "out", type = "f32", len = "n" }"#,
            ],
        )
    };
    let at = "name = \"y\"";
    for (arg, want) in [
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = "close" }"#,
            "`args.y.compare`: `close`: expected \"exact\"",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { unorderd = true } }"#,
            "`args.y.compare`: unknown field `unorderd`",
        ),
        (
            r#"{ name = "y", kind = "out", type = "i32", len = "n", compare = { tolerance = { abs = 1 } } }"#,
            "a tolerance is for float buffers; i32 is compared exactly",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { tolerance = { abs = -1 } } }"#,
            "`tolerance.abs`: need a finite number >= 0",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { tolerance = {} } }"#,
            "give abs, rel or ulp",
        ),
        (
            r#"{ name = "y", kind = "in", type = "f32", len = "n", gen = "zeros", compare = "ignore" }"#,
            "`args.y.compare`: an in buffer is not compared",
        ),
        (
            r#"{ name = "y", kind = "inout", type = "f32", len = "n", gen = "zeros", unwritten = true }"#,
            "`args.y.unwritten`: only an out buffer",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", gen = "zeros" }"#,
            "`args.y.gen`: an out buffer starts as poison",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { prefix = "n[0]" } }"#,
            "`args.y.compare.prefix`: `n[0]`: `n` is a scalar, not a buffer",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { prefix = "w[0]" } }"#,
            "`w` is not an argument",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { prefix = "y[0]" } }"#,
            "cannot come from the buffer it limits",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { prefix = "z[n]" } }"#,
            "`z[1]` is past the end of `z`, whose length is 1 (at n=1)",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", compare = { prefix = "z[0.5]" } }"#,
            "not an integer",
        ),
        (
            r#"{ name = "y", kind = "scalar", type = "i32", value = "n", len = "n" }"#,
            "`args.y.len`: a scalar takes `type` and `value` only",
        ),
        (
            r#"{ name = "y", kind = "out", type = "f32", len = "n", value = "1" }"#,
            "`args.y.value`: a buffer takes `len`",
        ),
        (
            r#"{ name = "y", kind = "scalar", type = "i32" }"#,
            "`args.y.value`: a scalar needs `value`",
        ),
    ] {
        rejects_at(&one(arg), at, want);
    }
}

#[test]
fn kernel_level_tolerance_is_absolute_on_every_float_output() {
    let text = with_args(
        &set("tolerance", "tolerance = 0.001"),
        &[
            r#"{ name = "a", kind = "out", type = "f32", len = "n" }"#,
            r#"{ name = "b", kind = "out", type = "i32", len = "n" }"#,
            r#"{ name = "c", kind = "inout", type = "f16", len = "n", gen = "zeros", compare = { tolerance = { ulp = 2 } } }"#,
            r#"{ name = "d", kind = "out", type = "f64", len = "n", compare = "ignore" }"#,
        ],
    );
    let k = kernel(&text);
    assert_eq!(k.tolerance, 0.001);
    let p = draw(&k, 1);
    let abs = buffer(&p, "a").compare.tolerance.map(|t| t.abs).unwrap();
    assert!((abs - 0.001).abs() < 1e-9, "{abs}");
    assert!(buffer(&p, "b").compare.is_exact(), "integers stay exact");
    assert_eq!(
        buffer(&p, "c").compare.tolerance,
        Some(Tolerance {
            ulp: 2,
            ..Tolerance::default()
        }),
        "a buffer's own tolerance wins"
    );
    assert_eq!(buffer(&p, "d").compare.tolerance, None);
    rejects_at(
        &set("tolerance", "tolerance = -1.0"),
        "tolerance",
        "`tolerance`: need a finite number >= 0",
    );
}

#[test]
fn include_folders_reach_nvrtc_as_absolute_paths() {
    let k = kernel(&set(
        "include",
        "include = [\"inc\"]\noptions = [\"-DX=1\"]",
    ));
    let opts = k.compile_options();
    assert_eq!(opts.len(), 2, "{opts:?}");
    let dir = opts[0].strip_prefix("-I").expect("-I first");
    assert!(std::path::Path::new(dir).is_absolute(), "{dir}");
    assert!(dir.ends_with("inc"), "{dir}");
    assert_eq!(opts[1], "-DX=1");
    rejects_at(
        &set("include", "include = [\"nowhere\"]"),
        "include =",
        "`include`: ",
    );
    rejects_at(
        &set("include", "include = [\"k.cu\"]"),
        "include =",
        "is not a folder",
    );
}

#[test]
fn arguments_keep_their_declared_kinds() {
    let k = kernel(GOOD_KERNEL);
    assert!(
        matches!(&k.args[0], ArgSpec::Buffer { gen: Gen::Int(lo, hi), .. } if lo == "0" && hi == "8")
    );
    assert!(matches!(
        &k.args[2],
        ArgSpec::Scalar {
            elem: Elem::I32,
            ..
        }
    ));
    assert_eq!(k.launches[0].args, ["x", "y", "n"]);
}
