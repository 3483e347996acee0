//! Finding the tools racegate stands on: the project root, NVRTC and compute-sanitizer.
//!
//! NVRTC is looked for, in order: `RACEGATE_NVRTC_LIB` (a file), the system's library path
//! (a CUDA install), `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64`, the copy
//! `racegate setup` installs from PyPI into racegate's user cache (`~/.cache/racegate/nvrtc`),
//! and the copy racegate's own `ci/setup` puts in `.racegate/nvrtc` of racegate's own checkout
//! (the one above the running binary, or the one cargo names at run time). Never in the current
//! folder, the root or their parents as such: a grader runs in folders students control. Every
//! file found is checked along its whole path before it is loaded ([`super::trust`]), and is
//! loaded by that resolved absolute path before cudarc asks for it by name, so nobody has to
//! export `LD_LIBRARY_PATH`; then its functions are checked, so a library that is not NVRTC is a
//! clear error, not a panic inside cudarc.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::errors::{Error, Result};

/// The folder, relative to the root, where `ci/setup` puts the NVRTC wheels.
pub const LOCAL_NVRTC: &str = ".racegate/nvrtc/nvidia/cu13/lib";
/// Where the wheels' libraries sit inside an install folder (`pip install --target`).
pub const WHEEL_LIB: &str = "nvidia/cu13/lib";
/// The install folder of `racegate setup`, inside racegate's private cache.
pub const CACHE_NVRTC: &str = "nvrtc";

/// The folder `racegate setup` installs the wheels into: `<cache>/nvrtc`. `None` when the
/// cache cannot be used (another user's, no HOME): a library there is never loaded, since
/// its owner could change what racegate runs.
pub fn cache_install_dir() -> Option<PathBuf> {
    crate::build::cache::dir().ok().map(|d| d.join(CACHE_NVRTC))
}

/// racegate's own checkouts, where `ci/setup` installs `.racegate/nvrtc`: of the folders above
/// the running binary (`target/release/racegate`) and above the checkout cargo or nextest names
/// at run time (`$CARGO_MANIFEST_DIR`, remapped for an archive run from another path), those
/// that hold racegate's sources (`harness/Cargo.toml` and `ci/setup`), in order and without
/// repeats. Never the current folder or the root: those belong to whoever racegate works for (a
/// student's repository, when grading), and a library there would run as racegate. Never the
/// folder racegate was built in: a nextest archive or a copied binary runs where that folder is
/// absent, or is another checkout's. A user's crate that depends on racegate by path names
/// racegate's copy with `RACEGATE_NVRTC_LIB` or uses `racegate setup`'s.
pub(crate) fn checkouts() -> Vec<PathBuf> {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let now = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let mut out: Vec<PathBuf> = Vec::new();
    for base in [exe, now].iter().flatten().flat_map(|p| p.ancestors()) {
        let base = normalize(base);
        let is_checkout =
            base.join("harness/Cargo.toml").is_file() && base.join("ci/setup").is_file();
        if is_checkout && !out.contains(&base) {
            out.push(base);
        }
    }
    out
}

/// The library folders of the pip installs racegate knows: the user cache's (`racegate
/// setup`), then racegate's own checkouts' (`ci/setup`, [`checkouts`]).
fn wheel_lib_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = cache_install_dir()
        .map(|d| d.join(WHEEL_LIB))
        .into_iter()
        .collect();
    dirs.extend(checkouts().iter().map(|b| b.join(LOCAL_NVRTC)));
    dirs
}
const NVRTC_SONAME: &str = "libnvrtc.so.13";

pub use crate::source::paths::{find_root, normalize, relative_to, report_root};

/// The CUDA toolkit's header folder (`cuda_fp16.h`, `cuda_bf16.h`, `cuda/std`), which NVRTC
/// 13.0 does not carry built in: `$CUDA_HOME/include`, `$CUDA_PATH/include`,
/// `/usr/local/cuda/include`, or the wheels beside `racegate setup`'s or `ci/setup`'s NVRTC. Teams'
/// kernels may use it; submissions never get it (grading serves its own allow-list).
pub fn toolkit_include() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|v| PathBuf::from(v).join("include"))
        .collect();
    dirs.push(PathBuf::from("/usr/local/cuda/include"));
    for lib in wheel_lib_dirs() {
        dirs.push(lib.join("../include"));
    }
    dirs.into_iter()
        .find(|d| d.join("cuda_fp16.h").is_file() && super::trust::trusted(d).is_ok())
        .map(|d| normalize(&d))
}

/// Where NVRTC came from, for messages and records.
#[derive(Clone, Debug)]
pub struct Nvrtc {
    pub source: String,
    pub version: (i32, i32),
    /// The library loaded, by absolute path; `None` when the system's library path found it
    /// (a child then finds it the same way).
    pub lib: Option<PathBuf>,
}

/// Why no NVRTC is used.
#[derive(Clone, Debug)]
enum NotFound {
    /// Where racegate looked.
    Searched(String),
    /// One was found in racegate's cache, but it cannot be trusted: why.
    Untrusted(String),
}

/// Makes NVRTC loadable (once per process) and reports which one is used. A library that
/// someone else could have written, or that is not NVRTC, is refused with why (exit 3).
pub fn nvrtc() -> Result<Nvrtc> {
    static FOUND: OnceLock<std::result::Result<Nvrtc, NotFound>> = OnceLock::new();
    FOUND
        .get_or_init(locate_nvrtc)
        .clone()
        .map_err(|e| match e {
            NotFound::Searched(searched) => Error::NvrtcMissing { searched },
            NotFound::Untrusted(why) => Error::Cache(why),
        })
}

fn locate_nvrtc() -> std::result::Result<Nvrtc, NotFound> {
    let mut searched = Vec::new();
    if let Some(path) = std::env::var_os("RACEGATE_NVRTC_LIB") {
        let named = PathBuf::from(path);
        let source = |p: &Path| format!("{} (RACEGATE_NVRTC_LIB)", p.display());
        if !named.is_file() {
            return Err(NotFound::Searched(format!(
                "RACEGATE_NVRTC_LIB={} (no such file)",
                named.display()
            )));
        }
        let lib = load(&named)?;
        if !lib.1 {
            return Err(NotFound::Searched(format!(
                "RACEGATE_NVRTC_LIB={} (could not be loaded)",
                named.display()
            )));
        }
        is_nvrtc(&lib.0, "RACEGATE_NVRTC_LIB=")?;
        // SAFETY: probing only dlopens the library by name.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(NotFound::Searched(format!(
                "RACEGATE_NVRTC_LIB={} has NVRTC's functions, but no library is found by NVRTC's \
                 name ({NVRTC_SONAME}) after loading it: point it at {NVRTC_SONAME} itself",
                named.display()
            )));
        }
        return finish(source(&named), Some(lib.0));
    }
    // SAFETY: probing only dlopens the library by name.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return finish("system library path".to_string(), None);
    }
    searched.push("the system library path".to_string());
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("lib64"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    // The pip installs: the user cache's (where `racegate setup` puts it), then `.racegate/nvrtc`
    // of racegate's own checkouts (where `ci/setup` puts it); all of them named in the message.
    dirs.extend(wheel_lib_dirs());
    let mut seen: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        if seen.contains(&dir) {
            continue;
        }
        let lib = dir.join(NVRTC_SONAME);
        if lib.is_file() {
            let (real, loaded) = load(&lib)?;
            if loaded {
                is_nvrtc(&real, "")?;
                return finish(lib.display().to_string(), Some(real));
            }
        }
        searched.push(lib.display().to_string());
        seen.push(dir);
    }
    Err(NotFound::Searched(not_found_text(&searched)))
}

/// What [`Error::NvrtcMissing`] says was searched: `searched` (the library files looked at),
/// then `RACEGATE_NVRTC_LIB`, and the two ways to install it.
pub fn not_found_text(searched: &[String]) -> String {
    format!(
        "{}, and RACEGATE_NVRTC_LIB (not set)\nrun `racegate setup` (it installs NVRTC 13.0 into \
         racegate's user cache), or in racegate's own checkout `ci/setup` (into its \
         .racegate/nvrtc); a copy in the current folder or above it is never used",
        searched.join(", ")
    )
}

/// Checks that the library at `real` (already loaded) has NVRTC's functions: cudarc panics on
/// a missing one (libm.so.6 as NVRTC was exit 101 and a backtrace). `what` prefixes the path.
fn is_nvrtc(real: &Path, what: &str) -> std::result::Result<(), NotFound> {
    let missing = missing_symbols(real);
    if missing.is_empty() {
        return Ok(());
    }
    Err(NotFound::Untrusted(format!(
        "{what}{} is not NVRTC: it lacks {}",
        real.display(),
        missing.join(", ")
    )))
}

fn finish(source: String, lib: Option<PathBuf>) -> std::result::Result<Nvrtc, NotFound> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints; the library is loaded at this point.
    let rc = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    rc.result()
        .map_err(|e| NotFound::Searched(format!("{source}: {e:?}")))?;
    Ok(Nvrtc {
        source,
        version: (major, minor),
        lib,
    })
}

/// Loads NVRTC globally by its resolved absolute path, its builtins library (which NVRTC itself
/// dlopens by soname) first, and says whether it loaded. cudarc later asks for
/// `libnvrtc.so.13` by name, and the dynamic loader hands back the copy already loaded. Every
/// file is checked before any is loaded, along its whole path ([`super::trust::trusted`]) and,
/// in racegate's cache, as the cache's own ([`crate::build::cache::check_trusted`]): loading one
/// runs its code.
fn load(path: &Path) -> std::result::Result<(PathBuf, bool), NotFound> {
    let refuse = |at: &Path, why: String| {
        NotFound::Untrusted(format!(
            "refusing to load {}: {why}, so someone else could have put another library there. \
             Make the folders yours or root's and not writable by others (chmod go-w), or install \
             NVRTC with `racegate setup`",
            at.display()
        ))
    };
    let real = super::trust::trusted(path).map_err(|why| refuse(path, why))?;
    let builtins: Vec<PathBuf> = real
        .parent()
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("libnvrtc-builtins.so.")
        })
        .map(|e| e.path())
        .collect();
    let mut checked = Vec::new();
    for lib in &builtins {
        checked.push(super::trust::trusted(lib).map_err(|why| refuse(lib, why))?);
    }
    for lib in builtins.iter().chain([&path.to_path_buf()]) {
        crate::build::cache::check_trusted(lib).map_err(|e| NotFound::Untrusted(e.to_string()))?;
    }
    for b in &checked {
        dlopen_global(b);
    }
    let loaded = dlopen_global(&real);
    Ok((real, loaded))
}

/// The functions of NVRTC that racegate and cudarc call.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcVersion",
    "nvrtcCreateProgram",
    "nvrtcDestroyProgram",
    "nvrtcCompileProgram",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcAddNameExpression",
    "nvrtcGetLoweredName",
];

/// Which of [`NVRTC_SYMBOLS`] the library at `path` (already loaded) does not define: all of
/// them when it cannot be opened.
fn missing_symbols(path: &Path) -> Vec<&'static str> {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return NVRTC_SYMBOLS.to_vec();
    };
    // SAFETY: dlopen of a library already loaded (a reference count, no code run);
    // RTLD_NOLOAD opens nothing new. The handle is never closed, as in `dlopen_global`.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if handle.is_null() {
        return NVRTC_SYMBOLS.to_vec();
    }
    NVRTC_SYMBOLS
        .iter()
        .copied()
        .filter(|name| {
            let Ok(n) = CString::new(*name) else {
                return true;
            };
            // SAFETY: looks a name up in a valid handle; nothing is called.
            unsafe { libc::dlsym(handle, n.as_ptr()) }.is_null()
        })
        .collect()
}

fn dlopen_global(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: dlopen with a valid C string; the handle is deliberately never closed.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    !handle.is_null()
}

/// The folders that hold the CUDA toolkit's headers (`cuda_fp16.h`, and `cuda/std/...` in a
/// `cccl` folder beside them): `$CUDA_HOME/include`, `$CUDA_PATH/include`,
/// `/usr/local/cuda/include`, and the copies `racegate setup` (user cache) and `ci/setup`
/// (`.racegate/nvrtc` of racegate's own checkout) install. Only those that exist and are
/// trusted along their whole path.
pub fn cuda_include_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("include"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/include"));
    for lib in wheel_lib_dirs() {
        dirs.push(lib.with_file_name("include"));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs.into_iter().flat_map(|d| [d.join("cccl"), d]) {
        if d.is_dir() && !out.contains(&d) && super::trust::trusted(&d).is_ok() {
            out.push(d);
        }
    }
    out
}

/// The compute-sanitizer executable: `RACEGATE_COMPUTE_SANITIZER` (which wins, and which must
/// exist), then `PATH` (absolute entries only), then the usual CUDA install folders, then the
/// copy in the Sanitizer API wheel that `racegate setup` (user cache) or `ci/setup` (racegate's
/// checkout) installed. A file that someone else could have written ([`super::trust`]) is passed
/// over. `None` when there is none.
pub fn compute_sanitizer() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RACEGATE_COMPUTE_SANITIZER") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("bin"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.extend(wheel_lib_dirs().iter().map(|lib| lib.with_file_name("bin")));
    dirs.into_iter()
        .map(|d| d.join("compute-sanitizer"))
        .find(|p| p.is_file() && super::trust::trusted(p).is_ok())
}
