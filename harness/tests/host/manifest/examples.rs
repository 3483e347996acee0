//! `manifest::examples::<name>`: the two manifests the repository ships, `examples/corpus` (38
//! user-shaped kernels written against the manifest format) and `examples/gate`, parse; every
//! corpus kernel draws buffers of the declared sizes and launches whose arguments follow the
//! declared order; and the CLI finds `./racegate.toml` by itself.

use racegate::source::exercises::{Arg, Bits, Init, LaunchStep, Problem, SizeChoice};
use racegate::source::manifest::{ArgSpec, Check, KernelSpec, LaunchSpec, Manifest};
use rand::rngs::ChaCha8Rng;
use rand::SeedableRng;

use crate::repo_root;
use crate::runner::racegate;

fn load(rel: &str) -> Manifest {
    let path = repo_root().join(rel);
    Manifest::load(&path).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn both_example_manifests_parse() {
    assert_eq!(load("examples/corpus/racegate.toml").kernels.len(), 39);
    assert_eq!(load("examples/gate/racegate.toml").kernels.len(), 3);
}

/// Checks one launch step against its declaration: the entry, and each argument the buffer or
/// scalar of that name, in that order.
fn check_step(k: &KernelSpec, p: &Problem, step: &LaunchStep, decl: &LaunchSpec) {
    assert_eq!(step.kernel, decl.entry, "{}", k.name);
    assert_eq!(step.args.len(), decl.args.len(), "{}", k.name);
    for (arg, name) in step.args.iter().zip(&decl.args) {
        match (arg, k.arg(name)) {
            (Arg::Buf(i), Some(ArgSpec::Buffer { elem, .. })) => {
                assert_eq!(&*p.buffers[*i].name, name.as_str(), "{}", k.name);
                assert_eq!(p.buffers[*i].elem, *elem, "{}: {name}", k.name);
            }
            (Arg::Scalar(bits), Some(ArgSpec::Scalar { elem, .. })) => {
                let width = match bits {
                    Bits::B8(_) => 1,
                    Bits::B16(_) => 2,
                    Bits::B32(_) => 4,
                    Bits::B64(_) => 8,
                };
                assert_eq!(width, elem.size(), "{}: {name}", k.name);
            }
            (a, d) => panic!("{}: `{name}` is passed as {a:?}, declared {d:?}", k.name),
        }
    }
}

/// Buffers as declared: one per buffer argument, in order, each `len * size` bytes; steps as
/// declared.
fn check_problem(k: &KernelSpec, p: &Problem) {
    let buffers: Vec<&ArgSpec> = k.args.iter().filter(|a| a.is_buffer()).collect();
    assert_eq!(p.buffers.len(), buffers.len(), "{}", k.name);
    for (b, a) in p.buffers.iter().zip(buffers) {
        let ArgSpec::Buffer {
            name, elem, len, ..
        } = a
        else {
            unreachable!()
        };
        assert_eq!(&*b.name, name.as_str());
        let n = racegate::source::expr::eval(len, &p.sizes).unwrap() as usize;
        assert_eq!(
            b.len_bytes(),
            n * elem.size(),
            "{}: {name} at {}",
            k.name,
            p.label
        );
    }
    assert_eq!(p.launches.len(), k.launches.len(), "{}", k.name);
    for (step, decl) in p.launches.iter().zip(&k.launches) {
        check_step(k, p, step, decl);
    }
    match &k.reference_launch {
        Some(decl) => {
            assert_eq!(p.reference_launches.len(), 1, "{}", k.name);
            check_step(k, p, &p.reference_launches[0], decl);
        }
        None => assert!(p.reference_launches.is_empty(), "{}", k.name),
    }
}

/// The bytes every buffer starts with (empty for outputs).
fn data(p: &Problem) -> Vec<Vec<u8>> {
    p.buffers
        .iter()
        .map(|b| match &b.init {
            Init::Data(d) => d.clone(),
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn every_corpus_kernel_draws_as_declared() {
    let m = load("examples/corpus/racegate.toml");
    // One thread per kernel: a debug build draws a million-element buffer in about a second.
    std::thread::scope(|s| {
        for (i, k) in m.kernels.iter().enumerate() {
            s.spawn(move || {
                let sanitize =
                    |seed| k.draw(SizeChoice::Sanitize, &mut ChaCha8Rng::seed_from_u64(seed));
                let p = sanitize(0);
                let want: std::collections::BTreeMap<String, i64> = k
                    .sanitize_sizes
                    .iter()
                    .map(|(n, v)| (n.clone(), *v as i64))
                    .collect();
                assert_eq!(p.sizes, want, "{}", k.name);
                check_problem(k, &p);
                assert_eq!(
                    data(&p),
                    data(&sanitize(0)),
                    "{}: a seed draws the same data",
                    k.name
                );
                let random = SizeChoice::Random { lo: 1, hi: 1 };
                let p = k.draw(random, &mut ChaCha8Rng::seed_from_u64(i as u64));
                for (n, (lo, hi)) in &k.sizes {
                    assert!(
                        (*lo as i64..=*hi as i64).contains(&p.sizes[n]),
                        "{}: {n}",
                        k.name
                    );
                }
                check_problem(k, &p);
            });
        }
    });
}

#[test]
fn corpus_kernels_say_what_the_readme_says() {
    let m = load("examples/corpus/racegate.toml");
    let k = |name: &str| m.kernels.iter().find(|k| k.name == name).unwrap();
    let pipe = k("scan_pipeline");
    assert_eq!(pipe.launch_entries(), ["scan_blocks", "add_block_offsets"]);
    assert_eq!(
        pipe.reference_launch.as_ref().unwrap().args,
        ["in", "out", "n"]
    );
    assert_eq!(pipe.launches[0].shared, "256 * 4");
    let compact = k("compact_positive");
    let Some(ArgSpec::Buffer {
        compare, unwritten, ..
    }) = compact.arg("out")
    else {
        panic!("out is a buffer")
    };
    assert!(compare.unordered && *unwritten);
    assert_eq!(compare.prefix.as_deref(), Some("count[0]"));
    assert!(k("reduce_tmpl")
        .entry_names()
        .contains(&"reduce<float, 256>".to_string()));
    assert!(
        k("prefix_sum_inplace").compile_options()[0].ends_with("examples/corpus/include"),
        "{:?}",
        k("prefix_sum_inplace").compile_options()
    );
    let draw = |name: &str| k(name).draw(SizeChoice::Sanitize, &mut ChaCha8Rng::seed_from_u64(0));
    let scalar = |p: &Problem, i: usize| match p.launches[0].args[i] {
        Arg::Scalar(b) => b,
        a => panic!("{a:?}"),
    };
    assert_eq!(scalar(&draw("saxpy"), 1), Bits::B32(2.5f32.to_bits()));
    assert_eq!(scalar(&draw("hfma_f16"), 1), Bits::B32(2.0f32.to_bits()));
    assert!(matches!(k("dot_f64").check, Check::Reference { .. }));
}

#[test]
fn gate_example_draws_as_before() {
    // The scalars that were Arg::Int are now 32-bit scalars with the same bits.
    let m = load("examples/gate/racegate.toml");
    let scale = &m.kernels[0];
    let p = scale.draw(SizeChoice::Fixed(1000), &mut ChaCha8Rng::seed_from_u64(1));
    assert_eq!(p.label, "n=1000 grid=4 block=256");
    let bits: Vec<Bits> = p.launches[0].args[2..]
        .iter()
        .map(|a| match a {
            Arg::Scalar(b) => *b,
            a => panic!("{a:?}"),
        })
        .collect();
    assert_eq!(
        bits,
        [Bits::B32(1000), Bits::B32(3), Bits::B32((-7i32) as u32)]
    );
    for k in &m.kernels {
        check_problem(
            k,
            &k.draw(SizeChoice::Sanitize, &mut ChaCha8Rng::seed_from_u64(0)),
        );
    }
}

#[test]
fn list_uses_the_racegate_toml_of_the_current_folder() {
    let (code, out) = racegate(["list"])
        .at(repo_root().join("examples/gate"))
        .run()
        .exit_text();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("block_sum_racy"), "{out}");
    let (code, out) = racegate(["list", "--json", "-"])
        .at(repo_root().join("examples/corpus"))
        .run()
        .exit_text();
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("scan_blocks, add_block_offsets in kernels/scan_pipeline.cu"),
        "{out}"
    );
    // --root still means the built-in catalog under that root.
    let (code, out) = racegate(["list", "--root", repo_root().to_str().unwrap()])
        .at(repo_root().join("examples/gate"))
        .run()
        .exit_text();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("matmul"), "{out}");
}

#[test]
fn a_range_error_is_exit_2_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "extern \"C\" __global__ void k(float* y) {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("racegate.toml"),
        r#"[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
sizes = { n = [1, 100] }
grid = ["n - 1"]
block = ["128"]
oracle = "determinism"
args = [{ name = "y", kind = "out", type = "f32", len = "n" }]
"#,
    )
    .unwrap();
    for cmd in [&["list"][..], &["compile"], &["stress", "k"]] {
        let (code, out) = racegate(cmd).at(dir.path()).run().exit_text();
        assert_eq!(code, 2, "{cmd:?}: {out}");
        assert!(
            out.contains("racegate.toml:6: `grid`: `n - 1` is 0 at n=1"),
            "{cmd:?}: {out}"
        );
    }
}
