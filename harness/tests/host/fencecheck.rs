//! fencecheck's SASS side on the SASS of real kernels: for the handoff of each last-block sum
//! (the partial's store, the ticket, the last block's read), the control-flow check finds the
//! missing fence and the block-scope one, and accepts `__threadfence()` and a
//! `cuda::atomic_ref` release; handoffs whose data is atomic on both sides need no fence
//! (`fencecheck/coherent.rs`). Fixtures: `tests/fixtures/sass/` (see its PROVENANCE.md) and,
//! when present, `tests/fixtures/h200/sass/*.sass` captured on the H200, judged alike.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use racegate::judge::sanitize::injected::fence::handoffs::{
    self as fence, Acquire, Handoff, Release,
};
use racegate::judge::sanitize::injected::lines::LineTable;
use racegate::judge::sanitize::injected::{fence::sass, report};
use racegate::judge::sanitize::tool::Outcome;
use racegate::proc::watchdog::Exit;

mod coherent;

/// What the release and acquire sides of each fixture's handoff must be judged.
#[derive(Debug, PartialEq)]
enum Want {
    Fenced,
    Missing,
    BlockScope,
}

const EXPECT: &[(&str, Want, bool)] = &[
    // (fixture stem, release side, acquire side ordered)
    ("lastblock_sum", Want::Fenced, true),
    ("lastblock_sum_no_fence", Want::Missing, true),
    ("lastblock_sum_block_fence", Want::BlockScope, true),
    ("lastblock_acqrel", Want::Fenced, true),
    ("lastblock_acqrel_relaxed", Want::Missing, false),
    ("corpus_dot_f64", Want::Fenced, true),
    ("corpus_dot_f64_nofence", Want::Missing, true),
];

const BASE: u64 = 0x7f00_0000_1000;

fn fixtures() -> Vec<PathBuf> {
    let dir = super::package_dir().join("tests/fixtures");
    let mut out = Vec::new();
    for sub in ["sass", "h200/sass"] {
        if let Ok(rd) = std::fs::read_dir(dir.join(sub)) {
            for e in rd.flatten() {
                if e.path().extension().is_some_and(|x| x == "sass") {
                    out.push(e.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// The kernel (the one function with an atomic), its store (the last global store before the
/// first atomic), the atomic (release and acquire alike: the ticket), and the last block's read
/// (the first global load after the ticket).
fn handoff_of(text: &str) -> (String, u64, u64, u64, u64) {
    let fs = sass::parse(text);
    let (name, f) = fs
        .iter()
        .find(|(_, f)| {
            f.instrs
                .iter()
                .any(|i| matches!(i.base(), "ATOM" | "ATOMG" | "RED" | "REDG"))
        })
        .expect("a function with an atomic");
    let at = f
        .instrs
        .iter()
        .position(|i| matches!(i.base(), "ATOM" | "ATOMG" | "RED" | "REDG"))
        .unwrap();
    let store = f.instrs[..at]
        .iter()
        .rev()
        .find(|i| matches!(i.base(), "STG" | "ST"))
        .expect("a store before the atomic");
    let read = f.instrs[at..]
        .iter()
        .find(|i| matches!(i.base(), "LDG" | "LD"))
        .expect("a load after the atomic");
    let size = f.instrs.last().unwrap().offset + 16;
    (
        name.clone(),
        store.offset,
        f.instrs[at].offset,
        read.offset,
        size,
    )
}

fn module_line(name: &str, size: u64) -> String {
    format!(
        r#"{{"module":0,"cubin":"module-0.cubin","image_bytes":1,"functions":[{{"name":"{name}","pc":{BASE},"size":{size}}}],"globals":[]}}"#
    )
}

fn handoff(name: &str, store: u64, atomic: u64, read: u64) -> Handoff {
    Handoff {
        launch: 0,
        kernel: name.into(),
        module: 0,
        pc_store: BASE + store,
        pc_release: BASE + atomic,
        pc_acquire: BASE + atomic,
        pc_read: BASE + read,
        addr: 0,
        block_store: 1,
        block_read: 0,
        count: 1,
    }
}

#[test]
fn the_cfg_check_finds_each_missing_fence_and_accepts_each_correct_form() {
    let all = fixtures();
    let stems: Vec<String> = all
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    // Discovery that finds none fails loudly, and so does a fixture nobody said what to expect of.
    for (want, _, _) in EXPECT {
        assert!(stems.iter().any(|s| s == want), "no fixture {want}.sass");
    }
    let mut failures = Vec::new();
    for (path, stem) in all.iter().zip(&stems) {
        let (_, want_rel, want_acq) = EXPECT
            .iter()
            .find(|(s, _, _)| s == stem)
            .unwrap_or_else(|| panic!("{}: not in EXPECT", path.display()));
        let text = std::fs::read_to_string(path).unwrap();
        let (name, store, atomic, read, size) = handoff_of(&text);
        let rep = report::parse(
            &[
                r#"{"tool":"globalcheck","mode":9}"#.to_string(),
                module_line(&name, size),
            ]
            .join("\n"),
        );
        let code: fence::Sass = [(0, sass::parse(&text))].into_iter().collect();
        let h = handoff(&name, store, atomic, read);
        let rel = fence::release(&rep, &code, &h);
        let ok = match (want_rel, &rel) {
            (Want::Fenced, Release::Fenced) | (Want::Missing, Release::Missing) => true,
            (Want::BlockScope, Release::BlockScope(v)) => !v.is_empty(),
            _ => false,
        };
        if !ok {
            failures.push(format!("{stem}: release {rel:?}, want {want_rel:?} (store /*{store:04x}*/, atomic /*{atomic:04x}*/)"));
        }
        let acq = fence::acquire(&rep, &code, &h);
        if (acq == Acquire::Ordered) != *want_acq {
            failures.push(format!(
                "{stem}: acquire {acq:?}, want ordered={want_acq} (read /*{read:04x}*/)"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn root() -> PathBuf {
    super::package_dir().parent().unwrap().to_path_buf()
}

/// A report of one launch of the kernel [`handoff_of`] finds in `text`, with `handoffs` lines
/// and, unless `summary` is None, its summary line, decided on `text` as SASS.
fn run_decide(text: &str, handoffs: &[Handoff], summary: Option<&str>) -> (Outcome, String) {
    let (name, _, _, _, size) = handoff_of(text);
    decide_on(text, &name, size, handoffs, summary, "")
}

/// [`run_decide`] for the kernel `name` of `size` bytes, the module's one function in the report;
/// `findings`, the launch's races as the device reports them (a JSON array's inside).
fn decide_on(
    text: &str,
    name: &str,
    size: u64,
    handoffs: &[Handoff],
    summary: Option<&str>,
    findings: &str,
) -> (Outcome, String) {
    let mut lines = vec![
        r#"{"tool":"globalcheck","mode":9,"budget_bytes":1,"shared_budget_bytes":1,"patches":""}"#
            .to_string(),
        module_line(name, size),
        format!(
            r#"{{"launch":0,"kernel":"{name}","module":0,"grid":[4,1,1],"block":[64,1,1],"mode":9,"accesses":10,"untracked_accesses":0,"dropped":0,"named_barriers":0,"epoch_overflow":0,"untracked_allocations":[],"findings":[{findings}]}}"#
        ),
    ];
    for h in handoffs {
        lines.push(format!(
            r#"{{"handoff":{{"launch":0,"kernel":"{name}","module":0,"pc_store":{},"pc_release":{},"pc_acquire":{},"pc_read":{},"addr":64,"block_store":1,"thread_store":0,"block_read":3,"thread_read":5,"count":2}}}}"#,
            h.pc_store, h.pc_release, h.pc_acquire, h.pc_read
        ));
    }
    if let Some(s) = summary {
        lines.push(format!(
            r#"{{"handoffs":{{"launch":0,"kernel":"{name}",{s}}}}}"#
        ));
    }
    let text_report = lines.join("\n");
    let rep = report::parse(&text_report);
    assert!(rep.errors.is_empty(), "{:?}", rep.errors);
    let h = fence::parse(&text_report);
    assert_eq!(h.handoffs.len(), handoffs.len());
    let code: fence::Sass = [(0, sass::parse(text))].into_iter().collect();
    let tables: BTreeMap<u32, LineTable> = [(0, LineTable::parse(text))].into_iter().collect();
    let mut log = String::new();
    let o = fence::decide(&Exit::Code(0), &rep, &h, &code, &tables, &root(), &mut log);
    (o, log)
}

fn fixture(stem: &str) -> String {
    std::fs::read_to_string(super::package_dir().join(format!("tests/fixtures/sass/{stem}.sass")))
        .unwrap()
}

/// The 1-based line of the `BUG` marker of a catalog file.
fn bug_line(path: &Path) -> u32 {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let in_code = text.lines().position(|l| !l.starts_with("//")).unwrap();
    (text
        .lines()
        .enumerate()
        .skip(in_code)
        .find(|(_, l)| l.contains("BUG"))
        .unwrap()
        .0
        + 1) as u32
}

#[test]
fn a_missing_fence_is_a_finding_at_the_store_and_the_fenced_kernel_is_clean() {
    let text = fixture("lastblock_sum_no_fence");
    let (name, store, atomic, read, _) = handoff_of(&text);
    let h = handoff(&name, store, atomic, read);
    let (o, log) = run_decide(
        &text,
        std::slice::from_ref(&h),
        Some(r#""recorded":true,"dropped":0"#),
    );
    let Outcome::Findings(f) = o else {
        panic!("{o:?}\n{log}")
    };
    assert_eq!(f.len(), 1, "{f:?}");
    let want = format!(
        "buggy_variants/lastblock_sum/no_fence.cu:{}",
        bug_line(Path::new("buggy_variants/lastblock_sum/no_fence.cu"))
    );
    assert_eq!(f[0].location, want, "{:?}", f[0]);
    assert!(f[0].what.contains("no __threadfence()"), "{:?}", f[0]);
    assert!(
        f[0].accesses
            .starts_with("Write -> Release buggy_variants/lastblock_sum/no_fence.cu:"),
        "{:?}",
        f[0]
    );

    let text = fixture("lastblock_sum_block_fence");
    let (name, store, atomic, read, _) = handoff_of(&text);
    let (o, log) = run_decide(
        &text,
        &[handoff(&name, store, atomic, read)],
        Some(r#""recorded":true,"dropped":0"#),
    );
    let Outcome::Findings(f) = o else {
        panic!("{o:?}\n{log}")
    };
    assert!(f[0].what.contains("block scope"), "{:?}", f[0]);
    let want = bug_line(Path::new("buggy_variants/lastblock_sum/block_fence.cu"));
    assert_eq!(
        f[0].file_line().map(|x| x.1),
        Some(want - 1),
        "the store is the line above the fence: {:?}",
        f[0]
    );

    let text = fixture("lastblock_sum");
    let (name, store, atomic, read, _) = handoff_of(&text);
    let (o, log) = run_decide(
        &text,
        &[handoff(&name, store, atomic, read)],
        Some(r#""recorded":true,"dropped":0"#),
    );
    assert_eq!(o, Outcome::Clean, "{log}");
}

#[test]
fn what_it_cannot_judge_is_inconclusive_never_clean() {
    let text = fixture("lastblock_sum");
    let (name, store, atomic, read, _) = handoff_of(&text);
    // The launch's handoffs were not recorded (the tool ran without its fence mode).
    let (o, _) = run_decide(&text, &[], None);
    assert!(
        matches!(o, Outcome::Inconclusive(ref w) if w.contains("not recorded")),
        "{o:?}"
    );
    // The table overflowed.
    let (o, _) = run_decide(&text, &[], Some(r#""recorded":true,"dropped":3"#));
    assert!(
        matches!(o, Outcome::Inconclusive(ref w) if w.contains("overflowed")),
        "{o:?}"
    );
    // A release the device recorded that does not follow the store in the code.
    let backwards = handoff(&name, atomic, store, read);
    let (o, _) = run_decide(&text, &[backwards], Some(r#""recorded":true,"dropped":0"#));
    match o {
        Outcome::Inconclusive(w) => {
            assert!(w.starts_with(fence::FENCE_CANNOT_JUDGE), "{w}");
            assert!(
                racegate::judge::sanitize::injected::decide::is_limit(&w),
                "{w}"
            );
        }
        o => panic!("{o:?}"),
    }
    // No releasing atomic recorded.
    let mut none = handoff(&name, store, atomic, read);
    none.pc_release = 0;
    let (o, _) = run_decide(&text, &[none], Some(r#""recorded":true,"dropped":0"#));
    assert!(matches!(o, Outcome::Inconclusive(_)), "{o:?}");
    // A call on the way from the store to the release: the callee may or may not fence.
    let called = text.replacen("MEMBAR.SC.GPU ;", "CALL.REL.NOINC `($helper) ;", 1);
    let (o, _) = run_decide(
        &called,
        &[handoff(&name, store, atomic, read)],
        Some(r#""recorded":true,"dropped":0"#),
    );
    assert!(
        matches!(o, Outcome::Inconclusive(ref w) if w.contains("call")),
        "{o:?}"
    );
}
