//! The grading secret of `racegate grade`: read from a file, a descriptor, or (deprecated) the
//! environment, in which case racegate first replaces itself by a copy whose environment never
//! held it, so `/proc/PID/environ` of no process shows it.

use std::path::Path;

use crate::{Error, Result};

/// The variable a secret may still come in (deprecated: it stays in /proc/PID/environ).
const SECRET_ENV: &str = "RACEGATE_GRADE_SECRET";
/// The variable that names the secret's file (`--secret-file`'s `env`).
const SECRET_FILE_ENV: &str = "RACEGATE_GRADE_SECRET_FILE";

/// For the commands that run a user's program (`gate`, `sanitize`): the grading secret, or the
/// name of its file, is no business of that program, so neither variable reaches any child.
/// Called first thing in those commands, before any child starts.
pub(super) fn withhold_from_children() {
    std::env::remove_var(SECRET_ENV);
    std::env::remove_var(SECRET_FILE_ENV);
}
/// After the re-execution: the inherited descriptor the secret is on (a number, not a secret).
const SECRET_FD_ENV: &str = "RACEGATE_GRADE_SECRET_FD";
/// The most of a secret file that is read.
const SECRET_MAX: u64 = 4096;

/// The secret, from wherever it was given; `None` when none was. When it came in the
/// environment, this process is first replaced by itself without it (this function then
/// returns only in the new process, which reads it back from the descriptor).
pub(super) fn secret(file: Option<&Path>) -> Result<Option<String>> {
    if let Ok(fd) = std::env::var(SECRET_FD_ENV) {
        std::env::remove_var(SECRET_FD_ENV);
        let fd: i32 = fd
            .parse()
            .map_err(|_| Error::Usage(format!("{SECRET_FD_ENV}={fd}: not a descriptor")))?;
        // Only the memory file this program's previous image made: never stdin, a terminal or
        // a file someone named by setting the variable by hand.
        // ignored: a descriptor that cannot be read is not the secret: refused just below
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
        if fd < 3 || !link.to_string_lossy().starts_with("/memfd:racegate-secret") {
            return Err(Error::Usage(format!(
                "{SECRET_FD_ENV}={fd} is set, but that descriptor is not racegate's secret; \
                 unset it and give the secret with --secret-file"
            )));
        }
        use std::io::Read;
        use std::os::fd::FromRawFd;
        // SAFETY: the descriptor was made by this program's previous image for this read, and
        // nothing else in this process knows it; the File closes it.
        let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
        let mut s = String::new();
        (&mut f)
            .take(SECRET_MAX)
            .read_to_string(&mut s)
            .map_err(|e| Error::io("reading the secret from descriptor", fd.to_string(), e))?;
        // As a file's: the first line, trimmed.
        let line = s.lines().next().unwrap_or("").trim().to_string();
        return Ok(Some(line).filter(|s| !s.is_empty()));
    }
    if let Some(s) = std::env::var(SECRET_ENV).ok().filter(|s| !s.is_empty()) {
        if let Some(p) = file {
            return Err(Error::Usage(format!(
                "two secrets: {SECRET_ENV} and --secret-file {}; give one",
                p.display()
            )));
        }
        reexec_without_secret(&s)?;
    }
    std::env::remove_var(SECRET_ENV);
    let Some(p) = file else { return Ok(None) };
    let meta = std::fs::metadata(p).map_err(|e| Error::io("reading the secret file", p, e))?;
    if !meta.is_file() {
        return Err(Error::Usage(format!(
            "--secret-file {}: not a regular file",
            p.display()
        )));
    }
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(p)
        .and_then(|f| f.take(SECRET_MAX).read_to_end(&mut bytes))
        .map_err(|e| Error::io("reading the secret file", p, e))?;
    // A secret that is not text is the file's mistake, as an empty one is (exit 2).
    let s = String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!(
            "--secret-file {}: not UTF-8 text (invalid byte at offset {})",
            p.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    let line = s.lines().next().unwrap_or("").trim().to_string();
    if line.is_empty() {
        return Err(Error::Usage(format!(
            "--secret-file {}: empty",
            p.display()
        )));
    }
    Ok(Some(line))
}

/// Replaces this process by itself with the same arguments and an environment that never held
/// the secret; the secret waits on an inherited memory file. Returns only on failure.
fn reexec_without_secret(secret: &str) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let name = std::ffi::CString::new("racegate-secret").expect("no NUL");
    // SAFETY: memfd_create with a valid name and no flags: a new descriptor, inherited on exec.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
    if fd < 0 {
        return Err(Error::process(
            "could not hold the secret for re-execution",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: writes our own buffer to our own descriptor, then rewinds it.
    let ok = unsafe {
        usize::try_from(libc::write(fd, secret.as_ptr().cast(), secret.len())) == Ok(secret.len())
            && libc::lseek(fd, 0, libc::SEEK_SET) == 0
    };
    if !ok {
        return Err(Error::Child(
            "could not hold the secret for re-execution".into(),
        ));
    }
    let exe = std::env::current_exe().map_err(|e| Error::io("finding", "racegate itself", e))?;
    let err = std::process::Command::new(exe)
        .arg0(std::env::args_os().next().unwrap_or_default())
        .args(std::env::args_os().skip(1))
        .env_remove(SECRET_ENV)
        .env(SECRET_FD_ENV, fd.to_string())
        .exec();
    Err(Error::process(
        "could not re-execute racegate without the secret in its environment",
        err,
    ))
}
