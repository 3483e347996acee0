//! Rubric arithmetic: each item earns `fraction x points`, explained in a line or more.

use serde::{Deserialize, Serialize};

use super::rubric::{CorrectCredit, Rubric};
use crate::judge::sanitize::Tool;

/// A graded item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Item {
    Compiles,
    Correct,
    Racecheck,
    Synccheck,
    Memcheck,
    Initcheck,
    Globalcheck,
    Sharedcheck,
    Performance,
}

impl Item {
    pub fn name(self) -> &'static str {
        match self {
            Item::Compiles => "compiles",
            Item::Correct => "correct",
            Item::Racecheck => "racecheck",
            Item::Synccheck => "synccheck",
            Item::Memcheck => "memcheck",
            Item::Initcheck => "initcheck",
            Item::Globalcheck => "globalcheck",
            Item::Sharedcheck => "sharedcheck",
            Item::Performance => "performance",
        }
    }

    /// What the item checks, for students.
    pub fn title(self) -> &'static str {
        match self {
            Item::Compiles => "Compiles, with the required kernel name and signature",
            Item::Correct => "Correct on randomized sizes (including edges), with schedule jitter",
            Item::Racecheck => "No shared-memory data race (compute-sanitizer racecheck)",
            Item::Synccheck => "Barriers used correctly (compute-sanitizer synccheck)",
            Item::Memcheck => {
                "No out-of-bounds or invalid memory access (compute-sanitizer memcheck)"
            }
            Item::Initcheck => {
                "No read of uninitialized global memory (compute-sanitizer initcheck)"
            }
            Item::Globalcheck => "No race on global memory (racegate globalcheck)",
            Item::Sharedcheck => {
                "No read of unwritten shared memory, no atomic racing a plain access (racegate sharedcheck)"
            }
            Item::Performance => "Performance against the course's reference kernel",
        }
    }

    /// The item a tool's run grades; `None` for tools grading does not run.
    pub fn of_tool(t: Tool) -> Option<Item> {
        Some(match t {
            Tool::Racecheck => Item::Racecheck,
            Tool::Synccheck => Item::Synccheck,
            Tool::Memcheck => Item::Memcheck,
            Tool::Initcheck => Item::Initcheck,
            Tool::Globalcheck => Item::Globalcheck,
            Tool::Sharedcheck => Item::Sharedcheck,
            // The course's exercises are graded on these six; fencecheck's and streamcheck's
            // classes are globalcheck's and a one-stream program's.
            Tool::Fencecheck | Tool::Streamcheck => return None,
        })
    }

    /// The item named `name` (as in a rubric); `None` for no such item.
    pub fn from_name(name: &str) -> Option<Item> {
        Item::ALL.into_iter().find(|i| i.name() == name)
    }

    /// The items the rubric says this one requires (`[requires]`).
    pub fn requirements(self, r: &Rubric) -> Vec<Item> {
        r.requires
            .get(self.name())
            .into_iter()
            .flatten()
            .filter_map(|n| Item::from_name(n))
            .collect()
    }

    pub fn points(self, r: &Rubric) -> f64 {
        match self {
            Item::Compiles => r.compiles,
            Item::Correct => r.correct,
            Item::Racecheck => r.racecheck,
            Item::Synccheck => r.synccheck,
            Item::Memcheck => r.memcheck,
            Item::Initcheck => r.initcheck,
            Item::Globalcheck => r.globalcheck,
            Item::Sharedcheck => r.sharedcheck,
            Item::Performance => r.performance,
        }
    }
}

impl Item {
    /// Every item, in the order grades list them.
    pub const ALL: [Item; 9] = [
        Item::Compiles,
        Item::Correct,
        Item::Racecheck,
        Item::Synccheck,
        Item::Memcheck,
        Item::Initcheck,
        Item::Globalcheck,
        Item::Sharedcheck,
        Item::Performance,
    ];

    /// The items `r` gives points to: the columns of a batch's CSV.
    pub fn graded(r: &Rubric) -> Vec<Item> {
        Item::ALL
            .into_iter()
            .filter(|it| it.points(r) > 0.0)
            .collect()
    }
}

/// How an item went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Partial,
    Failed,
    /// Not graded because an earlier item failed or no device was there: 0 points.
    NotRun,
}

/// One item of a grade.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ItemResult {
    pub item: Item,
    pub status: Status,
    pub score: f64,
    pub max_score: f64,
    /// Why, line by line.
    pub detail: String,
}

/// An item earning `fraction` (0..=1) of its points. Items worth 0 points are reported but
/// count nothing.
pub fn item(r: &Rubric, it: Item, fraction: f64, detail: String) -> ItemResult {
    let max = it.points(r);
    let fraction = fraction.clamp(0.0, 1.0);
    let score = (max * fraction * 100.0).round() / 100.0;
    let status = if fraction >= 1.0 {
        Status::Passed
    } else if fraction > 0.0 {
        Status::Partial
    } else {
        Status::Failed
    };
    ItemResult {
        item: it,
        status,
        score,
        max_score: max,
        detail,
    }
}

/// Items that were not graded (0 points, full max).
pub fn not_run(r: &Rubric, items: &[Item], why: &str) -> Vec<ItemResult> {
    items
        .iter()
        .filter(|it| it.points(r) > 0.0)
        .map(|&it| ItemResult {
            item: it,
            status: Status::NotRun,
            score: 0.0,
            max_score: it.points(r),
            detail: why.to_string(),
        })
        .collect()
}

/// The reason an item is not judged when `unmet` (items it requires) did not pass: the
/// kernel's correctness first, since that is what a clean tool run of a kernel that does not
/// work would otherwise seem to vouch for.
pub fn not_judged_why(unmet: &[Item]) -> String {
    if unmet.contains(&Item::Correct) {
        "not judged: the kernel is not correct (this item requires `correct`)".to_string()
    } else {
        let names: Vec<&str> = unmet.iter().map(|i| i.name()).collect();
        format!(
            "not judged: it requires `{}`, which did not pass",
            names.join("`, `")
        )
    }
}

/// An item not judged because items it requires did not pass: 0 points, full max.
pub fn not_judged(r: &Rubric, it: Item, unmet: &[Item]) -> ItemResult {
    ItemResult {
        item: it,
        status: Status::NotRun,
        score: 0.0,
        max_score: it.points(r),
        detail: not_judged_why(unmet),
    }
}

/// The items `it` requires that are not among `passed`.
pub fn unmet(r: &Rubric, it: Item, results: &[ItemResult]) -> Vec<Item> {
    it.requirements(r)
        .into_iter()
        .filter(|need| {
            !results
                .iter()
                .any(|x| x.item == *need && x.status == Status::Passed)
        })
        .collect()
}

/// The fraction of the correctness item's points earned with `passed` of `n` trials correct:
/// all or nothing, unless the rubric opts into proportional credit.
pub fn correct_fraction(credit: CorrectCredit, passed: usize, n: usize) -> f64 {
    match credit {
        CorrectCredit::Proportional => passed as f64 / n.max(1) as f64,
        CorrectCredit::AllOrNothing => f64::from(u8::from(n > 0 && passed == n)),
    }
}

/// (score, max) of a list of items, rounded to hundredths.
pub fn total(items: &[ItemResult]) -> (f64, f64) {
    let s: f64 = items.iter().map(|i| i.score).sum();
    let m: f64 = items.iter().map(|i| i.max_score).sum();
    ((s * 100.0).round() / 100.0, (m * 100.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rubric() -> Rubric {
        Rubric {
            compiles: 10.0,
            correct: 40.0,
            racecheck: 15.0,
            synccheck: 10.0,
            memcheck: 15.0,
            initcheck: 10.0,
            globalcheck: 0.0,
            sharedcheck: 0.0,
            performance: 0.0,
            performance_rule: Default::default(),
            correct_credit: Default::default(),
            requires: Default::default(),
        }
    }

    #[test]
    fn partial_credit_is_a_fraction_of_the_points() {
        let r = rubric();
        let it = item(&r, Item::Correct, 7.0 / 8.0, "7 of 8".into());
        assert_eq!(
            (it.score, it.max_score, it.status),
            (35.0, 40.0, Status::Partial)
        );
        assert_eq!(
            item(&r, Item::Racecheck, 1.0, String::new()).status,
            Status::Passed
        );
        assert_eq!(item(&r, Item::Racecheck, 0.0, String::new()).score, 0.0);
    }

    #[test]
    fn totals_add_up() {
        let r = rubric();
        let items = vec![
            item(&r, Item::Compiles, 1.0, String::new()),
            item(&r, Item::Correct, 0.5, String::new()),
        ];
        assert_eq!(total(&items), (30.0, 50.0));
        assert_eq!(r.max(), 100.0);
    }

    #[test]
    fn zero_point_items_are_not_listed_as_not_run() {
        let r = rubric();
        let v = not_run(&r, &[Item::Correct, Item::Performance], "x");
        assert_eq!(v.len(), 1);
        assert_eq!(total(&v), (0.0, 40.0));
    }

    #[test]
    fn correctness_is_all_or_nothing_unless_the_rubric_opts_into_proportional_credit() {
        use CorrectCredit::{AllOrNothing, Proportional};
        for n in 1..=16 {
            for passed in 0..=n {
                let all = correct_fraction(AllOrNothing, passed, n);
                assert_eq!(all, if passed == n { 1.0 } else { 0.0 }, "{passed}/{n}");
                let part = correct_fraction(Proportional, passed, n);
                assert!(
                    (part - passed as f64 / n as f64).abs() < 1e-12,
                    "{passed}/{n}"
                );
            }
        }
        assert_eq!(
            correct_fraction(AllOrNothing, 0, 0),
            0.0,
            "no trial is no proof"
        );
    }

    #[test]
    fn an_item_whose_requirement_failed_is_not_judged_and_says_why() {
        let mut r: Rubric = toml::from_str(
            "compiles = 10\ncorrect = 40\nracecheck = 15\nsynccheck = 10\nmemcheck = 15\n\
             initcheck = 10\n[requires]\nracecheck = [\"correct\"]\n",
        )
        .expect("a rubric");
        let correct = |fraction| item(&r, Item::Correct, fraction, String::new());
        let compiled = item(&r, Item::Compiles, 1.0, String::new());
        for (fraction, judged) in [(1.0, true), (0.875, false), (0.0, false)] {
            let so_far = [compiled.clone(), correct(fraction)];
            let unmet = unmet(&r, Item::Racecheck, &so_far);
            assert_eq!(unmet.is_empty(), judged, "correct at {fraction}");
            // synccheck requires nothing here: always judged.
            assert!(super::unmet(&r, Item::Synccheck, &so_far).is_empty());
        }
        let skipped = not_judged(&r, Item::Racecheck, &[Item::Correct]);
        assert_eq!(
            (skipped.status, skipped.score, skipped.max_score),
            (Status::NotRun, 0.0, 15.0)
        );
        assert_eq!(
            skipped.detail,
            "not judged: the kernel is not correct (this item requires `correct`)"
        );
        r.requires
            .insert("performance".into(), vec!["racecheck".into()]);
        r.performance = 5.0;
        assert_eq!(
            not_judged_why(&Item::Performance.requirements(&r)),
            "not judged: it requires `racecheck`, which did not pass"
        );
    }
}
