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
    // The manifest's `[[program]]` tables: each listed, every check of it not run.
    let programs = catalog.manifest.iter().flat_map(|m| &m.programs);
    for p in programs {
        run.subjects.push(p.name.clone());
        let tools: Vec<String> = match &p.sanitizers {
            Some(t) => t.clone(),
            None if cfg.tools_chosen => cfg.tools.iter().map(|t| t.name().to_string()).collect(),
            None => crate::judge::sanitize::Tool::ALL
                .iter()
                .map(|t| t.name().to_string())
                .collect(),
        };
        for detector in ["exit", "output", "watchdog"]
            .into_iter()
            .map(String::from)
            .chain(tools)
        {
            run.inconclusive.push(gate::Inconclusive {
                subject: p.name.clone(),
                detector,
                reason: reason.clone(),
            });
        }
    }
    progress.finish();
    run.seconds = start.elapsed().as_secs_f64();
    run
}

/// A program (or CTest) gate's run made without a device, made honest: what the program did
/// is no finding (its exit, output or hang is most likely the missing device's), so each
/// becomes an inconclusive run naming what was seen; and every tool that was not run (`tools`)
/// is listed as a check not run, with why, so every report shows it skipped.
pub(super) fn judged_without_device(
    mut run: GateRun,
    tools: &[crate::judge::sanitize::Tool],
    why: &str,
) -> GateRun {
    for f in std::mem::take(&mut run.findings) {
        let (subject, detector) = (f.subject().to_string(), f.detector().to_string());
        let reason = format!(
            "no CUDA device ({why}): not judged, what the program did cannot be told from the \
             missing device: {}",
            f.message
        );
        if !run
            .inconclusive
            .iter()
            .any(|i| i.subject == subject && i.detector == detector)
        {
            run.inconclusive.push(gate::Inconclusive {
                subject,
                detector,
                reason,
            });
        }
    }
    // What passed without a device is not judged either: an accepted finding of it must not
    // read as fixed.
    for c in run.checked.clone() {
        if !run
            .inconclusive
            .iter()
            .any(|i| i.subject == c.subject && i.detector == c.detector)
        {
            run.inconclusive.push(gate::Inconclusive {
                subject: c.subject.clone(),
                detector: c.detector.clone(),
                reason: format!(
                    "no CUDA device ({why}): not judged, what the program did cannot be told \
                     from the missing device"
                ),
            });
        }
    }
    for subject in run.subjects.clone() {
        for t in tools {
            run.checked.push(gate::Checked {
                subject: subject.clone(),
                detector: t.name().to_string(),
                seconds: 0.0,
            });
            run.inconclusive.push(gate::Inconclusive {
                subject: subject.clone(),
                detector: t.name().to_string(),
                reason: format!("no CUDA device ({why}): not run"),
            });
        }
    }
    run.inconclusive.sort();
    run.inconclusive.dedup();
    run
}

/// `--update-baseline` without a device: exit 4, the baseline (`shown`) untouched.
pub(super) fn no_baseline(why: &str, shown: &str) -> crate::Error {
    crate::Error::NoDevice(format!(
        "{why}; the baseline {shown} was not updated: nothing is judged without a device, so \
         nothing can be accepted or called fixed (run --update-baseline on a machine with one)"
    ))
}

/// Why there is no device for a program's gate, when there is none.
pub(super) fn program_device() -> Option<String> {
    // A test build only (the `internals` feature, never in a release): the host tests' programs
    // are shell scripts standing in for CUDA programs (a run under jitter is one with
    // `CUDA_INJECTION64_PATH` set), judged as on a machine with a device.
    #[cfg(feature = "internals")]
    if std::env::var_os("RACEGATE_TEST_PROGRAM_DEVICE").is_some() {
        return None;
    }
    crate::run::device::probe().err()
}

/// A run's progress event as the report will judge it: without a device a finding is not
/// judged (inconclusive).
pub(super) fn not_judged<'a>(e: &gate::GateEvent<'a>, no_device: bool) -> gate::GateEvent<'a> {
    let mut e = e.clone();
    if no_device && e.findings > 0 {
        (e.findings, e.inconclusive) = (0, true);
    }
    e
}

/// `cfg` with no tools and no jitter when there is no device (none of them can judge anything:
/// each would fail on the program's first CUDA call), and the tools that were chosen.
pub(super) fn without_tools(
    mut cfg: GateConfig,
    no_device: bool,
) -> (GateConfig, Vec<crate::judge::sanitize::Tool>) {
    let tools = cfg.tools.clone();
    if no_device {
        cfg.tools.clear();
        cfg.jitter = false;
    }
    (cfg, tools)
}
