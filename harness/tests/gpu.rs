//! `<case>::<detector>`: the case's declared expectation (flag / clean / may) holds on the GPU;
//! listed as ignored when there is no CUDA device, and failing with "no CUDA device" when run
//! anyway.

use std::time::Duration;

use libtest_mimic::{Completion, Trial};
use racegate::judge::battery::Battery;
use racegate::judge::check::{self, Judgement};
use racegate::source::catalog::{Catalog, Detector};

use crate::util::{gpu_slots, racegate_exe, Device};

pub fn trials(catalog: &Catalog, device: &Device) -> Vec<Trial> {
    let slots = gpu_slots();
    let mut out = Vec::new();
    for case in &catalog.cases {
        for det in Detector::ALL {
            let expect = case.expectation(det);
            let case = case.clone();
            let catalog = catalog.clone();
            let dev = device.clone();
            let slots = slots.clone();
            out.push(
                Trial::ignorable_test(format!("{}::{}", case.name, det.name()), move || {
                    let dev = dev.map_err(|why| crate::util::no_device(&why))?;
                    let _slot = slots.take();
                    let cfg = Battery {
                        trials: 50,
                        seed: 1,
                        stress_timeout: Duration::from_secs(5),
                        per_set: racegate::run::stress::DEFAULT_PER_SET,
                        sanitize_timeout: Duration::from_secs(30),
                        jobs: 1,
                        arch: dev.arch(),
                        sanitizer: racegate::build::toolchain::compute_sanitizer(),
                    };
                    let cell = check::run_one(&catalog, &case, det, &cfg, &racegate_exe())
                        .map_err(|e| e.to_string())?;
                    match cell.judgement {
                        Judgement::Ok => Ok(Completion::Completed),
                        Judgement::Inconclusive => Err(format!(
                            "inconclusive (never counted as clean): {:?}\n{}",
                            cell.observed,
                            racegate::report::text::evidence(&cell.evidence)
                        )
                        .into()),
                        j => Err(format!(
                            "{j:?}: expected {expect:?}, observed {:?} at {}:{}\n{}",
                            cell.observed,
                            cell.file,
                            cell.line.unwrap_or(0),
                            racegate::report::text::evidence(&cell.evidence)
                        )
                        .into()),
                    }
                })
                .with_kind("gpu"),
            );
        }
    }
    out
}
