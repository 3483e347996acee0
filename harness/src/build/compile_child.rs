//! The one path for compiling code racegate does not trust: NVRTC runs in a child racegate
//! process (`racegate __compile`), never in the caller, so a compile that never ends, eats all
//! memory or overflows the compiler's stack costs that compile and nothing else.
//!
//! The child gets:
//! * a fresh private folder (mode 0700) as its working folder, holding only the source;
//! * a clean environment: no variable of ours (no `RACEGATE_GRADE_SECRET`), only what finds
//!   NVRTC, a `PATH`, and `HOME`/`TMPDIR` pointing into its folder;
//! * a deadline ([`watchdog`], which kills its whole process group), an address-space limit
//!   (`RLIMIT_AS`, for compile children only: it breaks `cuInit` in kernel workers), no core
//!   files, a cap on the size of files it writes, and NVRTC on a thread with a large stack;
//! * for a submission ([`Request::confine`]), a kernel that refuses it every file once NVRTC is
//!   loaded: seccomp-bpf, Landlock and an empty mount namespace, each where the machine has it
//!   ([`crate::proc::confine`]); the guarantee rests on these, whatever the source's spelling;
//! * with [`Request::refuse_file_access`], a friendly first line: a refusal of any source that asks the preprocessor
//!   for a file ([`cscan::file_access`]) before NVRTC sees it, but for a literal `#include` of
//!   an allowed header ([`Request::allowed_includes`]); headers come in memory
//!   ([`Request::headers`]), never from the file system.
//!
//! The child's side, and the probe that shows its confinement holds, are in
//! `compile_jail.rs`. A limit that is hit is the source's failure ([`Outcome::Limit`]), with a message that says
//! which; an error (`Err`) is the machine's (no NVRTC, the child could not start).
//!
//! Graded submissions use [`Request::new`]. A team's own code (the gate, the catalog, mutants)
//! uses [`Request::trusted`]: file access allowed, include folders as `-I` options in
//! `options.extra`, and the child working in racegate's own folder so that names keep their
//! meaning;
//! [`crate::build::compile`] sends every compile there once the program has said it can serve the
//! child ([`compile_in_children`]).
//!
//! ```no_run
//! use racegate::build::compile_child::{compile, Limits, Outcome, Request};
//! let req = Request::new("alice.cu", "extern \"C\" __global__ void k() {}");
//! let exe = std::env::current_exe()?;
//! match compile(&exe, &req, &Limits::default())?.outcome {
//!     Outcome::Built(b) => println!("{} bytes of PTX", b.ptx.len()),
//!     other => println!("{other}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::build::compile::{self, BuildOptions, Built};
use crate::build::toolchain;
use crate::errors::{Error, Result};
use crate::proc::confine::{Layers, Wanted};
use crate::proc::watchdog::{self, Deadline, Exit, Spawn};
use crate::source::cscan::{self, FileAccess};

/// What the child may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall time for the whole child, NVRTC's start included. Default: 30 s.
    pub deadline: Duration,
    /// Address space (`RLIMIT_AS`), in MiB. Default: 4096.
    pub memory_mib: u64,
    /// The stack of the thread NVRTC runs on, in MiB (it recurses once per level of nesting,
    /// and a 256 KiB file of parentheses needs about 300). Default: 1024.
    pub stack_mib: u64,
}

impl Limits {
    /// The stack NVRTC gets: [`Limits::stack_mib`], but at most half the address space (the
    /// stack is reserved inside it).
    pub fn stack(&self) -> u64 {
        self.stack_mib.min(self.memory_mib / 2)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_secs(30),
            memory_mib: 4096,
            stack_mib: 1024,
        }
    }
}

/// One compile.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Request {
    /// The program's name, as NVRTC's messages show it.
    pub name: String,
    #[serde(skip)]
    pub source: String,
    pub options: BuildOptions,
    /// `(include name, text)`: headers NVRTC reads from memory (the allowed ones, and those
    /// they include).
    pub headers: Vec<(String, String)>,
    /// Refuse, before NVRTC, a source that asks the preprocessor to read any file other than a
    /// `#include` of one of [`Request::allowed_includes`].
    pub refuse_file_access: bool,
    /// The headers the source itself may include (by these exact names).
    pub allowed_includes: Vec<String>,
    /// For a team's own code (the gate, the catalog, mutants): the folder the child works in,
    /// racegate's own working folder. NVRTC then gets the program under its own name, and
    /// relative names (the file's, quoted includes, `-I` options) mean what they meant in
    /// racegate's own process: the PTX is the same. Never set for submissions.
    #[serde(skip)]
    pub trusted_cwd: Option<std::path::PathBuf>,
    /// The kernel-level layers that stop the child from reading any file once NVRTC is loaded
    /// ([`confine::no_file_access`]); `None` for a team's own code, which may read its includes.
    #[serde(default)]
    pub confine: Option<Wanted>,
    /// Refuse to compile (an infrastructure failure, not the source's) when no layer applied.
    #[serde(default)]
    pub require_confinement: bool,
    /// The token scanner's refusal before NVRTC (a friendly first line). Tests switch it off to
    /// show that the kernel-level layers hold without it.
    #[serde(default = "yes")]
    pub scanner: bool,
}

fn yes() -> bool {
    true
}

impl Request {
    /// A request with default options that refuses file access (the grader's case).
    #[cfg(any(test, feature = "internals"))]
    pub fn new(name: &str, source: &str) -> Request {
        Request::new_submission(name, source)
    }

    /// A submission's request: default options, file access refused by the scanner and by
    /// every confinement layer the kernel offers.
    pub fn new_submission(name: &str, source: &str) -> Request {
        Request {
            name: name.to_string(),
            source: source.to_string(),
            options: BuildOptions::default(),
            headers: Vec::new(),
            refuse_file_access: true,
            allowed_includes: Vec::new(),
            trusted_cwd: None,
            confine: Some(Wanted::default()),
            require_confinement: false,
            scanner: true,
        }
    }

    /// A request for a team's own code named `name` (see [`Request::trusted_cwd`]): file access
    /// allowed, the program under its own name, the child working in `cwd`.
    pub fn trusted(cwd: &Path, name: &str, source: &str, options: BuildOptions) -> Request {
        Request {
            name: name.to_string(),
            source: source.to_string(),
            options,
            headers: Vec::new(),
            refuse_file_access: false,
            allowed_includes: Vec::new(),
            trusted_cwd: Some(cwd.to_path_buf()),
            confine: None,
            require_confinement: false,
            scanner: true,
        }
    }
}

/// What the child writes back: its answer, and the confinement layers that applied to it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Envelope {
    pub(crate) reply: Reply,
    pub(crate) layers: Option<Layers>,
}

/// The child's answer.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Reply {
    Built {
        ptx: String,
        options: Vec<String>,
    },
    Refused {
        line: usize,
        what: String,
    },
    Failed {
        log: String,
    },
    NvrtcMissing {
        searched: String,
    },
    /// No confinement layer applied, and the request required one.
    Unconfined {
        layers: Layers,
    },
}

/// A limit a compile ran into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitHit {
    Deadline(Duration),
    Memory(u64),
    Stack(u64),
}

/// How a compile ended, when the machine did its part.
#[derive(Clone, Debug)]
pub enum Outcome {
    Built(Built),
    /// The source asks to read a file.
    Refused(FileAccess),
    /// NVRTC's log (bounded: [`bound`]).
    Failed(String),
    Limit(LimitHit),
    /// The compiler died without a message (a signal).
    Crashed(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Built(_) => write!(f, "compiled"),
            Outcome::Refused(a) => write!(
                f,
                "line {}: {} is not allowed: a submission may not include or probe for files \
                 (only the headers the exercise allows; CUDA's built-in functions and types need \
                 no include)",
                a.line, a.what
            ),
            Outcome::Failed(log) => write!(f, "NVRTC could not compile it:\n{log}"),
            Outcome::Limit(LimitHit::Deadline(d)) => write!(
                f,
                "the compiler did not finish within {:.0} s and was stopped (a macro or \
                 template that expands without end?)",
                d.as_secs_f64()
            ),
            Outcome::Limit(LimitHit::Memory(m)) => write!(
                f,
                "the compiler ran out of memory (limit {m} MiB) and was stopped (a macro or \
                 template that expands without end?)"
            ),
            Outcome::Limit(LimitHit::Stack(m)) => write!(
                f,
                "the compiler ran out of stack ({m} MiB) and was stopped: an expression, \
                 template or macro nested too deep"
            ),
            Outcome::Crashed(why) => write!(f, "the compiler crashed ({why})"),
        }
    }
}

/// Most lines and bytes of a compiler log a student is shown.
pub const LOG_LINES: usize = 60;
pub const LOG_BYTES: usize = 8 * 1024;
/// Most of a compiler log a team is shown about its own code (a template error runs long).
const TEAM_LOG_LINES: usize = 2000;
const TEAM_LOG_BYTES: usize = 256 * 1024;

/// The log bound for a request: a submission's, or a team's.
pub(crate) fn log_bound(trusted: bool) -> (usize, usize) {
    match trusted {
        true => (TEAM_LOG_LINES, TEAM_LOG_BYTES),
        false => (LOG_LINES, LOG_BYTES),
    }
}
/// The variable that tells the child its parent's pid (it dies with that parent).
pub(crate) const PARENT_ENV: &str = "RACEGATE_COMPILE_PARENT";
/// The most PTX read back (and the largest file the child may write).
pub(crate) const MAX_REPLY: u64 = 256 * 1024 * 1024;

/// At most `lines` lines and `bytes` bytes of `text`, with a last line saying what was left out.
pub fn bound(text: &str, lines: usize, bytes: usize) -> String {
    let mut out = String::new();
    let total = text.lines().count();
    for (n, l) in text.lines().enumerate() {
        if n == lines || out.len() + l.len() + 1 > bytes {
            out.push_str(&format!("... ({} more lines not shown)", total - n));
            return out;
        }
        out.push_str(l);
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// A file name safe to show and to create: letters, digits, `.`, `_`, `+`, `-` (others become
/// `_`), at most 100 characters.
pub fn safe_name(name: &str) -> String {
    let s: String = name
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.trim_matches('.') {
        "" => "submission.cu".into(),
        _ => s,
    }
}

/// Compiles `req` in a child `exe __compile` under `limits`, with the NVRTC racegate trusts
/// ([`toolchain::nvrtc`]); the child gets the library found, by path.
pub fn compile(exe: &Path, req: &Request, limits: &Limits) -> Result<Compiled> {
    let nvrtc = toolchain::nvrtc()?;
    let work = tempfile::Builder::new()
        .prefix("racegate-compile-")
        .tempdir()
        .map_err(|e| {
            Error::io(
                "creating a folder for a compile in",
                std::env::temp_dir(),
                e,
            )
        })?;
    let src_dir = work.path().join("src");
    std::fs::create_dir(&src_dir).map_err(|e| Error::io("creating", &src_dir, e))?;
    let name = safe_name(&req.name);
    let source = src_dir.join(&name);
    std::fs::write(&source, &req.source).map_err(|e| Error::io("writing", &source, e))?;
    let request = work.path().join("request.json");
    let json = serde_json::to_vec(&Request {
        // A team's file keeps its own name (NVRTC reads the text from the copy, not the file).
        name: match req.trusted_cwd {
            Some(_) => req.name.clone(),
            None => name.clone(),
        },
        ..req.clone()
    })
    .expect("a request serializes");
    std::fs::write(&request, json).map_err(|e| Error::io("writing", &request, e))?;
    let reply = work.path().join("reply.json");
    let args: Vec<OsString> = vec![
        crate::proc::subcommands::COMPILE_CHILD.into(),
        "--request".into(),
        request.into(),
        "--reply".into(),
        reply.clone().into(),
        "--memory-mib".into(),
        limits.memory_mib.to_string().into(),
        "--stack-mib".into(),
        limits.stack().to_string().into(),
        "--".into(),
        source.into(),
    ];
    let mut env = vec![
        (PARENT_ENV.to_string(), std::process::id().to_string()),
        ("PATH".to_string(), "/usr/bin:/bin".to_string()),
        ("LC_ALL".to_string(), "C".to_string()),
        ("HOME".to_string(), work.path().display().to_string()),
        ("TMPDIR".to_string(), work.path().display().to_string()),
    ];
    let library_path = std::env::var("LD_LIBRARY_PATH")
        .ok()
        .map(|v| ("LD_LIBRARY_PATH".to_string(), v));
    match &nvrtc.lib {
        Some(lib) => {
            env.push(("RACEGATE_NVRTC_LIB".into(), lib.display().to_string()));
            // A team's test binary serving the child may need its own shared libraries, and
            // the child looks for the toolkit's headers where the parent does (racegate's
            // checkout, CUDA_HOME, the user cache): its own HOME is the work folder.
            if req.trusted_cwd.is_some() {
                env.extend(library_path);
                for var in ["CARGO_MANIFEST_DIR", "CUDA_HOME", "CUDA_PATH"] {
                    if let Ok(v) = std::env::var(var) {
                        env.push((var.to_string(), v));
                    }
                }
                if let Ok(cache) = crate::build::cache::dir() {
                    env.push(("RACEGATE_CACHE".into(), cache.display().to_string()));
                }
            }
        }
        // Found on the system's library path: the child looks where we looked.
        None => env.extend(library_path),
    }
    let spawn = Spawn {
        env,
        clear_env: true,
        cwd: Some(req.trusted_cwd.clone().unwrap_or(src_dir)),
        ..Spawn::default()
    };
    let deadline = Deadline {
        idle: limits.deadline,
        total: Some(limits.deadline),
    };
    let finished = watchdog::run(exe, &args, &spawn, deadline, |_| {})?;
    if finished.exit == Exit::TimedOut {
        return Ok(Compiled {
            outcome: Outcome::Limit(LimitHit::Deadline(limits.deadline)),
            layers: None,
        });
    }
    let answer = std::fs::metadata(&reply)
        .ok()
        .filter(|m| m.len() <= MAX_REPLY)
        .and_then(|_| std::fs::read(&reply).ok())
        .and_then(|b| serde_json::from_slice::<Envelope>(&b).ok());
    let layers = answer.as_ref().and_then(|e| e.layers.clone());
    let answer = answer.map(|e| e.reply);
    let stderr = &finished.stderr;
    let outcome = match answer {
        Some(Reply::Built { ptx, options }) => Outcome::Built(Built { ptx, options }),
        Some(Reply::Refused { line, what }) => Outcome::Refused(FileAccess {
            line,
            what,
            target: None,
        }),
        Some(Reply::Failed { log }) if log.contains("error: out of memory") => {
            Outcome::Limit(LimitHit::Memory(limits.memory_mib))
        }
        Some(Reply::Failed { log }) => {
            let (lines, bytes) = log_bound(req.trusted_cwd.is_some());
            Outcome::Failed(bound(&log, lines, bytes))
        }
        Some(Reply::NvrtcMissing { searched }) => return Err(Error::NvrtcMissing { searched }),
        Some(Reply::Unconfined { layers }) => {
            return Err(Error::Child(format!(
                "the compile could not be confined and confinement is required: {}",
                layers.describe()
            )))
        }
        None if stderr.contains("has overflowed its stack") => {
            Outcome::Limit(LimitHit::Stack(limits.stack()))
        }
        None if [
            "memory allocation of",
            "bad_alloc",
            "out of memory",
            "Cannot allocate",
        ]
        .iter()
        .any(|m| stderr.contains(m)) =>
        {
            Outcome::Limit(LimitHit::Memory(limits.memory_mib))
        }
        None => match finished.exit {
            Exit::Signal(s) => Outcome::Crashed(format!(
                "killed by signal {s}; it may have run out of its {} MiB of memory",
                limits.memory_mib
            )),
            // The child exits non-zero by itself only when it could not do its job.
            e => {
                return Err(Error::Child(format!(
                    "the compile child failed ({e:?}): {}",
                    bound(stderr.trim(), 5, 1000)
                )))
            }
        },
    };
    Ok(Compiled { outcome, layers })
}

/// A compile's outcome and the confinement layers its child reported (`None` for a team's own
/// code, or when the child died before it could say).
#[derive(Clone, Debug)]
pub struct Compiled {
    pub outcome: Outcome,
    pub layers: Option<Layers>,
}

/// What a compile of a team's own code may use in its child: far more than a submission gets
/// (template-heavy kernels take minutes and gigabytes), but an end.
pub const TEAM_LIMITS: Limits = Limits {
    deadline: Duration::from_secs(600),
    memory_mib: 32 * 1024,
    stack_mib: 1024,
};

/// From now on every compile of this process ([`compile::compile_source`]) runs NVRTC in a
/// child `exe __compile` with [`TEAM_LIMITS`]: a compiler that hangs, crashes or eats the
/// machine costs that compile, not the run. `exe` must serve racegate's hidden subcommands (the
/// `racegate` binary, or a program that called `api::run_worker_if_requested`).
pub fn compile_in_children(exe: std::path::PathBuf) {
    compile::set_remote(Box::new(move |root, name, source, opts| {
        compile_team(&exe, root, name, source, opts)
    }));
}

/// A team's file `name` under `root` compiled by a child `exe __compile` working in racegate's
/// own folder: the same PTX as [`compile::compile_here`] in this process.
pub fn compile_team(
    exe: &Path,
    root: &Path,
    name: &str,
    source: &str,
    opts: &BuildOptions,
) -> Result<Built> {
    let cwd = std::env::current_dir().map_err(|e| Error::io("reading", ".", e))?;
    let req = Request::trusted(&cwd, name, source, opts.clone());
    let failed = |log: String| Error::Compile {
        path: name.to_string(),
        options: compile::nvrtc_options(opts).join(" "),
        log,
    };
    match compile(exe, &req, &TEAM_LIMITS)?.outcome {
        Outcome::Built(b) => Ok(compile::named_under_root(b, Some(cwd), root, name)),
        Outcome::Failed(log) => Err(failed(log)),
        // A team's code that NVRTC could not finish is no verdict on the code: inconclusive
        // (exit 3), naming the limit or the crash, not "does not compile".
        other => Err(Error::Child(format!("compiling {name}: {other}"))),
    }
}

/// The first way `source` asks for a file other than a `#include` of one of the `allowed`
/// names (headers served from memory), written literally.
pub fn forbidden_access(source: &str, allowed: &[String]) -> Option<FileAccess> {
    cscan::file_access(source).into_iter().find(|a| {
        let include = a.what.ends_with("include`");
        !(include && a.target.as_ref().is_some_and(|t| allowed.contains(t)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_are_bounded_in_lines_and_bytes() {
        let log: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let b = bound(&log, 3, 10_000);
        assert_eq!(b, "line 0\nline 1\nline 2\n... (97 more lines not shown)");
        let b = bound(&"x".repeat(50_000), 60, 100);
        assert_eq!(b, "... (1 more lines not shown)");
        assert_eq!(bound("a\nb\n", 60, 100), "a\nb");
    }

    #[test]
    fn only_served_headers_may_be_included() {
        let allowed = vec!["cuda_fp16.h".to_string()];
        assert_eq!(
            forbidden_access("#include <cuda_fp16.h>\nint x;\n", &allowed),
            None
        );
        assert_eq!(
            forbidden_access("%:include \"cuda_fp16.h\"\n", &allowed),
            None
        );
        for bad in [
            "#include <cuda_fp16.hpp>\n",
            "#define H <cuda_fp16.h>\n#include H\n",
            "#include_next <cuda_fp16.h>\n",
            "#if __has_include(<cuda_fp16.h>)\n#endif\n",
        ] {
            assert!(forbidden_access(bad, &allowed).is_some(), "{bad}");
        }
    }

    #[test]
    fn names_are_made_safe() {
        assert_eq!(safe_name("-rf.cu"), "-rf.cu");
        assert_eq!(safe_name("a b\n\"c\".cu"), "a_b__c_.cu");
        assert_eq!(safe_name(".."), "submission.cu");
        assert_eq!(safe_name(&"x".repeat(300)).len(), 100);
    }
}
