//! The mutants that change speed only, without a GPU (`mutate_perf::<name>`): padding-removal
//! and swizzle-removal on sample sources and on `kernels/transpose.cu` (one mutant each, at the
//! padded tile's and the swizzle's line; none in the naive tile), each built by NVRTC, and the
//! run path leaving them inconclusive, never survivors, where `perf` cannot measure.

use std::path::Path;

use racegate::judge::perf::ncu::Unavailable;
use racegate::mutate::speed::{self, PerfJudge};
use racegate::mutate::{self, mutants, Equivalents, Operator, Outcome, Unit};
use racegate::source::catalog::Catalog;

fn root() -> std::path::PathBuf {
    super::package_dir().parent().unwrap().to_path_buf()
}

const SPEED: [Operator; 2] = [Operator::PaddingRemoval, Operator::SwizzleRemoval];

/// Every mutant of `src` by `op`, applied.
fn mutated(op: Operator, src: &str) -> Vec<String> {
    mutants("k.cu", src, &[op])
        .iter()
        .map(|m| m.apply(src))
        .collect()
}

#[test]
fn padding_removal_takes_the_plus_one_off_a_shared_tile_only() {
    let src = "#define T 16\n__global__ void k(float* o) {\n    __shared__ float a[T][T + 1], b[32][33];\n    __shared__ float c[T][T+1];\n    __shared__ float d[T][T + 2], e[32][34], f[T][T];\n    __shared__ int g[4][8][8 + 1];\n    float h[T][T + 1];\n    o[0] = a[0][0] + b[0][0] + c[0][0] + d[0][0] + e[0][0] + f[0][0] + g[0][0][0] + h[0][0];\n}\n";
    assert_eq!(
        mutated(Operator::PaddingRemoval, src),
        [
            src.replace("a[T][T + 1]", "a[T][T]"),
            src.replace("b[32][33]", "b[32][32]"),
            src.replace("c[T][T+1]", "c[T][T]"),
            src.replace("g[4][8][8 + 1]", "g[4][8][8]"),
        ]
    );
}

#[test]
fn swizzle_removal_unswizzles_a_shared_index_only() {
    // In a subscript, in a helper that computes a shared index, and not elsewhere: a mask in
    // a local value, a helper no shared subscript calls, a global array's index.
    let src = "__device__ int swz(int r, int c) { return r * 32 + (c ^ r); }\n__device__ int other(int a, int b) { return (a ^ b); }\n__global__ void k(float* o, int n) {\n    __shared__ float s[32 * 32], t[32][32];\n    int x = threadIdx.x, y = threadIdx.y;\n    s[swz(y, x)] = 1;\n    t[y][x ^ y] = 2;\n    s[(threadIdx.x ^ y)] = 3;\n    int m = (x ^ y);\n    o[(x ^ y)] = s[x] + t[0][0] + m + other(x, y);\n}\n";
    assert_eq!(
        mutated(Operator::SwizzleRemoval, src),
        [
            src.replace("(c ^ r)", "c"),
            src.replace("[x ^ y]", "[x]"),
            src.replace("[(threadIdx.x ^ y)]", "[threadIdx.x]"),
        ]
    );
}

#[test]
fn on_the_transpose_file_one_mutant_each_at_the_padded_and_the_swizzled_line() {
    let r = root();
    let src = std::fs::read_to_string(r.join("kernels/transpose.cu")).unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let line_of = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap() + 1;
    let ms = mutants("kernels/transpose.cu", &src, &SPEED);
    let got: Vec<(Operator, &str, usize, &str, &str)> = ms
        .iter()
        .map(|m| {
            let (o, f, l) = (m.operator, m.function.as_str(), m.line);
            (o, f, l, m.original.as_str(), m.replacement.as_str())
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                Operator::PaddingRemoval,
                "transpose_padded",
                line_of("tile[TILE][TILE + 1]"),
                "TILE + 1",
                "TILE"
            ),
            (
                Operator::SwizzleRemoval,
                "swz",
                line_of("return r * TILE + (c ^ r)"),
                "(c ^ r)",
                "c"
            ),
        ]
    );
    assert!(!ms.iter().any(|m| m.function == "transpose_naive_tile"));
    // The mutated padded tile reads as the naive one's.
    assert!(ms[0]
        .apply(&src)
        .contains("__shared__ float tile[TILE][TILE];\n    int x"));
    assert!(ms[1].apply(&src).contains("return r * TILE + c; }"));
}

fn transpose_unit(catalog: &Catalog) -> Unit<'_> {
    let f = "kernels/transpose.cu";
    let source = std::fs::read_to_string(catalog.root.join(f)).unwrap();
    Unit {
        kernel: f.into(),
        file: f.into(),
        mutants: mutants(f, &source, &SPEED),
        source,
        cases: catalog.cases.iter().filter(|c| c.path == f).collect(),
        equivalents: Equivalents::default(),
        unreachable: Vec::new(),
    }
}

#[test]
fn the_transpose_speed_mutants_build_with_nvrtc() {
    let catalog = Catalog::discover(&root()).unwrap();
    let unit = transpose_unit(&catalog);
    assert_eq!(unit.mutants.len(), 2);
    for m in &unit.mutants {
        let r = mutate::compiles(&catalog, &unit, m, racegate::build::compile::DEFAULT_ARCH);
        assert_eq!(r.unwrap(), None, "{}:\n{}", m.id, m.diff(&unit.source));
    }
}

#[test]
fn without_ncu_a_speed_mutant_is_inconclusive_never_a_survivor() {
    let catalog = Catalog::discover(&root()).unwrap();
    let unit = transpose_unit(&catalog);
    let mut judge = PerfJudge::new(racegate::build::compile::DEFAULT_ARCH);
    judge.ncu = Err(Unavailable::Missing("$RACEGATE_NCU is /nonexistent".into()));
    let exe = Path::new("/nonexistent/racegate");
    for m in &unit.mutants {
        let cases: Vec<_> = unit
            .cases
            .iter()
            .filter(|c| c.entry.name == "transpose_padded" || c.entry.name == "transpose_swizzled")
            .map(|c| (*c).clone())
            .collect();
        let o = speed::judge(&catalog, &cases, &unit.file, m.line, Some(&judge), exe);
        assert_eq!(
            o,
            Outcome::Inconclusive {
                why: "perf could not measure: ncu not found: $RACEGATE_NCU is /nonexistent".into()
            },
            "{}",
            m.id
        );
        let o = speed::judge(&catalog, &cases, &unit.file, m.line, None, exe);
        assert!(matches!(o, Outcome::Inconclusive { .. }), "{o:?}");
    }
}
