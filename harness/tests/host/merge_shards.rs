//! `merge_shards::<name>`: `racegate merge` of the shards of `check` and `mutate` through the
//! binary, on this machine without a device: the merged reports are byte for byte the ones the
//! whole run writes (a few cases of the catalog, in three shards given in any order), with its
//! exit code; shards that are not one run are refused (exit 2) and nothing is written.

use std::path::{Path, PathBuf};

use crate::repo_root;
use crate::runner::racegate;

/// `racegate ARGS` at the repository's root without a device: its exit code.
fn run(args: &[&str]) -> i32 {
    let out = racegate(args).at(repo_root()).no_gpu().run();
    out.exit()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The cases checked: a kernel and its variants, from a few families (they fall into several
/// shards), and a perf expectation.
const CASES: [&str; 6] = [
    "reduce_sequential",
    "reduce_sequential::no_loop_sync",
    "counter_block",
    "counter_block::read_before_sync",
    "transpose_padded",
    "histogram_shared::nonatomic_shared",
];

/// `check CASES` as shard `part` (or whole), writing `NAME.json`, `NAME.md` and `NAME.xml`.
fn check(dir: &Path, name: &str, part: Option<&str>) -> i32 {
    let f = |ext: &str| dir.join(format!("{name}.{ext}"));
    let (json, md, xml) = (f("json"), f("md"), f("xml"));
    let mut args: Vec<&str> = vec!["check"];
    args.extend(CASES);
    args.extend(["--json", s(&json), "--table", s(&md), "--junit", s(&xml)]);
    if let Some(p) = part {
        args.extend(["--partition", p]);
    }
    run(&args)
}

#[test]
fn check_shards_merge_into_the_reports_of_the_whole_run() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert_eq!(check(d, "whole", None), 4);
    for k in 1..=3 {
        assert_eq!(check(d, &format!("s{k}"), Some(&format!("{k}/3"))), 4);
    }
    let shard = |k: u32| d.join(format!("s{k}.json"));
    let stamp: serde_json::Value = serde_json::from_str(&read(&shard(1))).unwrap();
    assert_eq!(stamp["shard"]["mode"], "check", "{stamp}");
    let (m, md, xml) = (d.join("m.json"), d.join("m.md"), d.join("m.xml"));
    let (a, b, c) = (shard(3), shard(1), shard(2));
    let merge = [
        "merge",
        s(&a),
        s(&b),
        s(&c),
        "--json",
        s(&m),
        "--table",
        s(&md),
        "--junit",
        s(&xml),
    ];
    assert_eq!(run(&merge), 4);
    assert_eq!(read(&m), read(&d.join("whole.json")));
    assert_eq!(read(&md), read(&d.join("whole.md")));
    assert_eq!(read(&xml), read(&d.join("whole.xml")));
}

/// `mutate --run` (without a device: the mutants listed, none run) as shard `part` or whole.
fn mutate(dir: &Path, name: &str, part: Option<&str>) -> i32 {
    let (json, md) = (
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.md")),
    );
    let mut args = vec![
        "mutate",
        "kernels/reduce_sequential.cu",
        "kernels/transpose.cu",
    ];
    args.extend(["--run", "--json", s(&json), "--table", s(&md)]);
    if let Some(p) = part {
        args.extend(["--partition", p]);
    }
    run(&args)
}

#[test]
fn mutate_shards_merge_into_the_report_of_the_whole_run() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert_eq!(mutate(d, "whole", None), 4);
    for k in 1..=3 {
        assert_eq!(mutate(d, &format!("s{k}"), Some(&format!("{k}/3"))), 4);
    }
    let shards: Vec<PathBuf> = [2, 3, 1]
        .iter()
        .map(|k| d.join(format!("s{k}.json")))
        .collect();
    let (m, md) = (d.join("m.json"), d.join("m.md"));
    let mut merge: Vec<&str> = vec!["merge"];
    merge.extend(shards.iter().map(|p| s(p)));
    merge.extend(["--json", s(&m), "--table", s(&md)]);
    assert_eq!(run(&merge), 4);
    let whole = read(&d.join("whole.json"));
    assert!(whole.matches("\"id\"").count() > 10, "{whole}");
    assert_eq!(read(&m), whole);
    assert_eq!(read(&md), read(&d.join("whole.md")));
}

#[test]
fn shards_that_are_not_one_run_are_refused_and_nothing_is_written() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    for k in 1..=2 {
        assert_eq!(check(d, &format!("c{k}"), Some(&format!("{k}/2"))), 4);
        assert_eq!(mutate(d, &format!("u{k}"), Some(&format!("{k}/2"))), 4);
    }
    let out = d.join("out.json");
    let p = |n: &str| d.join(n);
    let (c1, c2, u2) = (p("c1.json"), p("c2.json"), p("u2.json"));
    let refused = |shards: &[&Path], says: &[&str]| {
        let mut args: Vec<&str> = vec!["merge"];
        args.extend(shards.iter().map(|p| s(p)));
        args.extend(["--json", s(&out)]);
        let ran = racegate(&args).at(repo_root()).no_gpu().run();
        let (code, text) = ran.exit_text();
        assert_eq!(code, 2, "{text}");
        for w in says {
            assert!(text.contains(w), "{w}: {text}");
        }
        assert!(!out.exists(), "{text}");
    };
    refused(&[&c1], &["2/2 missing"]);
    refused(&[&c1, &c1, &c2], &["given twice", "c1.json"]);
    refused(
        &[&c1, &u2],
        &["u2.json", "a mutate shard among check shards"],
    );
    // A check shard of other settings (fewer trials).
    let mut args: Vec<&str> = vec!["check"];
    args.extend(CASES);
    let o2 = p("o2.json");
    args.extend(["--trials", "3", "--partition", "2/2", "--json", s(&o2)]);
    assert_eq!(run(&args), 4);
    refused(&[&c1, &o2], &["different runs", "settings"]);
    // Outside the project they ran in: no catalog to order the cells by.
    let args = ["merge", s(&c1), s(&c2), "--json", s(&out)];
    let (code, text) = racegate(args).at(d).no_gpu().run().exit_text();
    assert_eq!((code, out.exists()), (2, false), "{text}");
    assert!(text.contains("merge where they ran"), "{text}");
    // --sarif is a gate's report, not a check's.
    let args = ["merge", s(&c1), s(&c2), "--sarif", s(&out)];
    let (code, text) = racegate(args).at(repo_root()).no_gpu().run().exit_text();
    assert_eq!((code, out.exists()), (2, false), "{text}");
}

/// Copies `from` into `to`, folders included.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

#[test]
fn check_shards_run_on_different_kernel_sources_are_refused() {
    // A project outside git (no commit tells its versions apart): examples/corpus, one of its
    // kernels edited between the two shards.
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("corpus");
    copy_tree(&repo_root().join("examples/corpus"), &d);
    let shard = |k: u32| {
        let json = d.join(format!("s{k}.json"));
        let args = [
            "check",
            "--partition",
            &format!("{k}/2"),
            "--json",
            s(&json),
        ];
        let code = racegate(args).at(&d).no_gpu().run().exit();
        assert_eq!(code, 4);
        json
    };
    let first = shard(1);
    let kernel = d.join("kernels/block_scan_shfl.cu");
    let mut text = read(&kernel);
    text.push_str("\n// edited between the shards\n");
    std::fs::write(&kernel, text).unwrap();
    let second = shard(2);
    let out = d.join("out.json");
    let args = ["merge", s(&first), s(&second), "--json", s(&out)];
    let (code, text) = racegate(args).at(&d).no_gpu().run().exit_text();
    assert_eq!((code, out.exists()), (2, false), "{text}");
    assert!(text.contains("different runs"), "{text}");
}
