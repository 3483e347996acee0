//! `--partition K/N` through the binary: the shards of a manifest's gate together hold every
//! kernel exactly once, the same set as the whole run (without a device, each kernel's compile
//! check and its runs not made stand for it); bad partitions are usage errors before any work.

use std::collections::BTreeSet;

use crate::repo_root;
use crate::runner::racegate;

fn gate_subjects(dir: &std::path::Path, extra: &[&str], json: &str) -> BTreeSet<String> {
    let out = racegate(["gate", "--json", json])
        .args(extra)
        .at(dir)
        .no_gpu()
        .run();
    assert_eq!(out.code, Some(4), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(json)).unwrap()).unwrap();
    v["checked"]
        .as_array()
        .unwrap()
        .iter()
        .chain(v["inconclusive"].as_array().unwrap())
        .map(|c| c["subject"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_shards_of_a_gate_hold_every_kernel_exactly_once() {
    let dir = super::package_dir().join("../examples/corpus");
    let t = tempfile::tempdir().unwrap();
    let json = |name: &str| t.path().join(name).display().to_string();
    let whole = gate_subjects(&dir, &[], &json("whole.json"));
    assert!(whole.len() > 10, "{whole:?}");
    for n in [2u32, 3, 5] {
        let mut seen: Vec<String> = Vec::new();
        for k in 1..=n {
            let shard = gate_subjects(
                &dir,
                &["--partition", &format!("{k}/{n}")],
                &json(&format!("s{k}of{n}.json")),
            );
            seen.extend(shard);
        }
        let set: BTreeSet<String> = seen.iter().cloned().collect();
        assert_eq!(set.len(), seen.len(), "a kernel in two shards of {n}");
        assert_eq!(set, whole, "the shards of {n} are not the whole run");
    }
}

#[test]
fn a_bad_partition_is_a_usage_error() {
    for bad in ["0/2", "3/2", "x", "1/0"] {
        let out = racegate(["check", "--partition", bad]).run();
        assert_eq!(out.code, Some(2), "{bad}: {out:?}");
    }
    // One program is one item.
    let out = racegate(["gate", "--partition", "1/2", "--", "true"]).run();
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("one program is one item"));
}

/// `racegate merge`: the shards of a gate make the whole run's result (the same checks, the
/// same undecided runs, the same exit code); shards that do not make one run are refused before
/// anything is written.
#[test]
fn merged_shards_are_the_whole_run_and_mismatched_ones_are_refused() {
    let dir = super::package_dir().join("../examples/corpus");
    let t = tempfile::tempdir().unwrap();
    let p = |name: &str| t.path().join(name).display().to_string();
    gate_subjects(&dir, &[], &p("whole.json"));
    for k in 1..=3 {
        gate_subjects(
            &dir,
            &["--partition", &format!("{k}/3")],
            &p(&format!("s{k}.json")),
        );
    }
    let merge = |args: &[&str]| racegate(["merge"]).args(args).at(&dir).run();
    let out = merge(&[
        &p("s1.json"),
        &p("s2.json"),
        &p("s3.json"),
        "--json",
        &p("m.json"),
        "--junit",
        &p("m.xml"),
    ]);
    // No device in any shard: 4, as the whole run.
    assert_eq!(out.code, Some(4), "{out:?}");
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(t.path().join(f)).unwrap()).unwrap()
    };
    let (whole, merged) = (read("whole.json"), read("m.json"));
    let set = |v: &serde_json::Value, key: &str| -> BTreeSet<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("{}::{}", c["subject"], c["detector"]))
            .collect()
    };
    for key in ["checked", "inconclusive", "findings"] {
        assert_eq!(set(&whole, key), set(&merged, key), "{key}");
    }
    assert_eq!(whole["exit_code"], merged["exit_code"]);
    assert!(t.path().join("m.xml").is_file());
    // The shards given in another order: the same merge.
    let out = merge(&[
        &p("s3.json"),
        &p("s1.json"),
        &p("s2.json"),
        "--json",
        &p("m2.json"),
    ]);
    assert_eq!(out.code, Some(4), "{out:?}");
    assert_eq!(read("m2.json"), merged);
    // Refused, exit 2, nothing written: a missing shard, a duplicated one, another run's, one
    // judged against another baseline (unless merge names the one to judge against).
    gate_subjects(
        &dir,
        &["--partition", "2/3", "--trials", "7"],
        &p("other.json"),
    );
    let elsewhere = p("elsewhere-baseline.json");
    gate_subjects(
        &dir,
        &["--partition", "2/3", "--baseline", &elsewhere],
        &p("based.json"),
    );
    for (args, why) in [
        (vec![p("s1.json"), p("s2.json")], "missing"),
        (
            vec![p("s1.json"), p("s2.json"), p("s2.json"), p("s3.json")],
            "twice",
        ),
        (
            vec![p("s1.json"), p("other.json"), p("s3.json")],
            "settings",
        ),
        (vec![p("whole.json")], "shard stamp"),
        (
            vec![p("s1.json"), p("based.json"), p("s3.json")],
            "different baselines",
        ),
    ] {
        let out_file = p("refused.json");
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend(["--json", &out_file]);
        let out = merge(&a);
        assert_eq!(out.code, Some(2), "{why}: {out:?}");
        assert!(out.stderr.contains(why), "{why}: {out:?}");
        assert!(
            !t.path().join("refused.json").exists(),
            "{why}: wrote its output"
        );
    }
    // Shards of two baselines, merge naming the one to judge against: merged.
    let out = merge(&[
        &p("s1.json"),
        &p("based.json"),
        &p("s3.json"),
        "--baseline",
        &elsewhere,
    ]);
    assert_eq!(out.code, Some(4), "{out:?}");
}

/// The mutants `racegate mutate --no-compile` lists in the catalog, as `file#id`, and the JSON.
fn mutants_listed(extra: &[&str]) -> (BTreeSet<String>, serde_json::Value) {
    let t = tempfile::tempdir().unwrap();
    let json = t.path().join("m.json");
    let root = super::package_dir().join("..");
    let out = racegate(["--root"])
        .args([&root])
        .args(["mutate", "--no-compile", "--json"])
        .args([&json])
        .args(extra)
        .at(t.path())
        .run();
    assert_eq!(out.code, Some(0), "{out:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ids = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|k| k["mutants"].as_array().unwrap())
        .map(|m| {
            format!(
                "{}#{}",
                m["file"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    (ids, v)
}

#[test]
fn the_shards_of_mutate_hold_every_mutant_exactly_once_and_carry_their_stamp() {
    let (whole, v) = mutants_listed(&[]);
    assert!(whole.len() > 50, "{}", whole.len());
    assert!(v.get("shard").is_none(), "no stamp without --partition");
    for n in [2u32, 3] {
        let mut seen: Vec<String> = Vec::new();
        for k in 1..=n {
            let (shard, v) = mutants_listed(&["--partition", &format!("{k}/{n}")]);
            assert_eq!(
                v["shard"]["partition"],
                format!("{k}/{n}"),
                "{}",
                v["shard"]
            );
            assert_eq!(v["shard"]["mode"], "mutate");
            assert!(!shard.is_empty(), "shard {k}/{n} is empty");
            seen.extend(shard);
        }
        let once: BTreeSet<String> = seen.iter().cloned().collect();
        assert_eq!(once.len(), seen.len(), "a mutant in two shards of {n}");
        assert_eq!(once, whole, "the shards of {n} are the whole listing");
    }
}

/// A batch's JSON without its timings (`execution_seconds`): what a merge must give back.
fn untimed(path: &std::path::Path) -> serde_json::Value {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for g in v.as_array_mut().unwrap() {
        g.as_object_mut().unwrap().remove("execution_seconds");
    }
    v
}

#[test]
fn a_grading_batch_in_two_shards_merges_into_the_whole_batch() {
    let t = tempfile::tempdir().unwrap();
    let repo = repo_root();
    let subs = super::package_dir().join("tests/submissions/reduce");
    // A file given before the folder: the batch grades it first, which neither its name's nor
    // its path's order puts first.
    std::fs::copy(subs.join("binary.cu"), t.path().join("0-first.cu")).unwrap();
    let subs = subs.to_str().unwrap();
    let grade = |extra: &[&str], out: &str| {
        let mut args = vec!["grade", "--exercise", "reduce", "--format", "json"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--output", out, "0-first.cu", subs]);
        racegate(["--root", repo.to_str().unwrap()])
            .args(&args)
            .at(t.path())
            .no_gpu()
            .run()
            .code_text()
    };
    let (whole_code, text) = grade(&[], "whole.json");
    assert!(t.path().join("whole.json").exists(), "{text}");
    for k in 1..=2 {
        let (code, text) = grade(&["--partition", &format!("{k}/2")], &format!("g{k}.json"));
        assert_eq!(code, whole_code, "{text}");
    }
    let (code, text) = racegate(["--root", repo.to_str().unwrap()])
        .args([
            "merge",
            "g1.json",
            "g2.json",
            "--json",
            "merged.json",
            "--csv",
            "m.csv",
        ])
        .at(t.path())
        .no_gpu()
        .run()
        .code_text();
    assert_eq!(code, whole_code, "{text}");
    assert_eq!(
        untimed(&t.path().join("merged.json")),
        untimed(&t.path().join("whole.json"))
    );
    let csv = std::fs::read_to_string(t.path().join("m.csv")).unwrap();
    let n = untimed(&t.path().join("whole.json"))
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        csv.lines().count(),
        1 + n,
        "a header and a row a submission: {csv}"
    );
    // One shard alone, or a shard with a gate's report flag: refused, nothing written.
    let (code, text) = racegate(["--root", repo.to_str().unwrap()])
        .args(["merge", "g1.json", "--csv", "x.csv"])
        .at(t.path())
        .no_gpu()
        .run()
        .code_text();
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("2/2 missing"), "{text}");
    assert!(!t.path().join("x.csv").exists());
    let (code, text) = racegate(["--root", repo.to_str().unwrap()])
        .args(["merge", "g1.json", "g2.json", "--sarif", "x"])
        .at(t.path())
        .no_gpu()
        .run()
        .code_text();
    assert_eq!(code, Some(2), "{text}");
}
