//! racegate: proves CUDA kernels correct or catches them racing.
//!
//! Most users run the `racegate` binary (`racegate gate` on a `racegate.toml`, or
//! `racegate gate -- PROGRAM`). From Rust code there are two ways in, and they are the whole
//! public API:
//!
//! * [`Gate`] ([`api`]): the gate on a manifest's kernels, with options and typed results
//!   ([`api::GateRun`], [`api::GateFinding`]) for code that builds and launches kernels itself.
//! * `testing` (cargo feature `testing`): each kernel x detector of a manifest as a test of a
//!   user's own `cargo test` (`racegate::testing::main("racegate.toml")`).
//!
//! Every error is an [`Error`]; [`Error::exit_code`] maps it to racegate's exit-code table
//! ([`errors::exit`]).
//!
//! ```no_run
//! let run = racegate::Gate::from_manifest("racegate.toml")?.trials(20).run()?;
//! println!("{} finding(s)", run.findings.len());
//! # Ok::<(), racegate::Error>(())
//! ```
//!
//! The `racegate` binary is a thin shell over [`cli::main`]. Everything else is private to the
//! crate, one folder per stage, lowest layer first (a layer imports only the ones above it in
//! this list; `tests/host/layout.rs` holds the order):
//!
//! | folder | stage |
//! |---|---|
//! | `errors.rs` | the error type and the exit-code table |
//! | `proc/` | child processes, deadlines, process groups, pools |
//! | `source/` | the catalog, manifests, exercises, the token scanner: where cases come from |
//! | `build/` | NVRTC and the compile child, the toolchain, PTX, signatures, the tool build |
//! | `run/` | the device: launches, oracles, trials, stress, benchmarks |
//! | `judge/` | the detectors: sanitizer runs, XML -> findings -> snapshots, the battery, the matrix |
//! | `gate/`, `grade/`, `mutate/` | the products built on them |
//! | `report/` | every output format |
//! | `cli/` | the command line and the hidden worker subcommands |
//!
//! Data flows one way: source -> compile -> launch -> oracle -> verdict -> report, and sanitizer
//! run -> XML -> findings -> normalized text -> snapshot. Anything that may hang or fault runs in
//! a child process (`proc/`).
//!
//! The crate's own tests reach the private stages through the `internals` feature, which its
//! dev-dependency on itself turns on for `cargo test` only; it is not an API.

#![deny(missing_docs)]
#![warn(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    clippy::return_self_not_must_use
)]

pub mod api;
pub mod cli;
pub mod errors;
#[cfg(feature = "testing")]
pub mod testing;

// The stages, lowest layer first. Public only under the test-only `internals` feature. Each is
// declared as a plain `mod` item (not through a macro) so that `cargo fmt` reaches every file.
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod build;
#[cfg(not(feature = "internals"))]
pub(crate) mod build;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod gate;
#[cfg(not(feature = "internals"))]
pub(crate) mod gate;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod grade;
#[cfg(not(feature = "internals"))]
pub(crate) mod grade;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod judge;
#[cfg(not(feature = "internals"))]
pub(crate) mod judge;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod mutate;
#[cfg(not(feature = "internals"))]
pub(crate) mod mutate;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod proc;
#[cfg(not(feature = "internals"))]
pub(crate) mod proc;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod report;
#[cfg(not(feature = "internals"))]
pub(crate) mod report;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod run;
#[cfg(not(feature = "internals"))]
pub(crate) mod run;
#[cfg(feature = "internals")]
#[allow(missing_docs)]
pub mod source;
#[cfg(not(feature = "internals"))]
pub(crate) mod source;

pub use api::Gate;
pub use errors::{Error, Result};
