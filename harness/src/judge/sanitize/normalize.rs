//! Findings and their normalization: from typed XML records to text that is identical across
//! runs. Normalization is a list of named, ordered steps ([`STEPS`]), each tested on its own;
//! new steps go at the end.

use std::path::Path;

use serde::Serialize;

use super::xml::{Record, Where};

/// One finding, the unit of snapshots and of the detection matrix.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct Finding {
    /// Record kind: Analysis, Hazard, Synccheck, Precise, Initcheck, Api, or an unknown one.
    pub kind: String,
    /// Error or Warning (empty where the tool gives none).
    pub level: String,
    pub kernel: String,
    /// `file:line` of the finding (the source access for races).
    pub location: String,
    /// Access directions and the other side, e.g. `Write -> Read kernels/x.cu:33`.
    pub accesses: String,
    /// The tool's description, e.g. `Race condition`, `Divergent thread(s) in warp`.
    pub what: String,
}

impl Finding {
    /// The file and line, for annotations (`None` when the record had no line info).
    pub fn file_line(&self) -> Option<(&str, u32)> {
        let (f, l) = self.location.rsplit_once(':')?;
        Some((f, l.parse().ok()?))
    }

    /// The tool's pc of a finding without a line (see `loc`).
    pub fn pc(&self) -> Option<&str> {
        if self.file_line().is_some() {
            return None;
        }
        self.location.rsplit_once(PC).map(|(_, pc)| pc)
    }

    /// One line of normalized text.
    pub fn line(&self) -> String {
        let mut s = format!(
            "{} {}",
            self.kind,
            if self.level.is_empty() {
                "-"
            } else {
                &self.level
            }
        );
        let kernel = if self.kernel.is_empty() {
            "-"
        } else {
            &self.kernel
        };
        s.push_str(&format!(" {kernel} at {}", self.location));
        if !self.accesses.is_empty() {
            s.push_str(&format!(" [{}]", self.accesses));
        }
        s.push_str(&format!(": {}", self.what));
        s
    }
}

/// `file:line`; without a line, the file (or `<no line info>`) and the tool's pc where the XML
/// gives one: two line-less races of one kernel at different pcs stay two findings (merged into
/// one by [`merge_by_location`] before) with two fingerprints ([`Finding::pc`]).
fn loc(w: &Where) -> String {
    let pc = match w.pc.as_deref().map(str::trim) {
        Some(pc) if !pc.is_empty() => format!("{PC}{pc}"),
        _ => String::new(),
    };
    match w.line {
        Some(l) => format!("{}:{l}", w.path),
        None if w.path.is_empty() => format!("<no line info>{pc}"),
        None => format!("{}{pc}", w.path),
    }
}

/// What separates the pc from the place in a line-less location.
const PC: &str = " pc ";

/// Raw findings: one per record, or per (source, destination) pair of a race analysis.
pub fn raw(records: &[Record]) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in records {
        match r {
            Record::Analysis {
                level,
                text,
                source,
                destinations,
            } => {
                for d in destinations {
                    out.push(Finding {
                        kind: "Analysis".into(),
                        level: level.clone(),
                        kernel: source.at.func.clone(),
                        location: loc(&source.at),
                        accesses: format!("{} -> {} {}", source.direction, d.direction, loc(&d.at)),
                        what: text.clone(),
                    });
                }
            }
            Record::Hazard {
                hazard,
                text,
                first,
                second,
            } => out.push(Finding {
                kind: "Hazard".into(),
                level: hazard.clone(),
                kernel: first.at.func.clone(),
                location: loc(&first.at),
                accesses: format!(
                    "{} -> {} {}",
                    first.direction,
                    second.direction,
                    loc(&second.at)
                ),
                what: text.clone(),
            }),
            Record::Synccheck { text, error, at } => out.push(Finding {
                kind: "Synccheck".into(),
                level: "Error".into(),
                kernel: at.func.clone(),
                location: loc(at),
                accesses: String::new(),
                what: if error.is_empty() {
                    text.clone()
                } else {
                    format!("{text}: {error}")
                },
            }),
            Record::Precise {
                level, text, at, ..
            } => out.push(Finding {
                kind: "Precise".into(),
                level: level.clone(),
                kernel: at.func.clone(),
                location: loc(at),
                accesses: String::new(),
                what: text.clone(),
            }),
            Record::Initcheck { text, at } => out.push(Finding {
                kind: "Initcheck".into(),
                level: "Error".into(),
                kernel: at.func.clone(),
                location: loc(at),
                accesses: String::new(),
                what: text.clone(),
            }),
            Record::Api { text, api, .. } => out.push(Finding {
                kind: "Api".into(),
                level: "Error".into(),
                kernel: api.clone(),
                location: "<host>".into(),
                accesses: String::new(),
                what: text.clone(),
            }),
            Record::Unknown { name, text, at } => out.push(Finding {
                kind: format!("Unknown({name})"),
                level: String::new(),
                kernel: at.func.clone(),
                location: loc(at),
                accesses: String::new(),
                what: text.clone(),
            }),
        }
    }
    out
}

/// A normalization step: a name and a function over all findings.
pub struct Step {
    /// Read by the step tests, which name each step.
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub name: &'static str,
    pub apply: fn(Vec<Finding>, &Path) -> Vec<Finding>,
}

/// The steps, in order.
pub const STEPS: &[Step] = &[
    Step {
        name: "repo_relative_paths",
        apply: repo_relative_paths,
    },
    Step {
        name: "mask_addresses",
        apply: mask_addresses,
    },
    Step {
        name: "drop_thread_lists",
        apply: drop_thread_lists,
    },
    Step {
        name: "collapse_api_calls",
        apply: collapse_api_calls,
    },
    Step {
        name: "merge_by_location",
        apply: merge_by_location,
    },
    Step {
        name: "aggregate_and_sort",
        apply: aggregate_and_sort,
    },
];

/// Records to normalized findings.
pub fn findings(records: &[Record], root: &Path) -> Vec<Finding> {
    normalized(raw(records), root)
}

/// Raw findings of any tool (globalcheck's too) through every step.
pub fn normalized(raw: Vec<Finding>, root: &Path) -> Vec<Finding> {
    STEPS.iter().fold(raw, |f, s| (s.apply)(f, root))
}

#[cfg(any(test, feature = "internals"))]
/// Normalized text: one line per finding.
pub fn text(findings: &[Finding]) -> String {
    findings.iter().map(|f| f.line() + "\n").collect()
}

fn map_strings(fs: Vec<Finding>, f: impl Fn(&str) -> String) -> Vec<Finding> {
    fs.into_iter()
        .map(|x| Finding {
            kind: x.kind,
            level: x.level,
            kernel: f(&x.kernel),
            location: f(&x.location),
            accesses: f(&x.accesses),
            what: f(&x.what),
        })
        .collect()
}

/// Absolute paths (the root, or whatever working directory NVRTC prefixed) become
/// repo-relative: everything before `kernels/`, `buggy_variants/` or the root is cut.
pub fn repo_relative_paths(fs: Vec<Finding>, root: &Path) -> Vec<Finding> {
    map_strings(fs, |s| {
        s.split(' ')
            .map(|w| repo_relative(w, root))
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// One path as findings show it: relative to `root`, or from `kernels/` or `buggy_variants/`
/// on when it is absolute elsewhere.
pub fn repo_relative(w: &str, root: &Path) -> String {
    let root = format!("{}/", root.display().to_string().trim_end_matches('/'));
    let w = w.strip_prefix(root.as_str()).unwrap_or(w);
    if w.starts_with('/') {
        for marker in ["/buggy_variants/", "/kernels/"] {
            if let Some(i) = w.rfind(marker) {
                return w[i + 1..].to_string();
            }
        }
    }
    w.to_string()
}

/// Hex numbers of 5 or more digits (device addresses, PCs in messages) become `0x?`.
pub fn mask_addresses(fs: Vec<Finding>, _root: &Path) -> Vec<Finding> {
    map_strings(fs, |s| {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find("0x") {
            out.push_str(&rest[..i]);
            let tail = &rest[i + 2..];
            let n = tail.chars().take_while(|c| c.is_ascii_hexdigit()).count();
            if n >= 5 {
                out.push_str("0x?");
            } else {
                out.push_str(&rest[i..i + 2 + n]);
            }
            rest = &tail[n..];
        }
        out.push_str(rest);
        out
    })
}

/// Per-thread details in descriptions (`at (x,y,z) in block (..)`, `[256 hazards]`) are dropped:
/// which threads show a bug changes run to run, the bug does not.
pub fn drop_thread_lists(fs: Vec<Finding>, _root: &Path) -> Vec<Finding> {
    map_strings(fs, |s| {
        let mut out = s.to_string();
        for open in ["threadIdx", "blockIdx", " [", " by thread", " in block ("] {
            if let Some(i) = out.find(open) {
                if open == " [" && !out[i..].contains("hazard") {
                    continue;
                }
                out.truncate(i);
            }
        }
        out.trim_end().to_string()
    })
}

/// After a device fault every later CUDA call fails; which calls those are depends on the
/// host code's cleanup order, not on the kernel. `... on CUDA API call to cuMemFreeAsync.`
/// becomes `... on a CUDA API call.`
pub fn collapse_api_calls(fs: Vec<Finding>, _root: &Path) -> Vec<Finding> {
    fs.into_iter()
        .map(|mut f| {
            if f.kind == "Api" {
                if let Some(i) = f.what.find(" on CUDA API call to ") {
                    f.what.truncate(i);
                    f.what.push_str(" on a CUDA API call.");
                }
                f.kernel = "-".into();
            }
            f
        })
        .collect()
}

/// Race analyses at one source location are merged: the highest level wins and the access
/// pairs are listed once each. On the H200 the same missing barrier was reported as
/// `Error Write -> Read` in one run and as `Error Read -> Write` plus `Warning Write -> Read`
/// in the next (reduce_sequential::no_loop_sync, 5 runs): which hazard racecheck classifies at
/// which level depends on the schedule, the set of racing accesses at a line does not.
pub fn merge_by_location(fs: Vec<Finding>, _root: &Path) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for f in fs {
        let same = out.iter_mut().find(|o| {
            o.kind == "Analysis"
                && f.kind == "Analysis"
                && o.kernel == f.kernel
                && o.location == f.location
                && o.what == f.what
        });
        match same {
            Some(o) => {
                if level_rank(&f.level) > level_rank(&o.level) {
                    o.level = f.level.clone();
                }
                let mut pairs: Vec<&str> = o
                    .accesses
                    .split("; ")
                    .chain(f.accesses.split("; "))
                    .collect();
                pairs.sort();
                pairs.dedup();
                o.accesses = pairs.join("; ");
            }
            None => out.push(f),
        }
    }
    out
}

fn level_rank(level: &str) -> u8 {
    match level {
        "Error" => 2,
        "Warning" => 1,
        _ => 0,
    }
}

/// Identical findings collapse to one; the result is sorted.
pub fn aggregate_and_sort(mut fs: Vec<Finding>, _root: &Path) -> Vec<Finding> {
    fs.sort();
    fs.dedup();
    fs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(location: &str, accesses: &str, what: &str) -> Finding {
        Finding {
            kind: "Analysis".into(),
            level: "Error".into(),
            kernel: "k".into(),
            location: location.into(),
            accesses: accesses.into(),
            what: what.into(),
        }
    }

    fn root() -> &'static Path {
        Path::new("/home/ci/racegate")
    }

    #[test]
    fn repo_relative_paths_strips_the_root_and_foreign_prefixes() {
        let out = repo_relative_paths(
            vec![f(
                "/home/ci/racegate/kernels/a.cu:3",
                "Write -> Read /tmp/x/buggy_variants/b/c.cu:4",
                "",
            )],
            root(),
        );
        assert_eq!(out[0].location, "kernels/a.cu:3");
        assert_eq!(out[0].accesses, "Write -> Read buggy_variants/b/c.cu:4");
    }

    #[test]
    fn mask_addresses_hides_long_hex_only() {
        let out = mask_addresses(
            vec![f(
                "kernels/a.cu:3",
                "",
                "Access to 0x7fcfe6800170 at pc 0x1c30",
            )],
            root(),
        );
        assert_eq!(out[0].what, "Access to 0x? at pc 0x1c30");
    }

    #[test]
    fn drop_thread_lists_removes_per_thread_detail() {
        let out = drop_thread_lists(
            vec![f(
                "kernels/a.cu:3",
                "",
                "Invalid __global__ write of size 4 bytes by thread (32,0,0) in block (0,0,0)",
            )],
            root(),
        );
        assert_eq!(out[0].what, "Invalid __global__ write of size 4 bytes");
    }

    #[test]
    fn collapse_api_calls_forgets_which_call_failed() {
        let mut a = f("<host>", "", "Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to \"unspecified launch failure\" on CUDA API call to cuMemFreeAsync.");
        a.kind = "Api".into();
        let mut b = a.clone();
        b.what = b.what.replace("cuMemFreeAsync", "cuModuleUnload");
        let out = aggregate_and_sort(collapse_api_calls(vec![a, b], root()), root());
        assert_eq!(out.len(), 1);
        assert!(
            out[0].what.ends_with("on a CUDA API call."),
            "{}",
            out[0].what
        );
    }

    #[test]
    fn merge_by_location_keeps_the_highest_level_and_every_access_pair() {
        let mut w = f(
            "kernels/r.cu:24",
            "Write -> Read kernels/r.cu:24",
            "Race condition",
        );
        w.level = "Warning".into();
        let e = f(
            "kernels/r.cu:24",
            "Read -> Write kernels/r.cu:24",
            "Race condition",
        );
        let other = f(
            "kernels/r.cu:30",
            "Write -> Read kernels/r.cu:24",
            "Race condition",
        );
        let out = merge_by_location(vec![w, e, other], root());
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].level, "Error");
        assert_eq!(
            out[0].accesses,
            "Read -> Write kernels/r.cu:24; Write -> Read kernels/r.cu:24"
        );
    }

    #[test]
    fn aggregate_and_sort_collapses_duplicates_and_orders() {
        let out = aggregate_and_sort(
            vec![
                f("kernels/b.cu:9", "", "x"),
                f("kernels/a.cu:3", "", "x"),
                f("kernels/b.cu:9", "", "x"),
            ],
            root(),
        );
        assert_eq!(
            out.iter().map(|x| x.location.as_str()).collect::<Vec<_>>(),
            ["kernels/a.cu:3", "kernels/b.cu:9"]
        );
    }

    #[test]
    fn steps_are_in_the_documented_order() {
        let names: Vec<_> = STEPS.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "repo_relative_paths",
                "mask_addresses",
                "drop_thread_lists",
                "collapse_api_calls",
                "merge_by_location",
                "aggregate_and_sort"
            ]
        );
    }

    #[test]
    fn analysis_records_become_one_finding_per_destination_line() {
        let xml = include_str!("../../../tests/fixtures/reference/race_mm2.xml");
        let records = super::super::xml::parse(xml).unwrap();
        let out = findings(&records, Path::new("/src"));
        // The reference run has an Error and a Warning record at one source line, each with
        // many destinations on one line at different PCs: one finding, at the higher level.
        assert_eq!(
            text(&out),
            "Analysis Error mm at probe2.cu:23 [Write -> Read probe2.cu:25]: Race condition\n"
        );
    }
}
