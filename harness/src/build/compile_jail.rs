//! The compile child's side (`racegate __compile`): it limits itself, reads its request and
//! source, refuses what the token scanner recognises, loads NVRTC, closes every door to the file
//! system ([`crate::proc::confine`]) when compiling a submission, and only then compiles. The
//! parent's side is [`crate::build::compile_child`]. Also here: [`probe_confinement`], which
//! shows on this machine that a confined child sees no file.

use std::path::Path;

use crate::build::compile;
use crate::build::compile_child::{
    bound, compile, forbidden_access, log_bound, Envelope, Limits, Outcome, Reply, Request,
    MAX_REPLY, PARENT_ENV,
};
use crate::build::toolchain;
use crate::errors::{Error, Result};
use crate::proc::confine::{self, Layers};

/// What a submission's compile child is confined by on this machine, shown to work: children
/// confined as a submission's are, with the token scanner switched off, ask NVRTC's
/// preprocessor whether a file every Linux machine has exists, and include it and a file that
/// does not exist. Confined means at least one layer applied, the preprocessor saw no file, no
/// content came back, and the include of the real file failed exactly as the include of the
/// missing one did (a layer that answers "permission denied" for a file that exists and "no
/// such file" for one that does not still tells which files exist: Landlock alone does).
pub fn probe_confinement(exe: &Path) -> Result<Probe> {
    let (real, missing) = ("/proc/self/status", "/proc/self/racegate-no-such-file");
    let include = |path: &str| -> Result<String> {
        let src =
            format!("#include \"{path}\"\nextern \"C\" __global__ void racegate_probe() {{}}\n");
        let mut req = Request::new_submission("racegate_probe.cu", &src);
        req.scanner = false;
        Ok(match compile(exe, &req, &Limits::default())?.outcome {
            Outcome::Built(b) => format!("built\n{}", b.ptx),
            other => other.to_string(),
        }
        .replace(path, "PATH")
        // The caret under the path moves with its length.
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" "))
    };
    let (a, b) = (include(real)?, include(missing)?);
    // `/proc/self/status` starts with "Name:": its text in a log is a leak.
    let same_answer = a == b && !a.contains("Name:");
    let probe = has_include(exe)?;
    #[cfg(feature = "internals")]
    if let Some(simulated) = simulated_machine() {
        return Ok(simulated);
    }
    Ok(Probe {
        held: probe.held && same_answer,
        ..probe
    })
}

/// A test build only (the `internals` feature, never in a release): `RACEGATE_TEST_LAYERS`
/// makes the probe report a machine with only the layers it names (`none`, or a comma list of
/// `seccomp`, `landlock`, `mount`), so that what grading does on such a machine is tested
/// through the real binary on any machine. The compiles themselves stay confined as before.
#[cfg(feature = "internals")]
fn simulated_machine() -> Option<Probe> {
    let v = std::env::var("RACEGATE_TEST_LAYERS").ok()?;
    let has = |n: &str| v.split(',').any(|x| x.trim() == n);
    let mut layers = Layers {
        seccomp: has("seccomp"),
        landlock: has("landlock"),
        mount_namespace: has("mount"),
        missing: Vec::new(),
    };
    for (on, name) in [
        (layers.seccomp, "seccomp"),
        (layers.landlock, "Landlock"),
        (layers.mount_namespace, "mount namespace"),
    ] {
        if !on {
            layers
                .missing
                .push(format!("{name}: simulated (RACEGATE_TEST_LAYERS={v})"));
        }
    }
    Some(Probe { layers, held: true })
}

/// The `__has_include` half of [`probe_confinement`].
fn has_include(exe: &Path) -> Result<Probe> {
    let src = format!(
        "#if __has_include(\"/proc/self/status\") || __has_include(\"/etc/passwd\")\n\
         #error {PROBE_SAW_FILES}\n#endif\nextern \"C\" __global__ void racegate_probe() {{}}\n"
    );
    let mut req = Request::new_submission("racegate_probe.cu", &src);
    req.scanner = false;
    let c = compile(exe, &req, &Limits::default())?;
    let layers = c.layers.unwrap_or_default();
    let held = match &c.outcome {
        Outcome::Built(_) => true,
        Outcome::Failed(log) if log.contains(PROBE_SAW_FILES) => false,
        other => {
            return Err(Error::Child(format!(
                "the confinement probe's compile ended unexpectedly: {other}"
            )))
        }
    };
    Ok(Probe { layers, held })
}

const PROBE_SAW_FILES: &str = "racegate_probe_saw_files";

/// What [`probe_confinement`] found.
#[derive(Clone, Debug)]
pub struct Probe {
    pub layers: Layers,
    /// The probe's preprocessor saw no file.
    pub held: bool,
}

impl Probe {
    /// Whether a submission's compile is confined by the kernel here.
    pub fn confined(&self) -> bool {
        self.held && self.layers.any()
    }

    /// One line for people: the layers, and whether they held.
    pub fn describe(&self) -> String {
        match (self.confined(), self.layers.any()) {
            (true, _) => self.layers.describe(),
            (false, true) => format!(
                "{}, but a probe compile still saw files: no kernel-level confinement holds",
                self.layers.describe()
            ),
            (false, false) => format!(
                "{}: a submission's compile is confined by the token scanner alone (a pattern \
                 check, no guarantee); --require-confinement refuses to grade here",
                self.layers.describe()
            ),
        }
    }
}

/// Sets this process's limits: address space, no core file, files it writes at most
/// [`MAX_REPLY`] bytes.
fn limit_self(memory_mib: u64) -> Result<()> {
    // Dies with racegate: a compile whose parent was killed (Ctrl-C, a CI timeout) must not run
    // on unwatched. The parent waits for the child on the thread that started it, so that
    // thread outlives the child.
    // SAFETY: prctl and getppid with integer arguments only change or read this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    // Racegate may already be gone (killed between the fork and the prctl).
    if let Some(parent) = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|p| p.parse::<i32>().ok())
    {
        // SAFETY: getppid only reads this process's parent id.
        if unsafe { libc::getppid() } != parent {
            return Err(Error::Child(
                "racegate, the compile's parent, is gone".into(),
            ));
        }
    }
    set_limit(
        "memory",
        libc::RLIMIT_AS,
        memory_mib.saturating_mul(1 << 20),
    )?;
    set_limit("core files", libc::RLIMIT_CORE, 0)?;
    set_limit("file size", libc::RLIMIT_FSIZE, MAX_REPLY)
}

/// Sets this process's `resource` limit, soft and hard, to `value`, never above the hard limit
/// already in force (a shell's `ulimit -v`): lowering is always allowed, raising is not.
fn set_limit(what: &str, resource: libc::__rlimit_resource_t, value: u64) -> Result<()> {
    let mut now = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one valid struct.
    let hard = match unsafe { libc::getrlimit(resource, &mut now) } {
        0 => now.rlim_max,
        _ => libc::RLIM_INFINITY,
    };
    let value = (value as libc::rlim_t).min(hard);
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads one valid struct.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(Error::process(
            format!("could not limit the compile's {what}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// The child's side (`racegate __compile`): limits itself, reads the request and the source,
/// refuses file access when asked, runs NVRTC on a thread with a `stack_mib` stack and writes
/// the reply. An error is returned only when it could not do that job (the parent's problem).
pub fn child(
    request: &Path,
    source: &Path,
    reply: &Path,
    memory_mib: u64,
    stack_mib: u64,
) -> Result<()> {
    limit_self(memory_mib)?;
    let bytes = std::fs::read(request).map_err(|e| Error::io("reading", request, e))?;
    let req: Request = serde_json::from_slice(&bytes)
        .map_err(|e| Error::input(request.display().to_string(), e))?;
    let text = std::fs::read_to_string(source).map_err(|e| Error::io("reading", source, e))?;
    // Opened now: once confined, the child can open nothing, not even its reply.
    let mut out = std::fs::File::create(reply).map_err(|e| Error::io("creating", reply, e))?;
    let (answer, layers) = answer(req, text, stack_mib)?;
    let json = serde_json::to_vec(&Envelope {
        reply: answer,
        layers,
    })
    .expect("a reply serializes");
    use std::io::Write;
    out.write_all(&json)
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("writing", reply, e))
}

/// The child's work once its files are read: the scanner's refusal, NVRTC loaded and warmed
/// up, the confinement, then the compile on a thread with a `stack_mib` stack.
fn answer(req: Request, text: String, stack_mib: u64) -> Result<(Reply, Option<Layers>)> {
    let refuse = req.refuse_file_access;
    if req.scanner && refuse {
        if let Some(a) = forbidden_access(&text, &req.allowed_includes) {
            let reply = Reply::Refused {
                line: a.line,
                what: a.what.clone(),
            };
            return Ok((reply, None));
        }
    }
    // Before NVRTC is loaded (it may start threads): the namespaces the empty root needs.
    let namespaces = req
        .confine
        .filter(|w| w.mount_namespace)
        .map(|_| confine::enter_namespaces());
    match toolchain::nvrtc() {
        Err(Error::NvrtcMissing { searched }) => {
            return Ok((Reply::NvrtcMissing { searched }, None))
        }
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    let layers = match req.confine {
        Some(want) => {
            // Everything NVRTC loads lazily (libnvrtc-builtins, its locale data) is loaded by
            // a first compile of nothing, before the door closes.
            // A warm-up that fails under the child's limits is the limit's doing (the parent
            // names an out-of-memory log as the memory limit), never the machine's.
            if let Err(e) =
                compile::compile_in_memory(WARM_UP_NAME, WARM_UP, &req.options, &req.headers)
            {
                let log = format!("NVRTC's warm-up compile failed: {e}");
                return Ok((Reply::Failed { log }, None));
            }
            let layers = confine::no_file_access(want, namespaces);
            if req.require_confinement && !layers.any() {
                return Ok((Reply::Unconfined { layers }, None));
            }
            Some(layers)
        }
        None => None,
    };
    let run = move || compile::compile_in_memory(&req.name, &text, &req.options, &req.headers);
    let nvrtc = std::thread::Builder::new()
        .name("nvrtc".into())
        .stack_size(usize::try_from(stack_mib << 20).unwrap_or(usize::MAX))
        .spawn(run);
    // With a small address space the thread's stack may not fit (NVRTC's own threads took
    // their share): that is the memory limit, named as such by the parent.
    let nvrtc = match nvrtc {
        Ok(t) => t,
        Err(e) => {
            let log = format!("error: out of memory: could not start NVRTC's thread ({e})");
            return Ok((Reply::Failed { log }, None));
        }
    };
    // A request that may read files is a team's own code (the submission's refuses).
    let (lines, bytes) = log_bound(!refuse);
    let reply = match nvrtc.join() {
        Ok(Ok(b)) => Reply::Built {
            ptx: b.ptx,
            options: b.options,
        },
        Ok(Err(Error::Compile { log, .. })) => Reply::Failed {
            log: bound(&log, lines, bytes),
        },
        Ok(Err(e)) => Reply::Failed { log: e.to_string() },
        Err(_) => return Err(Error::Child("NVRTC's thread panicked".into())),
    };
    Ok((reply, layers))
}

/// The program compiled before confinement, so NVRTC has loaded all it needs.
const WARM_UP_NAME: &str = "racegate_warm_up.cu";
const WARM_UP: &str = "extern \"C\" __global__ void racegate_warm_up(int *p) { if (p) *p = 1; }\n";

#[cfg(test)]
mod tests {
    /// A limit the system refuses (here: a resource that does not exist) keeps the OS's reason
    /// as the error's cause; inconclusive (exit 3), as before.
    #[test]
    fn a_limit_the_system_refuses_keeps_the_os_reason() {
        let e = super::set_limit("nothing", 9999, 0).unwrap_err();
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(cause.and_then(|c| c.raw_os_error()), Some(libc::EINVAL));
        let shown = e.chain().to_string();
        assert!(
            shown.starts_with("could not limit the compile's nothing: "),
            "{shown}"
        );
        assert_eq!(shown.matches("(os error 22)").count(), 1, "{shown}");
        assert_eq!(e.exit_code(), crate::errors::exit::INCONCLUSIVE);
    }
}
