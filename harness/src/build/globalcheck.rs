//! Building the tool on first use: the host part (`harness/globalcheck/tool.cpp`) with g++
//! and the device patches (`patches.cu`) with nvcc, from the system CUDA toolkit (its
//! `compute-sanitizer/` folder has the Sanitizer API) or from the pinned 13.0 wheels that
//! `ci/setup` and `racegate setup` install. The results are cached in racegate's private cache
//! under a hash of the sources and the toolchain, so a rebuilt racegate or another toolkit
//! builds anew and nothing stale is ever loaded. Both compiles run as children with a deadline.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::locations;
use crate::proc::watchdog::{self, Exit};

/// The sources, compiled into racegate so that an installed binary can build its tool.
pub const SOURCES: [(&str, &str); 5] = [
    (
        "globalcheck.h",
        include_str!("../../globalcheck/globalcheck.h"),
    ),
    ("tool.cpp", include_str!("../../globalcheck/tool.cpp")),
    ("streams.h", include_str!("../../globalcheck/streams.h")),
    ("streams.cpp", include_str!("../../globalcheck/streams.cpp")),
    ("patches.cu", include_str!("../../globalcheck/patches.cu")),
];

/// Where the compilers and the Sanitizer API were found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    pub gxx: PathBuf,
    pub nvcc: PathBuf,
    /// Holds `sanitizer_patching.h`.
    pub sanitizer_include: PathBuf,
    /// Holds `libsanitizer-public.so`.
    pub sanitizer_lib: PathBuf,
    /// Holds `cuda.h`.
    pub cuda_include: PathBuf,
}

/// The built tool.
#[derive(Clone, Debug)]
pub struct Built {
    /// The host library, for `CUDA_INJECTION64_PATH`.
    pub tool: PathBuf,
    /// The patches' fatbin.
    pub patches: PathBuf,
}

/// The CUDA folders to look in, in order: `CUDA_HOME`, `CUDA_PATH` (absolute values only), then
/// `/usr/local/cuda`, then the wheels of `racegate setup` (user cache) and of `ci/setup`
/// (`.racegate/nvrtc` of racegate's own checkout). Each file used from one is checked along its
/// whole path ([`super::trust`]) in [`find`]: nvcc and g++ run from there, and the tool built
/// from its headers and library is injected into every target.
fn candidates() -> Vec<PathBuf> {
    let mut c: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| locations::absolute_var(v))
        .collect();
    c.push(PathBuf::from("/usr/local/cuda"));
    if let Some(d) = crate::build::toolchain::cache_install_dir() {
        c.push(d.join("nvidia/cu13"));
    }
    // The same places NVRTC is looked for (any target folder, any working folder).
    for base in crate::build::toolchain::checkouts() {
        c.push(base.join(".racegate/nvrtc/nvidia/cu13"));
    }
    c
}

/// Checks `p`, found in the toolkit or on PATH, before racegate runs, links or includes it: along
/// its whole path ([`super::trust`]) and, in racegate's cache, as the cache's own.
fn check(p: &Path) -> Result<(), String> {
    super::trust::trusted(p).map_err(|why| format!("refusing to use {}: {why}", p.display()))?;
    crate::build::cache::check_trusted(p).map_err(|e| e.to_string())
}

/// g++: `CXX` (a name on PATH or an absolute path, never a relative one), else `g++` on PATH's
/// absolute entries; trusted along its whole path either way.
fn gxx() -> Result<PathBuf, String> {
    match std::env::var_os("CXX").filter(|v| !v.is_empty()) {
        Some(v) => locations::tool_named("CXX", &v),
        None => locations::tool_on_path("g++")
            .map_err(|why| format!("{why} (set CXX, or put g++ on PATH)")),
    }
}

/// The first CUDA folder with nvcc, the Sanitizer API headers and library, and `cuda.h`, every
/// one of them trusted; g++ from `CXX` or `PATH` ([`gxx`]). A folder that fails the check is
/// passed over, and named in the error when no other will do.
pub fn find() -> Result<Toolchain, String> {
    locations::check_path_vars()?;
    let gxx = gxx()?;
    let mut passed_over = Vec::new();
    for d in candidates() {
        let nvcc = d.join("bin/nvcc");
        let inc = [d.join("compute-sanitizer/include"), d.join("include")]
            .into_iter()
            .find(|p| p.join("sanitizer_patching.h").is_file());
        let lib = [d.join("compute-sanitizer"), d.join("lib"), d.join("lib64")]
            .into_iter()
            .find(|p| p.join("libsanitizer-public.so").is_file());
        let cuda_inc = d.join("include");
        if let (true, Some(inc), Some(lib), true) =
            (nvcc.is_file(), inc, lib, cuda_inc.join("cuda.h").is_file())
        {
            // nvcc is run, the Sanitizer API's library is linked into the tool, and the headers
            // are compiled into it: all of them must be trusted.
            let files = [
                nvcc.clone(),
                lib.join("libsanitizer-public.so"),
                inc.join("sanitizer_patching.h"),
                cuda_inc.join("cuda.h"),
            ];
            if let Err(why) = files.iter().try_for_each(|p| check(p)) {
                passed_over.push(why);
                continue;
            }
            return Ok(Toolchain {
                gxx,
                nvcc,
                sanitizer_include: inc,
                sanitizer_lib: lib,
                cuda_include: cuda_inc,
            });
        }
    }
    let searched = "no CUDA toolkit with nvcc and the Sanitizer API (compute-sanitizer/include/sanitizer_patching.h, libsanitizer-public.so) in CUDA_HOME, /usr/local/cuda or the wheels of `racegate setup`";
    Err(match passed_over.is_empty() {
        true => searched.to_string(),
        false => format!("{searched} that can be trusted: {}", passed_over.join("; ")),
    })
}

/// nvdisasm, for program counter -> line: beside nvcc, else on `PATH`'s absolute entries. One
/// that someone else could have written ([`check`]) is passed over.
pub fn nvdisasm() -> Option<PathBuf> {
    candidates()
        .into_iter()
        .map(|d| d.join("bin/nvdisasm"))
        .find(|p| p.is_file() && check(p).is_ok())
        .or_else(|| locations::tool_on_path("nvdisasm").ok())
}

/// The two compile commands (program, arguments) for sources in `src`, outputs in `out`.
pub fn commands(tc: &Toolchain, src: &Path, out: &Path) -> Vec<(PathBuf, Vec<OsString>)> {
    let os = |s: &str| OsString::from(s);
    let inc = |p: &Path| OsString::from(format!("-I{}", p.display()));
    vec![
        (
            tc.gxx.clone(),
            vec![
                // No optimization: the host part runs only at module loads and launches, and
                // on the H200 an -O2 build crashed in its first callback (probe 2, run 13).
                os("-std=c++17"),
                os("-O0"),
                os("-g"),
                os("-shared"),
                os("-fPIC"),
                inc(&tc.sanitizer_include),
                inc(&tc.cuda_include),
                inc(src),
                os("-o"),
                out.join("libracegate-globalcheck.so").into(),
                src.join("tool.cpp").into(),
                src.join("streams.cpp").into(),
                OsString::from(format!("-L{}", tc.sanitizer_lib.display())),
                os("-lsanitizer-public"),
                os("-ldl"),
                OsString::from(format!("-Wl,-rpath,{}", tc.sanitizer_lib.display())),
            ],
        ),
        (
            tc.nvcc.clone(),
            vec![
                os("--fatbin"),
                os("--keep-device-functions"),
                os("-Xptxas"),
                os("--compile-as-tools-patch"),
                os("-gencode"),
                os("arch=compute_90,code=sm_90"),
                inc(&tc.sanitizer_include),
                inc(src),
                os("-o"),
                out.join("patches.fatbin").into(),
                src.join("patches.cu").into(),
            ],
        ),
    ]
}

/// What identifies the toolchain beyond its paths: the compilers' version lines and the size
/// and modification time of the Sanitizer API's library and patching header.
fn toolchain_identity(tc: &Toolchain) -> String {
    let version = |p: &Path| {
        watchdog::collect(
            p,
            &[OsString::from("--version")],
            &watchdog::Spawn::default(),
            watchdog::Deadline::within(Duration::from_secs(30)),
            watchdog::Output::bounded(),
        )
        .map(|(_, out)| out.text())
        .unwrap_or_default()
    };
    let stamp = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| format!("{} {:?}", m.len(), m.modified().ok()))
            // ignored: a file that cannot be read stamps as empty, so the key changes and the tool is rebuilt
            .unwrap_or_default()
    };
    format!(
        "{}\n{}\n{}\n{}",
        version(&tc.gxx),
        version(&tc.nvcc),
        stamp(&tc.sanitizer_lib.join("libsanitizer-public.so")),
        stamp(&tc.sanitizer_include.join("sanitizer_patching.h"))
    )
}

/// Builds the tool unless the cache has it; `Err` says what is missing or what the compiler
/// said. Worked out once per process and root: a matrix or a mutation run asks for every run,
/// from many threads at once, and neither the toolchain's version probes nor a first build
/// need to happen more than once.
pub fn ensure(root: &Path) -> Result<Built, String> {
    let mut done = DONE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    done.entry(root.to_path_buf()).or_insert_with(build).clone()
}

/// What [`ensure`] worked out, per root (it holds the lock while it builds).
type Done = std::sync::Mutex<std::collections::HashMap<PathBuf, Result<Built, String>>>;
static DONE: std::sync::OnceLock<Done> = std::sync::OnceLock::new();

/// Whether [`ensure`] has worked out `root`'s tool (built, found, or failed), without waiting
/// for a build under way: a job that needs the tool can wait in the queue instead of holding a
/// thread while it builds (H200 run 29: three of the matrix's first jobs held theirs for 5 s).
pub fn settled(root: &Path) -> bool {
    match DONE.get_or_init(Default::default).try_lock() {
        Ok(done) => done.contains_key(root),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().contains_key(root),
        // Building, or another caller's lookup: asked again at the next pick.
        Err(std::sync::TryLockError::WouldBlock) => false,
    }
}

/// [`ensure`]'s work: find, key, and build unless the cache has it.
fn build() -> Result<Built, String> {
    let tc = find()?;
    // The sources, the exact commands (their flags included) and what the toolchain is, not
    // only where: an upgraded toolkit in the same folder builds anew.
    let how = format!("{:?}", commands(&tc, Path::new("SRC"), Path::new("OUT")));
    let what = toolchain_identity(&tc);
    let mut parts: Vec<&[u8]> = SOURCES.iter().map(|(_, text)| text.as_bytes()).collect();
    parts.extend([how.as_bytes(), what.as_bytes()]);
    let key = crate::build::compile::fnv(&parts);
    let cache = crate::build::cache::dir().map_err(|e| e.to_string())?;
    let dir = cache.join("globalcheck").join(format!("{key:016x}"));
    let built = Built {
        tool: dir.join("libracegate-globalcheck.so"),
        patches: dir.join("patches.fatbin"),
    };
    // Loaded into every target as its injection: only a build nobody else could have written.
    let trusted = || -> Result<(), String> {
        for p in [&built.tool, &built.patches] {
            crate::build::cache::check_trusted(p).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    if built.tool.is_file() && built.patches.is_file() {
        trusted()?;
        return Ok(built);
    }
    let parent = cache.join("globalcheck");
    // Private when racegate makes it; one found looser is refused by the check, not tightened.
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&parent)
        .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let tmp = tempfile::tempdir_in(&parent)
        .map_err(|e| format!("creating a folder in {}: {e}", parent.display()))?;
    for (name, text) in SOURCES {
        std::fs::write(tmp.path().join(name), text).map_err(|e| format!("writing {name}: {e}"))?;
    }
    // nvcc from the wheels finds its helpers (cicc, ptxas) through PATH, and g++ its assembler
    // and linker: nvcc's own folder, then PATH's absolute entries (never the current folder).
    let nvcc_dir = tc.nvcc.parent().unwrap_or(Path::new("/usr/bin"));
    let path = locations::child_path(&[nvcc_dir])
        .to_string_lossy()
        .into_owned();
    for (program, args) in commands(&tc, tmp.path(), tmp.path()) {
        let (done, out) = watchdog::collect(
            &program,
            &args,
            &watchdog::Spawn::with_env(&[("PATH".to_string(), path.clone())]),
            watchdog::Deadline::within(Duration::from_secs(300)),
            watchdog::Output::bounded(),
        )
        .map_err(|e| e.to_string())?;
        let out = out.text();
        if done.exit != Exit::Code(0) {
            return Err(format!(
                "building globalcheck: {} failed ({:?}): {}{}",
                program.display(),
                done.exit,
                out,
                done.stderr
            ));
        }
    }
    // What racegate made is writable by nobody else (whatever the umask), so that it passes the
    // check it gets before every load.
    crate::build::cache::tighten(tmp.path()).map_err(|e| format!("tightening the build: {e}"))?;
    // Another racegate may have finished the same build meanwhile: either copy will do, and
    // ours is then removed rather than left behind.
    let tmp = tmp.keep();
    if std::fs::rename(&tmp, &dir).is_err() {
        // ignored: the other racegate's copy is in place; ours is only a leftover in a temporary name
        let _ = std::fs::remove_dir_all(&tmp);
    }
    if built.tool.is_file() && built.patches.is_file() {
        trusted()?;
        Ok(built)
    } else {
        Err(format!(
            "building globalcheck: {} is incomplete",
            dir.display()
        ))
    }
}

#[cfg(test)]
mod settled_tests {
    use super::*;

    #[test]
    fn settled_says_whether_ensure_worked_a_root_out_and_never_waits_for_a_build() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(!settled(root), "nothing worked out yet");
        // A build under way holds the lock: not settled, and no wait.
        let held = DONE.get_or_init(Default::default).lock().unwrap();
        let t = std::time::Instant::now();
        assert!(!std::thread::scope(|s| s
            .spawn(|| settled(root))
            .join()
            .unwrap()));
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        drop(held);
        // Worked out (here: failed), it is settled.
        DONE.get_or_init(Default::default)
            .lock()
            .unwrap()
            .insert(root.to_path_buf(), Err("no toolkit".into()));
        assert!(settled(root));
    }
}
