//! Values several commands derive from their flags and the machine, worked out in one place
//! (ripgrep's `HiArgs` shape): the root, the catalog (built-in or a manifest), the number of
//! processes at once, racegate's own executable (the worker the engine spawns), the NVRTC
//! architecture and compute-sanitizer. Also the small pieces of I/O every command shares.

use std::path::{Path, PathBuf};

use std::time::Duration;

use crate::judge::battery::Battery;
use crate::source::catalog::Catalog;
use crate::{build::toolchain, run::device, Error, Result};

/// Options every command takes.
#[derive(clap::Args)]
pub struct Global {
    /// Project root (holds kernels/ and buggy_variants/); default: the nearest ancestor of
    /// the current directory that has a kernels/ folder.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Use the kernels of a racegate.toml manifest instead of kernels/ and buggy_variants/
    /// (default: ./racegate.toml when the current folder has one and --root is not given).
    #[arg(long, global = true, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

/// Derived once per invocation.
pub struct Settings {
    /// Processes (stress workers and sanitizers) at once.
    pub jobs: usize,
    /// racegate's own executable, re-run through the hidden worker subcommands.
    pub worker: PathBuf,
    /// NVRTC virtual architecture: the device's, else `compute_90`.
    pub arch: String,
    /// compute-sanitizer; `None` when it is not installed.
    pub sanitizer: Option<PathBuf>,
}

impl Settings {
    /// `jobs`: the flag's value; default: the number of cores. `--jobs 0` is bad input (exit
    /// 2): nothing would ever run.
    pub fn new(jobs: Option<usize>) -> Result<Settings> {
        if jobs == Some(0) {
            return Err(Error::Usage(
                "invalid value '0' for '--jobs <JOBS>': must be at least 1".into(),
            ));
        }
        Ok(Settings {
            jobs: jobs.unwrap_or_else(crate::judge::battery::default_jobs),
            worker: crate::judge::battery::current_worker()?,
            arch: device::arch_or_default(),
            sanitizer: toolchain::compute_sanitizer(),
        })
    }
}

impl Settings {
    /// The battery `check` and `gate` run: deadlines in seconds, as the flags give them.
    pub fn battery(
        &self,
        trials: u32,
        seed: u64,
        stress_timeout: f64,
        sanitize_timeout: f64,
    ) -> Battery {
        Battery {
            arch: self.arch.clone(),
            sanitizer: self.sanitizer.clone(),
            ..Battery::for_machine(
                trials,
                seed,
                Duration::from_secs_f64(stress_timeout),
                Duration::from_secs_f64(sanitize_timeout),
                Some(self.jobs),
            )
        }
    }
}

/// `--root`, else the project root above the current folder, else the current folder: for
/// commands that work anywhere (`doctor`).
pub fn root_or_cwd(global: &Global) -> PathBuf {
    root(global).unwrap_or_else(|_| std::env::current_dir().unwrap_or_else(|_| ".".into()))
}

/// The project root: `--root`, else the nearest ancestor of the current folder with `kernels/`
/// or `racegate.toml`.
pub fn root(global: &Global) -> Result<PathBuf> {
    if let Some(r) = &global.root {
        return match std::fs::metadata(r) {
            Ok(m) if m.is_dir() => Ok(r.clone()),
            Ok(_) => Err(Error::Usage(format!(
                "--root {}: not a folder",
                crate::report::visible::visible_path(r)
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Usage(format!(
                "--root {}: no such folder",
                crate::report::visible::visible_path(r)
            ))),
            Err(e) => Err(Error::input(
                format!("--root {}", crate::report::visible::visible_path(r)),
                e,
            )),
        };
    }
    let cwd = current_dir()?;
    toolchain::find_root(&cwd).ok_or_else(|| {
        Error::Usage(format!(
            "no kernels/ folder in {} or any parent; run racegate from a project, or pass --root DIR",
            cwd.display()
        ))
    })
}

pub fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().map_err(|e| Error::input("no current directory", e))
}

/// The cases the command works on: the manifest's kernels with `--manifest` (or `manifest`, a
/// command's own default, or `./racegate.toml` when the current folder has one and `--root`
/// does not point elsewhere), else the built-in catalog under the root.
pub fn catalog(global: &Global, manifest: Option<&Path>) -> Result<Catalog> {
    let local = Path::new(crate::source::manifest::FILE);
    // A worker child gets --root or --manifest from its parent, so this never changes which
    // catalog a child loads.
    // Anything named racegate.toml counts as found (a folder, a FIFO, a dangling link), so that
    // it is refused by name below rather than silently passed over for the kernels/ catalog.
    let found = (global.root.is_none() && local.symlink_metadata().is_ok()).then_some(local);
    match global.manifest.as_deref().or(manifest).or(found) {
        Some(m) => {
            // Anything there is read as a manifest, which refuses a FIFO or a folder by name.
            if !m.exists() {
                return Err(Error::Usage(format!(
                    "no manifest at {}; write one (see examples/gate/racegate.toml) or pass --manifest FILE",
                    m.display()
                )));
            }
            let m = std::fs::canonicalize(m).unwrap_or_else(|_| m.to_path_buf());
            Ok(Catalog::from_manifest(
                crate::source::manifest::Manifest::load(&m)?,
            ))
        }
        None => Catalog::discover(&root(global)?),
    }
}

/// Checks a manifest's kernels against their compiled code (a wrong entry or argument list is
/// bad input, exit 2) before anything runs; a no-op for the built-in catalog. Without NVRTC
/// the check cannot run: a command that needs a device says so first (4 comes before 3).
pub fn validate(catalog: &Catalog, needs_device: bool) -> Result<()> {
    crate::run::device::check_signatures(catalog, needs_device)
}

/// Fails with "no CUDA device" (exit 4) when there is none.
pub fn require_device() -> Result<device::DeviceInfo> {
    device::require()
}

/// A seed nobody chose: different on every call.
pub fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) >> 16
}

/// Writes a report file the user asked for, replacing what it held: a regular file (or
/// `/dev/null`), opened without waiting on a FIFO; a failed write is an error, never dropped.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    write_to(path, text, false)
}

/// A table a run that measured nothing (no device) was asked for: written when there is none at
/// `path`, so a step that uploads it finds it; one already there (a committed table) is left
/// as it was, and the note says so.
pub fn write_unmeasured(path: &Path, text: &str) -> Result<()> {
    if std::fs::symlink_metadata(path).is_ok() {
        eprintln!(
            "note: {} left as it was: nothing was measured",
            crate::report::visible::visible(&path.display().to_string())
        );
        return Ok(());
    }
    write_file(path, text)
}

/// Appends `text` to a file the user named (`$GITHUB_STEP_SUMMARY`), as [`write_file`].
pub fn append_file(path: &Path, text: &str) -> Result<()> {
    write_to(path, text, true)
}

fn write_to(path: &Path, text: &str, append: bool) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: a FIFO put there since the check fails to open (no reader) instead of
    // blocking; on a regular file it changes nothing.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => not_a_file(path, "a report", "a FIFO (named pipe)"),
            Some(libc::EISDIR) => not_a_file(path, "a report", "a directory"),
            _ => Error::io("opening", path, e),
        })?;
    let meta = file.metadata().map_err(|e| Error::io("opening", path, e))?;
    if let Some(kind) = destination_kind(&meta) {
        return Err(not_a_file(path, "a report", kind));
    }
    let mut file = file;
    file.write_all(text.as_bytes())
        .and_then(|_| file.flush())
        .map_err(|e| Error::io("writing", path, e))
}

/// What a destination is when racegate will not write a report there: a FIFO, a directory, a
/// socket or a device other than `/dev/null`. `None` for a regular file.
fn destination_kind(m: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let dev_null = m.file_type().is_char_device()
        && std::fs::metadata("/dev/null").is_ok_and(|n| n.rdev() == m.rdev());
    match dev_null {
        true => None,
        false => crate::source::files::kind_of(&m.file_type()),
    }
}

fn not_a_file(path: &Path, what: &str, kind: &str) -> Error {
    let hint = match what {
        "--json" => " (`--json -` writes it to standard output)",
        _ => "",
    };
    Error::Usage(format!(
        "{what} destination {} is {kind}, not a regular file; racegate writes reports to regular \
         files only{hint}",
        path.display()
    ))
}

/// Checks, before any work, a file a report will be written to (`what` names it: `--sarif`,
/// `$GITHUB_STEP_SUMMARY`): a regular file or none yet, in a folder that exists. A FIFO, a
/// directory, a socket or a device (but `/dev/null`) is bad input (exit 2), so a run never ends
/// blocked on a FIFO or unable to save its report.
pub fn check_destination(path: &Path, what: &str) -> Result<()> {
    if path == Path::new("-") {
        return Ok(());
    }
    match std::fs::metadata(path) {
        Ok(m) => match destination_kind(&m) {
            Some(kind) => Err(not_a_file(path, what, kind)),
            None => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            match parent {
                Some(d) if !d.is_dir() => Err(Error::Usage(format!(
                    "{what} {}: the folder {} does not exist",
                    path.display(),
                    d.display()
                ))),
                _ => Ok(()),
            }
        }
        Err(e) => Err(Error::io("checking", path, e)),
    }
}

/// Refuses (exit 2) an output that is one of the run's inputs, before anything is written: the
/// same file by device and inode when both exist (another spelling of the path or a link
/// included), else the same absolute path once its folder is resolved. `racegate gate --json
/// racegate.toml` would otherwise replace the manifest it read with its report.
pub fn refuse_overwriting_inputs(output: &Path, inputs: &[&Path]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if output == Path::new("-") {
        return Ok(());
    }
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let resolved = |p: &Path| -> Option<PathBuf> {
        let abs = std::path::absolute(p).ok()?;
        let dir = abs.parent()?;
        Some(std::fs::canonicalize(dir).ok()?.join(abs.file_name()?))
    };
    let (out_id, out_path) = (id(output), resolved(output));
    for input in inputs {
        let same = match (out_id, id(input)) {
            (Some(a), Some(b)) => a == b,
            _ => out_path.is_some() && out_path == resolved(input),
        };
        if same {
            return Err(Error::Usage(format!(
                "refusing to write {}: it is {}, an input of this run, and writing the report \
                 there would replace it; choose another file",
                output.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// `p` made absolute with its longest existing ancestor resolved (links followed), so that two
/// spellings of one place compare equal before either exists.
fn resolved_lenient(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut rest = Vec::new();
    let mut at = abs.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |acc: PathBuf, c| acc.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = parent;
            }
            _ => return abs,
        }
    }
}

/// Checks `--html DIR` before any work (exit 2): a folder, or a path where one can be made (its
/// nearest existing ancestor a folder); never a file, a FIFO or a device; and no other report
/// of the run (`outputs`) inside it, where the report's pages would be written beside it.
pub fn check_html_dir(dir: &Path, outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    let mut at = dir.to_path_buf();
    loop {
        match std::fs::metadata(&at) {
            Ok(m) if m.is_dir() => break,
            Ok(m) => {
                let kind = destination_kind(&m).unwrap_or("a file");
                return Err(Error::Usage(format!(
                    "--html {}: {} is {kind}, not a folder; give a folder (made if missing)",
                    dir.display(),
                    at.display()
                )));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => at = p.to_path_buf(),
                    _ => break,
                }
            }
            Err(e) => return Err(Error::io("checking", &at, e)),
        }
    }
    let folder = resolved_lenient(dir);
    for (flag, path) in outputs {
        if let Some(p) = path.filter(|p| *p != Path::new("-")) {
            if resolved_lenient(p).starts_with(&folder) {
                return Err(Error::Usage(format!(
                    "{flag} {} is inside the --html folder {}, which holds the HTML report's \
                     pages: choose a file outside it",
                    p.display(),
                    dir.display()
                )));
            }
        }
    }
    Ok(())
}

/// Checks every report destination of a command before it starts: each is a regular file or
/// none yet ([`check_destination`]) and none is an input ([`refuse_overwriting_inputs`]).
/// `outputs` pairs each flag with its file.
pub fn check_outputs(outputs: &[(&str, Option<&Path>)], inputs: &[&Path]) -> Result<()> {
    for (flag, path) in outputs {
        // `-` is standard output for `--json` alone (the text report then goes to standard
        // error); for any other report it would be a file named `-`, which nobody means.
        if *path == Some(Path::new("-")) {
            if *flag == "--json" {
                continue;
            }
            return Err(Error::Usage(format!(
                "{flag} -: only --json writes to standard output (`--json -`); give {flag} a \
                 file name (`./-` for a file named `-`)"
            )));
        }
        if let Some(p) = path {
            check_destination(p, flag)?;
            refuse_overwriting_inputs(p, inputs)?;
        }
    }
    Ok(())
}

/// The existing regular files a command line names, each word resolved against `cwd`: a
/// program, a checker script (`./check.sh` in `--check "./check.sh --strict"`), the data files
/// it reads. Words are split on whitespace with surrounding quotes dropped: what the shell
/// would run is not re-parsed, only every word that is a file is kept from being a report.
pub fn files_named_by<'a>(words: impl IntoIterator<Item = &'a str>, cwd: &Path) -> Vec<PathBuf> {
    words
        .into_iter()
        .flat_map(str::split_whitespace)
        .map(|w| w.trim_matches(['"', '\'']))
        .filter(|w| !w.is_empty() && !w.starts_with('-'))
        .map(|w| cwd.join(w))
        .filter(|p| p.is_file())
        .collect()
}

/// The files a catalog was read from: its manifest, each case's source, each kernel's oracle
/// reference, and what its programs name (the program, its arguments that are files, its
/// checker, its expected output). What no report may be written over.
pub fn inputs_of(catalog: &Catalog) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = Vec::new();
    if let Some(m) = &catalog.manifest {
        v.push(m.path.clone());
        for k in &m.kernels {
            if let crate::source::manifest::Check::Reference { path, .. } = &k.check {
                v.push(m.dir.join(path));
            }
        }
        for p in &m.programs {
            v.extend(p.expect.clone());
            let words = std::iter::once(p.command.as_str())
                .chain(p.args.iter().map(String::as_str))
                .chain(p.check.as_deref());
            v.extend(files_named_by(words, &p.cwd));
        }
    }
    for c in &catalog.cases {
        let p = catalog.root.join(&c.path);
        if !v.contains(&p) {
            v.push(p);
        }
    }
    v
}

/// Serializes a result for `--json`.
pub fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).expect("results serialize")
}

/// A progress bar for `len` steps counted in `unit`; hidden when `hidden`.
pub fn progress(len: u64, unit: &str, hidden: bool) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {{pos}}/{{len}} {unit} [{{elapsed}}] {{msg}}"
        ))
        .expect("valid template"),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `--root` the system cannot look at (here: under a file) is bad input (exit 2) whose
    /// cause, the OS's error, is kept and printed once.
    #[test]
    fn a_root_that_cannot_be_looked_at_keeps_the_os_reason() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "").unwrap();
        let global = Global {
            root: Some(d.path().join("f/x")),
            manifest: None,
        };
        let e = root(&global).unwrap_err();
        let cause = std::error::Error::source(&e).and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            cause.map(|c| c.kind()),
            Some(std::io::ErrorKind::NotADirectory)
        );
        let shown = e.chain().to_string();
        assert!(shown.starts_with("--root "), "{shown}");
        assert_eq!(shown.matches("(os error 20)").count(), 1, "{shown}");
        assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
    }

    #[test]
    fn an_output_that_is_an_input_is_refused_by_inode_or_by_path() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("racegate.toml");
        std::fs::write(&m, "x").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let hard = d.path().join("hard.toml");
        std::fs::hard_link(&m, &hard).unwrap();
        let soft = d.path().join("soft.toml");
        std::os::unix::fs::symlink(&m, &soft).unwrap();
        for out in [m.clone(), d.path().join("sub/../racegate.toml"), hard, soft] {
            let e = refuse_overwriting_inputs(&out, &[Path::new("/nonexistent"), &m]);
            let e = e.unwrap_err();
            assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
            assert!(e.to_string().contains("an input of this run"), "{e}");
        }
        // An input not there yet (a baseline to be written) is compared by path.
        let b = d.path().join("b.json");
        assert!(refuse_overwriting_inputs(&d.path().join("sub/../b.json"), &[&b]).is_err());
        refuse_overwriting_inputs(&d.path().join("report.json"), &[&m, &b]).unwrap();
        refuse_overwriting_inputs(Path::new("-"), &[&m]).unwrap();
    }

    #[test]
    fn a_destination_must_be_a_regular_file_or_dev_null() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads one NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = check_destination(&fifo, "--sarif").unwrap_err().to_string();
        assert!(
            e.contains("is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        // Written to anyway, it fails at once instead of waiting for a reader.
        let start = std::time::Instant::now();
        assert!(write_file(&fifo, "x")
            .unwrap_err()
            .to_string()
            .contains("FIFO"));
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
        assert!(check_destination(d.path(), "--json").is_err());
        assert!(check_destination(Path::new("/dev/full"), "--json").is_err());
        check_destination(Path::new("/dev/null"), "--json").unwrap();
        write_file(Path::new("/dev/null"), "x").unwrap();
        let e = check_destination(&d.path().join("no/such/r.json"), "--junit").unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let r = d.path().join("r.json");
        check_destination(&r, "--junit").unwrap();
        write_file(&r, "one").unwrap();
        append_file(&r, " two").unwrap();
        assert_eq!(std::fs::read_to_string(&r).unwrap(), "one two");
    }
}
