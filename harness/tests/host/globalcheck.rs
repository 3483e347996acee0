//! globalcheck's tool builds from the pinned 13.0 wheels (`ci/setup`) on a machine without a
//! CUDA toolkit, as it must in CI: the host library with g++ and the device patches with nvcc.

use std::path::Path;

use racegate::build::globalcheck as build;

#[test]
fn the_tool_and_its_patches_build_from_the_pinned_wheels() {
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let tc = build::find().unwrap_or_else(|e| panic!("{e} (run ci/setup first)"));
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
        "sc_access",
        "sc_memcpy_async",
        "sc_bulk_g2s",
        "sc_matrix",
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

/// A captured line table with each `//## File "..."` path moved from the capture's checkout to
/// this one: the longest tail of the path that names a file under `root` is joined to `root`, so
/// a finding's location reads the same from any checkout path (CI clones elsewhere). A path with
/// no such tail (a toolkit header) is left alone.
fn rebased(table: &str, root: &std::path::Path) -> String {
    const MARK: &str = "## File \"";
    let mut out = String::with_capacity(table.len());
    let mut rest = table;
    while let Some(i) = rest.find(MARK) {
        let (head, tail) = rest.split_at(i + MARK.len());
        out.push_str(head);
        let end = tail.find('"').unwrap_or(tail.len());
        let path = &tail[..end];
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let moved = (0..parts.len())
            .map(|k| root.join(parts[k..].join("/")))
            .find(|p| p.is_file());
        match moved {
            Some(p) => out.push_str(&p.display().to_string()),
            None => out.push_str(path),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[test]
fn a_captured_table_is_moved_to_this_checkout_and_headers_stay() {
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let t = "//## File \"/elsewhere/x/examples/corpus/kernels/block_scan_shfl.cu\", line 14\n\
             //## File \"/usr/local/cuda/include/crt/nope.h\", line 3\n";
    let r = rebased(t, &root);
    assert!(
        r.contains(&format!(
            "\"{}\", line 14",
            root.join("examples/corpus/kernels/block_scan_shfl.cu")
                .display()
        )),
        "{r}"
    );
    assert!(
        r.contains("\"/usr/local/cuda/include/crt/nope.h\", line 3"),
        "{r}"
    );
}

/// The line tables of a capture's modules with findings, moved to this checkout ([`rebased`]).
fn fixture_tables(
    rep: &racegate::judge::sanitize::injected::report::Report,
    path: &std::path::Path,
    root: &std::path::Path,
) -> std::collections::BTreeMap<u32, racegate::judge::sanitize::injected::lines::LineTable> {
    use racegate::judge::sanitize::injected::{lines::LineTable, run};
    rep.modules_with_findings()
        .into_iter()
        .map(|m| {
            let t = std::fs::read_to_string(run::lines_path(path, m)).unwrap();
            (m, LineTable::parse(&rebased(&t, root)))
        })
        .collect()
}

/// A fixture's report and line tables, as `racegate sanitize --tool globalcheck` reads them.
fn decide_fixture(
    stem: &str,
    exit: racegate::proc::watchdog::Exit,
) -> racegate::judge::sanitize::Outcome {
    use racegate::judge::sanitize::injected::{global, report};
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let path = super::package_dir().join(format!("tests/fixtures/h200/{stem}.jsonl"));
    let rep = report::parse(&std::fs::read_to_string(&path).unwrap());
    let tables = fixture_tables(&rep, &path, &root);
    let mut log = String::new();
    global::decide(&exit, false, &rep, &tables, &root, &mut log)
}

#[test]
fn h200_reports_decide_clean_and_flagged_at_the_bug_line() {
    use racegate::judge::sanitize::Outcome;
    use racegate::proc::watchdog::Exit;
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
    use racegate::judge::sanitize::injected::report;
    use racegate::judge::sanitize::Outcome;
    use racegate::proc::watchdog::Exit;
    let root = std::path::Path::new("/");
    let none = std::collections::BTreeMap::new();
    let decide = |text: &str| {
        let mut log = String::new();
        racegate::judge::sanitize::injected::global::decide(
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
    let failed = racegate::judge::sanitize::injected::global::decide(
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
    use racegate::judge::sanitize::Outcome;
    use racegate::proc::watchdog::Exit;
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

#[test]
fn findings_set_aside_in_one_launch_do_not_hide_a_race_in_another() {
    // Two kernels of one module: `vol` polls a volatile flag (a strong load in its SASS), `plain`
    // does not. Both launches report a race between blocks. `vol`'s is set aside (the tool cannot
    // see a volatile handoff), `plain`'s still counts; alone, `vol`'s makes the run inconclusive.
    use racegate::judge::sanitize::injected::{decide, global, lines::LineTable, report};
    use racegate::judge::sanitize::Outcome;
    use racegate::proc::watchdog::Exit;
    let header = r#"{"tool":"globalcheck","mode":1,"budget_bytes":4096,"patches":"p"}"#;
    let module = r#"{"module":7,"cubin":"module-7.cubin","image_bytes":1,"functions":[{"name":"vol","pc":4096,"size":256},{"name":"plain","pc":8192,"size":256}],"globals":[]}"#;
    let launch = |n: u32, kernel: &str, pc: u64| {
        format!(
            r#"{{"launch":{n},"kernel":"{kernel}","module":7,"grid":[2,1,1],"block":[32,1,1],"mode":1,"accesses":9,"untracked_accesses":0,"dropped":0,"named_barriers":0,"epoch_overflow":0,"untracked_allocations":[],"findings":[{{"kind":"write-read","scope":"blocks","pc_now":{},"pc_then":{},"addr":1,"alloc_base":1,"alloc_name":"","block_now":1,"thread_now":0,"block_then":0,"thread_then":0,"value_now":0,"value_then":1,"count":1}}]}}"#,
            pc + 0x10,
            pc + 0x20
        )
    };
    let sass = ".text.vol:\n\t//## File \"/r/k.cu\", line 5\n        /*0010*/                   LDG.E R3, desc[UR4][R2.64] ;\n        /*0020*/                   STG.E desc[UR4][R2.64], R3 ;\n        /*0030*/                   LDG.E.STRONG.SYS R5, desc[UR4][R6.64] ;\n.text.plain:\n\t//## File \"/r/k.cu\", line 9\n        /*0010*/                   LDG.E R3, desc[UR4][R2.64] ;\n        /*0020*/                   STG.E desc[UR4][R2.64], R3 ;\n";
    let tables = std::collections::BTreeMap::from([(7u32, LineTable::parse(sass))]);
    let root = std::path::Path::new("/r");
    let decide = |text: &str, tables: &std::collections::BTreeMap<u32, LineTable>| {
        let mut log = String::new();
        let o = global::decide(
            &Exit::Code(0),
            false,
            &report::parse(text),
            tables,
            root,
            &mut log,
        );
        (o, log)
    };
    let both = format!(
        "{header}\n{module}\n{}\n{}",
        launch(0, "vol", 4096),
        launch(1, "plain", 8192)
    );
    match decide(&both, &tables) {
        (Outcome::Findings(f), log) => {
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!(f[0].kernel, "plain");
            assert!(log.contains("launch 0 of vol set aside"), "{log}");
        }
        other => panic!("{other:?}"),
    }
    let alone = format!("{header}\n{module}\n{}", launch(0, "vol", 4096));
    match decide(&alone, &tables) {
        (Outcome::Inconclusive(m), _) => {
            assert!(decide::is_limit(&m) && m.contains("volatile"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    // Without line tables nothing can be located or told apart: inconclusive, never clean.
    let none = std::collections::BTreeMap::new();
    match decide(&both, &none) {
        (Outcome::Inconclusive(m), _) => assert!(m.contains("no line table"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_earlier_access_across_a_4_gib_boundary_keeps_its_line() {
    // The device keeps the low 32 bits of the earlier access's pc and takes the high half from
    // the later one; code that straddles a 4 GiB boundary gets the neighbouring window back.
    use racegate::judge::sanitize::injected::{global, lines::LineTable, report};
    use racegate::judge::sanitize::Outcome;
    use racegate::proc::watchdog::Exit;
    let base: u64 = 0xFFFF_FF00;
    let now = 0x1_0000_0010u64; // offset 0x110 of `far`
    let then_on_device = (now & !0xFFFF_FFFF) | ((base + 0x20) & 0xFFFF_FFFF);
    let text = format!(
        "{}\n{}\n{}",
        r#"{"tool":"globalcheck","mode":1,"budget_bytes":4096,"patches":"p"}"#,
        format_args!(
            r#"{{"module":3,"cubin":"module-3.cubin","image_bytes":1,"functions":[{{"name":"far","pc":{base},"size":512}}],"globals":[]}}"#
        ),
        format_args!(
            r#"{{"launch":0,"kernel":"far","module":3,"grid":[2,1,1],"block":[32,1,1],"mode":1,"accesses":9,"untracked_accesses":0,"dropped":0,"named_barriers":0,"epoch_overflow":0,"untracked_allocations":[],"findings":[{{"kind":"write-write","scope":"blocks","pc_now":{now},"pc_then":{then_on_device},"addr":1,"alloc_base":1,"alloc_name":"","block_now":1,"thread_now":0,"block_then":0,"thread_then":0,"value_now":2,"value_then":1,"count":1}}]}}"#
        )
    );
    let sass = ".text.far:\n\t//## File \"/r/k.cu\", line 4\n        /*0020*/                   STG.E desc[UR4][R2.64], R3 ;\n\t//## File \"/r/k.cu\", line 8\n        /*0110*/                   STG.E desc[UR4][R2.64], R5 ;\n";
    let tables = std::collections::BTreeMap::from([(3u32, LineTable::parse(sass))]);
    let mut log = String::new();
    match global::decide(
        &Exit::Code(0),
        false,
        &report::parse(&text),
        &tables,
        std::path::Path::new("/r"),
        &mut log,
    ) {
        Outcome::Findings(f) => {
            assert_eq!(f[0].location, "k.cu:8");
            assert_eq!(f[0].accesses, "Write -> Write k.cu:4");
        }
        other => panic!("{other:?}"),
    }
}

/// An H200-captured sharedcheck report (`docs/h200/run-22/sharedcheck/NOTES.md`) decided as
/// `racegate sanitize --tool sharedcheck` decides it.
fn decide_shared_fixture(stem: &str) -> racegate::judge::sanitize::Outcome {
    use racegate::judge::sanitize::injected::{report, shared};
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let path = super::package_dir().join(format!("tests/fixtures/h200/{stem}.jsonl"));
    let rep = report::parse(&std::fs::read_to_string(&path).unwrap());
    let tables = fixture_tables(&rep, &path, &root);
    let mut log = String::new();
    shared::decide::decide_shared(
        &racegate::proc::watchdog::Exit::Code(0),
        false,
        &rep,
        &tables,
        &root,
        &mut log,
    )
}

/// [`decide_shared_fixture`] on the capture's text after `edit`, with `dead_uninit` as the
/// confirm runs would say; also returns the decision's log.
fn decide_shared_edited(
    stem: &str,
    edit: impl Fn(String) -> String,
    dead_uninit: bool,
) -> (racegate::judge::sanitize::Outcome, String) {
    use racegate::judge::sanitize::injected::{report, shared};
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let path = super::package_dir().join(format!("tests/fixtures/h200/{stem}.jsonl"));
    let rep = report::parse(&edit(std::fs::read_to_string(&path).unwrap()));
    assert!(rep.errors.is_empty(), "{:?}", rep.errors);
    let tables = fixture_tables(&rep, &path, &root);
    let mut log = String::new();
    let o = shared::decide::decide_shared_with(
        &racegate::proc::watchdog::Exit::Code(0),
        false,
        &rep,
        &tables,
        &root,
        &mut log,
        dead_uninit,
    );
    (o, log)
}

#[test]
fn an_unwritten_read_whose_value_never_reaches_the_output_is_a_note_not_a_finding() {
    use racegate::judge::sanitize::Outcome;
    let stem = "sc-stencil3_tiled__halo_unwritten__sharedcheck";
    let (o, log) = decide_shared_edited(stem, |t| t, false);
    assert!(
        matches!(o, Outcome::Findings(ref f) if f.len() == 1),
        "{o:?}"
    );
    assert!(!log.contains("sharedcheck note"), "{log}");
    // The confirm runs said the output did not change under two poisons: a note naming the
    // line, and the launch judged on the rest (clean here).
    let (o, log) = decide_shared_edited(stem, |t| t, true);
    assert_eq!(o, Outcome::Clean, "{log}");
    let line = line_of(
        "buggy_variants/stencil_tiled/halo_unwritten.cu",
        "out[i] = tile[t - 1]",
    );
    assert!(
        log.lines()
            .any(|l| l.starts_with("sharedcheck note (not counted)") && l.contains(&line)),
        "{log}"
    );
    // Only unwritten reads are spared: an atomic/plain race stays a finding either way.
    let (o, _) = decide_shared_edited(
        "sc-counter_block__read_before_sync__sharedcheck",
        |t| t,
        true,
    );
    assert!(
        matches!(o, Outcome::Findings(ref f) if f.len() == 1),
        "{o:?}"
    );
}

/// The H200 captures of run 23 (the current tool): the correct handoff's `atomicExch` on
/// unwritten bytes is in the report and dropped by its SASS; the block scan's dead reads and the
/// reduction's live tail read are both findings of the first run, and only the confirm runs'
/// verdict (as the device logged it: the same output under the three poisons for the scan, a
/// changed one for the tail) spares the first.
#[test]
fn h200_captures_of_the_confirm_runs_and_of_an_exchange_decide_as_on_the_device() {
    use racegate::judge::sanitize::Outcome;
    let text = std::fs::read_to_string(
        super::package_dir().join("tests/fixtures/h200/r23-handoff__sharedcheck.jsonl"),
    )
    .unwrap();
    assert!(
        text.contains(r#""kind":"uninitialized-read""#) && text.contains(r#""now_atomic":true"#),
        "the capture no longer holds the exchange's finding"
    );
    assert_eq!(
        decide_shared_fixture("r23-handoff__sharedcheck"),
        Outcome::Clean
    );
    let scan = "r23-corpus-block_scan_shfl__sharedcheck";
    let line = line_of(
        "examples/corpus/kernels/block_scan_shfl.cu",
        "unsigned s = (unsigned)sums[lane];",
    );
    match decide_shared_edited(scan, |t| t, false).0 {
        Outcome::Findings(f) => assert!(f.iter().all(|x| x.location == line), "{f:?}"),
        o => panic!("{o:?}"),
    }
    let (o, log) = decide_shared_edited(scan, |t| t, true);
    assert_eq!(o, Outcome::Clean, "{log}");
    assert!(log.contains(&line), "{log}");
    let tail = line_of(
        "buggy_variants/reduce_sequential/uninit_shared_tail.cu",
        "s[tid] += s[tid + half];",
    );
    match decide_shared_fixture("r23-reduce_sequential__uninit_shared_tail__sharedcheck") {
        Outcome::Findings(f) => assert!(f.iter().any(|x| x.location == tail), "{f:?}"),
        o => panic!("{o:?}"),
    }
}

#[test]
fn an_atomic_on_unwritten_shared_memory_is_a_finding_unless_it_is_an_exchange() {
    use racegate::judge::sanitize::Outcome;
    // The H200 capture of `handoff::plain_flag` (run 22's tool reported no atomic's unwritten
    // bytes), with one finding added in memory as the current tool writes it: an atomic at
    // `handoff+0xb0`, which the capture's own SASS shows is `ATOMS.EXCH RZ, [UR4], RZ`
    // (`atomicExch(&ready, 0)`), then the same finding moved to an instruction that is not one.
    let stem = "handoff__plain_flag__sharedcheck";
    let base = match decide_shared_edited(stem, |t| t, false).0 {
        Outcome::Findings(f) => f,
        o => panic!("{o:?}"),
    };
    let text = std::fs::read_to_string(
        super::package_dir().join(format!("tests/fixtures/h200/{stem}.jsonl")),
    )
    .unwrap();
    let func_pc: u64 = {
        let at =
            text.find(r#"{"name":"handoff","pc":"#).unwrap() + r#"{"name":"handoff","pc":"#.len();
        text[at..].split(',').next().unwrap().parse().unwrap()
    };
    let add = |off: u64| {
        move |t: String| {
            let finding = format!(
                r#"{{"kind":"uninitialized-read","scope":"block","pc_now":{},"pc_then":0,"offset":1152,"block_now":0,"thread_now":0,"thread_then":0,"bytes":15,"now_atomic":true,"count":1}},"#,
                func_pc + off
            );
            t.replacen(
                r#""shared_findings":["#,
                &format!(r#""shared_findings":[{finding}"#),
                1,
            )
        }
    };
    // The exchange: dropped, the decision as before.
    assert_eq!(
        decide_shared_edited(stem, add(0xb0), false).0,
        Outcome::Findings(base.clone())
    );
    // Another instruction of the kernel: an atomic that reads what no thread wrote.
    match decide_shared_edited(stem, add(0x90), false).0 {
        Outcome::Findings(f) => {
            assert_eq!(f.len(), base.len() + 1, "{f:?}");
            assert!(
                f.iter().any(|x| x.accesses == "Atomic"
                    && x.what
                        .contains("An atomic updates shared memory no thread of the block wrote")),
                "{f:?}"
            );
        }
        o => panic!("{o:?}"),
    }
}

/// The 1-based line of `file` (repo-relative) holding `text`, so that tests name lines by
/// their code, not by numbers.
fn line_of(file: &str, text: &str) -> String {
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let src = std::fs::read_to_string(root.join(file)).unwrap();
    let n = src
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("{text:?} not in {file}"));
    format!("{file}:{}", n + 1)
}

#[test]
fn sharedcheck_flags_the_h200_captures_at_their_lines_and_passes_their_twins() {
    use racegate::judge::sanitize::Outcome;
    for clean in [
        "sc-counter_block__sharedcheck",
        "sc-histogram_shared__sharedcheck",
    ] {
        assert_eq!(decide_shared_fixture(clean), Outcome::Clean, "{clean}");
    }
    let found = |stem: &str| match decide_shared_fixture(stem) {
        Outcome::Findings(f) => f,
        o => panic!("{stem}: {o:?}"),
    };
    // The per-block count read by thread 0 with no barrier after the block's atomicAdds.
    let f = found("sc-counter_block__read_before_sync__sharedcheck");
    let file = "buggy_variants/counter_block/read_before_sync.cu";
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].location, line_of(file, "// BUG"));
    assert_eq!(
        f[0].accesses,
        format!("Atomic -> Plain {}", line_of(file, "atomicAdd(&count, 1u)"))
    );
    assert_eq!(f[0].kind, "Shared");
    // The flush that reads the bins while other warps still add: both lines named.
    let f = found("sc-histogram_shared__no_sync_before_flush__sharedcheck");
    let file = "buggy_variants/histogram_shared/no_sync_before_flush.cu";
    let flush = line_of(file, "// BUG");
    let count = line_of(file, "atomicAdd(&local[data[i]], 1u)");
    assert!(
        f.iter().any(
            |x| x.location == flush && x.accesses == format!("Atomic -> Plain {count}")
                || x.location == count && x.accesses == format!("Plain -> Atomic {flush}")
        ),
        "{f:?}"
    );
    // The halo slot no thread wrote, read where the tile is summed.
    let f = found("sc-stencil3_tiled__halo_unwritten__sharedcheck");
    let file = "buggy_variants/stencil_tiled/halo_unwritten.cu";
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].location, line_of(file, "out[i] = tile[t - 1]"));
    assert!(f[0].what.contains("no thread of the block wrote"), "{f:?}");
}

#[test]
fn kernels_of_cuda_graphs_are_stepped_aside_with_a_note_never_judged_clean() {
    use racegate::judge::sanitize::injected::report;
    let path = super::package_dir().join("tests/fixtures/h200/sc-graph__globalcheck.jsonl");
    let rep = report::parse(&std::fs::read_to_string(&path).unwrap());
    assert!(rep.errors.is_empty(), "{:?}", rep.errors);
    assert!(rep.stepped_aside() > 0, "{:?}", rep.notes);
    assert!(rep.notes.iter().all(|n| n.reason == "cuda-graph"));
    // The plain launch after the graph was judged.
    assert_eq!(rep.launches.len(), 1);
    let out = decide_fixture(
        "sc-graph__globalcheck",
        racegate::proc::watchdog::Exit::Code(0),
    );
    assert!(
        matches!(&out, racegate::judge::sanitize::Outcome::Inconclusive(w) if w.contains("CUDA graphs")),
        "{out:?}"
    );
}

/// The `__shared__` variables read and never written, found in unoptimized PTX built here with
/// NVRTC 13.0: none in any file of the catalog or the corpus, and `is_last` in each of the three
/// `drop-shared-init` mutants no run could kill (`docs/mutate-survivors.md` #15: the optimizer
/// deletes the read, H200 run 23), at the line that reads it.
#[test]
fn shared_variables_read_and_never_written_are_found_in_unoptimized_ptx_and_nowhere_else() {
    use racegate::build::compile::{compile_here, BuildOptions};
    use racegate::judge::sanitize::injected::shared::never_written::find;
    use racegate::source::catalog::Catalog;
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let corpus =
        racegate::source::manifest::Manifest::load(&root.join("examples/corpus/racegate.toml"))
            .expect("the corpus manifest loads");
    let manifest = |rel: &str| {
        Catalog::from_manifest(
            racegate::source::manifest::Manifest::load(&root.join(rel))
                .unwrap_or_else(|e| panic!("{rel}: {e}")),
        )
    };
    let catalogs = [
        Catalog::discover(&root).expect("the catalog loads"),
        Catalog::from_manifest(corpus),
        manifest("examples/gate/racegate.toml"),
        manifest("examples/cargo-test/racegate.toml"),
    ];
    let debug = |cat: &Catalog, file: &str, source: &str| {
        let mut extra: Vec<String> = cat
            .cases
            .iter()
            .find(|c| c.path == file)
            .map(|c| c.compile_options())
            .unwrap_or_default();
        extra.push("-G".into());
        let opts = BuildOptions {
            arch: "compute_90".into(),
            jitter: false,
            extra,
        };
        compile_here(&cat.root, file, source, &opts)
            .unwrap_or_else(|e| panic!("{file} with -G: {e}"))
            .ptx
    };
    let mut files = 0;
    for cat in &catalogs {
        for file in cat.files() {
            let source = std::fs::read_to_string(cat.root.join(file)).unwrap();
            let found = find(&debug(cat, file, &source), None);
            assert!(found.is_empty(), "{file}: {found:?}");
            files += 1;
        }
    }
    assert!(files > 60, "only {files} files");
    for (cat, file, line, entry) in [
        (
            &catalogs[0],
            "kernels/lastblock_sum.cu",
            "is_last = ticket == gridDim.x - 1;",
            "sum_lastblock",
        ),
        (
            &catalogs[0],
            "kernels/lastblock_acqrel.cu",
            "is_last = ticket == gridDim.x - 1;",
            "sum_lastblock_acqrel",
        ),
        (
            &catalogs[1],
            "kernels/dot_f64.cu",
            "is_last = (ticket == gridDim.x - 1);",
            "dot_f64",
        ),
    ] {
        // As the catalog names it: the manifest's root is the git top in a checkout, and the
        // manifest's own folder where there is no `.git` (a nextest archive elsewhere).
        let file = cat
            .files()
            .into_iter()
            .find(|f| Path::new(f).ends_with(file))
            .unwrap_or_else(|| panic!("{file} is not in the catalog at {}", cat.root.display()));
        let source = std::fs::read_to_string(cat.root.join(file)).unwrap();
        let mutant: String = source
            .lines()
            .filter(|l| l.trim() != line)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_ne!(mutant, source, "{file}: the line to drop is not there");
        let found = find(&debug(cat, file, &mutant), Some(entry));
        assert_eq!(found.len(), 1, "{file}: {found:?}");
        assert_eq!(found[0].name, "is_last", "{file}");
        let read = found[0].line.as_ref().map(|(_, n)| *n).unwrap_or(0) as usize;
        let text = mutant.lines().nth(read.saturating_sub(1)).unwrap_or("");
        assert!(text.contains("is_last"), "{file}: line {read} is `{text}`");
    }
}

/// Shapes a review wrote to fool the unoptimized-PTX check (2026-12-01), compiled here with NVRTC
/// 13.0 `-G`: stores the parser once missed (inline PTX blocks with several statements or a
/// comment, the CUTLASS `cvta.to.shared` idiom) are writes; a never-written variable in code the
/// case's kernel never reaches is not its finding; a vector load is a read.
#[test]
fn writes_hidden_in_inline_ptx_count_and_only_the_cases_kernel_is_judged() {
    use racegate::build::compile::{compile_here, BuildOptions};
    use racegate::judge::sanitize::injected::shared::never_written::find;
    let root = super::package_dir().parent().unwrap().to_path_buf();
    let ptx = |source: &str| {
        let opts = BuildOptions {
            arch: "compute_90".into(),
            jitter: false,
            extra: vec!["-G".into()],
        };
        compile_here(&root, "kernels/never_written_probe.cu", source, &opts)
            .unwrap_or_else(|e| panic!("{e}\n{source}"))
            .ptx
    };
    let written = [
        r#"extern "C" __global__ void k(int* out, int v) { __shared__ int x; unsigned a;
           asm("{ .reg .u64 smem_ptr; cvta.to.shared.u64 smem_ptr, %1; cvt.u32.u64 %0, smem_ptr; }\n" : "=r"(a) : "l"(&x));
           if (threadIdx.x == 0) asm volatile("st.shared.u32 [%0], %1;\n" :: "r"(a), "r"(v) : "memory");
           __syncthreads(); out[threadIdx.x] = x; }"#,
        r#"extern "C" __global__ void k(int* out, int v) { __shared__ int x; int old;
           asm volatile("ld.b32 %0, [%1]; st.b32 [%1], %2;" : "=r"(old) : "l"(&x), "r"(v) : "memory");
           __syncthreads(); out[threadIdx.x] = x + old; }"#,
        r#"extern "C" __global__ void k(int* out, int v) { __shared__ int x; long long p;
           asm volatile("mov.b64 %0, %1; // copy the pointer\n\tst.b32 [%0], %2;" : "=l"(p) : "l"(&x), "r"(v) : "memory");
           __syncthreads(); out[threadIdx.x] = x; }"#,
        r#"extern "C" __global__ void k(int* out, int v) { __shared__ int x;
           asm volatile("{ .reg .b32 t; mov.b32 t, %1; st.b32 [%0], t; }" :: "l"(&x), "r"(v) : "memory");
           __syncthreads(); out[threadIdx.x] = x; }"#,
    ];
    for src in written {
        let found = find(&ptx(src), Some("k"));
        assert!(found.is_empty(), "{found:?}\n{src}");
    }
    // A never-written variable in a helper nothing calls, and in a kernel the case does not run.
    let elsewhere = r#"__device__ int unused_helper() { __shared__ int cache; return cache; }
        extern "C" __global__ void debug(int* out) { __shared__ int y; out[0] = y; }
        extern "C" __global__ void good(int* out) { __shared__ int z; if (threadIdx.x == 0) z = 1;
           __syncthreads(); out[threadIdx.x] = z; }"#;
    let p = ptx(elsewhere);
    assert!(
        find(&p, Some("good")).is_empty(),
        "{:?}",
        find(&p, Some("good"))
    );
    assert!(
        find(&p, Some("debug")).iter().any(|f| f.name == "y"),
        "{:?}",
        find(&p, Some("debug"))
    );
    // A vector load of a never-written variable is a read. (Its address handed to a function is
    // a possible write: not found, on the safe side.)
    let vector = r#"extern "C" __global__ void k(float4* out) { __shared__ float4 v; out[threadIdx.x] = v; }"#;
    let found = find(&ptx(vector), Some("k"));
    assert!(found.iter().any(|f| f.name == "v"), "{found:?}");
}
