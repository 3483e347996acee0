//! What a parsed manifest holds: its kernels, each with its sizes, launches, arguments and
//! oracle, in the checked form every later stage reads (`parse.rs` builds it, `validate.rs`
//! checks it over the whole size range, `draw.rs` turns it into problems).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::gen::Gen;
use crate::source::values::{Compare, Elem};

/// Options of racegate's own that a manifest hands to the compile stage beside NVRTC's: a C++
/// entry's name expression (NVRTC gets it through `nvrtcAddNameExpression`), and the place of
/// the toolkit's headers, which the compile stage finds on this machine.
pub const NAME_OPTION: &str = "--racegate-name-expression=";
/// See [`NAME_OPTION`]: replaced by `-I<the toolkit's include folder>` when one is found.
pub const TOOLKIT_INCLUDE: &str = "--racegate-toolkit-include";

/// The default manifest file name.
pub const FILE: &str = "racegate.toml";

/// Dynamic shared memory a block may ask for on the GPUs racegate targets (Hopper: 227 KiB).
pub const MAX_SHARED_BYTES: i64 = 227 * 1024;
/// The largest grid in x, y, z (CUDA's limits since compute capability 3.0).
pub const GRID_MAX: [i64; 3] = [(1 << 31) - 1, 65535, 65535];
/// The largest block in x, y, z, and its most threads in all.
pub const BLOCK_MAX: [i64; 3] = [1024, 1024, 64];
pub const BLOCK_THREADS_MAX: i64 = 1024;

/// What checks a kernel's results (the manifest's `oracle` key): this decides where the
/// expected outputs come from; comparing them is the job of `oracle.rs`.
#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    /// A trusted kernel run on the same inputs: `path` (relative to the manifest) and entry
    /// (a name or a C++ name expression).
    Reference { path: String, entry: String },
    /// The same inputs under different jitter seeds must give identical outputs.
    Determinism,
    /// Sanitizers only.
    None,
}

/// Direction of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufKind {
    In,
    Out,
    InOut,
}

/// One kernel argument, declared once per kernel and passed by name to its launches.
#[derive(Clone, Debug)]
pub enum ArgSpec {
    Buffer {
        name: String,
        kind: BufKind,
        elem: Elem,
        /// Number of elements: an integer expression over the sizes.
        len: String,
        /// How an in or inout buffer's data is made (`zeros` for an out buffer, never used:
        /// outputs start as poison).
        gen: Gen,
        /// How an out or inout buffer is compared (exact for an input: it must not change).
        compare: Compare,
        /// An out buffer the kernel may leave partly unwritten by design (`unwritten = true`).
        unwritten: bool,
    },
    Scalar {
        name: String,
        elem: Elem,
        /// An integer expression over the sizes, or for a float type a float expression.
        value: String,
    },
}

impl ArgSpec {
    pub fn name(&self) -> &str {
        match self {
            ArgSpec::Buffer { name, .. } | ArgSpec::Scalar { name, .. } => name,
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn elem(&self) -> Elem {
        match self {
            ArgSpec::Buffer { elem, .. } | ArgSpec::Scalar { elem, .. } => *elem,
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn is_buffer(&self) -> bool {
        matches!(self, ArgSpec::Buffer { .. })
    }
}

/// One launch of a kernel: the kernel-level `entry`/`grid`/`block`/`shared`, one
/// `[[kernel.launch]]` table, or the reference's own launch (`oracle.grid`, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchSpec {
    /// An `extern "C"` name or a C++ name expression such as `reduce<float, 256>`.
    pub entry: String,
    /// 1 to 3 integer expressions over the sizes (x, y, z).
    pub grid: Vec<String>,
    pub block: Vec<String>,
    /// Dynamic shared memory in bytes, an integer expression ("0" when not given).
    pub shared: String,
    /// The kernel's arguments this launch passes, by name, in the entry's parameter order.
    pub args: Vec<String>,
    /// The stream it is launched on (`[[kernel.launch]]`'s `stream`, 0 to 7; 0 when not given):
    /// launches with the same number run in order on one stream.
    pub stream: u32,
}

/// One kernel of the manifest.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    pub name: String,
    /// Relative to the manifest's folder.
    pub source: String,
    /// The first launch's entry: the case's entry point in listings and reports.
    pub entry: String,
    /// Extra NVRTC options, as written.
    pub options: Vec<String>,
    /// Include folders (`include`), absolute; NVRTC gets each as `-I`.
    pub include: Vec<PathBuf>,
    pub sizes: BTreeMap<String, (u32, u32)>,
    pub sanitize_sizes: BTreeMap<String, u32>,
    /// What one run of the kernel launches, in order; every step shares the kernel's buffers.
    pub launches: Vec<LaunchSpec>,
    /// The `oracle` key.
    pub check: Check,
    /// The reference's own launch when the oracle gives one (`oracle.grid`, `.block`,
    /// `.shared`, `.args`); `None`: the reference entry replaces the entry in every launch.
    pub reference_launch: Option<LaunchSpec>,
    /// The kernel-level `tolerance` (absolute, on every float output; 0: exact), kept for the
    /// judges that take one number. Per-buffer comparisons are in each buffer's `compare`.
    pub tolerance: f32,
    /// Every argument, in declaration order.
    pub args: Vec<ArgSpec>,
    /// Where the launch keys were written, for the checks against the compiled code.
    pub lines: KernelLines,
}

/// Lines (1-based) of a kernel's keys in the manifest, so a check that runs after parsing (the
/// signature against the compiled code) points at what it judged, not at `[[kernel]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelLines {
    /// The `name = ...` line.
    pub kernel: usize,
    /// Each argument's `{ name = ... }` line, by name.
    pub args: BTreeMap<String, usize>,
    /// Per launch, in order: its `entry` line and its `args` line (the kernel-level launch: the
    /// `entry` key, and the first argument's line).
    pub launches: Vec<(usize, usize)>,
    /// Whether the launches are `[[kernel.launch]]` tables (else the kernel-level launch).
    pub tables: bool,
    /// The `oracle` line.
    pub oracle: usize,
}

impl KernelSpec {
    /// The entries the kernel's own launches name, in launch order, each once.
    pub fn launch_entries(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for l in &self.launches {
            if !out.contains(&l.entry) {
                out.push(l.entry.clone());
            }
        }
        out
    }

    #[cfg(any(test, feature = "internals"))]
    /// Every entry name a run uses: [`KernelSpec::launch_entries`], then the reference entry
    /// when the oracle is a reference. These are what NVRTC must find (and, for name
    /// expressions, lower) before anything is launched.
    pub fn entry_names(&self) -> Vec<String> {
        let mut out = self.launch_entries();
        if let Check::Reference { entry, .. } = &self.check {
            if !out.contains(entry) {
                out.push(entry.clone());
            }
        }
        out
    }

    /// The entry names compiled from the file `path` (the kernel's source, the reference's
    /// file, or both when they are one file): the names to register with NVRTC for that
    /// program.
    pub fn entry_names_in(&self, path: &str) -> Vec<String> {
        let mut out = if path == self.source {
            self.launch_entries()
        } else {
            Vec::new()
        };
        if let Check::Reference { path: p, entry } = &self.check {
            if p == path && !out.contains(entry) {
                out.push(entry.clone());
            }
        }
        out
    }

    /// NVRTC options for the kernel and its reference: `-I` for each include folder, then
    /// `options` as written.
    pub fn compile_options(&self) -> Vec<String> {
        self.include
            .iter()
            .map(|d| format!("-I{}", d.display()))
            .chain(self.options.iter().cloned())
            .collect()
    }

    /// Everything NVRTC needs to build `path` (the kernel's source or the reference's file): the
    /// include folders, the toolkit's headers, `options`, and a name expression for every C++
    /// entry compiled from it (`reduce<float, 256>`), so the PTX names its lowered symbol.
    pub fn build_options(&self, path: &str) -> Vec<String> {
        let mut out = self.compile_options();
        out.push(TOOLKIT_INCLUDE.to_string());
        for e in self.entry_names_in(path) {
            if e.contains('<') || e.contains("::") {
                out.push(format!("{NAME_OPTION}{e}"));
            }
        }
        out
    }

    /// The argument named `name`.
    pub fn arg(&self, name: &str) -> Option<&ArgSpec> {
        self.args.iter().find(|a| a.name() == name)
    }
}

/// A parsed manifest.
#[derive(Clone, Debug)]
pub struct Manifest {
    pub path: PathBuf,
    pub dir: PathBuf,
    pub kernels: Vec<KernelSpec>,
    /// `[[program]]` tables: existing programs gated with the kernels.
    pub programs: Vec<ProgramSpec>,
}

/// A checked `[[program]]`: paths resolved against the manifest's folder.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramSpec {
    pub name: String,
    /// Absolute when written with a `/`; a bare name is looked up in `PATH` when run.
    pub command: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub masks: Vec<String>,
    pub expect: Option<PathBuf>,
    pub check: Option<String>,
    pub check_timeout: Option<f64>,
    pub pass_regex: Vec<String>,
    pub fail_regex: Vec<String>,
    pub will_fail: bool,
    pub runs: Option<u32>,
    pub timeout: Option<f64>,
    /// Tool names (`racecheck`, ...); `None`: the gate's.
    pub sanitizers: Option<Vec<String>>,
    pub vary_ok: bool,
}

/// Splits `file.cu:entry` at its last `:` that is not half of a `::`, so that a namespaced or
/// templated entry (`ref.cu:ns::sum<float, 256>`) keeps its own colons.
pub(super) fn split_reference(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    let at = (0..b.len()).rev().find(|&i| {
        b[i] == b':' && (i == 0 || b[i - 1] != b':') && b.get(i + 1).is_none_or(|c| *c != b':')
    })?;
    let (path, entry) = (s[..at].trim(), s[at + 1..].trim());
    (!path.is_empty() && !entry.is_empty()).then_some((path, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_split_at_the_last_lone_colon() {
        assert_eq!(
            split_reference("ref/sum.cu:sum_ref"),
            Some(("ref/sum.cu", "sum_ref"))
        );
        assert_eq!(
            split_reference("ref.cu:ns::reduce_ref<float, 256>"),
            Some(("ref.cu", "ns::reduce_ref<float, 256>"))
        );
        assert_eq!(
            split_reference("C:/proj/ref.cu:k"),
            Some(("C:/proj/ref.cu", "k"))
        );
        assert_eq!(split_reference("ref.cu"), None);
        assert_eq!(split_reference("ref.cu:"), None);
        assert_eq!(split_reference(":k"), None);
    }
}
