//! racegate's test target (libtest-mimic): one trial per thing worth knowing, one module per
//! subject, each with its `trials()`:
//!
//! * `compile`: `compile::<file>` and `compile_jitter::<file>`, NVRTC builds every `.cu` (host);
//! * `cli`: `cli::<name>`, the racegate binary end to end (host);
//! * `snapshots`: `snapshot::<case>::<tool>`, H200 sanitizer XML fixture -> findings ->
//!   normalized text -> the snapshot under `snapshots/` (host);
//! * `sanitizer`: `sanitize::<name>`, a fake compute-sanitizer that exits 255, and none at all
//!   (host);
//! * `templates`: `ci::<name>`, the CI templates have the shape their CI systems require (host);
//! * `gate`: `gate::<name>`, `racegate gate -- PROGRAM` with fake sanitizers and programs: PATH,
//!   masks and diffs, bytes, children, baselines, fingerprints, SARIF against its schema (host);
//! * `grade`: `grade::{host,gpu}::<name>`, `racegate grade` on folders, formats and limits;
//! * `samples`: `grade::{host,gpu}::<exercise>::<sample>`, each sample submission gets the grade
//!   its `expected.toml` gives;
//! * `gpu`: `<case>::<detector>`, the case's declared expectation (flag / clean / may) holds on
//!   the GPU;
//! * `manifest_gpu`: `manifest_gpu::<kernel>::<detector>`, every manifest buffer kind and
//!   comparison mode on the GPU (`tests/fixtures/manifest_gpu/`);
//! * `mutate_gpu`: `mutate::<kernel>`, `racegate mutate --run` kills every mutant of operators
//!   that must die on that kernel, with a clean control.
//!
//! GPU trials (kind `gpu`) are listed as ignored when there is no CUDA device, decided when the
//! list is made, so `cargo nextest run` reports them as skipped (`<skipped>` in its JUnit) rather
//! than passed; a note on stderr says why, and each still returns "ignored" with the reason when
//! run anyway (`--include-ignored`). Under `CI=true` a
//! missing NVRTC fails the compile trials instead of skipping them. The fixed tables of cases
//! (`header::<name>`, `manifest::<name>`) are plain `#[test]`s in the `host` target
//! (`tests/host/`).

mod cli;
mod compile;
mod gate;
mod gpu;
mod grade;
mod manifest_gpu;
mod mutate_gpu;
mod samples;
mod sanitizer;
mod snapshots;
mod templates;
mod util;

use libtest_mimic::Arguments;
use racegate::source::catalog::Catalog;

fn main() {
    let args = Arguments::from_args();
    let root = util::root();
    let catalog = match Catalog::discover(&root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: catalog discovery failed: {e}");
            std::process::exit(101);
        }
    };
    let device = racegate::run::device::probe();
    let mut trials: Vec<libtest_mimic::Trial> = Vec::new();
    trials.extend(compile::trials(&catalog));
    trials.extend(cli::trials(&root));
    trials.extend(snapshots::trials(&catalog));
    trials.extend(templates::trials(&root));
    trials.extend(gate::trials(&root));
    trials.extend(grade::trials(&root, &device));
    trials.extend(samples::trials(&root, &device));
    trials.extend(sanitizer::trials(&root));
    trials.extend(gpu::trials(&catalog, &device));
    trials.extend(manifest_gpu::trials(&root, &device));
    trials.extend(mutate_gpu::trials(&root, &device));
    if let Err(why) = &device {
        let gpu = trials.iter().filter(|t| t.kind() == "gpu").count();
        // stderr: stdout of `--list` is parsed by nextest.
        eprintln!("note: {gpu} GPU trials ([gpu]) are ignored: no CUDA device: {why}");
        trials = trials
            .into_iter()
            .map(|t| {
                let gpu = t.kind() == "gpu";
                t.with_ignored_flag(gpu)
            })
            .collect();
    }
    libtest_mimic::run(&args, trials).exit();
}
