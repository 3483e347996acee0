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
//! The other modules are the binary's and the tests' plumbing: public so that they can reach
//! them, hidden from these docs, and not stable. Data flows one way through them, one file per
//! stage: source -> compile -> launch -> oracle -> verdict -> report (`catalog`, `compile`,
//! `launch`, `oracle`, `trial`, `stress`, `report`), and sanitizer run -> XML -> findings ->
//! normalized text -> snapshot (`sanitize`). Anything that may hang or fault runs in a child
//! process under the `watchdog`.

#![deny(missing_docs)]

pub mod api;
#[doc(hidden)]
pub mod battery;
#[doc(hidden)]
pub mod bench;
#[doc(hidden)]
pub mod cache;
#[doc(hidden)]
pub mod case;
#[doc(hidden)]
pub mod catalog;
#[doc(hidden)]
pub mod check;
#[doc(hidden)]
pub mod compile;
#[doc(hidden)]
pub mod compile_child;
#[doc(hidden)]
pub mod cscan;
#[doc(hidden)]
pub mod device;
#[doc(hidden)]
pub mod doctor;
#[doc(hidden)]
pub mod entry;
pub mod errors;
#[doc(hidden)]
pub mod exercises;
#[doc(hidden)]
pub mod expr;
#[doc(hidden)]
pub mod gate;
#[doc(hidden)]
pub mod grade;
#[doc(hidden)]
pub mod headers;
#[doc(hidden)]
pub mod internal;
#[doc(hidden)]
pub mod launch;
#[doc(hidden)]
pub mod manifest;
#[doc(hidden)]
pub mod mutate;
#[doc(hidden)]
pub mod names;
#[doc(hidden)]
pub mod oracle;
#[doc(hidden)]
pub mod pool;
#[doc(hidden)]
pub mod processes;
#[doc(hidden)]
pub mod ptx;
#[doc(hidden)]
pub mod report;
#[doc(hidden)]
pub mod sanitize;
#[doc(hidden)]
pub mod setup;
#[doc(hidden)]
pub mod signature;
#[doc(hidden)]
pub mod stress;
#[doc(hidden)]
pub mod subcommands;
#[cfg(feature = "testing")]
pub mod testing;
#[doc(hidden)]
pub mod toolchain;
#[doc(hidden)]
pub mod trial;
#[doc(hidden)]
pub mod values;
#[doc(hidden)]
pub mod watchdog;

pub use api::Gate;
pub use errors::{Error, Result};
