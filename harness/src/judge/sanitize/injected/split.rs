//! One batch run of racegate's own tools, judged per case: which launches of the report each
//! case made, and each case's part of the report, so the tools decide a case on its own
//! launches as a run of it alone would (`run::run_tools_split`).
//!
//! The batch's target runs its cases in order and loads one module per case just before its
//! launches, and the tool numbers modules in the order they are loaded; so the modules that
//! launches ran in, in that order, are the cases' modules, one each, when the report says
//! exactly that: as many such modules as cases, each with a launch of its case's entry. The
//! tool clears its shadow at every launch's start, so nothing one launch did is judged in
//! another's. Anything that belongs to no launch (a tool error, launches stepped aside, a
//! fencecheck line that did not parse) and no case is judged apart: [`attribute`] says `None`.

use std::collections::BTreeSet;

use super::fence::handoffs::Handoffs;
use super::report::Report;

/// The module of each case, in case order (`symbols`: each case's entry as launches name it),
/// when the report attributes every launch to exactly one case; `None` otherwise.
pub fn attribute(rep: &Report, handoffs: &Handoffs, symbols: &[String]) -> Option<Vec<i64>> {
    if !rep.errors.is_empty() || !rep.notes.is_empty() || !handoffs.errors.is_empty() {
        return None;
    }
    let modules: BTreeSet<i64> = rep.launches.iter().map(|l| l.module).collect();
    // A launch whose module the tool did not know (-1) has no place in the load order.
    if modules.len() != symbols.len() || modules.iter().any(|m| *m < 0) {
        return None;
    }
    let modules: Vec<i64> = modules.into_iter().collect();
    let each_has_its_entry = modules.iter().zip(symbols).all(|(m, s)| {
        rep.launches
            .iter()
            .any(|l| l.module == *m && l.kernel == *s)
    });
    // Every fencecheck line belongs to a launch of some case's module.
    let launches: BTreeSet<u32> = rep.launches.iter().map(|l| l.launch).collect();
    let handoffs_placed = handoffs
        .handoffs
        .iter()
        .all(|h| modules.contains(&h.module))
        && handoffs
            .summaries
            .iter()
            .all(|s| launches.contains(&s.launch));
    (each_has_its_entry && handoffs_placed).then_some(modules)
}

/// The part of `rep` and `handoffs` that is `module`'s: its module line and its launches.
pub fn part(rep: &Report, handoffs: &Handoffs, module: i64) -> (Report, Handoffs) {
    let launches: Vec<_> = rep
        .launches
        .iter()
        .filter(|l| l.module == module)
        .cloned()
        .collect();
    let numbers: BTreeSet<u32> = launches.iter().map(|l| l.launch).collect();
    let rep = Report {
        started: rep.started,
        modules: rep
            .modules
            .iter()
            .filter(|(m, _)| i64::from(**m) == module)
            .map(|(m, x)| (*m, x.clone()))
            .collect(),
        launches,
        errors: Vec::new(),
        notes: Vec::new(),
        // Counted for the whole process, not per case.
        launch_calls: None,
        frozen_event_times: None,
    };
    let handoffs = Handoffs {
        handoffs: handoffs
            .handoffs
            .iter()
            .filter(|h| h.module == module)
            .cloned()
            .collect(),
        summaries: handoffs
            .summaries
            .iter()
            .filter(|s| numbers.contains(&s.launch))
            .cloned()
            .collect(),
        errors: Vec::new(),
    };
    (rep, handoffs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::sanitize::injected::{fence::handoffs as fence, report};

    fn launch(n: u32, kernel: &str, module: i64, untracked: u64) -> String {
        format!(
            r#"{{"launch":{n},"kernel":"{kernel}","module":{module},"grid":[1,1,1],"block":[64,1,1],"mode":1,"accesses":4,"untracked_accesses":{untracked},"dropped":0,"untracked_allocations":[],"findings":[]}}"#
        )
    }

    fn module(m: i64) -> String {
        format!(r#"{{"module":{m},"cubin":"module-{m}.cubin","functions":[]}}"#)
    }

    const START: &str = r#"{"tool":"globalcheck","mode":1,"budget_bytes":1,"patches":""}"#;

    fn parse(lines: &[String]) -> (Report, Handoffs) {
        let text = lines.join("\n");
        (report::parse(&text), fence::parse(&text))
    }

    fn syms(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn each_case_gets_the_module_it_loaded_and_only_its_launches() {
        // Three cases; the second launches two kernels of its module, one of them twice.
        let (rep, h) = parse(&[
            START.into(),
            module(65536),
            launch(0, "a", 65536, 0),
            module(65537),
            launch(1, "b", 65537, 0),
            launch(2, "b_helper", 65537, 7),
            launch(3, "b", 65537, 0),
            module(65538),
            launch(4, "c", 65538, 0),
        ]);
        assert!(rep.errors.is_empty(), "{:?}", rep.errors);
        let mods = attribute(&rep, &h, &syms(&["a", "b", "c"])).unwrap();
        assert_eq!(mods, vec![65536, 65537, 65538]);
        let (b, _) = part(&rep, &h, mods[1]);
        assert_eq!(
            b.launches.iter().map(|l| l.launch).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(b.modules.keys().copied().collect::<Vec<_>>(), vec![65537]);
        assert_eq!(b.untracked().0, 7, "the second case's doubt is its own");
        for m in [mods[0], mods[2]] {
            assert_eq!(part(&rep, &h, m).0.untracked().0, 0, "and no other case's");
        }
    }

    #[test]
    fn a_report_that_does_not_say_exactly_which_case_made_each_launch_splits_nothing() {
        let base = [
            START.to_string(),
            module(1),
            launch(0, "a", 1, 0),
            module(2),
            launch(1, "b", 2, 0),
        ];
        let (rep, h) = parse(&base);
        assert!(attribute(&rep, &h, &syms(&["a", "b"])).is_some());
        // Cases in another order than their modules, a case missing, one too many, an entry
        // that never launched.
        for s in [&["b", "a"][..], &["a"], &["a", "b", "c"], &["a", "x"]] {
            assert_eq!(attribute(&rep, &h, &syms(s)), None, "{s:?}");
        }
        // A module of nobody's (a third module with launches).
        let mut extra = base.to_vec();
        extra.extend([module(3), launch(2, "a", 3, 0)]);
        let (rep, h) = parse(&extra);
        assert_eq!(attribute(&rep, &h, &syms(&["a", "b"])), None);
        // A launch in no module the tool knew, first in the order.
        let unknown = [
            START.to_string(),
            launch(0, "a", -1, 0),
            module(2),
            launch(1, "b", 2, 0),
        ];
        let (rep, h) = parse(&unknown);
        assert_eq!(attribute(&rep, &h, &syms(&["a", "b"])), None, "module -1");
        // Lines of the run that belong to no launch: a tool error, launches stepped aside, a
        // fencecheck line that did not parse, a handoff in no case's module, a summary of no
        // launch.
        let handoff = |module: i64| {
            format!(
                r#"{{"handoff":{{"launch":0,"kernel":"a","module":{module},"pc_store":1,"pc_release":2,"pc_acquire":3,"pc_read":4}}}}"#
            )
        };
        let placed = {
            let mut lines = base.to_vec();
            lines.push(handoff(1));
            lines.push(
                r#"{"handoffs":{"launch":1,"kernel":"b","recorded":true,"dropped":0}}"#.into(),
            );
            parse(&lines)
        };
        assert!(
            placed.1.errors.is_empty()
                && placed.1.handoffs.len() == 1
                && placed.1.summaries.len() == 1
        );
        assert!(
            attribute(&placed.0, &placed.1, &syms(&["a", "b"])).is_some(),
            "handoffs in the cases' launches"
        );
        let (_, a_part) = part(&placed.0, &placed.1, 1);
        assert_eq!(
            (a_part.handoffs.len(), a_part.summaries.len()),
            (1, 0),
            "a's handoff, b's summary"
        );
        for other in [
            r#"{"error":"the tool could not do something"}"#.to_string(),
            r#"{"note":"stepped-aside","reason":"cuda-graph","launches":3}"#.into(),
            r#"{"handoff":{"launch":"zero"}}"#.into(),
            handoff(9),
            r#"{"handoffs":{"launch":7,"kernel":"b","recorded":true,"dropped":0}}"#.into(),
        ] {
            let mut lines = base.to_vec();
            lines.push(other.clone());
            let (rep, h) = parse(&lines);
            assert_eq!(attribute(&rep, &h, &syms(&["a", "b"])), None, "{other}");
        }
    }
}
