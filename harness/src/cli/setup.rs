//! `racegate setup`: installs the pinned NVRTC 13.0 wheels into racegate's user cache, where
//! every racegate command then finds them, from any folder (no `LD_LIBRARY_PATH`).

use crate::errors::exit;
use crate::{build::setup, Result};

use super::output;
use super::settings::Global;

#[derive(clap::Args)]
pub struct SetupArgs {
    /// Reinstall even when the pinned wheels are already there.
    #[arg(long)]
    force: bool,
    /// The Python interpreter that runs pip (default: $PYTHON, else python3).
    #[arg(long, value_name = "PYTHON")]
    python: Option<String>,
}

/// The end of `racegate setup --help`: what it installs (from [`setup::NVRTC_WHEELS`], so the
/// list cannot drift), examples, then the exit codes.
pub fn help() -> String {
    format!(
        "Installs, with `python3 -m pip install --target`, the {} wheels {} into racegate's cache \
folder ($RACEGATE_CACHE, else $XDG_CACHE_HOME/racegate, else ~/.cache/racegate; mode 0700): NVRTC, \
the runtime's headers and CCCL for compiling kernels, and nvcc with the Sanitizer API, from which \
racegate builds its globalcheck tool. Pinned to 13.0: driver 580 cannot load the PTX of a newer \
NVRTC. Idempotent. On a machine with a CUDA toolkit racegate uses the system's NVRTC and needs no \
setup. `racegate doctor` then says what is there.\n\n\
Examples:\n  racegate setup\n  racegate setup --force --python python3.12\n\n\
Exit codes: 0 installed (or already there), 3 python, pip or the network failed.",
        setup::NVRTC_WHEELS.len(),
        setup::NVRTC_WHEELS.join(", ")
    )
}

pub fn run(_global: &Global, a: SetupArgs) -> Result<u8> {
    let python = a
        .python
        .or_else(|| std::env::var("PYTHON").ok().filter(|p| !p.is_empty()))
        .unwrap_or_else(|| "python3".to_string());
    let installed =
        crate::build::toolchain::cache_install_dir().is_some_and(|d| setup::is_installed(&d));
    if a.force || !installed {
        output::note(&format!(
            "racegate setup: installing {} (pip, with {python})",
            setup::NVRTC_WHEELS.join(" ")
        ));
    }
    let done = setup::install(&python, a.force)?;
    let what = if done.changed {
        "installed into"
    } else {
        "already installed in"
    };
    output::note(&format!(
        "racegate setup: NVRTC 13.0 {what} {}; `racegate doctor` says what else is there",
        done.dir.display()
    ));
    Ok(exit::OK)
}
