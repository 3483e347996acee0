//! Every error the library returns, and every exit code racegate uses, in one place. Messages are
//! lowercase and say what to do; [`Error::exit_code`] maps each variant to the one exit-code table
//! (README, "Exit codes"; every `--help` ends with it).
//!
//! | code | meaning | precedence |
//! |---|---|---|
//! | 2 | bad input: usage, a malformed file, an unknown case, a bad flag value | first |
//! | 4 | the work needs a CUDA device and there is none | second |
//! | 3 | inconclusive: a tool missing or failing (NVRTC, compute-sanitizer), infrastructure | third |
//! | 1 | something was found: a finding, a broken expectation, a failing grade item | fourth |
//! | 0 | everything held | |

use std::path::PathBuf;

/// The exit codes, named (nextest's `NextestExitCode` shape). The table is in the module docs.
pub mod exit {
    /// Everything ran and every expectation held.
    pub const OK: u8 = 0;
    /// Something was found: a finding, a broken expectation, a kernel that does not compile.
    pub const FOUND: u8 = 1;
    /// Bad input: usage, a malformed file, an unknown case, a bad flag value.
    pub const USAGE: u8 = 2;
    /// Inconclusive: a tool missing or failing, an infrastructure failure.
    pub const INCONCLUSIVE: u8 = 3;
    /// The work needs a CUDA device and there is none.
    pub const NO_DEVICE: u8 = 4;
    /// The code that wins when several hold, by the table's precedence (2, 4, 3, 1, 0).
    pub fn worst(codes: impl IntoIterator<Item = u8>) -> u8 {
        let rank = |c: u8| match c {
            USAGE => 4,
            NO_DEVICE => 3,
            INCONCLUSIVE => 2,
            FOUND => 1,
            _ => 0,
        };
        codes.into_iter().max_by_key(|&c| rank(c)).unwrap_or(OK)
    }
    /// The line every `--help` ends with.
    pub const HELP: &str = "Exit codes: 0 everything held, 1 something was found, 2 bad input, \
3 inconclusive (a tool missing or failing), 4 no CUDA device.";
}

/// The library's error type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `//@` header line of a `.cu` file is malformed, unknown, missing or inconsistent.
    #[error("{path}:{line}: {message}")]
    Header {
        /// The `.cu` file.
        path: String,
        /// The header line, 1-based.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A TOML file (manifest, exercise, rubric) does not parse or breaks its schema.
    #[error("{path}:{line}: {message}")]
    Toml {
        /// The TOML file.
        path: String,
        /// The offending line, 1-based.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Discovery found nothing to test.
    #[error("no kernels found: {0} holds no `.cu` file with a `//@ exercise:` header")]
    NoKernels(PathBuf),
    /// A file or folder could not be read or written.
    #[error("{action} {path}")]
    Io {
        /// What racegate was doing (`reading`, `writing`, ...).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// NVRTC rejected a kernel; `log` is NVRTC's own log, which names file and line.
    #[error("{path}: NVRTC could not compile it (options: {options})\n{log}")]
    Compile {
        /// The `.cu` file.
        path: String,
        /// The NVRTC options it was compiled with.
        options: String,
        /// NVRTC's log.
        log: String,
    },
    /// No NVRTC library could be loaded.
    #[error(
        "NVRTC (libnvrtc.so.13) not found; searched: {searched}\n\
         install it with `racegate setup` (PyPI wheels pinned to CUDA 13.0, into racegate's user \
         cache), \
         or point RACEGATE_NVRTC_LIB at libnvrtc.so.13"
    )]
    NvrtcMissing {
        /// Where racegate looked.
        searched: String,
    },
    /// No usable CUDA device: no driver, no GPU, or the driver refused.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// A CUDA driver call failed; `source` is the driver's own error.
    #[error("CUDA error during {during}: {source}")]
    Cuda {
        /// What racegate was doing.
        during: String,
        /// The driver's error.
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// A case name that is not in the catalog.
    #[error("unknown case `{name}`; `racegate list` shows the catalog{hint}")]
    UnknownCase {
        /// The name asked for.
        name: String,
        /// A close name, when there is one (`; did you mean ...`), else empty.
        hint: String,
    },
    /// Bad command-line input that clap could not catch.
    #[error("{0}")]
    Usage(String),
    /// Bad input whose cause is another error, kept as `source`: a file that does not parse
    /// (JSON, TOML), a folder the user named that cannot be listed, no current folder.
    #[error("{what}")]
    Input {
        /// What is wrong, e.g. `results.json: not JSON`.
        what: String,
        /// The error underneath: the parser's, the OS's.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A message racegate sent to its own child process does not parse: the child cannot do
    /// its job. `source` is the parser's error.
    #[error("{what}")]
    Protocol {
        /// What did not parse, e.g. `a stress request that is not one`.
        what: String,
        /// The parser's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A child process (worker or sanitizer) misbehaved: what it did, in words.
    #[error("{0}")]
    Child(String),
    /// The operating system refused a step with a process (starting one, waiting for it,
    /// reading from it, limiting it, replacing it, finding racegate's own executable); `source`
    /// is its reason.
    #[error("{what}")]
    Process {
        /// What racegate was doing, e.g. `could not start compute-sanitizer`.
        what: String,
        /// The OS's error.
        #[source]
        source: std::io::Error,
    },
    /// racegate's cache folder cannot be used (another user's, or not creatable), or a library,
    /// tool or place racegate would load or run from cannot be trusted (someone else could write
    /// it, a relative path in a variable, an `LD_LIBRARY_PATH` naming the current folder).
    #[error("{0}")]
    Cache(String),
    /// `racegate setup` could not install what it installs (no python, pip failed).
    #[error("racegate setup: {0}")]
    Setup(String),
}

impl Error {
    /// An [`Error::Io`] from what was being done, where, and the system's error.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn cuda(during: impl Into<String>, source: cudarc::driver::DriverError) -> Self {
        Error::Cuda {
            during: during.into(),
            source,
        }
    }

    /// The exit code of this error, by the one table (module docs). Every variant is named: a
    /// new variant does not compile until it has its code.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Header { .. }
            | Error::Toml { .. }
            | Error::NoKernels(_)
            | Error::UnknownCase { .. }
            | Error::Usage(_)
            | Error::Input { .. } => exit::USAGE,
            Error::NoDevice(_) => exit::NO_DEVICE,
            // The user's own mistake (a path that is a folder, a missing folder of an output) is
            // bad input; anything else the system refused is inconclusive.
            Error::Io { source, .. } if is_users_mistake(source) => exit::USAGE,
            Error::NvrtcMissing { .. }
            | Error::Cuda { .. }
            | Error::Io { .. }
            | Error::Child(_)
            | Error::Protocol { .. }
            | Error::Process { .. }
            | Error::Cache(_)
            | Error::Setup(_) => exit::INCONCLUSIVE,
            Error::Compile { .. } => exit::FOUND,
        }
    }
}

/// Whether an I/O error comes from the path the user gave rather than from the system: the path
/// is a folder where a file was wanted (or a file where a folder was), or it (or the folder it
/// goes in) does not exist.
fn is_users_mistake(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(e.kind(), K::IsADirectory | K::NotADirectory | K::NotFound)
}

/// An error and every cause under it, one presentation for every error racegate prints
/// (nextest's `DisplayErrorChain`, ripgrep's `{:#}`): `reading /tmp: Is a directory (os error
/// 21)`. A cause whose text the message already ends with is not repeated.
pub struct DisplayErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for DisplayErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let more = c.to_string();
            if !more.is_empty() && !text.ends_with(&more) {
                text.push_str(": ");
                text.push_str(&more);
            }
            cause = c.source();
        }
        f.write_str(&text)
    }
}

impl Error {
    /// [`Error::Process`]: `what` racegate was doing with a process, and the OS's reason.
    pub fn process(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Process {
            what: what.into(),
            source,
        }
    }

    /// [`Error::Input`]: what is wrong with the user's input, and the error underneath.
    pub fn input(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        Error::Input {
            what: what.into(),
            source: source.into(),
        }
    }

    /// [`Error::Protocol`]: what racegate's child could not parse, and the parser's error.
    pub fn protocol(
        what: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        Error::Protocol {
            what: what.into(),
            source: source.into(),
        }
    }

    /// This error with its causes, as every error is printed: see [`DisplayErrorChain`].
    pub fn chain(&self) -> DisplayErrorChain<'_> {
        DisplayErrorChain(self)
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
impl Error {
    /// Asserts that this error is bad input (exit 2) whose cause, kept as its source, is a
    /// parser's error of type `P`; gives the chain as it is printed, for the test to read.
    pub(crate) fn assert_parse_cause<P: std::error::Error + 'static>(&self) -> String {
        let cause = std::error::Error::source(self);
        assert!(
            cause.is_some_and(|c| c.downcast_ref::<P>().is_some()),
            "{self:?}"
        );
        assert_eq!(self.exit_code(), exit::USAGE, "{self:?}");
        self.chain().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One value of every variant and the code the table gives it; the binary-level tests
    /// (`tests/exit_codes.rs`) reach each code through a real trigger.
    #[test]
    fn every_variant_has_its_code() {
        let io = || std::io::Error::other("x");
        let cases = [
            (
                Error::Header {
                    path: "k.cu".into(),
                    line: 1,
                    message: "m".into(),
                },
                exit::USAGE,
            ),
            (
                Error::Toml {
                    path: "racegate.toml".into(),
                    line: 1,
                    message: "m".into(),
                },
                exit::USAGE,
            ),
            (Error::NoKernels(PathBuf::from(".")), exit::USAGE),
            (
                Error::UnknownCase {
                    name: "x".into(),
                    hint: String::new(),
                },
                exit::USAGE,
            ),
            (Error::Usage("x".into()), exit::USAGE),
            (Error::input("x", io()), exit::USAGE),
            (Error::protocol("x", io()), exit::INCONCLUSIVE),
            (Error::NoDevice("x".into()), exit::NO_DEVICE),
            (
                Error::NvrtcMissing {
                    searched: "x".into(),
                },
                exit::INCONCLUSIVE,
            ),
            (
                Error::cuda(
                    "x",
                    cudarc::driver::DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_UNKNOWN),
                ),
                exit::INCONCLUSIVE,
            ),
            (Error::io("reading", "x", io()), exit::INCONCLUSIVE),
            (Error::Child("x".into()), exit::INCONCLUSIVE),
            (
                Error::process("x", std::io::Error::other("y")),
                exit::INCONCLUSIVE,
            ),
            (Error::Cache("x".into()), exit::INCONCLUSIVE),
            (Error::Setup("x".into()), exit::INCONCLUSIVE),
            (
                Error::Compile {
                    path: "k.cu".into(),
                    options: String::new(),
                    log: String::new(),
                },
                exit::FOUND,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.exit_code(), code, "{e:?}");
        }
    }

    /// The OS's reason is printed (not `error: reading /tmp` alone), and a path that is a
    /// folder or does not exist is the user's mistake (exit 2), not inconclusive (3).
    #[test]
    fn an_io_error_prints_its_cause_and_a_users_path_is_bad_input() {
        let dir = std::fs::read("/").unwrap_err();
        let e = Error::io("reading", "/", dir);
        assert_eq!(
            e.chain().to_string(),
            "reading /: Is a directory (os error 21)"
        );
        assert_eq!(e.exit_code(), exit::USAGE);
        let missing = std::fs::write("/nonexistent/dir/x.json", "").unwrap_err();
        let e = Error::io("writing", "/nonexistent/dir/x.json", missing);
        assert_eq!(
            e.chain().to_string(),
            "writing /nonexistent/dir/x.json: No such file or directory (os error 2)"
        );
        assert_eq!(e.exit_code(), exit::USAGE);
        let full = Error::io(
            "writing",
            "x",
            std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(full.exit_code(), exit::INCONCLUSIVE);
        assert!(full.chain().to_string().ends_with("(os error 28)"));
    }

    #[test]
    fn the_worst_code_wins_by_precedence() {
        assert_eq!(exit::worst([]), exit::OK);
        assert_eq!(exit::worst([exit::FOUND, exit::OK]), exit::FOUND);
        assert_eq!(
            exit::worst([exit::INCONCLUSIVE, exit::FOUND]),
            exit::INCONCLUSIVE
        );
        assert_eq!(
            exit::worst([exit::INCONCLUSIVE, exit::NO_DEVICE]),
            exit::NO_DEVICE
        );
        assert_eq!(
            exit::worst([exit::NO_DEVICE, exit::USAGE, exit::OK]),
            exit::USAGE
        );
    }

    #[test]
    fn a_cuda_error_keeps_its_source() {
        use std::error::Error as _;
        let e = Error::cuda(
            "launching",
            cudarc::driver::DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
        );
        // Formatting a DriverError asks the driver for its text, so this test only inspects it.
        let source = e
            .source()
            .and_then(|s| s.downcast_ref::<cudarc::driver::DriverError>());
        assert_eq!(
            source.map(|d| d.0),
            Some(cudarc::driver::sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)
        );
    }
}
