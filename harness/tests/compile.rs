//! `compile::<file>` and `compile_jitter::<file>`: NVRTC builds every `.cu` in the catalog, with
//! and without the jitter prelude (host, no GPU). Under `CI=true` a missing NVRTC fails these
//! trials instead of skipping them.

use libtest_mimic::{Completion, Failed, Trial};
use racegate::build::compile::{self, BuildOptions};
use racegate::source::catalog::Catalog;

use crate::util::in_ci;

pub fn trials(catalog: &Catalog) -> Vec<Trial> {
    let mut out = Vec::new();
    for file in catalog.files() {
        for jitter in [false, true] {
            let root = catalog.root.clone();
            let file = file.to_string();
            let name = format!(
                "{}::{file}",
                if jitter { "compile_jitter" } else { "compile" }
            );
            out.push(
                Trial::ignorable_test(name, move || {
                    if let Err(e) = racegate::build::toolchain::nvrtc() {
                        if in_ci() {
                            return Err(Failed::from(format!("CI=true but {e}")));
                        }
                        return Ok(Completion::ignored_with(
                            "NVRTC not installed (run racegate setup)",
                        ));
                    }
                    let opts = BuildOptions {
                        jitter,
                        ..Default::default()
                    };
                    let built = compile::compile(&root, &file, &opts).map_err(|e| e.to_string())?;
                    // Line info names the program by its repo-relative path (NVRTC prefixes the
                    // working directory; normalization strips it).
                    if !built
                        .ptx
                        .lines()
                        .any(|l| l.contains(".file") && l.ends_with(&format!("{file}\"")))
                    {
                        return Err(format!("PTX has no .file entry for {file}").into());
                    }
                    if jitter != built.ptx.contains("racegate_jitter_seed") {
                        return Err("the jitter prelude is not applied as asked".into());
                    }
                    Ok(Completion::Completed)
                })
                .with_kind("host"),
            );
        }
    }
    out
}
