//! Rubrics (`grading/rubric.toml` or a course's own): points per item, how correctness is
//! credited, and which items require others ([`Rubric::check_requires`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::errors::{Error, Result};
use crate::source::files;

/// The default rubric, relative to the project root.
pub const RUBRIC: &str = "grading/rubric.toml";

/// The names of the graded items, in the order grades list them (`score::Item::ALL`).
pub const ITEMS: [&str; 9] = [
    "compiles",
    "correct",
    "racecheck",
    "synccheck",
    "memcheck",
    "initcheck",
    "globalcheck",
    "sharedcheck",
    "performance",
];

/// When an item is graded: compiles, then correct, then the tools (side by side), then
/// performance. An item may require only items of an earlier stage.
fn stage(name: &str) -> u8 {
    match name {
        "compiles" => 0,
        "correct" => 1,
        "performance" => 3,
        _ => 2,
    }
}

/// Points per item.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Rubric {
    pub compiles: f64,
    pub correct: f64,
    pub racecheck: f64,
    pub synccheck: f64,
    pub memcheck: f64,
    pub initcheck: f64,
    /// Optional (0 unless the rubric names it): no race on global memory (globalcheck).
    #[serde(default)]
    pub globalcheck: f64,
    /// Optional (0 unless the rubric names it): no read of unwritten shared memory and no
    /// atomic racing a plain shared access (sharedcheck).
    #[serde(default)]
    pub sharedcheck: f64,
    #[serde(default)]
    pub performance: f64,
    /// How the correctness item scores wrong trials: all-or-nothing unless the rubric opts into
    /// proportional credit (`correct_credit = "proportional"`).
    #[serde(default)]
    pub correct_credit: CorrectCredit,
    #[serde(default)]
    pub performance_rule: PerformanceRule,
    /// What each item requires (`[requires]`, e.g. `racecheck = ["correct"]`): an item whose
    /// requirement did not pass scores 0 and is not run. Checked by [`Rubric::load`]: every
    /// name is an item the rubric grades, and there is no cycle.
    #[serde(default)]
    pub requires: BTreeMap<String, Vec<String>>,
}

/// How the correctness item scores wrong trials.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CorrectCredit {
    /// Any wrong, faulted or hung trial fails the item: a kernel wrong in some runs is a wrong
    /// kernel (intermittent wrong results are what races look like).
    #[default]
    AllOrNothing,
    /// The fraction of trials that were correct.
    Proportional,
}

/// How the performance item is scored.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PerformanceRule {
    pub threshold: f64,
    pub zero_at: f64,
}

impl Default for PerformanceRule {
    fn default() -> Self {
        PerformanceRule {
            threshold: 1.25,
            zero_at: 3.0,
        }
    }
}

impl Rubric {
    pub fn load(path: &Path) -> Result<Rubric> {
        let text = files::read_text(path, "the rubric", files::TEXT_LIMIT)?;
        let r: Rubric = toml::from_str(&text).map_err(|e| Error::Toml {
            path: path.display().to_string(),
            line: e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(1),
            message: e.message().to_string(),
        })?;
        for (k, v) in [
            ("compiles", r.compiles),
            ("correct", r.correct),
            ("racecheck", r.racecheck),
            ("synccheck", r.synccheck),
            ("memcheck", r.memcheck),
            ("initcheck", r.initcheck),
            ("globalcheck", r.globalcheck),
            ("sharedcheck", r.sharedcheck),
            ("performance", r.performance),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(Error::Usage(format!(
                    "{}: `{k}` must be a number >= 0, got {v}",
                    path.display()
                )));
            }
        }
        r.check_requires()
            .map_err(|why| Error::Usage(format!("{}: {why}", path.display())))?;
        if r.performance_rule.threshold >= r.performance_rule.zero_at
            || r.performance_rule.threshold < 1.0
        {
            return Err(Error::Usage(format!(
                "{}: performance_rule needs 1 <= threshold < zero_at",
                path.display()
            )));
        }
        Ok(r)
    }

    /// `[requires]` names only known items, requires only items that are graded (an item the
    /// rubric gives 0 points is not run, so nothing could depend on it) and graded before the
    /// item that requires them, and has no cycle (an item that needs itself, directly or around
    /// others, could never run).
    pub fn check_requires(&self) -> std::result::Result<(), String> {
        let unknown = |n: &str| {
            format!(
                "[requires]: unknown item `{n}` (items: {})",
                ITEMS.join(", ")
            )
        };
        for (item, needs) in &self.requires {
            for n in std::iter::once(item).chain(needs) {
                if self.points_of(n).is_none() {
                    return Err(unknown(n));
                }
            }
        }
        // Depth-first search for a cycle, naming it.
        fn visit<'a>(
            r: &'a Rubric,
            n: &'a str,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) -> std::result::Result<(), String> {
            if let Some(i) = path.iter().position(|p| *p == n) {
                let mut cycle = path[i..].to_vec();
                cycle.push(n);
                return Err(format!(
                    "[requires] has a cycle: {} (such items could never be judged)",
                    cycle.join(" -> ")
                ));
            }
            if !done.insert(n) {
                return Ok(());
            }
            path.push(n);
            for m in r.requires.get(n).into_iter().flatten() {
                visit(r, m, path, done)?;
            }
            path.pop();
            Ok(())
        }
        let mut done = BTreeSet::new();
        for item in self.requires.keys() {
            visit(self, item, &mut Vec::new(), &mut done)?;
        }
        for (item, needs) in &self.requires {
            if self.points_of(item).is_none() {
                return Err(unknown(item));
            }
            for n in needs {
                let Some(points) = self.points_of(n) else {
                    return Err(unknown(n));
                };
                if n != item && stage(n) >= stage(item) {
                    return Err(format!(
                        "[requires]: `{item}` cannot require `{n}`: an item may require only \
                         items graded before it (compiles, then correct, then the tools side by \
                         side, then performance)"
                    ));
                }
                if points <= 0.0 {
                    return Err(format!(
                        "[requires]: `{n}` has 0 points, so it is not graded: give it points or \
                         leave it out of `{item} = [...]`"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The points of the item named `name`; `None` for no such item.
    pub fn points_of(&self, name: &str) -> Option<f64> {
        Some(match name {
            "compiles" => self.compiles,
            "correct" => self.correct,
            "racecheck" => self.racecheck,
            "synccheck" => self.synccheck,
            "memcheck" => self.memcheck,
            "initcheck" => self.initcheck,
            "globalcheck" => self.globalcheck,
            "sharedcheck" => self.sharedcheck,
            "performance" => self.performance,
            _ => return None,
        })
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn max(&self) -> f64 {
        self.compiles
            + self.correct
            + self.racecheck
            + self.synccheck
            + self.memcheck
            + self.initcheck
            + self.globalcheck
            + self.sharedcheck
            + self.performance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rubric_with(requires: &str) -> std::result::Result<(), String> {
        let text = format!(
            "compiles = 10\ncorrect = 40\nracecheck = 15\nsynccheck = 10\nmemcheck = 15\n\
             initcheck = 10\nperformance = 5\n[requires]\n{requires}"
        );
        let r: Rubric = toml::from_str(&text).map_err(|e| e.to_string())?;
        r.check_requires()
    }

    #[test]
    fn requirements_are_checked_for_names_points_order_and_cycles() {
        assert_eq!(
            rubric_with("racecheck = [\"correct\"]\nperformance = [\"correct\", \"racecheck\"]\n"),
            Ok(())
        );
        for (requires, says) in [
            ("racecheck = [\"corect\"]\n", "unknown item `corect`"),
            ("racechek = [\"correct\"]\n", "unknown item `racechek`"),
            ("correct = [\"correct\"]\n", "cycle: correct -> correct"),
            (
                "racecheck = [\"synccheck\"]\nsynccheck = [\"racecheck\"]\n",
                "cycle: racecheck -> synccheck -> racecheck",
            ),
            (
                "correct = [\"racecheck\"]\n",
                "`correct` cannot require `racecheck`",
            ),
            (
                "racecheck = [\"globalcheck\"]\n",
                "`racecheck` cannot require `globalcheck`",
            ),
            (
                "performance = [\"globalcheck\"]\n",
                "`globalcheck` has 0 points",
            ),
        ] {
            let why = rubric_with(requires).expect_err(requires);
            assert!(why.contains(says), "{requires:?}: {why}");
        }
    }

    #[test]
    fn the_shipped_rubric_requires_correctness_of_every_tool_and_performance() {
        let pkg = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo names the package");
        let path = Path::new(&pkg).join("../grading/rubric.toml");
        let r = Rubric::load(&path).expect("the shipped rubric loads");
        assert_eq!(r.correct_credit, CorrectCredit::AllOrNothing);
        for item in [
            "racecheck",
            "synccheck",
            "memcheck",
            "initcheck",
            "performance",
        ] {
            assert_eq!(
                r.requires.get(item),
                Some(&vec!["correct".to_string()]),
                "{item}"
            );
        }
    }
}
