//! fencecheck's coherence rule on the SASS of real kernels (`tests/fixtures/sass/coherent/`,
//! made from `handoffs.cu` there, see PROVENANCE.md): a handoff whose data is stored and read
//! with accesses atomic between blocks (relaxed `cuda::atomic_ref`, `volatile`) needs no fence;
//! a plain store read atomically still needs the release fence, an atomic store read plainly
//! still has its acquire side judged, and atomics of block scope are no atomics between blocks.

use super::{decide_on, handoff, module_line, root};
use racegate::judge::sanitize::injected::fence::handoffs::{
    self as fence, Acquire, Handoff, Release,
};
use racegate::judge::sanitize::injected::{fence::sass, report};
use racegate::judge::sanitize::tool::Outcome;

const SOURCE: &str = "harness/tests/fixtures/sass/coherent/handoffs.cu";
const RECORDED: Option<&str> = Some(r#""recorded":true,"dropped":0"#);

fn text() -> String {
    std::fs::read_to_string(
        super::super::package_dir().join("tests/fixtures/sass/coherent/handoffs.sass"),
    )
    .expect("the coherent handoffs' SASS fixture")
}

/// The handoff of kernel `name` as the device records it (the data's store: the last store
/// before the flag's `atomicExch`; release: that `atomicExch`; acquire: the poll's
/// `atomicAdd(flag, 0)`; the read: the first load after it), its store's and read's
/// instructions, and the kernel's size.
fn recorded(text: &str, name: &str) -> (Handoff, String, String, u64) {
    let fs = sass::parse(text);
    let f = &fs[name];
    let find = |what: &str, ok: &dyn Fn(&sass::Instr) -> bool| {
        f.instrs
            .iter()
            .find(|i| ok(i))
            .unwrap_or_else(|| panic!("{name}: no {what}"))
    };
    let release = find("atomicExch", &|i| i.op.starts_with("ATOMG.E.EXCH"));
    let acquire = find("poll", &|i| i.op.starts_with("ATOMG.E.ADD"));
    let store = f
        .instrs
        .iter()
        .rev()
        .find(|i| i.offset < release.offset && matches!(i.base(), "ST" | "STG"))
        .unwrap_or_else(|| panic!("{name}: no store before the atomicExch"));
    let read = find("read after the poll", &|i| {
        i.offset > acquire.offset && matches!(i.base(), "LD" | "LDG")
    });
    let size = f.instrs.last().expect("instructions").offset + 16;
    let mut h = handoff(name, store.offset, release.offset, read.offset);
    h.pc_acquire = super::BASE + acquire.offset;
    (h, store.op.clone(), read.op.clone(), size)
}

/// The report of a module whose one function is `name`, and the fixture's SASS as its code.
fn module(text: &str, name: &str, size: u64) -> (report::Report, fence::Sass) {
    let rep = report::parse(
        &[
            r#"{"tool":"globalcheck","mode":9}"#.to_string(),
            module_line(name, size),
        ]
        .join("\n"),
    );
    (rep, [(0, sass::parse(text))].into_iter().collect())
}

/// What fencecheck says of kernel `name`'s handoff: (coherent, release, acquire) on their own,
/// and the outcome and log of a run that recorded it.
fn judge(name: &str) -> (Option<String>, Release, Acquire, Outcome, String) {
    let text = text();
    let (h, _, _, size) = recorded(&text, name);
    let (rep, code) = module(&text, name, size);
    let why = fence::coherent(&rep, &code, &h);
    let release = fence::release(&rep, &code, &h);
    let acquire = fence::acquire(&rep, &code, &h);
    let (o, log) = decide_on(&text, name, size, std::slice::from_ref(&h), RECORDED, "");
    (why, release, acquire, o, log)
}

/// The 1-based line of `handoffs.cu` that holds `code` inside kernel `name`.
fn line_of(name: &str, code: &str) -> u32 {
    let src = std::fs::read_to_string(root().join(SOURCE)).expect("handoffs.cu");
    let start = src
        .lines()
        .position(|l| l.contains(&format!("void {name}(")))
        .expect("the kernel");
    let at = src
        .lines()
        .enumerate()
        .skip(start)
        .find(|(_, l)| l.contains(code))
        .expect("the line");
    (at.0 + 1) as u32
}

#[test]
fn the_fixture_has_the_spellings_each_case_is_about() {
    let text = text();
    for (name, store, read) in [
        ("status_relaxed", "ST.E.STRONG.GPU", "LD.E.STRONG.GPU"),
        ("status_volatile", "STG.E.STRONG.SYS", "LDG.E.STRONG.SYS"),
        ("status_plain_store", "STG.E", "LD.E.STRONG.GPU"),
        ("status_plain_read", "ST.E.STRONG.GPU", "LDG.E"),
        ("status_block_scope", "ST.E.STRONG.SM", "LD.E.STRONG.SM"),
    ] {
        let (_, s, r, _) = recorded(&text, name);
        assert_eq!((s.as_str(), r.as_str()), (store, read), "{name}");
    }
}

#[test]
fn relaxed_atomic_store_and_atomic_load_of_the_data_is_coherent_no_finding() {
    let (why, rel, acq, o, log) = judge("status_relaxed");
    // Without the rule the release side has no fence: the rule is what makes it clean.
    assert_eq!(rel, Release::Missing);
    assert_eq!(acq, Acquire::Ordered, "the read is strong");
    let why = why.expect("coherent");
    assert!(
        why.contains("ST.E.STRONG.GPU") && why.contains("LD.E.STRONG.GPU"),
        "{why}"
    );
    assert_eq!(o, Outcome::Clean, "{log}");
    assert!(
        log.contains("fencecheck: judged coherent: a handoff in status_relaxed"),
        "{log}"
    );
    assert!(log.contains(SOURCE), "the note names the lines: {log}");
    assert!(!log.contains("warning"), "{log}");
}

#[test]
fn volatile_store_and_volatile_load_of_the_data_is_coherent_no_finding() {
    let (why, rel, _, o, log) = judge("status_volatile");
    assert_eq!(rel, Release::Missing);
    let why = why.expect("coherent");
    assert!(
        why.contains("STG.E.STRONG.SYS") && why.contains("LDG.E.STRONG.SYS"),
        "{why}"
    );
    assert_eq!(o, Outcome::Clean, "{log}");
    assert!(log.contains("judged coherent"), "{log}");
}

#[test]
fn plain_store_read_atomically_still_needs_the_release_fence() {
    let (why, rel, acq, o, log) = judge("status_plain_store");
    assert_eq!(why, None);
    assert_eq!(rel, Release::Missing);
    assert_eq!(acq, Acquire::Ordered);
    let Outcome::Findings(f) = o else {
        panic!("{o:?}\n{log}")
    };
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].what.contains("no __threadfence()"), "{:?}", f[0]);
    let want = format!(
        "{SOURCE}:{}",
        line_of(
            "status_plain_store",
            "status[threadIdx.x] = threadIdx.x + 1;"
        )
    );
    assert_eq!(f[0].location, want, "{:?}", f[0]);
    assert!(!log.contains("judged coherent"), "{log}");
}

#[test]
fn atomic_store_read_plainly_still_has_its_acquire_side_flagged() {
    let (why, rel, acq, o, log) = judge("status_plain_read");
    assert_eq!(why, None);
    assert_eq!(rel, Release::Fenced, "__threadfence() before the flag");
    assert_eq!(acq, Acquire::Unordered);
    // Acquire-side findings are warnings, not counted: the outcome is clean, the log says it.
    assert_eq!(o, Outcome::Clean, "{log}");
    let warning = log
        .lines()
        .find(|l| l.starts_with("fencecheck warning (not counted)"))
        .unwrap_or_else(|| panic!("no acquire-side warning: {log}"));
    let at = line_of(
        "status_plain_read",
        "out[threadIdx.x] = status[threadIdx.x];",
    );
    assert!(warning.contains(&format!("{SOURCE}:{at}")), "{warning}");
    assert!(!log.contains("judged coherent"), "{log}");
}

#[test]
fn atomics_of_block_scope_are_no_coherent_handoff_between_blocks() {
    let (why, rel, acq, o, log) = judge("status_block_scope");
    assert_eq!(why, None);
    assert_eq!(rel, Release::Missing);
    assert_eq!(acq, Acquire::Unordered);
    assert!(
        matches!(o, Outcome::Findings(ref f) if f.len() == 1),
        "{o:?}\n{log}"
    );
    assert!(log.contains("fencecheck warning (not counted)"), "{log}");
}

#[test]
fn a_store_or_read_in_no_function_is_not_coherent_and_judged_as_before() {
    let text = text();
    let (mut h, _, _, size) = recorded(&text, "status_relaxed");
    let (rep, code) = module(&text, "status_relaxed", size);
    assert!(fence::coherent(&rep, &code, &h).is_some());
    h.pc_read = super::BASE + size + 0x100;
    assert_eq!(fence::coherent(&rep, &code, &h), None);
    // The release side is judged as before: no fence on the way.
    assert_eq!(fence::release(&rep, &code, &h), Release::Missing);
    let mut code = code;
    code.clear();
    h.pc_read = super::BASE;
    assert_eq!(
        fence::coherent(&rep, &code, &h),
        None,
        "no SASS, nothing coherent"
    );
}

/// A race between blocks as the device reports it: the later access at `now`, the earlier at
/// `then` (offsets into the kernel).
fn race(now: u64, then: u64) -> String {
    format!(
        r#"{{"kind":"write-read","scope":"blocks","pc_now":{},"pc_then":{},"addr":64,"block_now":3,"thread_now":5,"block_then":1,"thread_then":5,"count":1}}"#,
        super::BASE + now,
        super::BASE + then
    )
}

#[test]
fn a_race_between_two_strong_accesses_is_none_and_one_with_a_plain_access_cannot_be_judged() {
    // `status_volatile`: the volatile load of the status at 0x120 (`LDG.E.STRONG.SYS`), its
    // volatile store at 0x1b0 (`STG.E.STRONG.SYS`), the plain store to `out` at 0x140. The device
    // sees every one as plain, so it may report a race between blocks on the status: read and
    // written atomically (as CUB's decoupled look-back does), it needs no fence.
    let text = text();
    let (_, _, _, size) = recorded(&text, "status_volatile");
    let strong = race(0x120, 0x1b0);
    let (o, log) = decide_on(&text, "status_volatile", size, &[], RECORDED, &strong);
    assert!(matches!(o, Outcome::Clean), "{o:?}\n{log}");
    // A pair with a plain access may be data a volatile flag hands over, unseen: not judged.
    let plain = race(0x140, 0x1b0);
    let (o, log) = decide_on(&text, "status_volatile", size, &[], RECORDED, &plain);
    match o {
        Outcome::Inconclusive(why) => assert!(why.contains("does not see as handoffs"), "{why}"),
        other => panic!("{other:?}\n{log}"),
    }
}
