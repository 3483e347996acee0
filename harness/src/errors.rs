//! Every error the library returns, in one place. Messages are lowercase and say what to do;
//! the binary maps them to exit codes (see `main.rs`).

use std::path::PathBuf;

/// The library's error type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `//@` header line of a `.cu` file is malformed, unknown, missing or inconsistent.
    #[error("{path}:{line}: {message}")]
    Header {
        path: String,
        line: usize,
        message: String,
    },
    /// Discovery found nothing to test.
    #[error("no kernels found: {0} holds no `.cu` file with a `//@ exercise:` header")]
    NoKernels(PathBuf),
    /// A file or folder could not be read or written.
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// NVRTC rejected a kernel; `log` is NVRTC's own log, which names file and line.
    #[error("{path}: NVRTC could not compile it (options: {options})\n{log}")]
    Compile {
        path: String,
        options: String,
        log: String,
    },
    /// No NVRTC library could be loaded.
    #[error(
        "NVRTC (libnvrtc.so.13) not found; searched: {searched}\n\
         install it with `ci/setup` (PyPI wheels pinned to CUDA 13.0, into .racegate/nvrtc), \
         or point RACEGATE_NVRTC_LIB at libnvrtc.so.13"
    )]
    NvrtcMissing { searched: String },
    /// No usable CUDA device: no driver, no GPU, or the driver refused.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A CUDA driver call failed.
    #[error("CUDA error during {during}: {message}")]
    Cuda { during: String, message: String },
    /// A case name that is not in the catalog.
    #[error("unknown case `{name}`; `racegate list` shows the catalog{hint}")]
    UnknownCase { name: String, hint: String },
    /// Bad command-line input that clap could not catch.
    #[error("{0}")]
    Usage(String),
    /// A child process (worker or sanitizer) could not be started or misbehaved.
    #[error("{0}")]
    Child(String),
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn cuda(during: impl Into<String>, err: impl std::fmt::Debug) -> Self {
        Error::Cuda {
            during: during.into(),
            message: format!("{err:?}"),
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
