//! What one testable case is: its kernel entry, where it came from, and what each detector of
//! the detection matrix must do on it.
//!
//! The catalog builds cases (from `//@` headers or from a manifest); every later stage reads
//! them. The types live apart from discovery (`catalog.rs`, which re-exports them) so that a
//! case can point at its manifest kernel while the dependencies still run one way:
//! catalog -> case -> manifest, and nothing back.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use crate::source::entry::Entry;
use crate::source::exercises::Exercise;
use crate::source::manifest::KernelSpec;

/// One detector of the detection matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detector {
    /// Randomized trials with schedule jitter, every element checked.
    Stress,
    /// The same trials without jitter.
    StressNojitter,
    Racecheck,
    Synccheck,
    Memcheck,
    Initcheck,
    /// racegate's race detector for global memory.
    Globalcheck,
    /// A launch that does not finish before its deadline.
    Watchdog,
}

impl Detector {
    pub const ALL: [Detector; 8] = [
        Detector::Stress,
        Detector::StressNojitter,
        Detector::Racecheck,
        Detector::Synccheck,
        Detector::Memcheck,
        Detector::Initcheck,
        Detector::Globalcheck,
        Detector::Watchdog,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Detector::Stress => "stress",
            Detector::StressNojitter => "stress-nojitter",
            Detector::Racecheck => "racecheck",
            Detector::Synccheck => "synccheck",
            Detector::Memcheck => "memcheck",
            Detector::Initcheck => "initcheck",
            Detector::Globalcheck => "globalcheck",
            Detector::Watchdog => "watchdog",
        }
    }

    pub fn from_name(s: &str) -> Option<Detector> {
        Detector::ALL.into_iter().find(|d| d.name() == s)
    }
}

impl fmt::Display for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a detector must do on a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Must report the bug (a finding, a wrong result, a hang).
    Flag,
    /// Must report nothing.
    Clean,
    /// Not expected to see the bug reliably: the result is recorded, not judged.
    May,
}

impl Expect {
    pub(crate) fn from_name(s: &str) -> Option<Expect> {
        match s {
            "flag" => Some(Expect::Flag),
            "clean" => Some(Expect::Clean),
            "may" => Some(Expect::May),
            _ => None,
        }
    }
}

/// What a buggy variant says about itself.
#[derive(Clone, Debug, Serialize)]
pub struct Bug {
    /// Repo-relative path of the correct kernel it breaks.
    pub breaks: String,
    pub class: String,
    /// Why no detector catches it, for documented blind spots.
    pub escapes: Option<String>,
    /// 1-based line of the `BUG` marker.
    pub wrong_line: usize,
}

/// Where a case came from, so that what a case needs (its family, its manifest kernel) is
/// carried with it instead of looked up again by name.
#[derive(Clone)]
pub enum Origin {
    /// A file under `kernels/` or `buggy_variants/`, drawn by a built-in exercise family.
    Family(&'static dyn Exercise),
    /// A `[[kernel]]` of a manifest, which draws its own problems.
    Manifest(Arc<KernelSpec>),
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Family(family) => write!(f, "Family({})", family.name()),
            Origin::Manifest(spec) => write!(f, "Manifest({})", spec.name),
        }
    }
}

/// One testable case: a (file, entry) pair.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    /// `matmul_tiled16` for a correct kernel, `matmul_tiled16::no_sync_after_load` for a variant.
    pub name: String,
    /// Repo-relative path with `/` separators, also the NVRTC program name.
    pub path: String,
    pub exercise: String,
    pub entry: Entry,
    pub bug: Option<Bug>,
    pub expect: BTreeMap<Detector, Expect>,
    /// One-line summary: the first line of the header comment.
    pub title: String,
    /// Not in listings: `exercise` already names the family there.
    #[serde(skip)]
    pub origin: Origin,
}

impl Case {
    pub fn is_variant(&self) -> bool {
        self.bug.is_some()
    }

    pub fn expectation(&self, d: Detector) -> Expect {
        self.expect.get(&d).copied().unwrap_or(Expect::Clean)
    }

    /// The exercise family that draws this case's problems.
    pub fn family(&self) -> &dyn Exercise {
        match &self.origin {
            Origin::Family(family) => *family,
            Origin::Manifest(spec) => &**spec,
        }
    }

    /// The manifest kernel behind this case, if it came from a manifest.
    pub fn kernel_spec(&self) -> Option<&KernelSpec> {
        match &self.origin {
            Origin::Family(_) => None,
            Origin::Manifest(spec) => Some(spec),
        }
    }

    /// Extra NVRTC options this case asks for (a manifest's `include` folders as `-I`, then
    /// its `options`).
    pub fn compile_options(&self) -> Vec<String> {
        self.kernel_spec()
            .map(|k| k.build_options(&k.source))
            .unwrap_or_default()
    }

    /// The options the reference kernel's file compiles with (its own name expressions).
    pub fn reference_compile_options(&self) -> Vec<String> {
        match self.kernel_spec() {
            Some(k) => match &k.check {
                crate::source::manifest::Check::Reference { path, .. } => k.build_options(path),
                _ => k.compile_options(),
            },
            None => Vec::new(),
        }
    }
}
