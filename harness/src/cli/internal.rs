//! The hidden worker subcommands, declared and run by the library (`racegate::internal`, shared
//! with users' test binaries); here only the catalog options are handed over from the global ones.

use racegate::Result;

pub use racegate::internal::Internal;

use super::settings::Global;

pub fn run(global: &Global, i: Internal) -> Result<u8> {
    let c = racegate::internal::CatalogArgs {
        root: global.root.clone(),
        manifest: global.manifest.clone(),
    };
    racegate::internal::run(&c, i)
}
