//! Compile stage: NVRTC turns a `.cu` file into PTX with line information.
//!
//! The program is named by its repo-relative path, so sanitizer findings read
//! `kernels/matmul_tiled.cu:42`. Every build force-includes `harness/cuda/racegate_prelude.cuh`
//! (the shared-memory poisoner, and the schedule jitter when asked for), served to NVRTC from
//! memory. NVRTC runs in a child process with a deadline and limits (`compile_child.rs`):
//! graded submissions always, with file access refused; a team's own code (the catalog,
//! manifests, mutants) once the program has said it serves the child (`compile_in_children`,
//! which the `racegate` binary does first thing), else in this process. The PTX is the same.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use std::ffi::CString;

use crate::build::toolchain;
use crate::errors::{Error, Result};
use crate::source::files;

/// The prelude's text, embedded so the binary works without the source tree.
pub const PRELUDE: &str = include_str!("../../cuda/racegate_prelude.cuh");
/// An option of racegate's own: `--racegate-name-expression=reduce<float, 256>` asks NVRTC
/// to instantiate and name a C++ kernel (a name expression); the PTX then carries its lowered
/// name (see [`crate::build::ptx::names`]).
pub use crate::source::manifest::spec::{NAME_OPTION, TOOLKIT_INCLUDE};
/// The virtual architecture used when no device says otherwise.
pub const DEFAULT_ARCH: &str = "compute_90";

/// How to build one file.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct BuildOptions {
    /// A virtual architecture such as `compute_90`.
    pub arch: String,
    /// Wrap every `__syncthreads()` in the per-warp jitter of the prelude.
    pub jitter: bool,
    /// More NVRTC options (a manifest's `options`).
    pub extra: Vec<String>,
}

impl BuildOptions {
    /// How `case`'s file is built for a detector's run: its own options (a manifest's), with or
    /// without the jitter prelude. Every run and `judge::battery::prebuild` build through this,
    /// so a prebuilt PTX is the one a run asks for.
    pub fn for_case(case: &crate::source::catalog::Case, arch: &str, jitter: bool) -> BuildOptions {
        BuildOptions {
            arch: arch.to_string(),
            jitter,
            extra: case.compile_options(),
        }
    }

    /// The same build without optimization (`-G`): every access stays in the PTX.
    #[must_use]
    pub fn unoptimized(mut self) -> BuildOptions {
        self.extra.push("-G".into());
        self
    }

    /// How a manifest case's reference kernel is built (never with jitter).
    pub fn for_reference(case: &crate::source::catalog::Case, arch: &str) -> BuildOptions {
        BuildOptions {
            arch: arch.to_string(),
            jitter: false,
            extra: case.reference_compile_options(),
        }
    }
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            arch: DEFAULT_ARCH.to_string(),
            jitter: false,
            extra: Vec::new(),
        }
    }
}

/// A compiled file.
#[derive(Clone, Debug)]
pub struct Built {
    pub ptx: String,
    pub options: Vec<String>,
}

/// Compiles `root/rel_path`.
pub fn compile(root: &Path, rel_path: &str, opts: &BuildOptions) -> Result<Built> {
    let path = root.join(rel_path);
    let source = files::read_text(&path, "the kernel", files::TEXT_LIMIT)?;
    compile_source(root, rel_path, &source, opts)
}

thread_local! {
    /// NVRTC compilations made on this thread (for tests of the memo).
    static COMPILES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A compile run elsewhere: `(root, name, source, options)` to PTX whose line information names
/// the file under `root`. `compile_in_children` (compile_child.rs) sets it once, in a program
/// that serves racegate's hidden compile subcommand; unset, compiles run in this process.
pub type Remote = Box<dyn Fn(&Path, &str, &str, &BuildOptions) -> Result<Built> + Send + Sync>;

static REMOTE: std::sync::OnceLock<Remote> = std::sync::OnceLock::new();

/// Sends every later compile of this process to `remote` (the first call wins).
pub fn set_remote(remote: Remote) {
    // ignored: the first call wins, as documented; a later one changes nothing
    let _ = REMOTE.set(remote);
}

/// Compiles `source`, naming the program `name`: in a child once
/// `compile_in_children` (compile_child.rs) was called, else here.
pub fn compile_source(root: &Path, name: &str, source: &str, opts: &BuildOptions) -> Result<Built> {
    match REMOTE.get() {
        Some(remote) => remote(root, name, source, opts),
        None => compile_here(root, name, source, opts),
    }
}

/// [`compile_source`] in this process, whatever [`set_remote`] said.
pub fn compile_here(root: &Path, name: &str, source: &str, opts: &BuildOptions) -> Result<Built> {
    toolchain::nvrtc()?;
    let built = compile_in_memory(name, source, opts, &[])?;
    Ok(named_under_root(
        built,
        std::env::current_dir().ok(),
        root,
        name,
    ))
}

/// NVRTC records a relative program name under the working directory `cwd` of the process that
/// ran it; line information must name the file under `root` instead, wherever that was.
pub fn named_under_root(mut built: Built, cwd: Option<PathBuf>, root: &Path, name: &str) -> Built {
    if let Some(cwd) = cwd {
        let (from, to) = (cwd.join(name), root.join(name));
        if from != to {
            built.ptx = built.ptx.replace(
                &format!("\"{}\"", from.display()),
                &format!("\"{}\"", to.display()),
            );
        }
    }
    built
}

/// The options NVRTC gets for `opts` (name expressions left out: they travel apart).
pub fn nvrtc_options(opts: &BuildOptions) -> Vec<String> {
    let mut options = vec![
        "-lineinfo".to_string(),
        format!("-arch={}", opts.arch),
        "-std=c++17".to_string(),
        format!("--pre-include={PRELUDE_NAME}"),
    ];
    if opts.jitter {
        options.push("-DRACEGATE_JITTER".to_string());
    }
    for o in &opts.extra {
        if o == TOOLKIT_INCLUDE {
            if let Some(dir) = toolchain::toolkit_include() {
                options.push(format!("-I{}", dir.display()));
            }
        } else if !o.starts_with(NAME_OPTION) {
            options.push(o.clone());
        }
    }
    options
}

/// The name the prelude is served under, in memory: no file of it exists anywhere, so nobody
/// can plant another in its place.
pub const PRELUDE_NAME: &str = "racegate_prelude.cuh";

/// Compiles `source` with NVRTC already loaded ([`toolchain::nvrtc`]), naming the program
/// `name`. `headers` are `(include name, text)` pairs NVRTC reads from memory (the prelude is
/// always one of them); every other `#include` goes to the file system, which is why the
/// grader refuses them in submissions and compiles those in a child (`compile_child.rs`).
pub fn compile_in_memory(
    name: &str,
    source: &str,
    opts: &BuildOptions,
    headers: &[(String, String)],
) -> Result<Built> {
    COMPILES.with(|c| c.set(c.get() + 1));
    // Name expressions travel as options of racegate's own (so every compile path passes them
    // with the rest); NVRTC gets them through nvrtcAddNameExpression instead.
    let names: Vec<String> = opts
        .extra
        .iter()
        .filter_map(|o| o.strip_prefix(NAME_OPTION).map(str::to_string))
        .collect();
    let nvrtc_options = nvrtc_options(opts);
    let fail = |log: String| Error::Compile {
        path: name.to_string(),
        options: nvrtc_options.join(" "),
        log,
    };
    let src = CString::new(source).map_err(|_| fail("the source holds a NUL byte".into()))?;
    // NVRTC reads a program name that starts with `-` as an option (`-rf.cu`).
    let shown = match name.starts_with('-') {
        true => format!("./{name}"),
        false => name.to_string(),
    };
    let prog_name =
        CString::new(shown).map_err(|_| fail("the file name holds a NUL byte".into()))?;
    let served: Vec<(CString, CString)> = std::iter::once((PRELUDE_NAME, PRELUDE))
        .chain(headers.iter().map(|(n, t)| (n.as_str(), t.as_str())))
        .map(|(n, t)| Some((CString::new(n).ok()?, CString::new(t).ok()?)))
        .collect::<Option<_>>()
        .ok_or_else(|| fail("a served header holds a NUL byte".into()))?;
    let texts: Vec<*const std::ffi::c_char> = served.iter().map(|(_, t)| t.as_ptr()).collect();
    let includes: Vec<*const std::ffi::c_char> = served.iter().map(|(n, _)| n.as_ptr()).collect();
    let api = toolchain::nvrtc_api()?;
    // SAFETY: the two arrays hold `served.len()` pointers each, to live CStrings (`served`).
    let prog = unsafe { api.create(&src, &prog_name, &texts, &includes) }.map_err(fail)?;
    // SAFETY: `prog` is a live program until `destroy` below; every string handed to NVRTC
    // outlives the call that reads it.
    let outcome = unsafe {
        (|| -> std::result::Result<(String, Vec<(String, String)>), String> {
            let exprs: Vec<CString> = names
                .iter()
                .map(|n| CString::new(n.as_str()).map_err(|_| format!("`{n}`: NUL byte")))
                .collect::<std::result::Result<_, _>>()?;
            for e in &exprs {
                api.add_name_expression(prog, e)
                    .map_err(|err| format!("name expression {e:?}: {err}"))?;
            }
            if let Err(err) = api.compile(prog, &nvrtc_options) {
                let log = api.log(prog)?.trim_end().to_string();
                // An empty log (NVRTC out of memory, say) still says what went wrong.
                return Err(if log.is_empty() { err } else { log });
            }
            let ptx = api.ptx(prog)?;
            let mut lowered = Vec::new();
            for (n, e) in names.iter().zip(&exprs) {
                let l = api
                    .lowered_name(prog, e)
                    .map_err(|err| format!("lowered name of `{n}`: {err}"))?;
                lowered.push((n.clone(), l));
            }
            Ok((ptx, lowered))
        })()
    };
    // SAFETY: created above and not used after this.
    unsafe { api.destroy(prog) };
    let (mut ptx, lowered) = outcome.map_err(fail)?;
    // The lowered (mangled) names ride in the PTX as comments, so whoever loads it, in this
    // process or a worker, finds a templated kernel by the name the user wrote.
    for (n, l) in lowered {
        ptx.push_str(&format!("\n{}{n} = {l}\n", crate::build::ptx::NAME_COMMENT));
    }
    Ok(Built {
        ptx,
        options: nvrtc_options,
    })
}

/// Writes `path` whole or not at all, the one way racegate replaces a file (baselines, golden
/// outputs, the PTX cache): a temporary file in the same folder, filled by `fill`, given the
/// old file's mode (a new file: 0666 less the umask, or 0600 when `private`), synced, renamed
/// over `path`, and the folder synced. A reader sees the old file or the new one, never a
/// part; on any failure the temporary is removed.
pub fn write_atomically_from(
    path: &Path,
    private: bool,
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = folder_of(path);
    let old_mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
    // open(2) applies the umask to this mode, as it would to a plain `File::create`.
    let create_mode = if private { 0o600 } else { 0o666 };
    let tmp = tempfile::Builder::new()
        .prefix(".racegate-")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(create_mode))
        .tempfile_in(dir)?;
    let mut w = std::io::BufWriter::new(tmp);
    fill(&mut w)?;
    w.flush()?;
    let tmp = w.into_inner().map_err(|e| e.into_error())?;
    if let Some(mode) = old_mode {
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    // The rename is durable once the folder is synced (best effort: not every filesystem can).
    if let Ok(d) = std::fs::File::open(dir) {
        // ignored: the file itself was synced; not every filesystem can sync a folder
        let _ = d.sync_all();
    }
    Ok(())
}

/// [`write_atomically_from`] of `bytes`.
pub fn write_atomically(path: &Path, private: bool, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically_from(path, private, |w| w.write_all(bytes))
}

/// Runs `f` (a read-modify-write of `path`) holding an exclusive lock that every other
/// `with_lock` of a file in the same folder waits for, in this process or another: two
/// `--update-baseline` runs at once both keep their entries. The lock is `flock(2)` on the
/// folder itself, so no lock file is left beside the user's files; it goes with the process.
// Called by `Baseline::update`, which `cli/gate.rs` is still to call.
pub fn with_lock<T>(path: &Path, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let dir = folder_of(path);
    let folder = std::fs::File::open(dir).map_err(|e| Error::io("opening", dir, e))?;
    let mut lock = fd_lock::RwLock::new(folder);
    let _held = lock.write().map_err(|e| Error::io("locking", dir, e))?;
    f()
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

pub use crate::build::cache::dir as cache_dir;

/// FNV-1a, 64 bits, over `parts`, each followed by a zero byte: the same in every process and on
/// every machine (cache keys, and digests compared between runs of a target).
pub fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain([0u8].iter()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// A stable 64-bit fingerprint (FNV-1a) for cache file names.
pub fn fingerprint(s: &str) -> u64 {
    let mut h = Fnv(0xcbf29ce484222325);
    s.hash(&mut h);
    h.finish()
}

struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x100000001b3);
        }
    }
}

/// Compiles and stores the PTX where a worker process can load it; returns its path. Within
/// one process the same file, text and options compile once: a matrix run asks for each file
/// once per detector that runs it (stress and each sanitizer), and NVRTC takes ~40 ms a file. The memo is
/// keyed by the source text, so an edited file compiles again; nothing is reused across runs.
/// A caller that asks while another thread compiles the same key waits for that build instead
/// of starting its own (the matrix builds ahead while its first cells run). A failed build is
/// not kept: the next caller compiles again and gets its own error.
pub fn compile_to_cache(root: &Path, rel_path: &str, opts: &BuildOptions) -> Result<PathBuf> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Key = (String, u64, BuildOptions); // path, fingerprint of the text, options
    type Entry = Arc<Mutex<Option<PathBuf>>>;
    static MEMO: OnceLock<Mutex<HashMap<Key, Entry>>> = OnceLock::new();
    let path = root.join(rel_path);
    let source = files::read_text(&path, "the kernel", files::TEXT_LIMIT)?;
    let key = (rel_path.to_string(), fingerprint(&source), opts.clone());
    let entry: Entry = MEMO
        .get_or_init(Default::default)
        .lock()
        .expect("memo")
        .entry(key)
        .or_default()
        .clone();
    // Held while this key builds: a second asker waits here, then finds the file.
    let mut built_file = entry.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(file) = built_file.as_ref().filter(|f| f.is_file()) {
        return Ok(file.clone());
    }
    let built = compile_source(root, rel_path, &source, opts)?;
    let dir = cache_dir()?.join("ptx");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
    let file = dir.join(format!("{:016x}.ptx", fingerprint(&built.ptx)));
    if !file.is_file() {
        // tempfile's private mode (0600) is right: the cache folder is one user's
        // (`crate::build::cache`).
        write_atomically(&file, true, built.ptx.as_bytes())
            .map_err(|e| Error::io("writing", &file, e))?;
    }
    *built_file = Some(file.clone());
    Ok(file)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_compiles_once_per_text_and_options() {
        let root =
            crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k.cu");
        let rel = file.to_str().unwrap(); // absolute: root.join keeps it
        let count = || super::COMPILES.with(|c| c.get());
        let opts = super::BuildOptions::default();
        let jitter = super::BuildOptions {
            jitter: true,
            ..Default::default()
        };
        std::fs::write(
            &file,
            "extern \"C\" __global__ void k(int* o) { o[0] = 1; }",
        )
        .unwrap();
        let start = count();
        let a = super::compile_to_cache(&root, rel, &opts).unwrap();
        assert_eq!(super::compile_to_cache(&root, rel, &opts).unwrap(), a);
        assert_eq!(
            count() - start,
            1,
            "the same text and options compiled twice"
        );
        super::compile_to_cache(&root, rel, &jitter).unwrap();
        assert_eq!(count() - start, 2, "other options must compile");
        std::fs::write(
            &file,
            "extern \"C\" __global__ void k(int* o) { o[0] = 2; }",
        )
        .unwrap();
        let b = super::compile_to_cache(&root, rel, &opts).unwrap();
        assert_eq!(count() - start, 3, "an edited file must compile again");
        assert_ne!(a, b);
    }

    #[test]
    fn callers_asking_at_once_wait_for_one_build() {
        let root =
            crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("k.cu");
        let rel = file.to_str().unwrap();
        std::fs::write(
            &file,
            "extern \"C\" __global__ void k(int* o) { o[0] = 3; }",
        )
        .unwrap();
        let opts = super::BuildOptions::default();
        let go = std::sync::Barrier::new(4);
        let (paths, compiles): (Vec<_>, Vec<usize>) = std::thread::scope(|s| {
            let askers: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        go.wait();
                        let p = super::compile_to_cache(&root, rel, &opts).unwrap();
                        (p, super::COMPILES.with(|c| c.get()))
                    })
                })
                .collect();
            askers.into_iter().map(|h| h.join().unwrap()).unzip()
        });
        assert_eq!(compiles.iter().sum::<usize>(), 1, "{compiles:?}");
        assert!(paths.iter().all(|p| *p == paths[0]));
    }

    /// A batch grade compiles several submissions at once: each must get its own PTX.
    #[test]
    fn concurrent_compiles_do_not_mix() {
        let root =
            crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap();
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let root = root.clone();
                s.spawn(move || {
                    for i in 0..10u32 {
                        let k = 1000 + t * 100 + i;
                        let src = format!("extern \"C\" __global__ void reduce(float* out) {{ out[0] = {k}.0f; }}");
                        let b = super::compile_source(&root, &format!("s{t}.cu"), &src, &super::BuildOptions { arch: "sm_90".into(), jitter: false, extra: vec![] }).unwrap();
                        let want = format!(" {};", (k as f32).to_bits());
                        assert!(b.ptx.contains(&want), "thread {t} iter {i}: {want} missing:\n{}", b.ptx);
                    }
                });
            }
        });
    }

    /// A C++ kernel named by a name expression: instantiated, and its lowered name in the PTX.
    #[test]
    fn a_name_expression_is_lowered_into_the_ptx() {
        let root =
            crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap();
        let src = "template <typename T, int B> __global__ void scale(T* y, T a, int n) \
                   { int i = blockIdx.x * B + threadIdx.x; if (i < n) y[i] *= a; }";
        let opts = super::BuildOptions {
            extra: vec![format!("{}scale<double, 128>", super::NAME_OPTION)],
            ..Default::default()
        };
        let b = super::compile_source(&root, "t.cu", src, &opts).unwrap();
        let names = crate::build::ptx::names(&b.ptx);
        let entries = crate::build::ptx::entries(&b.ptx);
        let e =
            crate::build::ptx::find(&entries, &names, "scale<double, 128>").expect("instantiated");
        assert!(e.name.starts_with("_Z"), "{}", e.name);
        let w: Vec<(usize, bool)> = e.params.iter().map(|p| (p.width, p.float)).collect();
        assert_eq!(w, [(8, false), (8, true), (4, false)]);
        assert!(!b.options.iter().any(|o| o.starts_with(super::NAME_OPTION)));
        let err = super::compile_source(&root, "t.cu", "__global__ void k() { nope; }", &opts)
            .unwrap_err()
            .to_string();
        assert!(err.contains("nope"), "NVRTC's log is kept: {err}");
    }

    /// Line information names the file under the root, wherever racegate runs from: NVRTC
    /// prefixes a relative program name with the process's working directory, so a gate run
    /// from a manifest's subfolder once reported `examples/corpus/examples/corpus/...` (H200
    /// run 10).
    #[test]
    fn line_info_names_the_file_under_the_root() {
        let root =
            crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap();
        let src = "extern \"C\" __global__ void k(int* o) { o[threadIdx.x] = 1; }";
        let b = super::compile_source(&root, "sub/dir/k.cu", src, &Default::default()).unwrap();
        let want = format!("\"{}\"", root.join("sub/dir/k.cu").display());
        assert!(
            b.ptx
                .lines()
                .any(|l| l.contains(".file") && l.contains(&want)),
            "no `.file ... {want}` in:\n{}",
            b.ptx
                .lines()
                .filter(|l| l.contains(".file"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
