//! Installing what racegate needs on a machine without a CUDA toolkit: the pinned NVRTC 13.0
//! wheels from PyPI, with `pip install --target` into racegate's private user cache
//! (`~/.cache/racegate/nvrtc`), where [`crate::build::toolchain`] finds them from any folder. The
//! versions are pinned to 13.0 because driver 580 cannot load the PTX of a newer NVRTC.
//!
//! ```no_run
//! let done = racegate::build::setup::install("python3", false)?;
//! println!("{}", done.dir.display());
//! # Ok::<(), racegate::Error>(())
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::toolchain;
use crate::errors::{Error, Result};

/// The wheels `racegate setup` installs: NVRTC, the runtime's headers (`cuda_fp16.h`) and
/// CCCL (`cuda/std`), pinned to 13.0.x, what driver 580 can load (13.5 emits PTX it refuses); and nvcc with the
/// Sanitizer API, from which racegate builds its globalcheck tool where no CUDA toolkit is
/// installed (nvcc's own dependencies are unpinned, so nvvm and crt are pinned here).
pub const NVRTC_WHEELS: [&str; 7] = [
    "nvidia-cuda-nvrtc==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-sanitizer-api==13.0.85",
];

/// A file written after a complete install: it lists the wheels, so a change of pins
/// reinstalls and a half-finished install (no stamp) never counts as done.
const STAMP: &str = "racegate-setup.txt";

/// What [`install`] did.
#[derive(Clone, Debug)]
pub struct Installed {
    /// The install folder (`<cache>/nvrtc`).
    pub dir: PathBuf,
    /// `false` when everything was already there and nothing was run.
    pub changed: bool,
}

/// The stamp's text for the current pins.
fn stamp_text() -> String {
    NVRTC_WHEELS.join("\n") + "\n"
}

/// Whether `dir` holds a complete install of the current pins.
pub fn is_installed(dir: &Path) -> bool {
    dir.join(toolchain::WHEEL_LIB)
        .join("libnvrtc.so.13")
        .is_file()
        && crate::source::files::read_text(&dir.join(STAMP), "the setup stamp", 1 << 16)
            .is_ok_and(|s| s == stamp_text())
}

/// Installs [`NVRTC_WHEELS`] with `python -m pip` into the user cache, unless they are there
/// already (`force` reinstalls). Into a fresh sibling folder first, renamed into place at the
/// end, so an interrupted install leaves the previous one (or none) intact.
pub fn install(python: &str, force: bool) -> Result<Installed> {
    let dir = toolchain::cache_install_dir().ok_or_else(|| {
        Error::Setup(crate::build::cache::dir().err().map_or_else(
            || "racegate's cache folder cannot be used".to_string(),
            |e| e.to_string(),
        ))
    })?;
    if !force && is_installed(&dir) {
        return Ok(Installed {
            dir,
            changed: false,
        });
    }
    let tmp = dir.with_extension("partial");
    // ignored: a leftover that cannot be removed makes the next step fail with its own error
    let _ = std::fs::remove_dir_all(&tmp);
    // A name is looked up on PATH's absolute entries only, and the file found (or given) must be
    // trusted: what it installs is loaded by every racegate command after.
    let program = crate::build::locations::tool_named("PYTHON", std::ffi::OsStr::new(python))
        .map_err(|why| {
            Error::Setup(format!(
                "could not run `{python}`: {why}; racegate setup needs python3 with pip \
                 (set PYTHON to another interpreter)"
            ))
        })?;
    let out = Command::new(&program)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--no-warn-script-location", "--target"])
        .arg(&tmp)
        .args(NVRTC_WHEELS)
        .output()
        .map_err(|e| {
            let what = format!(
                "racegate setup: could not run `{python}` (racegate setup needs python3 with \
                 pip; set PYTHON to another interpreter)"
            );
            Error::process(what, e)
        })?;
    if !out.status.success() {
        // ignored: a leftover that cannot be removed makes the next step fail with its own error
        let _ = std::fs::remove_dir_all(&tmp);
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::Setup(format!(
            "`{python} -m pip install --target {} {}` failed ({}); pip said:\n{}\n\
             (pip needs network access to PyPI, or a configured index/mirror)",
            tmp.display(),
            NVRTC_WHEELS.join(" "),
            out.status,
            tail.join("\n")
        )));
    }
    if !tmp
        .join(toolchain::WHEEL_LIB)
        .join("libnvrtc.so.13")
        .is_file()
    {
        return Err(Error::Setup(format!(
            "pip finished but {} holds no libnvrtc.so.13",
            tmp.join(toolchain::WHEEL_LIB).display()
        )));
    }
    std::fs::write(tmp.join(STAMP), stamp_text())
        .map_err(|e| Error::io("writing", tmp.join(STAMP), e))?;
    // What pip wrote, whatever the umask, is writable by nobody else: racegate checks it before
    // it loads or runs anything from it (`cache::check_trusted`).
    crate::build::cache::tighten(&tmp).map_err(|e| Error::io("making private", &tmp, e))?;
    // ignored: an old install that cannot be removed makes the rename below fail, and that is reported
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir).map_err(|e| Error::io("moving into place", &dir, e))?;
    Ok(Installed { dir, changed: true })
}
