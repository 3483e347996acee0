//! Mutation testing: small named changes to a correct kernel that the detectors must notice.
//! Product layer: may import the stages (`proc/` .. `judge/`) and `gate/`, not `report/` or `cli/`.
//!
//! The changes (`racegate mutate`) are to a correct kernel's source: a barrier removed, an atomic
//! made plain, a bound off by one, ... A mutant no detector notices is a hole in the gate, or a
//! harmless change a person marks `equivalent` with a reason.
//!
//! Stages, one file each: the code tokens an operator may touch (`code.rs`, on `cscan`), the
//! operators (`operators.rs`, atomics in `atomics.rs`), mutants with stable ids and diffs
//! (`mutant.rs`), what the tested entries reach (`reach.rs`: nothing else is mutated), the
//! equivalents file (`equivalent.rs`), the outcomes and the score
//! (`score.rs`), and running the battery on each mutant (`run.rs`). `report::mutate` renders.
//!
//! ```
//! use racegate::mutate::{mutants, Operator};
//! let src = "__global__ void k(float* s) {\n    s[0] = 1;\n    __syncthreads();\n}\n";
//! let m = mutants("k.cu", src, &[Operator::RemoveBarrier]);
//! assert_eq!(m[0].apply(src), "__global__ void k(float* s) {\n    s[0] = 1;\n}\n");
//! ```

pub mod atomics;
pub mod bank;
pub mod code;
pub mod equivalent;
pub mod mutant;
pub mod operators;
pub mod reach;
pub mod run;
pub mod score;
pub mod speed;

pub use equivalent::{equivalents_path, Equivalents, EQUIVALENTS_SUFFIX};
pub use mutant::{mutants, parse_operators};
pub use operators::Operator;
pub use run::{compiles, entry_function, keep_reachable, run, MutateConfig, MutateEvent, Unit};
pub use score::{MutantResult, MutationReport, OperatorScore, Outcome};
