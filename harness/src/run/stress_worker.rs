//! The stress worker: the child process that `stress.rs` starts for a case. It opens
//! the device, loads the PTX, says it is ready (with how long each part of its start took), then
//! runs the trials and prints one JSON line each; the parent judges them.

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

/// What a worker process is asked to run (its hidden command line).
#[derive(Clone, Debug)]
pub struct WorkerArgs {
    pub case: String,
    pub ptx: std::path::PathBuf,
    /// The reference kernel's PTX, for a manifest kernel with a reference oracle.
    pub ref_ptx: Option<std::path::PathBuf>,
    pub trials: u32,
    pub seed: u64,
    pub per_set: u32,
    pub size: Option<SizeChoice>,
    pub jitter: bool,
    /// Which jitter when `jitter` is on.
    pub jitter_mode: JitterMode,
    /// How long the worker took to read its catalog or manifest, for the ready line.
    pub catalog_us: u64,
}

/// Worker side: opens the device, loads the PTX, runs the trials and prints one JSON line each.
/// Stops after a fault: the CUDA context is unusable then.
pub fn worker(catalog: &Catalog, w: &WorkerArgs) -> Result<()> {
    let us = |t: std::time::Instant| u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
    let case = catalog.get(&w.case)?;
    let family = case.family();
    let size = w.size.unwrap_or_else(|| {
        let (lo, hi) = family.default_sizes();
        SizeChoice::Random { lo, hi }
    });
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| Error::io("reading", p, e));
    let opened = std::time::Instant::now();
    let gpu = crate::run::launch::Gpu::open()?;
    let open_us = us(opened);
    let loaded = std::time::Instant::now();
    let module = gpu.load(&read(&w.ptx)?)?;
    let reference = match &w.ref_ptx {
        Some(p) => Some(gpu.load(&read(p)?)?),
        None => None,
    };
    let ready = Ready {
        ready: true,
        catalog_us: w.catalog_us,
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
    emit(&ready);
    let mut set = None;
    for t in 0..w.trials {
        let outcome = crate::run::trial::run(
            &gpu,
            &module,
            family,
            &judge,
            case,
            w.seed,
            t,
            w.per_set,
            size,
            if w.jitter {
                w.jitter_mode
            } else {
                JitterMode::None
            },
            &mut set,
        );
        let fault = matches!(outcome.result, TrialResult::Fault { .. });
        emit(&outcome);
        if fault {
            break;
        }
    }
    Ok(())
}

/// One protocol line on stdout, flushed at once (the parent reads it as it comes).
fn emit(line: &impl Serialize) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // ignored: the parent reads this pipe; if it is gone there is nobody to tell, and it judges
    // a missing line itself
    let _ = writeln!(
        out,
        "{}",
        serde_json::to_string(line).expect("serializable")
    )
    .and_then(|()| out.flush());
}
