//! Finding the tools racegate stands on: the project root, NVRTC and compute-sanitizer.
//!
//! NVRTC is looked for, in order: `RACEGATE_NVRTC_LIB` (a file), the system's library path
//! (a CUDA install), `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`, `/usr/local/cuda/lib64`, the copy
//! `racegate setup` installs from PyPI into racegate's user cache (`~/.cache/racegate/nvrtc`),
//! and the copy racegate's own `ci/setup` puts in `.racegate/nvrtc` of racegate's own checkout
//! (the one above the running binary, or the one cargo names at run time). Never in the current
//! folder, the root or their parents as such: a grader runs in folders students control. Every
//! file found is checked along its whole path before it is loaded ([`super::trust`]), and is
//! loaded by that resolved absolute path, never by a name the dynamic loader would look up: "the
//! system's library path" is searched file by file ([`locations::system_library_dirs`]), NVRTC
//! is called only through the functions of that file ([`nvrtc_lib`]), and an `LD_LIBRARY_PATH`
//! that names the current folder is refused before anything is loaded. A candidate that fails
//! the check, or is not NVRTC, is a clear error (exit 3), not a panic inside cudarc; in
//! racegate's own checkouts it is passed over and named instead. Nobody has to export
//! `LD_LIBRARY_PATH`.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::locations;
use super::nvrtc_lib::{self, Api};
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

/// racegate's own checkouts, where `ci/setup` installs `.racegate/nvrtc`: the nearest folder
/// above the running binary (`target/release/racegate`) that holds racegate's sources
/// (`harness/Cargo.toml` and `ci/setup`), which is the checkout it was built in, then the nearest
/// above the package cargo or nextest names at run time (`$CARGO_MANIFEST_DIR`, absolute only,
/// remapped for an archive run from another path), without repeats. Only the nearest: a folder
/// further up that happens to look like a checkout (a home folder holding a `ci/setup`, a
/// student's repository a grader's build sits in) is not racegate's. Never the current folder
/// or the root: those belong to whoever racegate works for (a student's repository, when
/// grading), and a library there would run as racegate. Never the folder racegate was built in
/// as the compiler saw it: a nextest archive or a copied binary runs where that folder is absent,
/// or is another checkout's. A user's crate that depends on racegate by path names racegate's
/// copy with `RACEGATE_NVRTC_LIB` or uses `racegate setup`'s. A checkout someone else could
/// write is not skipped here: each file found in it is checked before it is loaded, and passed
/// over with a note when it fails.
pub(crate) fn checkouts() -> Vec<PathBuf> {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    let now = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let mut out: Vec<PathBuf> = Vec::new();
    for start in [exe, now].into_iter().flatten() {
        let nearest = start.ancestors().map(normalize).find(|base| {
            base.join("harness/Cargo.toml").is_file() && base.join("ci/setup").is_file()
        });
        if let Some(base) = nearest.filter(|b| !out.contains(b)) {
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
        .filter_map(|v| locations::absolute_var(v))
        .map(|v| v.join("include"))
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
    /// The file, and why: `... (RACEGATE_NVRTC_LIB)`; candidates passed over on the way are
    /// named after it (`; passed over: ...`).
    pub source: String,
    pub version: (i32, i32),
    /// The library loaded, by absolute path (a child loads the same file).
    pub lib: Option<PathBuf>,
}

/// Why no NVRTC is used.
#[derive(Clone, Debug)]
enum NotFound {
    /// Where racegate looked.
    Searched(String),
    /// The environment, or the one library named, cannot be trusted (or is not NVRTC): why.
    Untrusted(String),
}

/// What [`locate_nvrtc`] found: where, and its functions.
struct Found {
    nvrtc: Nvrtc,
    api: Api,
}

static FOUND: OnceLock<std::result::Result<Found, NotFound>> = OnceLock::new();

/// Makes NVRTC loadable (once per process) and reports which one is used. A library that
/// someone else could have written, or that is not NVRTC, is refused with why (exit 3).
pub fn nvrtc() -> Result<Nvrtc> {
    found().map(|f| f.nvrtc.clone())
}

/// NVRTC's functions, from the library [`nvrtc`] found: the only way racegate calls NVRTC.
pub fn nvrtc_api() -> Result<&'static Api> {
    found().map(|f| &f.api)
}

fn found() -> Result<&'static Found> {
    FOUND
        .get_or_init(locate_nvrtc)
        .as_ref()
        .map_err(|e| match e.clone() {
            NotFound::Searched(searched) => Error::NvrtcMissing { searched },
            NotFound::Untrusted(why) => Error::Cache(why),
        })
}

/// Finds NVRTC, by path only: nothing is ever opened by a bare name, which the dynamic loader
/// would look up in places racegate did not check. A candidate that cannot be trusted, cannot be
/// loaded or is not NVRTC stops the search with why (exit 3), except in racegate's own checkouts
/// ([`checkouts`]): there it is passed over, and named in the result's `source` (or in the error
/// when none is left).
fn locate_nvrtc() -> std::result::Result<Found, NotFound> {
    // Before any library is loaded: NVRTC's own dependencies (librt.so.1) are looked up by name.
    locations::check_loader_path().map_err(NotFound::Untrusted)?;
    locations::check_path_vars().map_err(NotFound::Untrusted)?;
    if let Ok(Some(named)) = locations::path_var("RACEGATE_NVRTC_LIB") {
        if !named.is_file() {
            return Err(NotFound::Searched(format!(
                "RACEGATE_NVRTC_LIB={} (no such file)",
                named.display()
            )));
        }
        return match load(&named) {
            Ok((real, api)) => finish(
                format!("{} (RACEGATE_NVRTC_LIB)", named.display()),
                real,
                api,
                &[],
            ),
            Err(why) => Err(NotFound::Untrusted(format!("RACEGATE_NVRTC_LIB: {why}"))),
        };
    }
    let system = locations::system_library_dirs();
    let mut dirs: Vec<PathBuf> = system.clone();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        dirs.extend(locations::absolute_var(var).map(|v| v.join("lib64")));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    // The pip installs: the user cache's (where `racegate setup` puts it), then `.racegate/nvrtc`
    // of racegate's own checkouts (where `ci/setup` puts it); all of them named in the message.
    dirs.extend(wheel_lib_dirs());
    // racegate's own checkouts, which nobody chose, are passed over when they fail; a place the
    // user chose (RACEGATE_NVRTC_LIB, LD_LIBRARY_PATH, CUDA_HOME, CUDA_PATH, the user cache of
    // `racegate setup`) or the system's stops the search with why: a quiet fallback would hide it.
    let ours: Vec<PathBuf> = checkouts().iter().map(|b| b.join(LOCAL_NVRTC)).collect();
    let (mut searched, mut passed_over) = (Vec::new(), Vec::new());
    let mut seen: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir.clone());
        let lib = dir.join(NVRTC_SONAME);
        if !lib.is_file() {
            if !system.contains(&dir) {
                searched.push(lib.display().to_string());
            }
            continue;
        }
        match load(&lib) {
            Ok((real, api)) => return finish(lib.display().to_string(), real, api, &passed_over),
            Err(why) if ours.contains(&dir) => passed_over.push(why),
            Err(why) => return Err(NotFound::Untrusted(why)),
        }
    }
    searched.insert(
        0,
        format!(
            "the system library path ({} folders: LD_LIBRARY_PATH, /etc/ld.so.conf, /usr/lib)",
            system.len()
        ),
    );
    match passed_over.is_empty() {
        true => Err(NotFound::Searched(not_found_text(&searched))),
        false => Err(NotFound::Untrusted(format!(
            "{}\nno other NVRTC found; searched: {}",
            passed_over.join("\n"),
            not_found_text(&searched)
        ))),
    }
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

fn finish(
    source: String,
    real: PathBuf,
    api: Api,
    passed_over: &[String],
) -> std::result::Result<Found, NotFound> {
    let version = api
        .version()
        .map_err(|e| NotFound::Searched(format!("{source}: {e}")))?;
    let source = match passed_over.is_empty() {
        true => source,
        false => format!("{source}; passed over: {}", passed_over.join("; ")),
    };
    Ok(Found {
        nvrtc: Nvrtc {
            source,
            version,
            lib: Some(real),
        },
        api,
    })
}

/// Loads NVRTC by its resolved absolute path, its builtins library (which NVRTC itself dlopens
/// by soname, and so finds already loaded) first, and binds its functions. Every file is checked
/// before any is loaded, along its whole path ([`super::trust::trusted`]) and, in racegate's
/// cache, as the cache's own ([`crate::build::cache::check_trusted`]): loading one runs its
/// code. `Err` says why not, starting with the path.
fn load(path: &Path) -> std::result::Result<(PathBuf, Api), String> {
    let refuse = |at: &Path, why: String| {
        format!(
            "refusing to load {}: {why}. Someone else could have put another library there: \
             fix the folder as said, or install NVRTC with `racegate setup`",
            at.display()
        )
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
        crate::build::cache::check_trusted(lib).map_err(|e| e.to_string())?;
    }
    for b in &checked {
        let Ok(c) = CString::new(b.as_os_str().as_encoded_bytes()) else {
            continue;
        };
        // SAFETY: a valid C string of a file checked above; the handle is never closed.
        unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    }
    // SAFETY: `real` passed the trust check above.
    match unsafe { nvrtc_lib::open(&real) } {
        Ok(api) => Ok((real, api)),
        Err(why) => Err(format!("{} {why}", real.display())),
    }
}

/// The folders that hold the CUDA toolkit's headers (`cuda_fp16.h`, and `cuda/std/...` in a
/// `cccl` folder beside them): `$CUDA_HOME/include`, `$CUDA_PATH/include`,
/// `/usr/local/cuda/include`, and the copies `racegate setup` (user cache) and `ci/setup`
/// (`.racegate/nvrtc` of racegate's own checkout) install. Only those that exist and are
/// trusted along their whole path.
pub fn cuda_include_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        dirs.extend(locations::absolute_var(var).map(|v| v.join("include")));
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
/// over. `None` when there is none, or when `RACEGATE_COMPUTE_SANITIZER` is relative or names a
/// file that cannot be trusted: [`compute_sanitizer_checked`] says why.
pub fn compute_sanitizer() -> Option<PathBuf> {
    compute_sanitizer_checked().ok().flatten()
}

/// [`compute_sanitizer`], with an error that says why `RACEGATE_COMPUTE_SANITIZER` is not used
/// (relative, missing, or in a place someone else could write).
pub fn compute_sanitizer_checked() -> std::result::Result<Option<PathBuf>, String> {
    if let Some(p) = locations::path_var("RACEGATE_COMPUTE_SANITIZER")? {
        if !p.is_file() {
            return Err(format!(
                "RACEGATE_COMPUTE_SANITIZER={} is not a file",
                p.display()
            ));
        }
        return super::trust::trusted(&p)
            .map(|_| Some(p))
            .map_err(|why| format!("RACEGATE_COMPUTE_SANITIZER: refusing to run it: {why}"));
    }
    let mut dirs = locations::absolute_path_entries();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        dirs.extend(locations::absolute_var(var).map(|v| v.join("bin")));
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    dirs.extend(wheel_lib_dirs().iter().map(|lib| lib.with_file_name("bin")));
    Ok(dirs
        .into_iter()
        .map(|d| d.join("compute-sanitizer"))
        .find(|p| p.is_file() && super::trust::trusted(p).is_ok()))
}
