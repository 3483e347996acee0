//! Finding the tools racegate stands on: the project root, NVRTC and compute-sanitizer.
//!
//! NVRTC is looked for, in order: `RACEGATE_NVRTC_LIB` (a file), the system's library path
//! (a CUDA install), `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64`, the copy
//! `racegate setup` installs from PyPI into racegate's user cache (`~/.cache/racegate/nvrtc`),
//! and the project-local copy that racegate's own `ci/setup` puts in `.racegate/nvrtc`, looked for
//! above the root, the current folder, the binary and the checkout cargo names at run time. The library
//! found is loaded by absolute path before cudarc asks for it by name, so nobody has to export
//! `LD_LIBRARY_PATH`.

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

/// The folders whose `.racegate/nvrtc` (the copy `ci/setup` installs) racegate looks in, in
/// order and without repeats: the root (`--root`, the manifest's folder) and every folder above
/// it, the current folder and those above it (its git top among them), those above the racegate
/// binary (`target/release/racegate` in racegate's own checkout), and the checkout cargo or
/// nextest names at run time (`$CARGO_MANIFEST_DIR`, remapped for an archive run from another
/// path). Never the folder racegate was built in: a nextest archive or a copied binary runs
/// where that folder is absent, or is another checkout's. A user's crate that depends on
/// racegate by path, without a copy of its own, names racegate's with `RACEGATE_NVRTC_LIB` or
/// uses `racegate setup`'s (`ci/cargo-test-example` does the first).
pub(crate) fn project_bases(root: &Path) -> Vec<PathBuf> {
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let cwd = std::env::current_dir().ok();
    let exe = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let now = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let mut out: Vec<PathBuf> = Vec::new();
    let starts = [Some(root), cwd, exe, now];
    for base in starts.iter().flatten().flat_map(|p| p.ancestors()) {
        let base = normalize(base);
        if !out.contains(&base) {
            out.push(base);
        }
    }
    out
}

/// The library folders of the pip installs racegate knows: the user cache's (`racegate
/// setup`), then the project-local ones (`ci/setup`) in [`project_bases`].
fn wheel_lib_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = cache_install_dir()
        .map(|d| d.join(WHEEL_LIB))
        .into_iter()
        .collect();
    dirs.extend(project_bases(root).iter().map(|b| b.join(LOCAL_NVRTC)));
    dirs
}
const NVRTC_SONAME: &str = "libnvrtc.so.13";

pub use crate::source::paths::{find_root, normalize, relative_to, report_root};

/// The CUDA toolkit's header folder (`cuda_fp16.h`, `cuda_bf16.h`, `cuda/std`), which NVRTC
/// 13.0 does not carry built in: `$CUDA_HOME/include`, `$CUDA_PATH/include`,
/// `/usr/local/cuda/include`, or the wheels beside `racegate setup`'s or `ci/setup`'s NVRTC. Teams'
/// kernels may use it; submissions never get it (grading serves its own allow-list).
pub fn toolkit_include(root: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(std::env::var_os)
        .map(|v| PathBuf::from(v).join("include"))
        .collect();
    dirs.push(PathBuf::from("/usr/local/cuda/include"));
    for lib in wheel_lib_dirs(root) {
        dirs.push(lib.join("../include"));
    }
    dirs.into_iter()
        .find(|d| d.join("cuda_fp16.h").is_file())
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

/// Makes NVRTC loadable (once per process) and reports which one is used. A library in
/// racegate's cache that someone else could have written is refused, never loaded.
pub fn nvrtc(root: &Path) -> Result<Nvrtc> {
    static FOUND: OnceLock<std::result::Result<Nvrtc, NotFound>> = OnceLock::new();
    FOUND
        .get_or_init(|| locate_nvrtc(root))
        .clone()
        .map_err(|e| match e {
            NotFound::Searched(searched) => Error::NvrtcMissing { searched },
            NotFound::Untrusted(why) => Error::Cache(why),
        })
}

fn locate_nvrtc(root: &Path) -> std::result::Result<Nvrtc, NotFound> {
    let mut searched = Vec::new();
    if let Some(path) = std::env::var_os("RACEGATE_NVRTC_LIB") {
        let path = PathBuf::from(path);
        if !preload(&path)? {
            return Err(NotFound::Searched(format!(
                "RACEGATE_NVRTC_LIB={} (could not be loaded)",
                path.display()
            )));
        }
        // Checked before cudarc is asked for anything: it panics on a missing symbol, or on
        // no library of NVRTC's name (libm.so.6 here was exit 101 and a backtrace).
        let missing = missing_symbols(&path);
        if !missing.is_empty() {
            return Err(NotFound::Searched(format!(
                "RACEGATE_NVRTC_LIB={} is not NVRTC: it lacks {}",
                path.display(),
                missing.join(", ")
            )));
        }
        // SAFETY: probing only dlopens the library by name.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(NotFound::Searched(format!(
                "RACEGATE_NVRTC_LIB={} has NVRTC's functions, but no library is found by NVRTC's \
                 name ({NVRTC_SONAME}) after loading it: point it at {NVRTC_SONAME} itself",
                path.display()
            )));
        }
        return finish(
            format!("{} (RACEGATE_NVRTC_LIB)", path.display()),
            Some(path),
        );
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
    // (where `ci/setup` puts it) in every folder of `project_bases`; all of them named in the
    // message, the project-local ones as the folders looked in.
    let cache = cache_install_dir().map(|d| d.join(WHEEL_LIB));
    dirs.extend(cache.clone());
    let bases = project_bases(root);
    dirs.extend(bases.iter().map(|b| b.join(LOCAL_NVRTC)));
    let mut seen: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        if seen.contains(&dir) {
            continue;
        }
        let lib = dir.join(NVRTC_SONAME);
        if lib.is_file() && preload(&lib)? {
            return finish(lib.display().to_string(), Some(lib));
        }
        if !dir.ends_with(LOCAL_NVRTC) || cache.as_ref() == Some(&dir) {
            searched.push(lib.display().to_string());
        }
        seen.push(dir);
    }
    Err(NotFound::Searched(not_found_text(&searched, &bases)))
}

/// What [`Error::NvrtcMissing`] says was searched: `searched` (the library files looked at),
/// then `.racegate/nvrtc` (where racegate's `ci/setup` installs it) in each of `bases`, then
/// `RACEGATE_NVRTC_LIB`, and how to get it from racegate's own checkout.
pub fn not_found_text(searched: &[String], bases: &[PathBuf]) -> String {
    let bases: Vec<String> = bases.iter().map(|b| b.display().to_string()).collect();
    format!(
        "{}, {LOCAL_NVRTC}/{NVRTC_SONAME} (where racegate's `ci/setup` installs it) in each of {}, \
         and RACEGATE_NVRTC_LIB (not set)\nin racegate's own checkout, run `ci/setup`: it installs \
         NVRTC into .racegate/nvrtc, where every racegate built from that checkout finds it",
        searched.join(", "),
        bases.join(", ")
    )
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

/// Loads NVRTC globally by absolute path, its builtins library (which NVRTC itself dlopens by
/// soname) first. cudarc later asks for `libnvrtc.so.13` by name, and the dynamic loader hands
/// back the copy already loaded. Libraries in racegate's cache are checked first, all of them
/// before any is loaded ([`crate::build::cache::check_trusted`]): loading one runs its code.
fn preload(path: &Path) -> std::result::Result<bool, NotFound> {
    let builtins: Vec<PathBuf> = path
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
    for lib in builtins.iter().map(PathBuf::as_path).chain([path]) {
        crate::build::cache::check_trusted(lib).map_err(|e| NotFound::Untrusted(e.to_string()))?;
    }
    for b in &builtins {
        dlopen_global(b);
    }
    Ok(dlopen_global(path))
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
/// (`.racegate/nvrtc` in the root or above it, or above the racegate binary) install. Only those
/// that exist.
pub fn cuda_include_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("include"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/include"));
    for lib in wheel_lib_dirs(root) {
        dirs.push(lib.with_file_name("include"));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs.into_iter().flat_map(|d| [d.join("cccl"), d]) {
        if d.is_dir() && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// The compute-sanitizer executable: `RACEGATE_COMPUTE_SANITIZER` (which wins, and which must
/// exist), then `PATH`, then the usual CUDA install folders. `None` when there is none.
pub fn compute_sanitizer() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RACEGATE_COMPUTE_SANITIZER") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v).join("bin"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.into_iter()
        .map(|d| d.join("compute-sanitizer"))
        .find(|p| p.is_file())
}
