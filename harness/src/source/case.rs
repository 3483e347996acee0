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
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
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
    /// racegate's detector for shared memory (uninitialized reads, atomic/plain races).
    Sharedcheck,
    /// racegate's check of the fences in handoffs between blocks.
    Fencecheck,
    /// racegate's check of the order between streams, copies and the host (programs only).
    Streamcheck,
    /// A launch that does not finish before its deadline.
    Watchdog,
    /// Nsight Compute's counters against a `//@ perf:` expectation (`racegate perf`): what kills
    /// a mutant that changes speed only. Not a column of the matrix (not in [`Detector::ALL`]):
    /// `racegate check` lists the perf expectations apart.
    Perf,
}

impl Detector {
    pub const ALL: [Detector; 11] = [
        Detector::Stress,
        Detector::StressNojitter,
        Detector::Racecheck,
        Detector::Synccheck,
        Detector::Memcheck,
        Detector::Initcheck,
        Detector::Globalcheck,
        Detector::Sharedcheck,
        Detector::Fencecheck,
        Detector::Streamcheck,
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
            Detector::Sharedcheck => "sharedcheck",
            Detector::Fencecheck => "fencecheck",
            Detector::Streamcheck => "streamcheck",
            Detector::Watchdog => "watchdog",
            Detector::Perf => "perf",
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
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

#[cfg(test)]
impl Case {
    /// A case for unit tests: `name` in `path`, of `exercise`, drawn by the `reduce` family,
    /// with no bug and no expectation.
    pub(crate) fn for_test(name: &str, path: &str, exercise: &str) -> Case {
        Case {
            name: name.into(),
            path: path.into(),
            exercise: exercise.into(),
            entry: Entry {
                name: name.into(),
                params: Default::default(),
            },
            bug: None,
            expect: Default::default(),
            title: String::new(),
            origin: Origin::Family(crate::source::exercises::by_name("reduce").expect("a family")),
        }
    }
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

/// What a `//@ perf:` header says about a kernel's shared-memory bank conflicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BankConflicts {
    /// (Near) zero conflicts per shared-memory request: a padded or swizzled tile.
    None,
    /// The kernel is the course's example of conflicts: they must be there.
    Expected,
}

/// One `//@ perf:` header line: the performance facts a kernel declares, checked by
/// `racegate perf --check` against Nsight Compute's counters.
///
/// ```text
/// //@ perf: transpose_padded bank-conflicts=none coalesced=yes
/// //@ perf: bank-conflicts=expected          (no entry name: every entry of the file)
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PerfExpect {
    /// The entry it is about; `None`: every entry of the file.
    pub entry: Option<String>,
    pub bank_conflicts: Option<BankConflicts>,
    /// `coalesced=yes|no`: global loads and stores take the fewest sectors per request.
    pub coalesced: Option<bool>,
    /// The header line, 1-based.
    pub line: usize,
}

impl PerfExpect {
    /// Whether this line is about `entry`.
    pub fn applies_to(&self, entry: &str) -> bool {
        self.entry.as_deref().is_none_or(|e| e == entry)
    }
}

/// The keys a `//@ perf:` line takes.
pub const PERF_KEYS: [&str; 2] = ["bank-conflicts", "coalesced"];

/// Parses the value of a `//@ perf:` line: an optional entry name, then `key=value` words.
pub fn parse_perf(value: &str, line: usize) -> std::result::Result<PerfExpect, String> {
    let mut out = PerfExpect {
        entry: None,
        bank_conflicts: None,
        coalesced: None,
        line,
    };
    let mut any = false;
    for (i, w) in value.split_whitespace().enumerate() {
        let Some((k, v)) = w.split_once('=') else {
            if i == 0 && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.entry = Some(w.to_string());
                continue;
            }
            return Err(format!(
                "`{w}` is not `key=value` (perf keys: {}; an entry name may come first)",
                PERF_KEYS.join(", ")
            ));
        };
        let twice = || format!("perf key `{k}` given twice");
        match k {
            "bank-conflicts" => {
                let b = match v {
                    "none" => BankConflicts::None,
                    "expected" => BankConflicts::Expected,
                    _ => return Err(format!("`{w}`: expected bank-conflicts=none|expected")),
                };
                if out.bank_conflicts.replace(b).is_some() {
                    return Err(twice());
                }
            }
            "coalesced" => {
                let c = match v {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(format!("`{w}`: expected coalesced=yes|no")),
                };
                if out.coalesced.replace(c).is_some() {
                    return Err(twice());
                }
            }
            _ => {
                return Err(format!(
                    "unknown perf key `{k}`; known: {}",
                    PERF_KEYS.join(", ")
                ))
            }
        }
        any = true;
    }
    if !any {
        return Err(format!(
            "`perf` names no expectation (keys: {})",
            PERF_KEYS.join(", ")
        ));
    }
    Ok(out)
}

/// The `//@ perf:` lines of a source's leading comment block, parsed; every other line is left
/// to the catalog's parser (a manifest's kernel file has no other `//@` lines).
pub fn perf_lines(text: &str) -> std::result::Result<Vec<PerfExpect>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end();
        if !line.starts_with("//") {
            break;
        }
        let Some((key, value)) = line.strip_prefix("//@").and_then(|m| m.split_once(':')) else {
            continue;
        };
        if key.trim() == "perf" {
            out.push(parse_perf(value.trim(), i + 1).map_err(|m| (i + 1, m))?);
        }
    }
    Ok(out)
}
