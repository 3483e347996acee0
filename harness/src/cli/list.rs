//! `racegate list`: the catalog (or a manifest's kernels), as a table or JSON.

use crate::errors::exit;
use crate::source::catalog::Catalog;
use crate::{report, Error, Result};

use super::output::JsonArg;
use super::settings;
use super::settings::Global;

/// The end of `racegate list --help`: the exit codes, then examples.
pub const HELP: &str = concat!(
    "Exit codes: 0 listed, 2 bad input (no racegate.toml or kernels/ folder found, a malformed \
manifest or header), 3 a file could not be read or written; it needs no GPU, so never 1 or 4 no CUDA device.\n",
    "Examples:\n",
    "  racegate list                       # ./racegate.toml's kernels, else the kernels/ catalog\n",
    "  racegate --manifest ci/racegate.toml list\n",
    "  racegate list --json kernels.json"
);

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
pub struct ListArgs {
    #[command(flatten)]
    out: JsonArg,
}

/// The kernels to work on ([`settings::catalog`]); when neither a manifest nor a catalog is
/// found, the error names `racegate.toml` and `--manifest` first (a team's own kernels), then
/// racegate's own `kernels/` catalog.
pub fn catalog(global: &Global) -> Result<Catalog> {
    settings::catalog(global, None).map_err(|e| match e {
        Error::Usage(m) if m.starts_with("no kernels/ folder") => Error::Usage(format!(
            "no racegate.toml here (pass --manifest FILE, or write one: see \
             examples/gate/racegate.toml in racegate's repository), and {m}"
        )),
        e => e,
    })
}

pub fn run(global: &Global, a: ListArgs) -> Result<u8> {
    a.out.claim_stdout();
    let catalog = catalog(global)?;
    a.out.check(&catalog)?;
    match &catalog.manifest {
        Some(m) => {
            let shown = crate::build::toolchain::relative_to(&catalog.root, &m.path)
                .unwrap_or_else(|| report::visible::visible_path(&m.path));
            a.out
                .text(&report::manifest::manifest_table(&catalog, &shown))?
        }
        None => a.out.text(&report::catalog_table(&catalog))?,
    }
    a.out.write(&catalog.cases)?;
    Ok(exit::OK)
}
