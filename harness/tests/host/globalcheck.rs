//! globalcheck's tool builds from the pinned 13.0 wheels (`ci/setup`) on a machine without a
//! CUDA toolkit, as it must in CI: the host library with g++ and the device patches with nvcc.

use std::path::Path;

use racegate::sanitize::globalcheck::build;

#[test]
fn the_tool_and_its_patches_build_from_the_pinned_wheels() {
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let tc = build::find(&root).unwrap_or_else(|e| panic!("{e} (run ci/setup first)"));
    let built = build::ensure(&root).unwrap_or_else(|e| panic!("{e}"));
    let tool = std::fs::read(&built.tool).unwrap();
    assert_eq!(&tool[..4], b"\x7fELF", "{}", built.tool.display());
    // The driver loads the tool through this exported entry point.
    assert!(
        tool.windows(19).any(|w| w == b"InitializeInjection"),
        "no InitializeInjection in {}",
        built.tool.display()
    );
    let fatbin = std::fs::read(&built.patches).unwrap();
    for patch in [
        "gc_access",
        "gc_barrier",
        "gc_barrier_release",
        "gc_syncwarp",
        "gc_shfl",
    ] {
        assert!(
            fatbin.windows(patch.len()).any(|w| w == patch.as_bytes()),
            "patch {patch} missing from {}",
            built.patches.display()
        );
    }
    // Built against what was found, with the library's folder as its run path.
    assert!(Path::new(&tc.sanitizer_lib)
        .join("libsanitizer-public.so")
        .is_file());
    let again = build::ensure(&root).unwrap();
    assert_eq!(again.tool, built.tool, "a second call uses the cache");
}

/// A fixture's report and line tables, as `racegate sanitize --tool globalcheck` reads them.
fn decide_fixture(stem: &str, exit: racegate::watchdog::Exit) -> racegate::sanitize::Outcome {
    use racegate::sanitize::globalcheck::{lines::LineTable, report, run};
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let path = super::package_dir().join(format!("tests/fixtures/h200/{stem}.jsonl"));
    let rep = report::parse(&std::fs::read_to_string(&path).unwrap());
    let mut tables = std::collections::BTreeMap::new();
    for m in rep.modules_with_findings() {
        let t = std::fs::read_to_string(run::lines_path(&path, m)).unwrap();
        tables.insert(m, LineTable::parse(&t));
    }
    let mut log = String::new();
    run::decide(&exit, false, &rep, &tables, &root, &mut log)
}

#[test]
fn h200_reports_decide_clean_and_flagged_at_the_bug_line() {
    use racegate::sanitize::Outcome;
    use racegate::watchdog::Exit;
    assert_eq!(
        decide_fixture("matmul_naive__globalcheck", Exit::Code(0)),
        Outcome::Clean
    );
    match decide_fixture(
        "counter_single__nonatomic_counter__globalcheck",
        Exit::Code(0),
    ) {
        Outcome::Findings(f) => {
            // Errors only: the lane-level warning of the same line is logged, not counted.
            assert!(f.iter().all(|x| x.level == "Error"), "{f:?}");
            assert!(f.iter().any(|x| x.location
                == "buggy_variants/atomic_counter/nonatomic_counter.cu:18"
                && x.what.starts_with("Lost update")));
        }
        other => panic!("{other:?}"),
    }
    // A target that died (signal) with a report of nothing found is never clean.
    assert!(matches!(
        decide_fixture("matmul_naive__globalcheck", Exit::Signal(11)),
        Outcome::Inconclusive(_)
    ));
}

#[test]
fn reports_that_say_too_little_are_inconclusive_never_clean() {
    use racegate::sanitize::globalcheck::report;
    use racegate::sanitize::Outcome;
    use racegate::watchdog::Exit;
    let root = std::path::Path::new("/");
    let none = std::collections::BTreeMap::new();
    let decide = |text: &str| {
        let mut log = String::new();
        racegate::sanitize::globalcheck::run::decide(
            &Exit::Code(0),
            false,
            &report::parse(text),
            &none,
            root,
            &mut log,
        )
    };
    let header = r#"{"tool":"globalcheck","mode":1,"budget_bytes":4096,"patches":"p"}"#;
    let launch = |untracked: u64, allocs: &str| {
        format!(
            r#"{{"launch":0,"kernel":"k","module":0,"grid":[1,1,1],"block":[32,1,1],"mode":1,"accesses":64,"untracked_accesses":{untracked},"dropped":0,"untracked_allocations":[{allocs}],"findings":[]}}"#
        )
    };
    // Not loaded (no header), an error line, a cut line, no launch at all.
    for text in [
        String::new(),
        format!(
            "{header}\n{{\"error\":\"adding the patches: bad file\"}}\n{}",
            launch(0, "")
        ),
        format!("{header}\n{{\"launch\":0,\"kern"),
        header.to_string(),
    ] {
        assert!(matches!(decide(&text), Outcome::Inconclusive(_)), "{text}");
    }
    // Memory past the budget that the launch touched: inconclusive, naming the allocation.
    match decide(&format!(
        "{header}\n{}",
        launch(5, r#"{"base":4096,"size":1048576}"#)
    )) {
        Outcome::Inconclusive(m) => assert!(m.contains("1048576 bytes at 0x1000"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        decide(&format!("{header}\n{}", launch(0, ""))),
        Outcome::Clean
    );
    // Accesses to memory the tool does not know, a full finding table, epochs past their
    // range, and warp findings under named barriers: each says why, none is clean.
    let with = |field: &str, value: &str| {
        launch(0, "").replacen(
            "\"findings\":[]",
            &format!("\"{field}\":{value},\"findings\":[]"),
            1,
        )
    };
    let warp_finding = r#""findings":[{"kind":"write-read","scope":"warps","pc_now":1,"pc_then":2,"addr":0,"block_now":0,"thread_now":40,"block_then":0,"thread_then":1,"count":1}]"#;
    let cases = [
        (launch(3, ""), "outside every allocation"),
        (
            launch(0, "").replace("\"dropped\":0", "\"dropped\":2"),
            "2 finding(s) dropped",
        ),
        (with("epoch_overflow", "1"), "2^15 barriers"),
        (
            with("named_barriers", "4").replace("\"findings\":[]", warp_finding),
            "named or partial barriers",
        ),
    ];
    for (line, why) in cases {
        match decide(&format!("{header}\n{line}")) {
            Outcome::Inconclusive(m) => assert!(m.contains(why), "{m}"),
            other => panic!("{line}: {other:?}"),
        }
    }
    // A target that failed with nothing found: nothing can be concluded from its launches.
    let mut log = String::new();
    let failed = racegate::sanitize::globalcheck::run::decide(
        &Exit::Code(1),
        false,
        &report::parse(&format!("{header}\n{}", launch(0, ""))),
        &none,
        root,
        &mut log,
    );
    assert!(matches!(failed, Outcome::Inconclusive(m) if m.contains("exited 1")));
}

#[test]
fn h200_reports_of_the_limits_program_are_inconclusive_where_globalcheck_cannot_judge() {
    // `examples/globalcheck/limits.cu` under `racegate sanitize --tool globalcheck -- ./limits
    // MODE` on the H200 (run 18): each report as the tool wrote it.
    use racegate::sanitize::Outcome;
    use racegate::watchdog::Exit;
    assert_eq!(
        decide_fixture("programs/limits_named_ok", Exit::Code(0)),
        Outcome::Clean,
        "a named barrier still orders the threads that pass it"
    );
    for (mode, why) in [
        ("named_partial", "named or partial barriers"),
        ("many_barriers", "2^15 barriers"),
        ("huge_grid", "more than 2^26 blocks"),
        ("volatile_handoff", "volatile or relaxed/acquire-release"),
        (
            "budget64",
            "shadow budget left 1 allocation(s) untracked (67108864 bytes",
        ),
    ] {
        match decide_fixture(&format!("programs/limits_{mode}"), Exit::Code(0)) {
            Outcome::Inconclusive(m) => assert!(m.contains(why), "{mode}: {m}"),
            other => panic!("{mode}: {other:?}"),
        }
    }
}
