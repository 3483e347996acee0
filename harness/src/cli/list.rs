//! `racegate list`: the catalog (or a manifest's kernels), as a table or JSON.

use racegate::errors::exit;
use racegate::{report, Result};

use super::output::{out, outln};
use super::settings;
use super::settings::Global;

#[derive(clap::Args)]
pub struct ListArgs {
    /// Machine-readable output (one JSON array of cases).
    #[arg(long)]
    json: bool,
}

pub fn run(global: &Global, a: ListArgs) -> Result<u8> {
    let catalog = settings::catalog(global, None)?;
    if a.json {
        outln!("{}", settings::json(&catalog.cases));
    } else {
        out!("{}", report::catalog_table(&catalog));
    }
    Ok(exit::OK)
}
