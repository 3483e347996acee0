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

use std::ffi::OsString;
use std::path::Path;

use super::report;
use crate::errors::{Error, Result};
use crate::judge::sanitize::tool::{read_capture, Capture, SanitizeConfig};
use crate::proc::watchdog::{self, Exit};

/// Whether the reads of unwritten shared memory in the first run do not reach the output. `env`
/// is the first run's environment (the tool injected, its mode and folder); `first` its exit.
pub fn reads_are_dead(
    program: &OsString,
    args: &[OsString],
    env: &[(String, String)],
    cfg: &SanitizeConfig,
    first: &Exit,
    log: &mut String,
) -> Result<bool> {
    let mut outputs = Vec::new();
    for poison in POISONS {
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
        let (done, out) = watchdog::run_collecting_into(
            Path::new(program),
            args,
            &env,
            cfg.timeout,
            watchdog::Output::bounded(),
        )?;
        let says = |why: String| format!("sharedcheck confirm run (poison 0x{poison:02x}): {why}; the unwritten reads stay findings\n");
        if &done.exit != first {
            log.push_str(&says(format!(
                "it ended {} where the first run ended {}",
                done.exit.describe(cfg.timeout),
                first.describe(cfg.timeout)
            )));
            return Ok(false);
        }
        if !out.is_complete() {
            log.push_str(&says("its output was too long to compare whole".into()));
            return Ok(false);
        }
        let text = match read_capture(&dir.path().join("report.jsonl"), 64 << 20) {
            Capture::Text(t) => t,
            _ => {
                log.push_str(&says("its report could not be read".into()));
                return Ok(false);
            }
        };
        let poisoned = poisoned_reads(&report::parse(&text));
        if poisoned == 0 {
            log.push_str(&says("the tool gave no unwritten byte poison".into()));
            return Ok(false);
        }
        log.push_str(&format!(
            "sharedcheck confirm run (poison 0x{poison:02x}): {poisoned} read(s) of unwritten shared memory given poison first\n"
        ));
        let bytes = out.bytes();
        outputs.push(match &cfg.output_view {
            Some(view) => (view.0)(&bytes),
            None => bytes,
        });
    }
    let dead = outputs.windows(2).all(|w| w[0] == w[1]);
    log.push_str(if dead {
        "sharedcheck confirm runs: the same output under every poison: the unwritten reads do not reach it\n"
    } else {
        "sharedcheck confirm runs: the output changed with the poison: the unwritten reads reach it\n"
    });
    Ok(dead)
}

/// The byte each confirm run writes into unwritten shared memory before it is read: zero, a
/// large positive value and a negative one in every integer and float width (0x4B4B4B4B is
/// 1.3e7 as an f32, 14.6 as an f16, 4.6e53 as an f64; 0xC7C7C7C7 is -102287.6 as an f32, -7.8
/// as an f16), none a NaN or an infinity. Run 22's first version gave every byte a random value
/// and its complement: two floats that overflow to NaN alike, or two nonzero bools, made a read
/// that matters look dead (`uninit_shared_tail`, `dot_f64`'s `is_last`).
pub const POISONS: [u8; 3] = [0x00, 0x4B, 0xC7];

/// How many reads of unwritten bytes the tool poisoned across the report's launches.
pub fn poisoned_reads(rep: &report::Report) -> u64 {
    rep.launches
        .iter()
        .filter_map(|l| l.shared.as_ref()?.poisoned)
        .sum()
}
