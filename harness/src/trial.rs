//! One stress trial, run inside the worker process: draw, poison, launch, check.

use rand::rngs::ChaCha8Rng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::catalog::Case;
use crate::exercises::{self, SizeChoice};
use crate::launch::{Gpu, Module, RunOptions};
use crate::oracle::{self, Wrong};

/// The seed of trial `t` of a run started with `master`. Trial 0 uses `master` itself, so a
/// failing trial's seed with `--trials 1` reproduces it.
pub fn trial_seed(master: u64, t: u32) -> u64 {
    master.wrapping_add(t as u64)
}

/// What happened in one trial.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum TrialResult {
    Pass,
    Wrong(Wrong),
    /// A CUDA error while launching or running: the context is gone.
    Fault {
        error: String,
    },
}

/// One line of the worker's output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialOutcome {
    pub trial: u32,
    pub seed: u64,
    pub problem: String,
    #[serde(flatten)]
    pub result: TrialResult,
    pub micros: u64,
}

/// Runs one trial on an open device.
pub fn run(
    gpu: &Gpu,
    module: &Module,
    case: &Case,
    trial: u32,
    seed: u64,
    size: SizeChoice,
    jitter: bool,
) -> TrialOutcome {
    let start = std::time::Instant::now();
    let family = exercises::by_name(&case.exercise).expect("catalog checked the family");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let problem = family.problem(&case.entry, size, &mut rng);
    let opts = RunOptions {
        jitter_seed: jitter.then_some(seed ^ 0x9e37_79b9_7f4a_7c15),
        poison_shared: true,
        poison_outputs: true,
    };
    let result = match gpu.run(module, &problem, opts) {
        Ok(actual) => match oracle::check(&problem.buffers, &actual) {
            None => TrialResult::Pass,
            Some(w) => TrialResult::Wrong(w),
        },
        Err(e) => TrialResult::Fault {
            error: e.to_string(),
        },
    };
    TrialOutcome {
        trial,
        seed,
        problem: problem.label,
        result,
        micros: start.elapsed().as_micros() as u64,
    }
}
