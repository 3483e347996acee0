//! sharedcheck's confirm runs: does a read of shared memory no thread wrote reach the output?
//!
//! A read of unwritten shared memory is a bug when its value matters, and noise when it does not
//! (NVIDIA's `shfl_scan` sample reads one word per lane where only one per warp was written, and
//! never uses the extra lanes' sums). Reading the code cannot tell the two apart in general; running it
//! can: the target runs three more times under sharedcheck with `RACEGATE_GC_SPOISON`, which
//! makes the tool write a poison byte into every unwritten byte just before it is read, a
//! different byte each run ([`POISONS`]). If every run finishes as the first did, the poison was
//! really written, and their outputs (a program's standard output as the gate compares it, after its
//! masks; a catalog kernel's buffers digest) are the same, the value read never reached the
//! output: the reads are reported as notes, not findings. Anything else keeps them findings.

use std::collections::BTreeSet;
use std::ffi::OsString;

use crate::errors::{Error, Result};
use crate::judge::sanitize::injected::report;
use crate::judge::sanitize::injected::target::run_once;
use crate::judge::sanitize::tool::{Capture, SanitizeConfig};
use crate::proc::watchdog::Exit;

/// One confirm run as it ended: the poison it gave, its exit, whether its output was kept
/// whole, its report (when it could be read) and its output as compared.
pub struct ConfirmRun {
    pub poison: u8,
    pub exit: Exit,
    pub complete: bool,
    pub report: Option<String>,
    pub view: Vec<u8>,
}

/// Whether the reads of unwritten shared memory in the first run do not reach the output. `env`
/// is the first run's environment (the tool injected, its mode and folder); `first` its exit.
/// A confirm run that cannot be started leaves the reads findings.
pub fn reads_are_dead(
    program: &OsString,
    args: &[OsString],
    env: &[(String, String)],
    cfg: &SanitizeConfig,
    first: &Exit,
    first_report: &report::Report,
    log: &mut String,
) -> bool {
    // racegate's own target (a case) side by side: each run is its own process with its own
    // folder and poison and writes nothing else, and one after another they were most of a
    // matrix job's 9-10 s on the H200 (run 27, call D). A user's program one after another: it
    // may write and read back files of its working folder, and three copies at once would then
    // disagree for a reason that is not the poison. Ours is this very executable running its
    // target subcommand, not whatever names that subcommand.
    let own_target = is_own_target(program, args);
    let results: Vec<Result<ConfirmRun>> = if own_target {
        std::thread::scope(|s| {
            let handles: Vec<_> = POISONS
                .iter()
                .map(|&poison| {
                    s.spawn(crate::proc::watchdog::thread_env::carried(move || {
                        confirm_run(program, args, env, cfg, poison)
                    }))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a confirm run's thread"))
                .collect()
        })
    } else {
        POISONS
            .iter()
            .map(|&poison| confirm_run(program, args, env, cfg, poison))
            .collect()
    };
    let mut runs = Vec::new();
    for (poison, result) in POISONS.into_iter().zip(results) {
        match result {
            Ok(r) => runs.push(r),
            Err(e) => {
                log.push_str(&format!(
                    "sharedcheck confirm run (poison 0x{poison:02x}) could not run: {e}; the unwritten reads stay findings\n"
                ));
                return false;
            }
        }
    }
    let (dead, lines) = verdict(first, &uninit_sites(first_report), &runs, cfg.timeout);
    for l in lines {
        log.push_str(&l);
        log.push('\n');
    }
    dead
}

/// Whether `program args` is racegate's own sanitizer target: this executable (the same file,
/// after links) with its target subcommand among the arguments. A user's program that names
/// the subcommand is not this executable.
fn is_own_target(program: &OsString, args: &[OsString]) -> bool {
    use crate::proc::subcommands::{is_own, SANITIZE_TARGET};
    is_own(program, args, &[SANITIZE_TARGET])
}

/// Runs the target once with `poison`.
fn confirm_run(
    program: &OsString,
    args: &[OsString],
    env: &[(String, String)],
    cfg: &SanitizeConfig,
    poison: u8,
) -> Result<ConfirmRun> {
    let dir = tempfile::tempdir_in(crate::build::compile::cache_dir()?)
        .map_err(|e| Error::io("creating", "a sharedcheck confirm folder", e))?;
    let env: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k != "RACEGATE_GC_DIR" && k != "RACEGATE_GC_MODE")
        .cloned()
        .chain([
            ("RACEGATE_GC_DIR".into(), dir.path().display().to_string()),
            ("RACEGATE_GC_MODE".into(), "shared".into()),
            ("RACEGATE_GC_SPOISON".into(), poison.to_string()),
        ])
        .collect();
    let (done, out, report) = run_once(program, args, &env, dir.path(), cfg.timeout)?;
    let report = match report {
        Capture::Text(t) => Some(t),
        _ => None,
    };
    let bytes = out.bytes();
    let view = match &cfg.output_view {
        Some(view) => (view.0)(&bytes),
        None => bytes,
    };
    Ok(ConfirmRun {
        poison,
        exit: done.exit,
        complete: out.is_complete(),
        report,
        view,
    })
}

/// The confirm runs' verdict, and the log's lines: dead only when the first run exited 0, every
/// confirm run exited 0 too with its output kept whole and not empty, its report read and some
/// unwritten read really poisoned, and every output the same. Anything else keeps the reads
/// findings (a program that fails under every poison, or prints nothing to compare, says nothing
/// about where the value went).
pub fn verdict(
    first: &Exit,
    first_sites: &BTreeSet<(String, u64)>,
    runs: &[ConfirmRun],
    timeout: std::time::Duration,
) -> (bool, Vec<String>) {
    let mut lines = Vec::new();
    let stays = |poison: u8, why: String| {
        format!("sharedcheck confirm run (poison 0x{poison:02x}): {why}; the unwritten reads stay findings")
    };
    if *first != Exit::Code(0) {
        lines.push(format!(
            "sharedcheck confirm runs: the first run ended {}: the unwritten reads stay findings",
            first.describe(timeout)
        ));
        return (false, lines);
    }
    if runs.is_empty() {
        return (false, lines);
    }
    for r in runs {
        let why = if r.exit != Exit::Code(0) {
            Some(format!(
                "it ended {} where the first run exited 0",
                r.exit.describe(timeout)
            ))
        } else if !r.complete {
            Some("its output was too long to compare whole".into())
        } else if r.view.iter().all(u8::is_ascii_whitespace) {
            Some("it printed nothing to compare".into())
        } else {
            let parsed = r.report.as_deref().map(report::parse);
            let missing = parsed.as_ref().map(|p| {
                let here = uninit_sites(p);
                first_sites.iter().filter(|s| !here.contains(*s)).count()
            });
            match parsed.as_ref().map(poisoned_reads) {
                None => Some("its report could not be read".into()),
                Some(0) => Some("the tool gave no unwritten byte poison".into()),
                Some(_) if missing.unwrap_or(0) > 0 => Some(format!(
                    "{} read(s) of unwritten memory the first run found did not happen in it (a \
                     schedule-dependent read was not poisoned)",
                    missing.unwrap_or(0)
                )),
                Some(n) => {
                    lines.push(format!(
                        "sharedcheck confirm run (poison 0x{:02x}): {n} read(s) of unwritten shared memory given poison first",
                        r.poison
                    ));
                    None
                }
            }
        };
        if let Some(why) = why {
            lines.push(stays(r.poison, why));
            return (false, lines);
        }
    }
    let dead = runs.windows(2).all(|w| w[0].view == w[1].view);
    lines.push(if dead {
        "sharedcheck confirm runs: the same output under every poison: the unwritten reads do not reach it".into()
    } else {
        "sharedcheck confirm runs: the output changed with the poison: the unwritten reads reach it".into()
    });
    (dead, lines)
}

/// The byte each confirm run writes into unwritten shared memory before it is read: zero, a
/// large positive value and a negative one in every integer and float width (0x4B4B4B4B is
/// 1.3e7 as an f32, 14.6 as an f16, 4.6e53 as an f64; 0xF7F7F7F7 is -1.0e34 as an f32, -32624 as
/// an f16, -7.9e269 as an f64), none a NaN or an infinity, and every bit of a byte takes both
/// values among them (0x00 and 0x4B | 0xF7 = 0xFF), so a value used only through some of its bits
/// changes too. The first version (run 23, call A) gave every byte a random value and its complement: two
/// floats that overflow to NaN alike made a read that matters look dead (`uninit_shared_tail`,
/// run 23 call A); 0xC7 of call B left bits 4 and 5 clear in every run (a review).
pub const POISONS: [u8; 3] = [0x00, 0x4B, 0xF7];

/// Where a report's reads of unwritten shared memory are: (function, offset in it) of each
/// `uninitialized-read` finding (program counters differ between processes; offsets do not).
pub fn uninit_sites(rep: &report::Report) -> BTreeSet<(String, u64)> {
    rep.launches
        .iter()
        .flat_map(|l| {
            l.shared_findings
                .iter()
                .filter(|f| f.kind == "uninitialized-read")
                .map(move |f| {
                    report::function_of(rep, l.module, f.pc_now)
                        .map_or((String::new(), f.pc_now), |(_, func, off)| {
                            (func.to_string(), off)
                        })
                })
        })
        .collect()
}

/// How many reads of unwritten bytes the tool poisoned across the report's launches.
pub fn poisoned_reads(rep: &report::Report) -> u64 {
    rep.launches
        .iter()
        .filter_map(|l| l.shared.as_ref()?.poisoned)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only this executable (by any link to it) running its target subcommand is racegate's
    /// own target; any other program, whatever it names among its arguments, is not, and
    /// neither is this executable doing something else.
    #[test]
    fn own_target_is_this_executable_running_its_target_not_a_name() {
        let me = std::env::current_exe().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("alias");
        std::os::unix::fs::symlink(&me, &link).unwrap();
        // Another executable file (not a copy of this 150 MB test binary: the copy's only
        // difference from any other program is its bytes, which is not what is compared).
        let copy = dir.path().join("other");
        std::fs::write(&copy, "#!/bin/sh\n").unwrap();
        let target = OsString::from(crate::proc::subcommands::SANITIZE_TARGET);
        let args = |at: usize| {
            let mut v: Vec<OsString> = ["--manifest", "racegate.toml", "--case", "k"]
                .iter()
                .map(OsString::from)
                .collect();
            v.insert(at.min(v.len()), target.clone());
            v
        };
        for at in 0..5 {
            assert!(is_own_target(&me.clone().into(), &args(at)), "at {at}");
            assert!(
                is_own_target(&link.clone().into(), &args(at)),
                "a link, at {at}"
            );
            for other in [
                copy.as_os_str(),
                "/bin/sh".as_ref(),
                "sh".as_ref(),
                "".as_ref(),
            ] {
                assert!(
                    !is_own_target(&other.into(), &args(at)),
                    "{other:?} at {at}"
                );
            }
        }
        assert!(!is_own_target(&me.clone().into(), &[]));
        assert!(!is_own_target(
            &me.into(),
            &[OsString::from("__sanitize-targetx")]
        ));
    }

    fn run(poison: u8, exit: Exit, view: &str, poisoned: Option<u64>) -> ConfirmRun {
        let report = poisoned.map(|n| {
            format!(
                "{{\"tool\":\"globalcheck\",\"mode\":20,\"budget_bytes\":1,\"shared_budget_bytes\":1,\"patches\":\"\"}}\n\
                 {{\"launch\":0,\"kernel\":\"k\",\"module\":-1,\"grid\":[1,1,1],\"block\":[32,1,1],\"mode\":20,\"accesses\":0,\"untracked_accesses\":0,\"dropped\":0,\"named_barriers\":0,\"epoch_overflow\":0,\"untracked_allocations\":[],\"findings\":[],\"shared\":{{\"bytes\":1152,\"static\":128,\"dynamic\":0,\"dynamic_known\":true,\"reserved\":1024,\"over_budget\":false,\"cluster\":false,\"accesses\":9,\"untracked\":0,\"unsized\":0,\"unseen_writes\":0,\"dropped\":0,\"min_offset\":1024,\"poisoned\":{n},\"end\":1152}},\"shared_findings\":[]}}"
            )
        });
        ConfirmRun {
            poison,
            exit,
            complete: true,
            report,
            view: view.as_bytes().to_vec(),
        }
    }

    fn dead(first: Exit, runs: &[ConfirmRun]) -> bool {
        verdict(
            &first,
            &BTreeSet::new(),
            runs,
            std::time::Duration::from_secs(9),
        )
        .0
    }

    #[test]
    fn reads_are_dead_only_when_every_poisoned_run_agrees_and_says_something() {
        let ok = |v: &str| {
            POISONS
                .iter()
                .map(|&p| run(p, Exit::Code(0), v, Some(3)))
                .collect::<Vec<_>>()
        };
        assert!(dead(Exit::Code(0), &ok("sum 42\n")));
        // The output changed with one poison.
        let mut changed = ok("sum 42\n");
        changed[2].view = b"sum -7\n".to_vec();
        assert!(!dead(Exit::Code(0), &changed));
        // A first run or a confirm run that failed, a run that printed nothing, a report that
        // could not be read, no byte poisoned, an output cut short: the reads stay findings.
        assert!(!dead(Exit::Code(1), &ok("FAILED\n")));
        let mut failed = ok("FAILED\n");
        failed[1].exit = Exit::Code(1);
        assert!(!dead(Exit::Code(0), &failed));
        assert!(!dead(Exit::Code(0), &ok("")));
        assert!(!dead(Exit::Code(0), &ok(" \n")));
        let mut unread = ok("sum 42\n");
        unread[0].report = None;
        assert!(!dead(Exit::Code(0), &unread));
        let none: Vec<_> = POISONS
            .iter()
            .map(|&p| run(p, Exit::Code(0), "sum 42\n", Some(0)))
            .collect();
        assert!(!dead(Exit::Code(0), &none));
        let mut cut = ok("sum 42\n");
        cut[1].complete = false;
        assert!(!dead(Exit::Code(0), &cut));
        assert!(!dead(Exit::Code(0), &[]));
    }

    #[test]
    fn a_read_the_first_run_found_must_be_poisoned_in_every_confirm_run() {
        // Two reads in the first run; a confirm run whose report holds only one of them (the
        // other, schedule-dependent, read after the write that time) spares nothing.
        let with_sites = |pcs: &[u64]| {
            let findings: Vec<String> = pcs
                .iter()
                .map(|pc| format!("{{\"kind\":\"uninitialized-read\",\"scope\":\"block\",\"pc_now\":{pc},\"pc_then\":0,\"offset\":1024,\"block_now\":0,\"thread_now\":0,\"thread_then\":0,\"bytes\":15,\"now_atomic\":false,\"count\":1}}"))
                .collect();
            POISONS
                .iter()
                .map(|&p| {
                    let mut r = run(p, Exit::Code(0), "sum 42\n", Some(3));
                    r.report = r.report.map(|t| {
                        t.replace(
                            "\"shared_findings\":[]",
                            &format!("\"shared_findings\":[{}]", findings.join(",")),
                        )
                    });
                    r
                })
                .collect::<Vec<_>>()
        };
        let first: BTreeSet<(String, u64)> = [(String::new(), 0x40), (String::new(), 0x80)].into();
        let t = std::time::Duration::from_secs(9);
        assert!(verdict(&Exit::Code(0), &first, &with_sites(&[0x40, 0x80]), t).0);
        let (dead, log) = verdict(&Exit::Code(0), &first, &with_sites(&[0x40]), t);
        assert!(!dead);
        assert!(
            log.iter().any(|l| l.contains("did not happen in it")),
            "{log:?}"
        );
    }

    #[test]
    fn the_poisons_give_every_bit_both_values_and_no_nan_or_infinity() {
        for bit in 0..8 {
            let values: std::collections::BTreeSet<u8> =
                POISONS.iter().map(|p| (p >> bit) & 1).collect();
            assert_eq!(values.len(), 2, "bit {bit}");
        }
        for &p in &POISONS {
            let w = u32::from_ne_bytes([p; 4]);
            assert!(f32::from_bits(w).is_finite(), "0x{p:02x} as f32");
            assert!(
                f64::from_bits(u64::from_ne_bytes([p; 8])).is_finite(),
                "0x{p:02x} as f64"
            );
            let h = u16::from_ne_bytes([p; 2]);
            assert_ne!((h >> 10) & 0x1f, 0x1f, "0x{p:02x} as f16");
            assert_ne!((h >> 7) & 0xff, 0xff, "0x{p:02x} as bf16");
        }
    }
}
