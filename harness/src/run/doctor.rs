//! What racegate stands on, found or missing, each with its fix: the CUDA driver and GPU,
//! NVRTC, compute-sanitizer, what globalcheck's tool is built from, and Nsight Compute (`ncu`). `racegate doctor` renders it; the exit
//! code follows the one table (4 without a device, 3 when a tool is missing, else 0).
//!
//! ```no_run
//! for item in racegate::run::doctor::examine() {
//!     println!("{}: {:?}", item.name, item.found);
//! }
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::build::globalcheck;
use crate::errors::exit;
use crate::{build::toolchain, run::device};

/// One thing racegate uses.
#[derive(Clone, Debug, Serialize)]
pub struct Item {
    /// `driver`, `gpu`, `nvrtc`, `compute-sanitizer`, `globalcheck`, `ncu`, `confinement`
    /// (what stops a submission's compile from reading files), `containment` (what ends every
    /// process a job started) or `leftovers` (what racegate runs killed outright left running,
    /// and what of it was ended).
    pub name: &'static str,
    /// What was found (a version, a name, a path); `None` when missing.
    pub found: Option<String>,
    /// Why it is missing and how to get it; `None` when found.
    pub fix: Option<String>,
    /// Whether it is a device (driver, GPU) rather than a tool: its absence is exit 4.
    pub device: bool,
    /// Whether racegate works without it (ncu only adds to reports): its absence is no failure.
    pub optional: bool,
}

/// Looks at everything.
pub fn examine() -> Vec<Item> {
    let mut items = Vec::new();
    let probe = device::probe();
    let (driver, gpu) = match &probe {
        Ok(d) => (
            Ok(format!(
                "CUDA {}.{} (driver API)",
                d.driver_api_version / 1000,
                d.driver_api_version % 1000 / 10
            )),
            Ok(format!(
                "{} (compute capability {}.{})",
                d.name, d.compute_capability.0, d.compute_capability.1
            )),
        ),
        Err(why) => (Err(why.clone()), Err(why.clone())),
    };
    items.push(item(
        "driver",
        driver.map_err(|w| format!("{w}; install the NVIDIA driver (580 or newer for CUDA 13.0)")),
        true,
        false,
    ));
    items.push(item(
        "gpu",
        gpu.map_err(|w| {
            format!(
                "{w}; run on a machine with an NVIDIA GPU (CI: a self-hosted runner labelled gpu)"
            )
        }),
        true,
        false,
    ));
    let nvrtc = toolchain::nvrtc()
        .map(|n| format!("{}.{} from {}", n.version.0, n.version.1, n.source))
        .map_err(|e| match e {
            crate::errors::Error::Cache(why) => why,
            _ => {
                "not found; run `racegate setup` (pinned PyPI wheels into racegate's user cache), \
             or install the CUDA 13.0 toolkit, or set RACEGATE_NVRTC_LIB"
                    .to_string()
            }
        });
    items.push(item("nvrtc", nvrtc, false, false));
    let sanitizer = match toolchain::compute_sanitizer() {
        Some(p) => Ok(version_of(&p)),
        None => Err(
            "not found on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or the wheels of `racegate setup`; install the CUDA \
                     toolkit (it ships compute-sanitizer) or set RACEGATE_COMPUTE_SANITIZER"
                .to_string(),
        ),
    };
    items.push(item("compute-sanitizer", sanitizer, false, false));
    // What globalcheck's tool would be built from (nothing is built here).
    let globalcheck = globalcheck::find()
        .map(|tc| {
            format!(
                "can be built: {} and {}, Sanitizer API in {}",
                tc.gxx.display(),
                tc.nvcc.display(),
                tc.sanitizer_lib.display()
            )
        })
        .map_err(|why| {
            format!("{why}; install the CUDA toolkit and g++, or run `racegate setup` (pinned nvcc and Sanitizer API wheels)")
        });
    items.push(item("globalcheck", globalcheck, false, false));
    let ncu = match find_on_path("ncu") {
        Some(p) => Ok(version_of(&p)),
        None => Err(
            "not found on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or the wheels of `racegate setup`; optional \
                     (performance counters): install Nsight Compute with the CUDA toolkit"
                .to_string(),
        ),
    };
    items.push(item("ncu", ncu, false, true));
    items.push(item("confinement", confinement(), false, true));
    items.push(item(
        "containment",
        Ok(crate::proc::containment().describe()),
        false,
        true,
    ));
    items.push(leftovers());
    items
}

/// What racegate runs killed outright (SIGKILL) left running: found and ended when this
/// command started (the command line does it first thing; here it happens now, once, if not).
fn leftovers() -> Item {
    let records = crate::build::cache::runs_dir().map_err(|e| e.to_string());
    let reaped = crate::proc::leftovers::reap(records);
    let found = reaped
        .describe()
        .unwrap_or_else(|| "none: no racegate run was killed before it ended its jobs".into());
    let kept = match &reaped.records {
        Ok(d) => format!("runs keep records in {}", d.display()),
        Err(why) => format!("runs keep no records ({why}): only job cgroups are looked at"),
    };
    let r = match reaped.left_any() {
        true => Err(format!("{found} ({kept}); end what is left by hand")),
        false => Ok(format!("{found} ({kept})")),
    };
    item("leftovers", r, false, true)
}

/// What confines a submission's compile on this machine, shown by a probe compile (it needs
/// NVRTC): the kernel-level layers that applied and held.
fn confinement() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("racegate itself: {e}"))?;
    match crate::build::compile_jail::probe_confinement(&exe) {
        Ok(p) if p.confined() => Ok(p.describe()),
        Ok(p) => Err(format!(
            "{}; graders should use a kernel with seccomp (Linux 3.5+) and, better, Landlock \
             (5.13+) and user namespaces, or run `racegate grade --require-confinement`",
            p.describe()
        )),
        Err(e) => Err(format!("not probed: {e}")),
    }
}

fn item(name: &'static str, r: Result<String, String>, device: bool, optional: bool) -> Item {
    let (found, fix) = match r {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e)),
    };
    Item {
        name,
        found,
        fix,
        device,
        optional,
    }
}

/// The exit code for a set of items by the one table: a missing device first (4), then a
/// missing tool (3).
pub fn exit_code(items: &[Item]) -> u8 {
    let missing = |dev: bool| {
        items
            .iter()
            .any(|i| i.found.is_none() && !i.optional && i.device == dev)
    };
    if missing(true) {
        exit::NO_DEVICE
    } else if missing(false) {
        exit::INCONCLUSIVE
    } else {
        exit::OK
    }
}

/// `tool --version`'s last non-empty line (both NVIDIA tools end with the version), with the
/// path; the path alone when the tool does not answer.
fn version_of(path: &Path) -> String {
    let out = Command::new(path).arg("--version").output();
    let line = out.ok().and_then(|o| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    });
    match line {
        Some(l) => format!("{l} ({})", path.display()),
        None => path.display().to_string(),
    }
}

/// `name` on `PATH`'s absolute entries (trusted, [`crate::build::locations::tool_on_path`]) or
/// in the CUDA install folders named by absolute paths; a relative `PATH` entry is the current
/// folder, where anyone's file could wait to be run.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    if let Ok(p) = crate::build::locations::tool_on_path(name) {
        return Some(p);
    }
    let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| crate::build::locations::absolute_var(v))
        .map(|v| v.join("bin"))
        .collect();
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file() && crate::build::trust::trusted(p).is_ok())
}
