//! The stress worker: the child process that `stress_session.rs` starts and keeps across cases.
//! For each case asked on its stdin it loads the PTX, says it is ready (with how long each part
//! of its start took), runs the trials and prints one JSON line each, then a done line; the
//! parent judges them. The device is opened once, at the first case (H200 run 24: opening a
//! context took 0.13-0.15 s alone and 1.2-1.9 s with 14 processes opening at once, most of a
//! short matrix cell).

use std::path::Path;

use serde::Serialize;

use crate::errors::{Error, Result};
use crate::run::schedule::JitterMode;
use crate::run::trial::TrialResult;
use crate::source::catalog::Catalog;
use crate::source::exercises::SizeChoice;
use crate::source::manifest::Check;

/// The line a worker prints once its context and module are loaded, with how long each part
/// of its start took.
#[derive(Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub(super) struct Ready {
    pub ready: bool,
    #[serde(default)]
    pub catalog_us: u64,
    #[serde(default)]
    pub open_us: u64,
    #[serde(default)]
    pub load_us: u64,
}

/// What the parent asks a session worker to run: one line of JSON on its stdin per case.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Request {
    pub case: String,
    pub ptx: std::path::PathBuf,
    /// The reference kernel's PTX, for a manifest kernel with a reference oracle.
    pub ref_ptx: Option<std::path::PathBuf>,
    pub trials: u32,
    pub seed: u64,
    pub per_set: u32,
    /// `None`: the family's default range.
    pub size: Option<SizeChoice>,
    /// The jitter (`None` for none).
    pub jitter: JitterMode,
}

/// The line a session worker prints when a case's trials are over and its context is still
/// good for the next case (after a fault it prints none and exits).
#[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
pub(super) struct Done {
    pub done: bool,
}

/// One line of the parent's: a [`Request`], else an error that keeps the parser's reason.
fn parse_request(line: &str) -> Result<Request> {
    serde_json::from_str(line).map_err(|e| Error::protocol("a stress request that is not one", e))
}

/// The worker's side of a stress session: reads one [`Request`] per stdin line, runs its
/// trials on one device context kept across requests (opened at the first), prints the
/// ready line, one JSON line per trial, then [`Done`]. A fault ends the worker: the context is
/// unusable then, and the parent starts another for the next case. Ends at the end of stdin.
pub fn session(catalog: &Catalog, catalog_us: u64) -> Result<()> {
    use std::io::BufRead;
    let mut out = protocol_out();
    let mut gpu = None;
    let mut catalog_us = Some(catalog_us);
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| Error::process("reading a stress request", e))?;
        if line.trim().is_empty() {
            continue;
        }
        let req = parse_request(&line)?;
        let mut open_us = 0;
        if gpu.is_none() {
            let opened = std::time::Instant::now();
            gpu = Some(crate::run::launch::Gpu::open()?);
            open_us = us(opened);
        }
        let gpu = gpu.as_ref().expect("opened above");
        let catalog_us = catalog_us.take().unwrap_or(0);
        if worker(&mut out, gpu, open_us, catalog_us, catalog, &req)? == Ended::Fault {
            return Ok(());
        }
        emit(&mut out, &Done { done: true });
    }
    Ok(())
}

fn us(t: std::time::Instant) -> u64 {
    u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// How a case's trials ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    AllRun,
    /// A trial faulted: the context is unusable.
    Fault,
}

/// Loads the PTX on `gpu` (opened `open_us` ago for this case, 0 when kept from an earlier
/// one; the catalog read in `catalog_us`, 0 after the first case), says it is ready, runs the
/// trials and prints one JSON line each. Stops after a fault.
fn worker(
    out: &mut Out,
    gpu: &crate::run::launch::Gpu,
    open_us: u64,
    catalog_us: u64,
    catalog: &Catalog,
    w: &Request,
) -> Result<Ended> {
    let case = catalog.get(&w.case)?;
    let family = case.family();
    let size = w.size.unwrap_or_else(|| {
        let (lo, hi) = family.default_sizes();
        SizeChoice::Random { lo, hi }
    });
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| Error::io("reading", p, e));
    let loaded = std::time::Instant::now();
    let module = gpu.load(&read(&w.ptx)?)?;
    let reference = match &w.ref_ptx {
        Some(p) => Some(gpu.load(&read(p)?)?),
        None => None,
    };
    let ready = Ready {
        ready: true,
        catalog_us,
        open_us,
        load_us: us(loaded),
    };
    let judge = match (case.kernel_spec(), &reference) {
        (None, _) => crate::run::trial::Judge::Exact,
        (Some(spec), Some(module)) => match &spec.check {
            Check::Reference { entry, .. } => crate::run::trial::Judge::Reference {
                module,
                entry: entry.clone(),
                tolerance: spec.tolerance,
            },
            _ => crate::run::trial::Judge::Determinism {
                tolerance: spec.tolerance,
            },
        },
        (Some(spec), None) => match &spec.check {
            Check::Reference { .. } => {
                return Err(Error::Usage("a reference oracle needs --ref-ptx".into()))
            }
            _ => crate::run::trial::Judge::Determinism {
                tolerance: spec.tolerance,
            },
        },
    };
    emit(out, &ready);
    let kernel = crate::run::trial::TrialKernel {
        gpu,
        module: &module,
        family,
        judge: &judge,
        case,
    };
    let settings = crate::run::trial::TrialSettings {
        master: w.seed,
        per_set: w.per_set,
        size,
        jitter: w.jitter,
    };
    let mut set = None;
    for t in 0..w.trials {
        let outcome = crate::run::trial::run(&kernel, settings, t, &mut set);
        let fault = matches!(outcome.result, TrialResult::Fault { .. });
        emit(out, &outcome);
        if fault {
            return Ok(Ended::Fault);
        }
    }
    Ok(Ended::AllRun)
}

/// Where protocol lines go.
type Out = Box<dyn std::io::Write>;

/// The protocol's own descriptor: what was standard output when the worker started (the
/// parent's pipe). Standard output itself then goes to standard error, so nothing else the
/// process prints there (a kernel's device `printf`, which the driver writes to stdout) can
/// look like, split or end a protocol line.
fn protocol_out() -> Out {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // ignored: nothing was printed yet; a failed flush would show on the first line
    let _ = std::io::stdout().flush();
    // SAFETY: duplicates and redirects this process's own standard descriptors; the new
    // descriptor is owned by the returned File alone.
    unsafe {
        let fd = libc::dup(1);
        if fd >= 0 && libc::dup2(2, 1) >= 0 {
            return Box::new(std::fs::File::from_raw_fd(fd));
        }
        if fd >= 0 {
            libc::close(fd);
        }
    }
    // No descriptor to spare: the protocol stays on stdout (what run 24 did).
    Box::new(std::io::stdout())
}

/// One protocol line, flushed at once (the parent reads it as it comes).
fn emit(out: &mut Out, line: &impl Serialize) {
    // ignored: the parent reads this pipe; if it is gone there is nobody to tell, and it judges
    // a missing line itself
    let _ = out
        .write_all((serde_json::to_string(line).expect("serializable") + "\n").as_bytes())
        .and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line that is not a request names where it broke, as the cause of the error (exit 3:
    /// the parent's fault, not the user's).
    #[test]
    fn a_request_that_does_not_parse_keeps_the_parsers_reason() {
        let e = parse_request("{\"case\": 1}").unwrap_err();
        let cause = std::error::Error::source(&e).map(|s| s.to_string());
        assert!(
            cause
                .as_deref()
                .is_some_and(|c| c.contains("line 1 column")),
            "{cause:?}"
        );
        let shown = e.chain().to_string();
        assert!(
            shown.starts_with("a stress request that is not one: invalid type"),
            "{shown}"
        );
        assert_eq!(shown.matches("line 1 column").count(), 1, "{shown}");
        assert_eq!(e.exit_code(), crate::errors::exit::INCONCLUSIVE);
    }
}
