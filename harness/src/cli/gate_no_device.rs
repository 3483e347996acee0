//! `racegate gate` on a manifest without a CUDA device: what the host can do (each kernel
//! compiled, once per source and options), and every run it would have had marked
//! inconclusive with why, so the reports are still written.

use super::progress::{Progress, Status};
use crate::gate::{self, GateConfig, GateRun};
use crate::source::catalog::Catalog;

/// A manifest gate without a device: each kernel compiled (its signature was checked before),
/// and every run it would have had (each detector, stress where its oracle asks) inconclusive
/// with why.
pub(super) fn no_device_run(
    catalog: &Catalog,
    cfg: &GateConfig,
    why: &str,
    quiet: bool,
) -> GateRun {
    let start = std::time::Instant::now();
    let mut run = GateRun::default();
    let reason = format!("no CUDA device: {why}");
    // Kernels that share a source and its options are compiled once; a line per compile.
    let mut built: std::collections::HashMap<(String, Vec<String>), Result<f64, String>> =
        std::collections::HashMap::new();
    let progress = Progress::new(catalog.cases.len() as u64, "kernels", quiet);
    for c in &catalog.cases {
        run.subjects.push(c.name.clone());
        let opts = crate::build::compile::BuildOptions {
            arch: crate::build::compile::DEFAULT_ARCH.into(),
            jitter: false,
            extra: c.compile_options(),
        };
        let key = (c.path.clone(), opts.extra.clone());
        let first = !built.contains_key(&key);
        let outcome = built.entry(key).or_insert_with(|| {
            let t = std::time::Instant::now();
            crate::build::compile::compile(&catalog.root, &c.path, &opts)
                .map(|_| t.elapsed().as_secs_f64())
                .map_err(|e| e.to_string())
        });
        let (status, seconds) = match outcome {
            Ok(secs) => (Status::Pass, if first { *secs } else { 0.0 }),
            Err(_) => (Status::Fail, 0.0),
        };
        let shown = match first {
            true => format!("{}::compile ({})", c.name, c.path),
            false => format!("{}::compile ({}, compiled above)", c.name, c.path),
        };
        progress.item(status, &shown, seconds, None);
        match outcome {
            Ok(_) => run.checked.push(gate::Checked {
                subject: c.name.clone(),
                detector: "compile".into(),
                seconds,
            }),
            Err(e) => run.notes.push(format!("{}: not compiled: {e}", c.name)),
        }
        let stressed = c
            .kernel_spec()
            .is_some_and(|k| k.check != crate::source::manifest::Check::None);
        let detectors = cfg
            .tools
            .iter()
            .map(|t| t.name().to_string())
            .chain(stressed.then(|| "stress".to_string()));
        for detector in detectors {
            run.inconclusive.push(gate::Inconclusive {
                subject: c.name.clone(),
                detector,
                reason: reason.clone(),
            });
        }
    }
    progress.finish();
    run.seconds = start.elapsed().as_secs_f64();
    run
}
