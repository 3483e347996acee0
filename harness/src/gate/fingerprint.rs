//! A finding's identity that survives moving code: the subject (kernel or program), the
//! detector, the finding's kind, the function, the normalized text of the source line and the
//! occurrence index of that text among identical lines of the function. Never the line number,
//! so inserting a line above an accepted race keeps it accepted.
//!
//! ```
//! use racegate::gate::fingerprint::normalized_line;
//! assert_eq!(normalized_line("  s[tid] += s[tid + half];   // sum"), normalized_line("s[tid]+=s[tid+half];"));
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::source::files;

/// The parts a fingerprint is made of: kernel or program, detector, kind, function, normalized
/// source text, and the occurrence among identical lines of that function; no line numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Identity {
    /// The manifest kernel, or the program's name.
    pub subject: String,
    /// stress, racecheck, synccheck, memcheck, initcheck, watchdog, exit, output.
    pub detector: String,
    /// What was found, without places or counts: `Analysis: Race condition`, `hang`, ...
    pub kind: String,
    /// The function the finding is in (empty for a whole program).
    #[serde(default)]
    pub function: String,
    /// The source line, normalized (whitespace collapsed, comments dropped). For a finding
    /// without a source line (a kernel built without `-lineinfo`), the detector's own identity
    /// of the access in its place ([`access_identity`]: `(no line) pc 0x290`, else the access
    /// directions), so two line-less races of one function do not share a fingerprint; empty
    /// only where the detector names no access at all (stress, a whole program).
    #[serde(default)]
    pub source: String,
    /// How many identical normalized lines come before this one in its function.
    #[serde(default)]
    pub occurrence: u32,
}

impl Identity {
    /// The fingerprint: 16 hex digits of FNV-1a over the parts, stable across racegate
    /// versions and machines (it is what baselines and SARIF `partialFingerprints` hold).
    pub fn fingerprint(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for part in [
            "racegate/v2",
            &self.subject,
            &self.detector,
            &self.kind,
            &self.function,
            &self.source,
            &self.occurrence.to_string(),
        ] {
            for b in part.bytes().chain([0x1f]) {
                h ^= b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        format!("{h:016x}")
    }
}

/// One source line as fingerprints see it: comments stripped (`//` to the end, `/* ... */`
/// within the line; string and character literals are kept whole), whitespace dropped except
/// where it separates two words (`unsigned int`) or two operator characters that would
/// otherwise join (`a - -b`). Reformatting a line does not change it; changing its code does.
///
/// This is the one place source text is normalized for fingerprints, through the one C/C++
/// token scanner ([`crate::source::cscan`]).
pub fn normalized_line(text: &str) -> String {
    // The shared token scanner: comments out, tokens joined by one space, digraphs spelled
    // as what they stand for.
    crate::source::cscan::normalized_lines(text)
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What stands in [`Identity::source`] for a finding without a source line: the detector's
/// own identity of the access. The PC (SASS offset) where the detector gives one, which no two
/// accesses of one function share; else the access directions of each racing pair, with the
/// places dropped (`Write -> Read`), sorted and once each. Empty when there is neither.
///
/// It starts with `(no line)`, which no normalized source line can be (tokens are joined by
/// one space: a line holding those tokens reads `( no line )`), so it never equals one.
///
/// ```
/// use racegate::gate::fingerprint::access_identity;
/// assert_eq!(access_identity(Some("0x290"), ""), "(no line) pc 0x290");
/// assert_eq!(
///     access_identity(None, "Write -> Read <no line info>; Read -> Write <no line info>"),
///     "(no line) Read -> Write; Write -> Read"
/// );
/// assert_eq!(access_identity(None, ""), "");
/// ```
// Its caller is `gate/sanitizers.rs::finding` (for a finding without a line), whose owner wires
// it in; until then only the tests and doc tests use it.
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub fn access_identity(pc: Option<&str>, accesses: &str) -> String {
    if let Some(pc) = pc.map(str::trim).filter(|p| !p.is_empty()) {
        return format!("(no line) pc {}", pc.to_ascii_lowercase());
    }
    let mut pairs: Vec<String> = accesses
        .split(';')
        .filter_map(|pair| {
            // `Write -> Read kernels/x.cu:33`: the two directions, without the other side's place.
            let words: Vec<&str> = pair.split_whitespace().collect();
            match words.as_slice() {
                [a, "->", b, ..] => Some(format!("{a} -> {b}")),
                _ => None,
            }
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    if pairs.is_empty() {
        return String::new();
    }
    format!("(no line) {}", pairs.join("; "))
}

/// The identifier a tool's function name ends with: `void ns::reduce<256>(float*)` gives
/// `reduce`.
pub fn base_function(name: &str) -> &str {
    let head = name.split('(').next().unwrap_or(name);
    let head = head.split('<').next().unwrap_or(head);
    let head = head.rsplit("::").next().unwrap_or(head);
    head.rsplit(' ').next().unwrap_or(head).trim()
}

/// Source files read once per gate run, by the path a finding names (relative to the root, or
/// absolute).
#[derive(Debug, Default)]
pub struct Sources {
    root: PathBuf,
    files: BTreeMap<String, Option<Vec<String>>>,
}

impl Sources {
    pub fn new(root: &Path) -> Sources {
        Sources {
            root: root.to_path_buf(),
            files: BTreeMap::new(),
        }
    }

    fn lines(&mut self, file: &str) -> Option<&Vec<String>> {
        let root = &self.root;
        self.files
            .entry(file.to_string())
            .or_insert_with(|| {
                // A path a sanitizer's report names, which the target could have written:
                // a regular file only (never a FIFO that would block), bounded.
                let bytes = files::read_raw(&root.join(file), files::TEXT_LIMIT, true).ok()?;
                Some(
                    String::from_utf8_lossy(&bytes)
                        .lines()
                        .map(String::from)
                        .collect(),
                )
            })
            .as_ref()
    }

    /// The normalized text of `file:line` and its occurrence index among identical lines of
    /// `function` (counted from the nearest line above that names the function followed by
    /// `(`, else from the top of the file). `None` when the file or line cannot be read.
    pub fn locate(&mut self, file: &str, line: u32, function: &str) -> Option<(String, u32)> {
        let lines = self.lines(file)?;
        let at = (line as usize)
            .checked_sub(1)
            .filter(|&i| i < lines.len())?;
        let text = normalized_line(&lines[at]);
        let name = base_function(function);
        let start = if name.is_empty() {
            0
        } else {
            (0..=at)
                .rev()
                .find(|&i| names_call(&lines[i], name))
                .unwrap_or(0)
        };
        let occurrence = lines[start..at]
            .iter()
            .filter(|l| normalized_line(l) == text)
            .count();
        let occurrence = u32::try_from(occurrence).unwrap_or(u32::MAX);
        Some((text, occurrence))
    }
}

/// Whether `line` holds `name` as a whole word followed by `(` (a definition or a call).
fn names_call(line: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = line[from..].find(name) {
        let s = from + i;
        let e = s + name.len();
        let before_ok = !line[..s].chars().next_back().is_some_and(word);
        let after = line[e..].trim_start();
        if before_ok && after.starts_with('(') {
            return true;
        }
        from = e;
    }
    false
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn comments_go_and_whitespace_does_not_matter() {
        let a = normalized_line("    s[tid] += s[tid + half];   // the racy line");
        assert_eq!(a, "s [ tid ] += s [ tid + half ] ;");
        assert_eq!(normalized_line("s[tid]+=s[ tid+half ] ; /* x */"), a);
        assert_eq!(normalized_line("\ts[tid] /* note */ += s[tid + half];"), a);
        assert_eq!(normalized_line("   "), "");
        assert_eq!(normalized_line("// only a comment"), "");
    }

    #[test]
    fn code_changes_change_it() {
        let a = normalized_line("s[tid] += s[tid + half];");
        assert_ne!(normalized_line("s[tid] += s[tid + 2 * half];"), a);
        assert_ne!(
            normalized_line("unsigned int i;"),
            normalized_line("unsignedint i;")
        );
        assert_ne!(normalized_line("a - -b;"), normalized_line("a--b;"));
        assert_eq!(normalized_line("unsigned   int  i ;"), "unsigned int i ;");
    }

    #[test]
    fn literals_are_kept_whole() {
        assert_eq!(
            normalized_line(r#"printf("a  // b %d\n", x); // c"#),
            r#"printf ( "a  // b %d\n" , x ) ;"#
        );
        assert_eq!(normalized_line(r"c = '\'' ; // q"), r"c = '\'' ;");
    }

    #[test]
    fn the_fingerprint_depends_on_each_part_and_not_on_anything_else() {
        let id = Identity {
            subject: "k".into(),
            detector: "racecheck".into(),
            kind: "Analysis: Race condition".into(),
            function: "k".into(),
            source: "s[tid]+=s[tid+half];".into(),
            occurrence: 0,
        };
        let fp = id.fingerprint();
        assert_eq!(fp.len(), 16);
        assert_eq!(id.clone().fingerprint(), fp, "deterministic");
        let mut other = id.clone();
        other.occurrence = 1;
        assert_ne!(other.fingerprint(), fp);
        let mut other = id.clone();
        other.subject = "k2".into();
        assert_ne!(other.fingerprint(), fp);
        // Parts are separated: moving a character from one part to the next changes it.
        let mut other = id;
        other.subject = "kr".into();
        other.detector = "acecheck".into();
        assert_ne!(other.fingerprint(), fp);
    }

    #[test]
    fn occurrences_count_identical_lines_of_the_function_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.cu"),
            "__global__ void a() {\n  __syncthreads();\n}\n__global__ void b()\n{\n  __syncthreads();\n  x = 1;\n    __syncthreads(); // second\n}\n",
        )
        .unwrap();
        let mut s = Sources::new(dir.path());
        assert_eq!(
            s.locate("k.cu", 6, "b"),
            Some(("__syncthreads ( ) ;".into(), 0))
        );
        assert_eq!(
            s.locate("k.cu", 8, "void b()"),
            Some(("__syncthreads ( ) ;".into(), 1))
        );
        assert_eq!(
            s.locate("k.cu", 2, "a"),
            Some(("__syncthreads ( ) ;".into(), 0))
        );
        assert_eq!(s.locate("k.cu", 99, "a"), None);
        assert_eq!(s.locate("missing.cu", 1, "a"), None);
    }

    /// Two different line-less races of one function never share a fingerprint: every pair of
    /// distinct PCs, and every pair of distinct direction sets, gives two fingerprints; the same
    /// access (whatever the other side's place, the order or repetition of pairs) gives one.
    /// Before, such findings had an empty source and occurrence 0, so one accepted race
    /// accepted every later one of its function.
    #[test]
    fn line_less_findings_are_told_apart_by_their_access() {
        let id = |source: String| Identity {
            subject: "k".into(),
            detector: "racecheck".into(),
            kind: "Analysis: Race condition".into(),
            function: "k".into(),
            source,
            occurrence: 0,
        };
        let pcs: Vec<String> = (0..64u32).map(|i| format!("0x{:x}", i * 0x10)).collect();
        let fps: BTreeSet<String> = pcs
            .iter()
            .map(|pc| id(access_identity(Some(pc), "Write -> Read")).fingerprint())
            .collect();
        assert_eq!(fps.len(), pcs.len(), "two PCs share a fingerprint");
        assert_eq!(
            access_identity(Some(" 0X2A0 "), ""),
            access_identity(Some("0x2a0"), "Read -> Write")
        );
        let dirs = ["Read", "Write", "Atomic"];
        let mut sets = BTreeMap::new();
        for a in dirs {
            for b in dirs {
                let one = format!("{a} -> {b} <no line info>");
                let fp = id(access_identity(None, &one)).fingerprint();
                assert!(
                    sets.insert(fp, one.clone()).is_none(),
                    "{one} shares a fingerprint"
                );
                // The other side's place and repetition do not matter.
                assert_eq!(
                    access_identity(
                        None,
                        &format!("{a} -> {b} kernels/x.cu:3; {a} -> {b} <no line info>")
                    ),
                    access_identity(None, &one)
                );
            }
        }
        assert_eq!(
            access_identity(None, "Write -> Read x; Read -> Write y"),
            access_identity(None, "Read -> Write y; Write -> Read x")
        );
        // A finding with no access at all keeps the empty source it had.
        assert_eq!(access_identity(None, ""), "");
        assert_eq!(access_identity(Some(""), "garbage"), "");
        // Never equal to a normalized line, whatever tokens that line holds.
        let s = access_identity(Some("0x10"), "");
        assert_ne!(normalized_line(&s), s);
        assert_ne!(normalized_line("(no line) pc 0x10"), s);
    }

    #[test]
    fn base_function_takes_the_identifier() {
        assert_eq!(base_function("block_sum_racy"), "block_sum_racy");
        assert_eq!(
            base_function("void ns::reduce<256>(float const*, int)"),
            "reduce"
        );
        assert_eq!(base_function(""), "");
    }
}
