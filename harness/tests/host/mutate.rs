//! `racegate mutate` without a GPU (`mutate::<name>`): each operator on sample sources with the
//! exact mutated text, comments and strings left alone, ids that survive unrelated edits, the
//! report rendered from fixed outcomes, the command through the real binary, and every mutant of
//! every correct catalog kernel and of the corpus built by NVRTC, with and without jitter.

use racegate::mutate::{
    self, mutants, score::KernelResult, Equivalents, MutantResult, MutationReport, Operator,
    OperatorScore, Outcome, Unit,
};
use racegate::source::catalog::{Catalog, Detector};

use crate::repo_root;
use crate::runner::racegate;

/// Every mutant of `src` by `op`, applied: the whole mutated texts.
fn mutated(op: Operator, src: &str) -> Vec<String> {
    mutants("k.cu", src, &[op])
        .iter()
        .map(|m| m.apply(src))
        .collect()
}

const REDUCE: &str = "\
__global__ void k(const float* in, float* out, int n)
{
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[tid]; // load
    __syncthreads();
    for (unsigned h = 128; h > 0; h >>= 1) {
        if (tid < h)
            s[tid] += s[tid + h];
        __syncthreads();  // every thread
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
";

#[test]
fn remove_barrier_deletes_the_statement_and_keeps_comments() {
    assert_eq!(
        mutated(Operator::RemoveBarrier, REDUCE),
        [
            REDUCE.replace("    __syncthreads();\n    for", "    for"),
            REDUCE.replace(
                "        __syncthreads();  // every thread",
                "        // every thread"
            ),
        ]
    );
    // A lone body becomes an empty statement; __syncthreads_count is left alone.
    let src =
        "__device__ void f(int c) { if (c) __syncthreads(); int k = __syncthreads_count(c); }";
    assert_eq!(
        mutated(Operator::RemoveBarrier, src),
        ["__device__ void f(int c) { if (c) ; int k = __syncthreads_count(c); }"]
    );
}

#[test]
fn barrier_into_branch_puts_it_under_a_thread_dependent_condition() {
    let got = mutated(Operator::BarrierIntoBranch, REDUCE);
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0],
        REDUCE.replace(
            "    __syncthreads();\n    for",
            &format!("    {}__syncthreads();\n    for", mutate::operators::BRANCH)
        )
    );
    assert!(
        mutate::operators::BRANCH.contains("threadIdx.y")
            && mutate::operators::BRANCH.contains("% 2 == 0")
    );
}

#[test]
fn atomic_to_plain_covers_each_atomic_and_address_form() {
    let cases = [
        ("atomicAdd(&x, v);", "x += v;"),
        ("atomicSub(&a[i], 2);", "a[i] -= 2;"),
        ("atomicAdd(p + i, v);", "*(p + i) += v;"),
        ("atomicAdd(p, 1u);", "*p += 1u;"),
        ("atomicMax(&m, a[i]);", "m = max(m, a[i]);"),
        ("atomicMin(&s->lo, v);", "s->lo = min(s->lo, v);"),
        ("atomicExch(&flag, 1);", "flag = 1;"),
        ("atomicInc(&c, n - 1);", "c = (c >= (n - 1)) ? 0 : c + 1;"),
        ("atomicDec(&c, m);", "c = (c == 0 || c > m) ? m : c - 1;"),
        ("atomicCAS(&l, 0, 1);", "l = (l == 0) ? 1 : l;"),
        ("atomicOr_block(&b, bit);", "b |= bit;"),
        ("atomicAnd(&b, mask);", "b &= mask;"),
        ("atomicXor_system(&b, 3);", "b ^= 3;"),
        (
            "int slot = atomicAdd(&count, 1);",
            "int slot = [&] { auto racegate_old = count; count += 1; return racegate_old; }();",
        ),
        (
            "while (atomicCAS(&l, 0, 1) != 0) {}",
            "while ([&] { auto racegate_old = l; l = (l == 0) ? 1 : l; return racegate_old; }() != 0) {}",
        ),
    ];
    for (from, to) in cases {
        let src = format!("__device__ void f() {{ {from} }}\n");
        assert_eq!(
            mutated(Operator::AtomicToPlain, &src),
            [format!("__device__ void f() {{ {to} }}\n")],
            "{from}"
        );
    }
}

#[test]
fn drop_syncwarp_and_shuffle_mask_narrow() {
    let src = "__device__ float f(float v) {\n    v += __shfl_down_sync(0xffffffffu, v, 16);\n    __syncwarp();\n    __syncwarp(0xFFFFFFFF);\n    return __ballot_sync(0x0000ffff, v > 0) + __shfl_sync(mask, v, 0);\n}\n";
    assert_eq!(
        mutated(Operator::DropSyncwarp, src),
        [
            src.replace("    __syncwarp();\n", ""),
            src.replace("    __syncwarp(0xFFFFFFFF);\n", ""),
        ]
    );
    assert_eq!(
        mutated(Operator::ShuffleMaskNarrow, src),
        [
            src.replace("0xffffffffu", "0x0000ffffu"),
            src.replace("0xFFFFFFFF", "0x0000ffff"),
        ]
    );
}

#[test]
fn bounds_off_by_one_in_guards_only() {
    let src = "__global__ void k(int* a, int n) {\n    int i = threadIdx.x;\n    if (i >= n) return;\n    for (int j = 0; j < n; ++j) a[j] = static_cast<int>(j < 2);\n    while (i < n && a[i] < 3) i++;\n    int b = i < n ? 1 : 0;\n}\n";
    assert_eq!(
        mutated(Operator::BoundsOffByOne, src),
        [
            src.replace("if (i >= n)", "if (i > n)"),
            src.replace("j < n;", "j <= n;"),
            src.replace("while (i < n", "while (i <= n"),
            src.replace("a[i] < 3", "a[i] <= 3"),
        ]
    );
}

#[test]
fn drop_shared_init_before_the_first_barrier() {
    let src = "__global__ void k(const int* in, int* out) {\n    __shared__ int s[64], t;\n    for (int i = threadIdx.x; i < 64; i += blockDim.x)\n        s[i] = 0;\n    t = 1;\n    s[0] += 1;\n    __syncthreads();\n    s[1] = in[0];\n    out[0] = s[0] + t;\n}\n";
    assert_eq!(
        mutated(Operator::DropSharedInit, src),
        [
            src.replace("        s[i] = 0;", "        ;"),
            src.replace("    t = 1;\n", ""),
        ]
    );
}

#[test]
fn comments_strings_and_directives_are_never_touched() {
    let src = "// __syncthreads(); atomicAdd(&x, 1); if (i < n)\n#define SYNC __syncthreads();\n#if N < 3\n#endif\n__device__ void f(int* x) {\n    /* __syncwarp(); */ const char* s = \"__syncthreads(); atomicAdd(&x, 1)\";\n    printf(\"%d\", 0xffffffff < 1);\n}\n";
    assert!(mutants("k.cu", src, &Operator::ALL).is_empty());
}

#[test]
fn ids_survive_edits_elsewhere_and_are_unique() {
    let ids = |src: &str| -> Vec<(String, usize)> {
        mutants("kernels/k.cu", src, &Operator::ALL)
            .into_iter()
            .map(|m| (m.id, m.line))
            .collect()
    };
    let before = ids(REDUCE);
    let mut unique: Vec<&String> = before.iter().map(|(i, _)| i).collect();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), before.len(), "{before:?}");
    assert!(
        before.iter().all(|(i, _)| i.contains(":k.cu:")),
        "{before:?}"
    );
    // A line and a comment above, a reindented line, another function: same ids, other lines.
    let edited = format!(
        "// a new header line\n__device__ int other(int a) {{ if (a < 2) return 1; return 0; }}\n{}",
        REDUCE.replace(
            "    unsigned tid = threadIdx.x;",
            "    unsigned   tid = threadIdx.x;  // tid"
        )
    );
    let after = ids(&edited);
    let id_list = |v: &[(String, usize)]| v.iter().map(|(i, _)| i.clone()).collect::<Vec<_>>();
    assert!(
        id_list(&after)
            .iter()
            .any(|i| !id_list(&before).contains(i)),
        "other() adds one"
    );
    for (id, line) in &before {
        let moved = after.iter().find(|(i, _)| i == id);
        assert_eq!(moved.map(|(_, l)| *l), Some(line + 2), "{id} kept");
    }
    // The site's own line edited: a new id.
    let changed = ids(&REDUCE.replace("if (tid < h)", "if (tid < h + 0)"));
    let old = &before
        .iter()
        .find(|(i, _)| i.starts_with("bounds"))
        .unwrap()
        .0;
    assert!(!id_list(&changed).contains(old));
}

fn fixed_report() -> MutationReport {
    let src = REDUCE;
    let ms = mutants(
        "kernels/k.cu",
        src,
        &[Operator::RemoveBarrier, Operator::BoundsOffByOne],
    );
    let outcomes = [
        Outcome::Killed {
            by: Detector::Stress,
            detail: "20/20 trials failed (k)".into(),
        },
        Outcome::Survived,
        Outcome::TimedOut {
            by: Detector::Watchdog,
        },
    ];
    let results: Vec<MutantResult> = ms
        .iter()
        .zip(outcomes)
        .map(|(m, outcome)| MutantResult {
            diff: m.diff(src),
            mutant: m.clone(),
            outcome,
            seconds: 1.5,
        })
        .collect();
    let kernel = KernelResult {
        kernel: "kernels/k.cu".into(),
        file: "kernels/k.cu".into(),
        cases: vec!["k".into()],
        control: None,
        score: OperatorScore::of("kernels/k.cu", results.iter()),
        mutants: results,
        wall_seconds: 3.0,
        stale_equivalents: Vec::new(),
        unreachable: Vec::new(),
    };
    MutationReport::new(
        true,
        vec![Operator::RemoveBarrier, Operator::BoundsOffByOne],
        vec![kernel],
        3.0,
    )
}

#[test]
fn the_report_scores_per_operator_and_shows_survivors() {
    let r = fixed_report();
    assert_eq!(r.total.mutants, 3);
    assert_eq!(r.total.kill_rate, Some(2.0 / 3.0));
    assert_eq!(r.per_operator[0].kill_rate, Some(0.5));
    assert_eq!(r.per_operator[1].kill_rate, Some(1.0));
    assert_eq!(r.exit_code(), 1, "a survivor not marked equivalent fails");
    let text = racegate::report::mutate::summary(&r);
    for want in [
        "killed by stress: 20/20 trials failed (k)",
        "timed-out under watchdog",
        "1 survivor(s)",
        "first detection by: stress 1, watchdog 1",
        "-        __syncthreads();  // every thread",
        "kill rate 66.7% (1 killed, 1 timed out, 1 survived of 3 scored",
    ] {
        assert!(text.contains(want), "`{want}` in:\n{text}");
    }
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(rows.contains(&vec![
        "remove-barrier",
        "2",
        "1",
        "0",
        "1",
        "0",
        "0",
        "0",
        "50.0%"
    ]));
    assert!(rows.contains(&vec!["all", "3", "1", "1", "1", "0", "0", "0", "66.7%"]));
    let md = racegate::report::mutate::markdown(&r);
    assert!(md.starts_with("Kill rate **66.7%**"), "{md}");
    assert!(
        md.contains("| `remove-barrier` | 2 | 1 | 0 | 1 | 0 | 0 | 0 | 50.0% |"),
        "{md}"
    );
    assert!(md.contains("| killed | stress | 1.5 |"), "{md}");
    assert!(md.contains("```diff\n--- a/kernels/k.cu"), "{md}");
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    let m = &json["kernels"][0]["mutants"][0];
    assert_eq!(m["outcome"], "killed");
    assert_eq!(m["by"], "stress");
    assert_eq!(m["operator"], "remove-barrier");
    assert!(m["diff"]
        .as_str()
        .unwrap()
        .starts_with("--- a/kernels/k.cu\n"));
    assert_eq!(json["per_operator"][0]["survived"], 1);
}

#[test]
fn the_command_lists_runs_and_refuses() {
    let r = repo_root();
    let (code, out, err) = racegate([
        "mutate",
        "kernels/reduce_sequential.cu",
        "--operators",
        "remove-barrier",
    ])
    .at(&r)
    .no_gpu()
    .run()
    .parts();
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("remove-barrier:reduce_sequential.cu:"),
        "{out}"
    );
    assert!(out.contains("-    __syncthreads();\n"), "{out}");
    assert!(
        out.contains("2 mutant(s) of 1 kernel(s), 0 stillborn"),
        "{out}"
    );
    let (code, json, _) = racegate([
        "mutate",
        "kernels/transpose.cu",
        "--entry",
        "transpose_padded",
        "--no-compile",
        "--json",
        "-",
    ])
    .at(&r)
    .no_gpu()
    .run()
    .parts();
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("only JSON on stdout");
    assert_eq!(
        v["kernels"][0]["cases"],
        serde_json::json!(["transpose_padded"])
    );
    assert_eq!(v["ran"], false);
    let (code, out, err) = racegate(["mutate", "kernels/reduce_sequential.cu", "--run"])
        .at(&r)
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 4, "no device: {out}{err}");
    assert!(out.contains("no CUDA device"), "{out}");
    let (code, _, err) = racegate(["mutate", "--operators", "padding-remover"])
        .at(&r)
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 2);
    assert!(err.contains("unknown operator `padding-remover`"), "{err}");
    let (code, _, err) = racegate(["mutate", "kernels/nope.cu"])
        .at(&r)
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
}

#[test]
fn an_equivalent_without_a_reason_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let k = dir.path().join("kernels");
    std::fs::create_dir(&k).unwrap();
    std::fs::copy(
        repo_root().join("kernels/reduce_sequential.cu"),
        k.join("reduce_sequential.cu"),
    )
    .unwrap();
    std::fs::write(
        k.join("reduce_sequential.cu.equivalent.toml"),
        "[[equivalent]]\nid = \"remove-barrier:reduce_sequential.cu:0\"\n",
    )
    .unwrap();
    let (code, _, err) = racegate(["mutate", "kernels/reduce_sequential.cu", "--no-compile"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("kernels/reduce_sequential.cu.equivalent.toml:1: `remove-barrier:reduce_sequential.cu:0` has no reason"), "{err}");
    std::fs::write(
        k.join("reduce_sequential.cu.equivalent.toml"),
        "[[equivalent]]\nid = \"remove-barrier:reduce_sequential.cu:0\"\nreason = \"gone\"\n",
    )
    .unwrap();
    let (code, out, err) = racegate(["mutate", "kernels/reduce_sequential.cu", "--no-compile"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("warning: kernels/reduce_sequential.cu.equivalent.toml:2: `remove-barrier:reduce_sequential.cu:0` is no mutant"), "{out}");
    // A file in no catalog case: listed, but with no oracle to run against (bad input, before
    // the device is even asked for).
    std::fs::create_dir(dir.path().join("other")).unwrap();
    std::fs::write(dir.path().join("other/k.cu"), REDUCE).unwrap();
    let (code, out, err) = racegate(["mutate", "other/k.cu", "--no-compile"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("other/k.cu (no case: nothing to run it as): 6 mutant(s)"),
        "{out}"
    );
    let (code, _, err) = racegate(["mutate", "other/k.cu", "--run"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no oracle"), "{err}");
}

/// Every mutant of every kernel of `catalog` chosen by `keep`, built as the battery builds it
/// (with and without jitter); returns how many.
fn build_all(catalog: &Catalog, keep: impl Fn(&racegate::source::catalog::Case) -> bool) -> usize {
    let mut files: Vec<&str> = Vec::new();
    for c in catalog.cases.iter().filter(|c| keep(c)) {
        if !files.contains(&c.path.as_str()) {
            files.push(&c.path);
        }
    }
    let mut total = 0;
    for f in files {
        let source = std::fs::read_to_string(catalog.root.join(f)).unwrap();
        let unit = Unit {
            kernel: f.to_string(),
            file: f.to_string(),
            mutants: mutants(f, &source, &Operator::ALL),
            source,
            cases: catalog.cases.iter().filter(|c| c.path == f).collect(),
            equivalents: Equivalents::default(),
            unreachable: Vec::new(),
        };
        assert!(!unit.mutants.is_empty(), "{f} has mutants");
        for m in &unit.mutants {
            total += 1;
            // Today every one builds; a stillborn one would be reported with NVRTC's line.
            let r = mutate::compiles(catalog, &unit, m, racegate::build::compile::DEFAULT_ARCH)
                .unwrap();
            assert_eq!(
                r,
                None,
                "{} does not build:\n{}",
                m.id,
                m.diff(&unit.source)
            );
            let mut extra = unit.cases[0].compile_options();
            extra.push(format!(
                "-I{}",
                catalog.root.join(f).parent().unwrap().display()
            ));
            let jitter = racegate::build::compile::BuildOptions {
                jitter: true,
                extra,
                ..Default::default()
            };
            let built = racegate::build::compile::compile_source(
                &catalog.root,
                f,
                &m.apply(&unit.source),
                &jitter,
            );
            assert!(
                built.is_ok(),
                "{} does not build with jitter: {:?}",
                m.id,
                built.err()
            );
        }
    }
    total
}

#[test]
fn every_mutant_of_every_correct_kernel_compiles() {
    let catalog = Catalog::discover(&repo_root()).unwrap();
    let n = build_all(&catalog, |c| !c.is_variant());
    assert!(n > 50, "{n}");
}

#[test]
fn every_mutant_of_the_corpus_compiles() {
    let m = racegate::source::manifest::Manifest::load(
        &repo_root().join("examples/corpus/racegate.toml"),
    )
    .unwrap();
    let catalog = Catalog::from_manifest(m);
    let n = build_all(&catalog, |_| true);
    assert!(n > 50, "{n}");
}

#[test]
fn a_reference_in_the_kernels_own_file_is_not_mutated() {
    let dir = tempfile::tempdir().unwrap();
    let k = "extern \"C\" __global__ void k(float* y, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 1.0f;\n}\n\nextern \"C\" __global__ void k_ref(float* y, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = 1.0f;\n}\n";
    std::fs::write(dir.path().join("k.cu"), k).unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        r#"[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = { n = [1, 1000] }
grid = ["ceil_div(n, 128)"]
block = ["128"]
oracle = { reference = "k.cu:k_ref" }
args = [
  { name = "y", kind = "out", type = "f32", len = "n" },
  { name = "n", kind = "scalar", type = "i32", value = "n" },
]
"#,
    )
    .unwrap();
    let (code, json, err) = racegate(["mutate", "--no-compile", "--json", "-"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let functions: Vec<&str> = v["kernels"][0]["mutants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["function"].as_str().unwrap())
        .collect();
    assert_eq!(functions, ["k"], "{json}");
}

#[test]
fn mutants_of_an_entry_point_this_run_leaves_out_are_not_its_own() {
    // `--entry transpose_padded`: the file's other two kernels are other cases' entry points; a
    // mutant inside them could change nothing `transpose_padded` runs, and would only survive.
    let (code, json, err) = racegate([
        "mutate",
        "kernels/transpose.cu",
        "--entry",
        "transpose_padded",
        "--no-compile",
        "--json",
        "-",
    ])
    .at(repo_root())
    .no_gpu()
    .run()
    .parts();
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let functions: Vec<&str> = v["kernels"][0]["mutants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["function"].as_str().unwrap())
        .collect();
    assert!(!functions.is_empty());
    assert!(
        functions.iter().all(|f| *f == "transpose_padded"),
        "{functions:?}"
    );
}

#[test]
fn an_inconclusive_control_makes_the_run_inconclusive() {
    // Nothing killed, nothing survived: if the unmutated kernel could not be judged (it does
    // not compile, a detector failed, the budget ran out), the run is exit 3, never exit 0.
    let kernel = KernelResult {
        kernel: "kernels/k.cu".into(),
        file: "kernels/k.cu".into(),
        cases: vec!["k".into()],
        control: Some(racegate::mutate::score::Control {
            flagged_by: None,
            inconclusive: true,
            detail: "inconclusive: NVRTC failed".into(),
            seconds: 0.1,
        }),
        score: OperatorScore::of("kernels/k.cu", [].iter()),
        mutants: Vec::new(),
        wall_seconds: 0.1,
        stale_equivalents: Vec::new(),
        unreachable: Vec::new(),
    };
    let r = MutationReport::new(true, vec![Operator::RemoveBarrier], vec![kernel], 0.1);
    assert_eq!(r.exit_code(), 3);
}

/// A file with a second `__global__` function that no manifest kernel names, and device
/// functions only it calls: none of their code is mutated (before, each such mutant ran the
/// tested entry, which never calls it, and counted as a survivor), and the report names the
/// function left out. The device function the tested entry calls, through another, is mutated.
#[test]
fn code_no_tested_entry_reaches_is_not_mutated_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let k = "__device__ void fill(float* y, int i) {\n    y[i] = 1.0f;\n    __syncthreads();\n}\n\n\
             __device__ void step(float* y, int i) {\n    fill(y, i);\n    __syncthreads();\n}\n\n\
             __device__ void only_other(float* y, int i) {\n    y[i] = 2.0f;\n    __syncthreads();\n}\n\n\
             extern \"C\" __global__ void k(float* y, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) step(y, i);\n    __syncthreads();\n}\n\n\
             extern \"C\" __global__ void untested(float* y, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) only_other(y, i);\n    __syncthreads();\n}\n";
    std::fs::write(dir.path().join("k.cu"), k).unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        r#"[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = { n = [1, 1000] }
grid = ["ceil_div(n, 128)"]
block = ["128"]
oracle = "none"
args = [
  { name = "y", kind = "out", type = "f32", len = "n" },
  { name = "n", kind = "scalar", type = "i32", value = "n" },
]
"#,
    )
    .unwrap();
    let (code, json, err) = racegate(["mutate", "--no-compile", "--json", "-"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let functions: std::collections::BTreeSet<&str> = v["kernels"][0]["mutants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["function"].as_str().unwrap())
        .collect();
    assert_eq!(
        functions.into_iter().collect::<Vec<_>>(),
        ["fill", "k", "step"],
        "{json}"
    );
    assert_eq!(
        v["kernels"][0]["unreachable"],
        serde_json::json!(["untested"])
    );
    let (code, out, err) = racegate(["mutate", "--no-compile"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("not mutated: not reachable from any tested entry: untested\n"),
        "{out}"
    );
    // Tested from both entries (a second manifest kernel), everything is mutated again.
    let toml = std::fs::read_to_string(dir.path().join("racegate.toml")).unwrap();
    let second = toml
        .replace("name = \"k\"", "name = \"u\"")
        .replace("entry = \"k\"", "entry = \"untested\"");
    std::fs::write(
        dir.path().join("racegate.toml"),
        format!("{toml}\n{second}"),
    )
    .unwrap();
    let (code, json, err) = racegate(["mutate", "--no-compile", "--json", "-"])
        .at(dir.path())
        .no_gpu()
        .run()
        .parts();
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut all = std::collections::BTreeSet::new();
    for kernel in v["kernels"].as_array().unwrap() {
        assert_eq!(kernel["unreachable"], serde_json::json!([]), "{json}");
        for m in kernel["mutants"].as_array().unwrap() {
            all.insert(m["function"].as_str().unwrap().to_string());
        }
    }
    assert!(
        all.contains("only_other") && all.contains("untested"),
        "{all:?}"
    );
}

/// A kernel with a UTF-8 byte-order mark mutates exactly as without it: the same mutants, ids
/// and diffs (the mark stayed in the text `mutate` read, and in its line 1).
#[test]
fn a_byte_order_mark_does_not_change_mutate() {
    let one_line = "extern \"C\" __global__ void k(float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1.0f; }\n";
    let mut outs = Vec::new();
    for bom in ["", "\u{feff}"] {
        let dir = crate::exit_codes::project(&format!("{bom}{one_line}"), "");
        let out = racegate(["mutate", "--json", "-"]).at(dir.path()).output();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(json.contains("bounds-off-by-one"), "{json}");
        assert!(
            !json.contains('\u{feff}'),
            "the mark is in the mutants: {json}"
        );
        outs.push(json);
    }
    assert_eq!(outs[0], outs[1]);
}
