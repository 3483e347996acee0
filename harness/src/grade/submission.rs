//! Checks on a submitted `.cu` file before anything runs: a regular file (not a link, a FIFO or
//! a device), readable, not empty, not binary, UTF-8, not huge; and every reason a submission
//! can be refused ([`Rejection`]), including those of the signature check
//! (`signature.rs`). Every rejection is a message a student can act on.

use std::path::Path;

/// Largest submission accepted, in bytes.
pub const MAX_BYTES: u64 = 256 * 1024;

/// Why a submission cannot be graded at all, or why its kernel does not fit the spec.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "problem", content = "detail", rename_all = "snake_case")]
pub enum Rejection {
    Unreadable(String),
    Empty,
    TooLarge(u64),
    Binary,
    NotUtf8 {
        offset: usize,
    },
    MissingKernel {
        wanted: String,
        closest: Option<String>,
        found: Vec<String>,
    },
    NotExternC {
        name: String,
        line: usize,
    },
    WrongSignature {
        name: String,
        line: usize,
        expected: Vec<String>,
        found: Vec<String>,
        /// Which reading failed (the compiled code or the declaration) and what differs.
        why: String,
    },
    /// The compiled code has the kernel, but no declaration of it can be read in the file.
    Undeclared {
        name: String,
        params: Vec<String>,
    },
}

/// `line N: ` when the line is known.
fn at(line: usize) -> String {
    if line > 0 {
        format!("line {line}: ")
    } else {
        String::new()
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Unreadable(e) => write!(f, "the file cannot be read: {e}"),
            Rejection::Empty => write!(f, "the file is empty"),
            Rejection::TooLarge(n) => write!(f, "the file is {n} bytes; submissions are limited to {MAX_BYTES} bytes"),
            Rejection::Binary => write!(f, "the file is binary (it contains NUL bytes), not CUDA source"),
            Rejection::NotUtf8 { offset } => write!(f, "the file is not UTF-8 text (invalid byte at offset {offset})"),
            Rejection::MissingKernel { wanted, closest, found } => {
                write!(f, "no kernel named `{wanted}`")?;
                if let Some(c) = closest {
                    write!(f, "; did you mean `{c}`? (the name must match exactly)")?;
                }
                if found.is_empty() {
                    write!(f, "; the file defines no __global__ function")
                } else {
                    write!(f, "; kernels found: {}", found.join(", "))
                }
            }
            Rejection::NotExternC { name, line } => write!(
                f,
                "{}`{name}` must be declared `extern \"C\" __global__` so the grader can find it by name",
                at(*line)
            ),
            Rejection::WrongSignature { name, line, expected, found, why } => write!(
                f,
                "{}`{name}` takes ({}) but the exercise requires ({}): {why}",
                at(*line),
                found.join(", "),
                expected.join(", ")
            ),
            Rejection::Undeclared { name, params } => write!(
                f,
                "`{name}` is in the compiled code, but no `__global__` declaration of it can be read \
                 in the file (are its name or parameters made by a macro?); declare it plainly: \
                 extern \"C\" __global__ void {name}({})",
                params.join(", ")
            ),
        }
    }
}

/// Reads a submission, refusing what is not a reasonable CUDA source file. A symbolic link is
/// refused, not followed: a submitted link to a file of the grading machine must not be read
/// (and shown back in compiler messages) as the student's code.
pub fn read(path: &Path) -> Result<String, Rejection> {
    // One reader for files a user names: a FIFO swapped in after a check cannot block it, a
    // link is refused, never followed.
    use crate::source::files::{read_raw, Refusal};
    use std::os::unix::fs::MetadataExt;
    // A hard link is another name of a file that may belong to the grading machine (a secret,
    // a solution): refused like a symbolic link.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.nlink() > 1) {
        return Err(Rejection::Unreadable(
            "it is a hard link (the file has other names); submit a copy of the file itself".into(),
        ));
    }
    let bytes = read_raw(path, MAX_BYTES, false).map_err(|r| match r {
        Refusal::Link => {
            Rejection::Unreadable("it is a symbolic link; submit the file itself".into())
        }
        Refusal::NotRegular(kind) => Rejection::Unreadable(format!("not a regular file: {kind}")),
        Refusal::TooLarge { size, .. } => Rejection::TooLarge(size.unwrap_or(MAX_BYTES + 1)),
        Refusal::Missing => Rejection::Unreadable("no such file".into()),
        Refusal::Io(e) => Rejection::Unreadable(e.to_string()),
    })?;
    check_bytes(&bytes).map(str::to_string)
}

/// The byte-level checks of [`read`], on bytes already in memory. A leading UTF-8 byte-order
/// mark (which some editors write) is dropped: NVRTC and the signature check would read it as a
/// stray character, and a correct file would get zero.
pub fn check_bytes(bytes: &[u8]) -> Result<&str, Rejection> {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    if bytes.len() as u64 > MAX_BYTES {
        return Err(Rejection::TooLarge(bytes.len() as u64));
    }
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(Rejection::Empty);
    }
    if bytes.contains(&0) {
        return Err(Rejection::Binary);
    }
    std::str::from_utf8(bytes).map_err(|e| Rejection::NotUtf8 {
        offset: e.valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sample submission reads the same with a byte-order mark in front (before, the mark
    /// stayed in the text NVRTC compiled, and a correct file got zero); a mark elsewhere, or
    /// a mark alone, is not dropped or counted as code.
    #[test]
    fn a_leading_byte_order_mark_is_dropped() {
        let dir = crate::source::paths::package_dir().join("tests/submissions");
        let mut seen = 0;
        for ex in std::fs::read_dir(&dir).unwrap().flatten() {
            for f in std::fs::read_dir(ex.path()).into_iter().flatten().flatten() {
                let p = f.path();
                if p.extension().is_none_or(|e| e != "cu") {
                    continue;
                }
                let bytes = std::fs::read(&p).unwrap();
                let Ok(plain) = check_bytes(&bytes) else {
                    continue;
                };
                let mut with = b"\xef\xbb\xbf".to_vec();
                with.extend_from_slice(&bytes);
                assert_eq!(check_bytes(&with).ok(), Some(plain), "{}", p.display());
                seen += 1;
            }
        }
        assert!(seen > 10, "only {seen} samples");
        assert_eq!(
            check_bytes(b"\xef\xbb\xbf").unwrap_err().to_string(),
            Rejection::Empty.to_string()
        );
        assert_eq!(
            check_bytes(b"\xef\xbb\xbf \n").unwrap_err().to_string(),
            Rejection::Empty.to_string()
        );
        // Only one mark, and only at the start.
        assert_eq!(
            check_bytes(b"\xef\xbb\xbf\xef\xbb\xbfx").unwrap(),
            "\u{feff}x"
        );
        assert_eq!(check_bytes(b"x\xef\xbb\xbf").unwrap(), "x\u{feff}");
    }

    #[test]
    fn links_and_fifos_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "extern \"C\" __global__ void reduce() {}\n").unwrap();
        let hard = dir.path().join("h.cu");
        std::fs::hard_link(&secret, &hard).unwrap();
        assert!(read(&hard).unwrap_err().to_string().contains("hard link"));
        std::fs::remove_file(&secret).unwrap();
        assert!(read(&hard).is_ok(), "one name left: an ordinary file");
        let link = dir.path().join("s.cu");
        std::os::unix::fs::symlink("/etc/hostname", &link).unwrap();
        assert!(read(&link)
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        let fifo = dir.path().join("f.cu");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read(&fifo)
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
    }

    #[test]
    fn bad_bytes_are_named() {
        assert_eq!(check_bytes(b"  \n"), Err(Rejection::Empty));
        assert_eq!(check_bytes(b"abc\0def"), Err(Rejection::Binary));
        assert_eq!(
            check_bytes(b"ok \xff\xfe"),
            Err(Rejection::NotUtf8 { offset: 3 })
        );
        assert_eq!(
            check_bytes(&vec![b'a'; usize::try_from(MAX_BYTES + 1).unwrap()]),
            Err(Rejection::TooLarge(MAX_BYTES + 1))
        );
        assert_eq!(check_bytes(b"int x;"), Ok("int x;"));
    }
}
