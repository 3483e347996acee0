//! `racegate list`: the catalog (or a manifest's kernels), as a table or JSON.

use crate::errors::exit;
use crate::{report, Result};

use super::output::JsonArg;
use super::settings;
use super::settings::Global;

#[derive(clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    out: JsonArg,
}

pub fn run(global: &Global, a: ListArgs) -> Result<u8> {
    a.out.claim_stdout();
    let catalog = settings::catalog(global, None)?;
    a.out.check(&catalog)?;
    a.out.text(&report::catalog_table(&catalog))?;
    a.out.write(&catalog.cases)?;
    Ok(exit::OK)
}
