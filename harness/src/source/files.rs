//! The one reader for every file a user or a target names (a manifest, a baseline, an `--expect`
//! file, a rubric, a kernel's source, a header, a report a tool run left where the target could
//! write): a regular file only, of bounded size. A FIFO, a device, a socket or a directory is
//! refused with a message naming the path and what it is, checked before opening and again with
//! `fstat` on the descriptor opened with `O_NONBLOCK`, so a FIFO swapped in between cannot block
//! racegate. Text loses a leading UTF-8 byte-order mark. Layer 1, beside `proc/`: imports
//! `errors` only.
//!
//! ```no_run
//! use racegate::source::files;
//! let text = files::read_text("racegate.toml".as_ref(), "the manifest", files::TEXT_LIMIT)?;
//! # Ok::<(), racegate::Error>(())
//! ```

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::errors::{Error, Result};

/// The most racegate reads of a text file people write: a manifest, a rubric, an exercise, an
/// equivalents file, a kernel's source, a header.
pub const TEXT_LIMIT: u64 = 16 << 20;
/// The most racegate reads of a baseline (one entry per accepted finding).
pub const BASELINE_LIMIT: u64 = 64 << 20;
/// The most racegate reads of an `--expect` file (a program's golden output).
pub const EXPECT_LIMIT: u64 = 64 << 20;

/// Why a file was not read.
#[derive(Debug)]
pub enum Refusal {
    /// No such file.
    Missing,
    /// Not a regular file: what it is, e.g. "a FIFO (named pipe)".
    NotRegular(&'static str),
    /// A symbolic link, where links are not followed.
    Link,
    /// Larger than the limit given.
    TooLarge {
        /// Its size, when known before reading (a file still growing is cut at the limit).
        size: Option<u64>,
        /// The limit.
        limit: u64,
    },
    /// The system refused to open or read it.
    Io(std::io::Error),
}

/// What a file that is not a regular file is, for messages: "a FIFO (named pipe)", "a
/// directory", "a socket", "a character device", "a block device", "a symbolic link".
/// `None` for a regular file.
pub fn kind_of(t: &std::fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_symlink() {
        Some("a symbolic link")
    } else {
        Some("not a file")
    }
}

/// Why `path` cannot be read as a source: `does not exist`, or what it is instead of a regular
/// file (`is a FIFO (named pipe)`, `is a directory`, ...); `None` for a regular file (links
/// followed).
pub fn not_a_source(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) => kind_of(&m.file_type()).map(|k| format!("is {k}, not a source file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("does not exist".into()),
        Err(e) => Some(format!("cannot be read ({e})")),
    }
}

/// Checks without opening it that `path`, if it exists, is a regular file (links followed):
/// for a file a command will read only at its end, refused (exit 2) before any work.
pub fn check_regular(path: &Path, what: &str) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) => match kind_of(&m.file_type()) {
            Some(kind) => Err(refusal_error(path, what, Refusal::NotRegular(kind))),
            None => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(refusal_error(path, what, Refusal::Io(e))),
    }
}

/// Reads `path` whole if it is a regular file of at most `limit` bytes. With `follow_links`
/// false a symbolic link is refused, never followed (`O_NOFOLLOW`): the shape for files a target
/// could have written. Never blocks on a FIFO: the type is checked before the open, the open
/// does not wait (`O_NONBLOCK`), and the descriptor's own type is checked after it.
pub fn read_raw(
    path: &Path,
    limit: u64,
    follow_links: bool,
) -> std::result::Result<Vec<u8>, Refusal> {
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => Refusal::Missing,
        _ => Refusal::Io(e),
    };
    let before = match follow_links {
        true => std::fs::metadata(path),
        false => std::fs::symlink_metadata(path),
    }
    .map_err(io)?;
    if before.file_type().is_symlink() {
        return Err(Refusal::Link);
    }
    if let Some(kind) = kind_of(&before.file_type()) {
        return Err(Refusal::NotRegular(kind));
    }
    if before.len() > limit {
        return Err(Refusal::TooLarge {
            size: Some(before.len()),
            limit,
        });
    }
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow_links {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW on a link swapped in since the check.
            Some(libc::ELOOP) if !follow_links => Refusal::Link,
            _ => io(e),
        })?;
    // What was opened, which may not be what was checked.
    let opened = file.metadata().map_err(Refusal::Io)?;
    if let Some(kind) = kind_of(&opened.file_type()) {
        return Err(Refusal::NotRegular(kind));
    }
    // A capacity hint only: none where the size does not fit this machine's usize.
    let mut bytes = Vec::with_capacity(usize::try_from(opened.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Refusal::TooLarge { size: None, limit });
    }
    Ok(bytes)
}

/// The error for a refusal: bad input (exit 2) for a file of the wrong kind or size, which
/// names the path and what it is; the system's error (exit 3) when it could not be read.
pub fn refusal_error(path: &Path, what: &str, r: Refusal) -> Error {
    let shown = path.display();
    match r {
        Refusal::Missing => Error::io(
            "reading",
            path,
            std::io::Error::from(std::io::ErrorKind::NotFound),
        ),
        Refusal::NotRegular(kind) => {
            Error::Usage(format!("{what} {shown} is {kind}, not a regular file"))
        }
        Refusal::Link => Error::Usage(format!(
            "{what} {shown} is a symbolic link, which is not followed here"
        )),
        Refusal::TooLarge { size, limit } => Error::Usage(format!(
            "{what} {shown} is {}, over racegate's limit of {} for it",
            size.map_or_else(|| "larger".into(), bytes_shown),
            bytes_shown(limit)
        )),
        Refusal::Io(e) => Error::io("reading", path, e),
    }
}

/// `12 bytes`, `3 MiB`.
fn bytes_shown(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// The bytes of a regular file of at most `limit` bytes that a user named (links followed);
/// `what` names it in messages ("the baseline").
pub fn read_bytes(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>> {
    read_raw(path, limit, true).map_err(|r| refusal_error(path, what, r))
}

/// [`read_bytes`], `None` when there is no such file.
pub fn read_bytes_if_exists(path: &Path, what: &str, limit: u64) -> Result<Option<Vec<u8>>> {
    match read_raw(path, limit, true) {
        Ok(b) => Ok(Some(b)),
        Err(Refusal::Missing) => Ok(None),
        Err(r) => Err(refusal_error(path, what, r)),
    }
}

/// The text of a regular file of at most `limit` bytes that a user named (links followed),
/// without a leading byte-order mark. Bytes that are not UTF-8 are bad input.
pub fn read_text(path: &Path, what: &str, limit: u64) -> Result<String> {
    utf8(path, what, read_bytes(path, what, limit)?)
}

/// [`read_text`], `None` when there is no such file.
pub fn read_text_if_exists(path: &Path, what: &str, limit: u64) -> Result<Option<String>> {
    read_bytes_if_exists(path, what, limit)?
        .map(|b| utf8(path, what, b))
        .transpose()
}

/// `bytes` as text without a leading byte-order mark, bytes that are not UTF-8 replaced by
/// U+FFFD: for files a tool or a target wrote, read for what they say.
pub fn lossy_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(strip_bom(bytes)).into_owned()
}

fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes)
}

fn utf8(path: &Path, what: &str, mut bytes: Vec<u8>) -> Result<String> {
    if bytes.starts_with(b"\xef\xbb\xbf") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!(
            "{what} {} is not UTF-8 text (an invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn fifo(dir: &Path, name: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads one NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        p
    }

    #[test]
    fn a_regular_file_is_read_and_its_bom_dropped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.toml");
        std::fs::write(&p, b"\xef\xbb\xbfx = 1\n").unwrap();
        assert_eq!(read_text(&p, "the manifest", 100).unwrap(), "x = 1\n");
        assert_eq!(read_bytes(&p, "the manifest", 100).unwrap().len(), 9);
        assert!(read_text_if_exists(&d.path().join("none"), "x", 10)
            .unwrap()
            .is_none());
        std::fs::write(&p, b"a\xffb").unwrap();
        let e = read_text(&p, "the manifest", 100).unwrap_err().to_string();
        assert!(
            e.contains("is not UTF-8 text") && e.contains("offset 1"),
            "{e}"
        );
    }

    #[test]
    fn a_fifo_a_directory_and_a_device_are_refused_at_once() {
        let d = tempfile::tempdir().unwrap();
        let f = fifo(d.path(), "base.json");
        let start = Instant::now();
        let e = read_text(&f, "the baseline", 100).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
        let msg = e.to_string();
        assert!(
            msg.contains(&f.display().to_string())
                && msg.contains("is a FIFO (named pipe), not a regular file"),
            "{msg}"
        );
        let e = read_text(d.path(), "the baseline", 100).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = read_bytes(Path::new("/dev/zero"), "the expected output", 100).unwrap_err();
        assert!(e.to_string().contains("is a character device"), "{e}");
        // A link to a FIFO is followed for a user's file, and still refused.
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = read_text(&link, "the manifest", 100).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        // Not followed for a target's.
        assert!(matches!(read_raw(&link, 100, false), Err(Refusal::Link)));
    }

    #[test]
    fn a_file_over_the_limit_is_refused_with_the_limit_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        std::fs::write(&p, vec![b'x'; 2 << 20]).unwrap();
        let e = read_text(&p, "the rubric", 1 << 20).unwrap_err();
        assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
        assert!(
            e.to_string().contains("over racegate's limit of 1 MiB"),
            "{e}"
        );
        assert!(read_text(&p, "the rubric", 2 << 20).is_ok());
    }
}
