//! The outputs of a program's passing runs judged by the golden output and the checker
//! ([`super::oracles`]), as findings. One finding per oracle and kind, naming every run it held
//! for, so three runs that print the same wrong answer are one finding, not three.

use std::collections::BTreeMap;
use std::io::BufRead;

use super::finding::{GateConfig, GateFinding, GateRun};
use super::fingerprint::Identity;
use super::masks::{self, Masks};
use super::oracles::{self, CheckerVerdict};
use crate::errors::{Error, Result};
use crate::proc::watchdog::{Digest, Output};

/// One passing run's standard output: what is kept of it in memory (all of it when it is
/// short, else its head and tail; the whole on disk when an oracle needs it) and, when it is
/// long, the digest of all of it masked line by line, which decides equality: a difference in
/// the part not kept in memory is still a difference.
pub struct RunOutput {
    /// The run, from 1.
    pub run: u32,
    pub out: Output,
    /// The digest of the output masked line by line (for a long output, from [`read_back`]);
    /// `None` when it could not be read back (then the unmasked digest decides).
    masked_digest: Option<u64>,
    /// The masked output, when it is all kept.
    masked: Option<Vec<u8>>,
}

/// For an output not kept whole in memory: its lines read back from the file it was spilled to,
/// masked one by one (with their newlines) into a digest, and shown to the regexes. `None` for
/// an output kept whole in memory, or when there is no file to read.
pub fn read_back(out: &Output, masks: &Masks, scan: &mut oracles::RegexScan) -> Option<u64> {
    if out.is_complete() {
        return None;
    }
    let mut r = std::io::BufReader::new(out.whole()?);
    let mut digest = Digest::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) => return Some(digest.value()),
            Ok(_) => {}
            Err(_) => return None,
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        scan.line(&line);
        digest.update(&masks.apply(&line));
        digest.update(b"\n");
    }
}

impl RunOutput {
    /// `out` finished, with the digest [`read_back`] gave.
    pub fn new(run: u32, out: Output, read_back: Option<u64>, masks: &Masks) -> RunOutput {
        let masked = out.is_complete().then(|| masks.apply(&out.bytes()));
        // A short output's digest too, as `read_back` makes it, so that it compares with a long
        // one's.
        let masked_digest = match out.is_complete() {
            false => read_back,
            true => {
                let mut d = Digest::default();
                for line in out.bytes().split_inclusive(|b| *b == b'\n') {
                    d.update(&masks.apply(line.strip_suffix(b"\n").unwrap_or(line)));
                    d.update(b"\n");
                }
                Some(d.value())
            }
        };
        RunOutput {
            run,
            out,
            masked_digest,
            masked,
        }
    }

    /// The digest that stands for the output when it is not all in memory: masked when it
    /// could be read back, else of the bytes as printed.
    fn digest(&self) -> u64 {
        self.masked_digest.unwrap_or_else(|| self.out.digest())
    }

    /// Whether two outputs agree after masking: the masked bytes when both are kept whole, else
    /// the digests.
    pub fn same_as(&self, other: &RunOutput) -> bool {
        match (&self.masked, &other.masked) {
            (Some(a), Some(b)) => a == b,
            _ => self.digest() == other.digest(),
        }
    }

    /// The masked output, when it is kept whole.
    pub fn masked_bytes(&self) -> Option<&[u8]> {
        self.masked.as_deref()
    }

    /// Whether the output, masked, is `golden`.
    fn is(&self, golden: &[u8]) -> bool {
        match &self.masked {
            Some(m) => m == golden,
            None => Digest::of(golden) == self.digest(),
        }
    }

    /// The masked output as shown in a diff: all of it, or its masked head and tail around a
    /// line saying how much is not kept.
    pub fn shown(&self, masks: &Masks) -> Vec<u8> {
        match &self.masked {
            Some(m) => m.clone(),
            None => {
                let mut v = masks.apply(self.out.head());
                v.extend_from_slice(
                    format!("\n... {} bytes not kept ...\n", self.out.dropped()).as_bytes(),
                );
                v.extend(masks.apply(self.out.tail()));
                v
            }
        }
    }

    /// Writes the masked output to `path` (atomically): whole, from memory or from the file it
    /// was spilled to, masked line by line as its digest was.
    fn write_masked(&self, path: &std::path::Path, masks: &Masks) -> Result<()> {
        if let Some(m) = &self.masked {
            return oracles::write_atomically(path, m);
        }
        let mut whole = self.out.whole().ok_or_else(|| {
            Error::Child(format!(
                "the output of run {} ({} bytes) was not kept whole: {}",
                self.run,
                self.out.total(),
                self.out.spill_error().unwrap_or("no file to spill it to")
            ))
        })?;
        oracles::write_atomically_from(path, |w| {
            let mut r = std::io::BufReader::new(&mut whole);
            let mut line = Vec::new();
            loop {
                line.clear();
                if r.read_until(b'\n', &mut line)? == 0 {
                    return Ok(());
                }
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                w.write_all(&masks.apply(&line))?;
                w.write_all(b"\n")?;
            }
        })
    }
}

/// At most this much of each side goes into a diff: a diff of two long outputs is read from
/// their first and last lines, and computing it must not cost what keeping them would.
const DIFF_SIDE: usize = 2 << 20;

/// A unified diff of two masked outputs, bounded; when the parts shown agree, a line saying
/// that the difference is in what was not kept.
pub fn diff_of(a: &[u8], b: &[u8], a_name: &str, b_name: &str) -> String {
    let cut = |x: &[u8]| -> Vec<u8> {
        if x.len() <= DIFF_SIDE {
            return x.to_vec();
        }
        let half = DIFF_SIDE / 2;
        let mut v = x[..half].to_vec();
        v.extend_from_slice(
            format!("\n... {} bytes not shown ...\n", x.len() - 2 * half).as_bytes(),
        );
        v.extend_from_slice(&x[x.len() - half..]);
        v
    };
    let (a, b) = (cut(a), cut(b));
    if a == b {
        return format!(
            "{a_name} and {b_name} agree in their first and last lines; they differ in the part \
             not kept (compared by digest)\n"
        );
    }
    masks::unified_diff(&a, &b, a_name, b_name, 60)
}

/// Compares each passing run's masked output with `--expect FILE`; with `--bless`, writes FILE
/// from the first passing run instead. A mismatch leaves the run's output in `FILE.new` and
/// says how to accept it.
pub fn golden(
    outputs: &[RunOutput],
    subject: &str,
    file: &str,
    cfg: &GateConfig,
    run: &mut GateRun,
) -> Result<()> {
    let o = &cfg.oracles;
    let Some(expect) = &o.expect else {
        return Ok(());
    };
    let Some(first) = outputs.first() else {
        // No run passed: the exit code, regex or hang findings already say so.
        return Ok(());
    };
    let first_run = first.run;
    let pending = oracles::pending_path(expect);
    let shown = expect.display();
    if o.bless {
        first.write_masked(expect, &cfg.masks)?;
        remove_pending(&pending)?;
        run.notes.push(format!(
            "{subject}: wrote the expected output {shown} from run {first_run} (--bless)"
        ));
        return Ok(());
    }
    run.mark_checked(subject, "golden", 0.0);
    let golden = o.golden()?;
    let differ: Vec<&RunOutput> = outputs
        .iter()
        .filter(|out| !golden.as_deref().is_some_and(|g| out.is(g)))
        .collect();
    let Some(bad) = differ.first() else {
        remove_pending(&pending)?;
        return Ok(());
    };
    let bad_run = bad.run;
    bad.write_masked(&pending, &cfg.masks)?;
    let runs: Vec<u32> = differ.iter().map(|o| o.run).collect();
    let accept = format!(
        "accept it with `mv {} {shown}`, or re-run with --bless: {}",
        pending.display(),
        o.bless_command
    );
    let (kind, message) = match &golden {
        None => (
            "no expected output yet".to_string(),
            format!(
                "golden: {shown} does not exist; {}'s output is in {}; {accept}",
                runs_shown(&[bad_run]),
                pending.display()
            ),
        ),
        Some(_) => (
            "output differs from the expected output".to_string(),
            format!(
                "golden: {} of {} passing runs differ from {shown} after masking ({}); {}'s output is in {}; {accept}",
                runs.len(),
                outputs.len(),
                runs_shown(&runs),
                runs_shown(&[bad_run]),
                pending.display()
            ),
        ),
    };
    let id = Identity {
        subject: subject.into(),
        detector: "golden".into(),
        kind,
        ..Default::default()
    };
    let mut f = GateFinding::new(id, file, None, message);
    f.detail = Some(diff_of(
        golden.as_deref().unwrap_or_default(),
        &bad.shown(&cfg.masks),
        &format!("expected {shown}"),
        &format!("run {bad_run}"),
    ));
    run.findings.push(f);
    Ok(())
}

/// Removes the `FILE.new` of an earlier mismatch once the output matches (or is blessed): none
/// is the usual case; one that cannot be removed is an error, since it would go on saying the
/// output differs.
fn remove_pending(pending: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(pending) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("removing", pending, e))
        }
        _ => Ok(()),
    }
}

/// Runs `--check CMD` on each passing run's output (as printed, before masks: the checker
/// decides what may vary). A checker that misses its deadline or cannot start is inconclusive.
pub fn checker(
    outputs: &[RunOutput],
    subject: &str,
    file: &str,
    cwd: Option<&std::path::Path>,
    cfg: &GateConfig,
    run: &mut GateRun,
) {
    let o = &cfg.oracles;
    let Some(cmd) = &o.check else {
        return;
    };
    // The checker runs where the program ran, so relative paths in it mean the same.
    let cwd = cwd
        .map(|p| p.to_path_buf())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| "/".into());
    let start = std::time::Instant::now();
    // exit kind -> (runs, the first message)
    let mut rejected: BTreeMap<String, (Vec<u32>, String)> = BTreeMap::new();
    for RunOutput { run: i, out, .. } in outputs {
        match oracles::run_checker(cmd, out, &cwd, o.check_timeout) {
            CheckerVerdict::Accepted => {}
            CheckerVerdict::Rejected(kind, msg) => {
                let e = rejected.entry(kind).or_insert_with(|| (Vec::new(), msg));
                e.0.push(*i);
            }
            CheckerVerdict::Undecided(why) => {
                run.mark_inconclusive(subject, "checker", format!("run {i}: {why}"))
            }
        }
    }
    run.mark_checked(subject, "checker", start.elapsed().as_secs_f64());
    for (kind, (runs, msg)) in rejected {
        let id = Identity {
            subject: subject.into(),
            detector: "checker".into(),
            kind: format!("checker rejects the output: {kind}"),
            ..Default::default()
        };
        let said = if msg.is_empty() {
            "(it printed nothing)".to_string()
        } else {
            msg.lines().next().unwrap_or("").to_string()
        };
        let message = format!(
            "checker: `{cmd}` {kind} for {} of {} passing runs ({}); it says: {said}",
            runs.len(),
            outputs.len(),
            runs_shown(&runs)
        );
        let mut f = GateFinding::new(id, file, None, message);
        if msg.lines().count() > 1 {
            f.detail = Some(msg);
        }
        run.findings.push(f);
    }
}

/// `run 2` or `runs 1, 3`.
pub fn runs_shown(runs: &[u32]) -> String {
    let list = runs
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if runs.len() == 1 {
        format!("run {list}")
    } else {
        format!("runs {list}")
    }
}
