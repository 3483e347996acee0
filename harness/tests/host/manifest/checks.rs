//! `manifest::checks::<name>`: what is checked on the CPU over the whole size range before any
//! launch. Each error names the manifest, the line and the key, and the sizes where it holds.

use super::{kernel, parse, rejects_at, set, with_args, GOOD_KERNEL};

#[test]
fn grid_dimension_zero() {
    rejects_at(
        &set("grid", r#"grid = ["ceil_div(n, 256) - 1"]"#),
        "grid =",
        "`grid`: `ceil_div(n, 256) - 1` is 0 at n=1: a grid dimension must be at least 1",
    );
}

#[test]
fn grid_dimension_negative() {
    rejects_at(
        &set("grid", r#"grid = ["n - 50"]"#),
        "grid =",
        "`grid`: `n - 50` is -49 at n=1",
    );
}

#[test]
fn grid_x_past_two_to_the_31() {
    rejects_at(
        &set("grid", r#"grid = ["n * 4096"]"#).replace("[1, 100]", "[1, 1000000]"),
        "grid =",
        "`n * 4096` is 4096000000 at n=1000000: grid x is at most 2147483647",
    );
}

#[test]
fn grid_y_and_z_past_65535() {
    let big = |grid: &str| set("grid", grid).replace("[1, 100]", "[1, 100000]");
    rejects_at(
        &big(r#"grid = ["1", "n"]"#),
        "grid =",
        "grid y is at most 65535",
    );
    rejects_at(
        &big(r#"grid = ["1", "1", "n"]"#),
        "grid =",
        "grid z is at most 65535",
    );
}

#[test]
fn block_limits() {
    for (block, want) in [
        (
            r#"block = ["2048"]"#,
            "`2048` is 2048 at n=1: block x is at most 1024",
        ),
        (r#"block = ["1", "2048"]"#, "block y is at most 1024"),
        (r#"block = ["1", "1", "128"]"#, "block z is at most 64"),
        (
            r#"block = ["64", "32"]"#,
            "`block`: 2048 threads per block at n=1: at most 1024",
        ),
        (r#"block = ["0"]"#, "a block dimension must be at least 1"),
        (
            r#"block = ["n * 16"]"#,
            "`n * 16` is 1600 at n=100: block x is at most 1024",
        ),
        (r#"block = []"#, "`block`: give 1 to 3 expressions"),
        (
            r#"block = ["1", "1", "1", "1"]"#,
            "`block`: give 1 to 3 expressions",
        ),
    ] {
        rejects_at(&set("block", block), "block =", want);
    }
    // The largest legal block passes.
    kernel(&set("block", r#"block = ["16", "1", "64"]"#));
}

#[test]
fn negative_length() {
    rejects_at(
        &GOOD_KERNEL.replace(
            r#"type = "f32", len = "n", gen"#,
            r#"type = "f32", len = "n - 50", gen"#,
        ),
        "name = \"x\"",
        "`args.x.len`: `n - 50` is -49 at n=1: a length cannot be negative",
    );
}

#[test]
fn dynamic_shared_memory_past_227_kib() {
    rejects_at(
        &set("shared", r#"shared = "n * 4""#).replace("[1, 100]", "[1, 100000]"),
        "shared =",
        "`shared`: `n * 4` is 400000 bytes at n=100000: dynamic shared memory is 0 to 232448 bytes",
    );
    rejects_at(
        &set("shared", r#"shared = "-4""#),
        "shared =",
        "`shared`: `-4` is -4 bytes",
    );
    kernel(&set("shared", r#"shared = "227 * 1024""#));
}

#[test]
fn unknown_size_names() {
    rejects_at(
        &set("grid", r#"grid = ["ceil_div(m, 256)"]"#),
        "grid =",
        "`grid`: `ceil_div(m, 256)`: `m` is not a size (sizes: n)",
    );
    rejects_at(
        &set("shared", r#"shared = "k""#),
        "shared =",
        "`shared`: `k`: `k` is not a size",
    );
    rejects_at(
        &GOOD_KERNEL.replace(r#"value = "n""#, r#"value = "size""#),
        "name = \"n\"",
        "`args.n.value`: `size`: `size` is not a size",
    );
    rejects_at(
        &GOOD_KERNEL.replace(
            r#"type = "f32", len = "n" }"#,
            r#"type = "f32", len = "len" }"#,
        ),
        "name = \"y\"",
        "`args.y.len`: `len`: `len` is not a size",
    );
    rejects_at(
        &set("grid", r#"grid = ["floor(n)"]"#),
        "grid =",
        "`floor` is not a function (functions: ceil_div, min, max)",
    );
}

#[test]
fn sanitize_size_outside_its_range() {
    rejects_at(
        &set("sanitize_sizes", "sanitize_sizes = { n = 1000 }"),
        "sanitize_sizes",
        "`sanitize_sizes`: `n = 1000` is outside its range [1, 100]",
    );
    rejects_at(
        &set("sanitize_sizes", "sanitize_sizes = { m = 10 }"),
        "sanitize_sizes",
        "`sanitize_sizes`: `m` is not one of `sizes`",
    );
    let k = kernel(&set("sanitize_sizes", "sanitize_sizes = { n = 100 }"));
    assert_eq!(
        k.sanitize_sizes["n"], 100,
        "the top of the range is inside it"
    );
}

#[test]
fn duplicate_argument_names() {
    rejects_at(
        &with_args(
            GOOD_KERNEL,
            &[
                r#"{ name = "y", kind = "out", type = "f32", len = "n" }"#,
                r#"{ name = "y", kind = "scalar", type = "i32", value = "n" }"#,
            ],
        ),
        "kind = \"scalar\"",
        "`args.y.name`: `y` is declared twice",
    );
}

#[test]
fn overflow_in_an_expression() {
    rejects_at(
        &GOOD_KERNEL.replace("[1, 100]", "[1, 1000000]").replace(
            r#"type = "f32", len = "n" }"#,
            r#"type = "f32", len = "n * n * n * n" }"#,
        ),
        "name = \"y\"",
        "`args.y.len`: `n * n * n * n`: integer overflow in 1000000000000000000 * 1000000",
    );
    rejects_at(
        &GOOD_KERNEL.replace(r#"value = "n""#, r#"value = "ceil_div(n, n - n)""#),
        "name = \"n\"",
        "`args.n.value`: `ceil_div(n, n - n)`: ceil_div(1, 0) divides by zero or overflows",
    );
}

#[test]
fn scalar_values_must_fit_their_type() {
    let one = |ty: &str, value: &str| {
        with_args(
            &GOOD_KERNEL.replace("[1, 100]", "[1, 1000]"),
            &[
                r#"{ name = "y", kind = "out", type = "f32", len = "n" }"#,
                &format!(r#"{{ name = "s", kind = "scalar", type = "{ty}", value = "{value}" }}"#),
            ],
        )
    };
    rejects_at(
        &one("u8", "n"),
        "name = \"s\"",
        "`args.s.value`: `n` is 1000 at n=1000, which u8 cannot hold",
    );
    rejects_at(
        &one("u32", "-1"),
        "name = \"s\"",
        "`-1` is -1 at n=1, which u32 cannot hold",
    );
    rejects_at(
        &one("i16", "n * 100"),
        "name = \"s\"",
        "which i16 cannot hold",
    );
    rejects_at(
        &one("f16", "n * 100.0"),
        "name = \"s\"",
        "which f16 cannot hold",
    );
    kernel(&one("i8", "n % 100 - 28"));
}

#[test]
fn a_zero_inside_the_range_not_at_a_corner() {
    // 1 and 5 are fine; 3 gives 0, and only the sample of points inside the range can see it.
    rejects_at(
        &set("grid", r#"grid = ["(n - 3) * (n - 3)"]"#).replace("[1, 100]", "[1, 5]"),
        "grid =",
        "`(n - 3) * (n - 3)` is 0 at n=3",
    );
}

#[test]
fn extreme_sizes_give_errors_never_panics() {
    for expr in [
        "n * n * n",
        "-n * n * n * n",
        "ceil_div(n * n, 0 - n)",
        "ceil_div(0 - n * n * n * n, 0 - 1)",
        "n / (n - n)",
        "n % (n - n)",
        "min(n * n * n, 1) * max(n, n * n) * n",
        "2147483647 * 2147483647 * 4",
        "99999999999999999999",
        "n ^ 2",
        "n == 1",
        "\"n\"",
        "n = 3",
        "",
    ] {
        for at in ["grid", "block", "shared"] {
            let text = set(
                at,
                &format!(
                    "{at} = {}",
                    if at == "shared" {
                        format!("{expr:?}")
                    } else {
                        format!("[{expr:?}]")
                    }
                ),
            )
            .replace("[1, 100]", "[1, 4294967295]");
            let (_, r) = parse(&text);
            assert!(r.is_err(), "{at} = {expr} passed");
        }
    }
}

#[test]
fn reference_launch_is_checked_too() {
    rejects_at(
        &set(
            "oracle",
            r#"oracle = { reference = "ref.cu:r", block = ["n * 64"] }"#,
        ),
        "oracle =",
        "`oracle.block`: `n * 64` is 6400 at n=100: block x is at most 1024",
    );
}
