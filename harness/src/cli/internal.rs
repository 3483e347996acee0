//! The hidden worker subcommands, declared and run by the library (`crate::cli::workers`, shared
//! with users' test binaries); here only the catalog options are handed over from the global ones.

use crate::Result;

pub use crate::cli::workers::Internal;

use super::settings::Global;

pub fn run(global: &Global, i: Internal) -> Result<u8> {
    let c = crate::cli::workers::CatalogArgs {
        root: global.root.clone(),
        manifest: global.manifest.clone(),
    };
    crate::cli::workers::run(&c, i)
}
