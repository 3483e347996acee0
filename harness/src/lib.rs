//! racegate: proves CUDA kernels correct or catches them racing.
//!
//! Data flows one way, one file per stage:
//!
//! * source -> compile -> launch -> oracle -> verdict -> report:
//!   [`catalog`] finds the kernels and parses their `//@` headers, [`compile`] builds them with
//!   NVRTC, [`launch`] runs an [`exercises`] problem on the device, [`oracle`] checks every
//!   element, [`trial`] and [`stress`] turn many trials into a verdict, [`report`] renders it.
//! * sanitizer run -> XML -> findings -> normalized text -> snapshot: see [`sanitize`].
//!
//! Anything that may hang or fault runs in a child process under the [`watchdog`].
//!
//! ```no_run
//! let root = racegate::toolchain::find_root(std::path::Path::new(".")).unwrap();
//! let catalog = racegate::catalog::Catalog::discover(&root)?;
//! for case in &catalog.cases {
//!     racegate::compile::compile(&root, &case.path, &Default::default())?;
//! }
//! # Ok::<(), racegate::Error>(())
//! ```

pub mod api;
pub mod battery;
pub mod bench;
pub mod cache;
pub mod case;
pub mod catalog;
pub mod check;
pub mod compile;
pub mod compile_child;
pub mod cscan;
pub mod device;
pub mod doctor;
pub mod entry;
pub mod errors;
pub mod exercises;
pub mod expr;
pub mod gate;
pub mod grade;
pub mod headers;
#[doc(hidden)]
pub mod internal;
pub mod launch;
pub mod manifest;
pub mod names;
pub mod oracle;
pub mod pool;
pub mod processes;
pub mod ptx;
pub mod report;
pub mod sanitize;
pub mod setup;
pub mod signature;
pub mod stress;
pub mod subcommands;
#[cfg(feature = "testing")]
pub mod testing;
pub mod toolchain;
pub mod trial;
pub mod values;
pub mod watchdog;

pub use api::Gate;
pub use errors::{Error, Result};
