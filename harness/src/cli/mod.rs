//! The `racegate` command line and the hidden worker subcommands, one file per command.
//! The top layer below `api`/`testing`: may import every stage and product.
//!
//! `app` holds the top-level parser and the dispatch; each command file holds its
//! `#[derive(Args)]` struct and its `run()`; `flags` defines once each flag several commands
//! share (`--trials`, `--seed`, `--jobs`, ...), and `battery_args` the group of them `check` and
//! `mutate` both take;
//! `settings` works out the values several commands derive (jobs, worker, arch, sanitizer);
//! `values` parses and checks flag values; `output` writes to stdout without panicking.

mod app;
mod battery_args;
mod bench;
mod check;
mod compile;
mod doctor;
mod flags;
mod gate;
mod gate_args;
mod gate_no_device;
mod grade;
mod grade_secret;
mod help;
mod internal;
mod list;
mod merge;
mod mutate;
mod output;
mod perf;
mod progress;
mod report;
mod sanitize;
mod settings;
mod setup;
mod stress;
mod values;

pub(crate) mod workers;

pub use app::main;
