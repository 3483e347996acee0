//! What happened to each mutant, and the score: per operator, per kernel and overall.
//!
//! **Kill rate** = (killed + timed-out) / (mutants - stillborn - equivalent - inconclusive). A
//! hang is a detection, as in `racegate check` (the watchdog flags it): a mutant that deadlocks
//! the kernel is caught, and it is counted apart (`timed_out`) only so that a report shows how.
//! Stillborn mutants (NVRTC refuses them) and equivalent ones (marked harmless, with a reason)
//! leave the score; inconclusive ones (a tool missing or failing, nothing detected) too, and
//! make the run inconclusive (exit 3).

use serde::Serialize;

use super::mutant::Mutant;
use super::operators::Operator;
use crate::source::catalog::Detector;

/// What happened to one mutant.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// A detector noticed it (the first one that did; the rest were not run).
    Killed { by: Detector, detail: String },
    /// It hung under a detector, which killed it at the deadline: a detection.
    TimedOut { by: Detector },
    /// Every detector ran and none noticed it.
    Survived,
    /// NVRTC refused it (the first line of NVRTC's log).
    Stillborn { log: String },
    /// Marked harmless in the equivalents file; not run.
    Equivalent { reason: String },
    /// Nothing noticed it, and some detector could not judge (the reason).
    Inconclusive { why: String },
    /// Listed only (no `--run`).
    NotRun,
}

impl Outcome {
    /// Its name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Killed { .. } => "killed",
            Outcome::TimedOut { .. } => "timed-out",
            Outcome::Survived => "survived",
            Outcome::Stillborn { .. } => "stillborn",
            Outcome::Equivalent { .. } => "equivalent",
            Outcome::Inconclusive { .. } => "inconclusive",
            Outcome::NotRun => "not-run",
        }
    }
}

/// One mutant with its outcome.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct MutantResult {
    #[serde(flatten)]
    pub mutant: Mutant,
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Seconds its detectors ran (0 when not run).
    pub seconds: f64,
    /// The unified diff from the kernel to the mutant.
    pub diff: String,
}

/// Counts of outcomes, for one operator, one kernel or everything.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct OperatorScore {
    /// The operator's name, or `all`.
    pub operator: String,
    pub mutants: usize,
    pub killed: usize,
    pub timed_out: usize,
    pub survived: usize,
    pub stillborn: usize,
    pub equivalent: usize,
    pub inconclusive: usize,
    /// (killed + timed-out) / scored, where scored leaves out stillborn, equivalent and
    /// inconclusive mutants; `None` when nothing was scored (or nothing ran).
    pub kill_rate: Option<f64>,
}

impl OperatorScore {
    /// The counts over `results`, named `operator`.
    pub fn of<'a>(operator: &str, results: impl Iterator<Item = &'a MutantResult>) -> Self {
        let mut s = OperatorScore {
            operator: operator.to_string(),
            ..Default::default()
        };
        let mut ran = false;
        for r in results {
            s.mutants += 1;
            match r.outcome {
                Outcome::Killed { .. } => s.killed += 1,
                Outcome::TimedOut { .. } => s.timed_out += 1,
                Outcome::Survived => s.survived += 1,
                Outcome::Stillborn { .. } => s.stillborn += 1,
                Outcome::Equivalent { .. } => s.equivalent += 1,
                Outcome::Inconclusive { .. } => s.inconclusive += 1,
                Outcome::NotRun => continue,
            }
            ran |= !matches!(
                r.outcome,
                Outcome::Stillborn { .. } | Outcome::Equivalent { .. }
            );
        }
        let scored = s.scored();
        s.kill_rate = (ran && scored > 0).then(|| (s.killed + s.timed_out) as f64 / scored as f64);
        s
    }

    /// The mutants the kill rate counts: killed, timed out or survived.
    pub fn scored(&self) -> usize {
        self.killed + self.timed_out + self.survived
    }
}

/// The unmutated kernel under the same battery: it must come out clean, or no mutant's outcome
/// means anything.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Control {
    /// `None`: clean under every detector (or not judged: see `inconclusive`).
    pub flagged_by: Option<Detector>,
    /// The unmutated kernel could not be judged (a detector inconclusive, the budget ran out):
    /// its mutants' kills then prove nothing about the gate.
    pub inconclusive: bool,
    pub detail: String,
    pub seconds: f64,
}

/// One kernel (a file of the catalog with its entries, or a manifest kernel) and its mutants.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct KernelResult {
    /// The catalog file or the manifest kernel's name.
    pub kernel: String,
    pub file: String,
    /// The cases (entries) each mutant was run as.
    pub cases: Vec<String>,
    pub control: Option<Control>,
    pub mutants: Vec<MutantResult>,
    pub score: OperatorScore,
    /// Wall time from its first run's start to its last run's end (0 when nothing ran).
    pub wall_seconds: f64,
    /// Entries of its equivalents file that no mutant has any more.
    pub stale_equivalents: Vec<String>,
    /// `__global__` functions of its file that no tested entry reaches: not mutated.
    pub unreachable: Vec<String>,
}

/// The whole run.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct MutationReport {
    /// Whether the battery ran (`--run`), or the mutants were only listed.
    pub ran: bool,
    pub operators: Vec<Operator>,
    pub kernels: Vec<KernelResult>,
    /// Every mutant of every kernel, per operator.
    pub per_operator: Vec<OperatorScore>,
    pub total: OperatorScore,
    pub wall_seconds: f64,
}

impl MutationReport {
    /// The report over `kernels`, scored.
    pub fn new(ran: bool, operators: Vec<Operator>, kernels: Vec<KernelResult>, wall: f64) -> Self {
        let all = || kernels.iter().flat_map(|k| k.mutants.iter());
        let per_operator = operators
            .iter()
            .map(|o| OperatorScore::of(o.name(), all().filter(|r| r.mutant.operator == *o)))
            .collect();
        let total = OperatorScore::of("all", all());
        MutationReport {
            ran,
            operators,
            kernels,
            per_operator,
            total,
            wall_seconds: wall,
        }
    }

    /// Survivors not marked equivalent.
    pub fn survivors(&self) -> impl Iterator<Item = (&KernelResult, &MutantResult)> {
        self.kernels.iter().flat_map(|k| {
            k.mutants
                .iter()
                .filter(|m| m.outcome == Outcome::Survived)
                .map(move |m| (k, m))
        })
    }

    /// Kernels whose unmutated control was flagged.
    pub fn flagged_controls(&self) -> impl Iterator<Item = &KernelResult> {
        self.kernels
            .iter()
            .filter(|k| k.control.as_ref().is_some_and(|c| c.flagged_by.is_some()))
    }

    /// The exit code by the one table: 1 when a survivor is not marked equivalent or a control
    /// was flagged, 3 when some mutant or control was inconclusive (and nothing was found),
    /// else 0.
    pub fn exit_code(&self) -> u8 {
        use crate::errors::exit;
        if !self.ran {
            return exit::OK;
        }
        let found = self.survivors().next().is_some() || self.flagged_controls().next().is_some();
        let inconclusive = self.total.inconclusive > 0
            || self
                .kernels
                .iter()
                .any(|k| k.control.as_ref().is_some_and(|c| c.inconclusive));
        exit::worst([
            if found { exit::FOUND } else { exit::OK },
            if inconclusive {
                exit::INCONCLUSIVE
            } else {
                exit::OK
            },
        ])
    }
}
