//! racecheck's scope in a program's gate: the kernels that used shared memory. racecheck
//! checks shared-memory accesses only, yet instruments every kernel it is given, and on a kernel
//! with no shared memory at all it can cost minutes for nothing: one launch of a naive 4096x4096
//! transpose ran past 480 s under racecheck on an H100 while memcheck took 2.6 s (run 34). The
//! runs under jitter measure each kernel's shared memory (racegate's injected tool asks the
//! driver for the function's static size and takes the launch's dynamic size from the launch
//! call, [`super::sampling::LaunchCounts`]); a kernel every counted launch of which had none is
//! left out of racecheck's runs (`--kernel-name-exclude`). A kernel the counted runs did not see,
//! or whose size was not known, stays in.
//!
//! What racecheck then does not look at in those kernels is its barrier deadlock report
//! (`--racecheck-deadlock-timeout`); a hang there is still the plain runs' and synccheck's.

use super::sampling::{LaunchCounts, Pass};

/// The kernels racecheck need not check: those with no shared memory in any counted launch.
pub fn skipped(counts: &LaunchCounts) -> Vec<String> {
    counts.1.iter().cloned().collect()
}

/// `counts` without the kernels in `skip`: a sampled plan for racecheck makes no pass of its
/// own for a kernel it does not check.
pub fn without(counts: &LaunchCounts, skip: &[String]) -> LaunchCounts {
    LaunchCounts(
        counts
            .0
            .iter()
            .filter(|(k, _)| !skip.contains(k))
            .map(|(k, n)| (k.clone(), *n))
            .collect(),
        Default::default(),
    )
}

/// `passes` with the kernels in `skip` left out of each pass that does not name its kernels
/// (`--kernel-name`): the unfiltered one, or the one over every kernel not sampled. No passes
/// is one unfiltered run: it becomes one run over every kernel but those.
pub fn exclude(passes: Vec<Pass>, skip: &[String]) -> Vec<Pass> {
    if skip.is_empty() {
        return passes;
    }
    let excludes = skip
        .iter()
        .flat_map(|k| ["--kernel-name-exclude".to_string(), format!("kne={k}")]);
    if passes.is_empty() {
        return vec![Pass {
            args: excludes.collect(),
            judged: "every launch of the kernels that used shared memory".into(),
        }];
    }
    passes
        .into_iter()
        .map(|mut p| {
            if !p.args.iter().any(|a| a == "--kernel-name") {
                p.args.extend(excludes.clone());
            }
            p
        })
        .collect()
}

/// What the report says of the kernels racecheck left out.
pub fn note(subject: &str, skip: &[String]) -> String {
    format!(
        "{subject}: racecheck left out {} kernel(s) that used no shared memory in the runs \
         under jitter (racecheck checks shared memory only): {}",
        skip.len(),
        skip.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::sampling::{plan, Sampling};

    fn report(lines: &[&str]) -> LaunchCounts {
        LaunchCounts::from_report(&lines.join("\n")).expect("counts")
    }

    #[test]
    fn a_kernel_is_shared_free_only_if_every_counted_launch_had_none_known() {
        let c = report(&[
            r#"{"launch_counts":[{"kernel":"_Z9transposev","launches":1,"shared":0},{"kernel":"_Z4tilev","launches":1,"shared":4096},{"kernel":"_Z3dynv","launches":2,"shared":0},{"kernel":"_Z3oldv","launches":1}],"sampled_out":0}"#,
            r#"{"launch_counts":[{"kernel":"_Z9transposev","launches":1,"shared":0},{"kernel":"_Z3dynv","launches":2,"shared":-1}],"sampled_out":0}"#,
        ]);
        // `_Z3dynv` had an unknown size in the second run, `_Z3oldv` no size at all (an older
        // tool), `_Z4tilev` shared memory: only the transpose is left out.
        assert_eq!(skipped(&c), ["_Z9transposev"]);
    }

    #[test]
    fn racechecks_runs_leave_out_the_shared_free_kernels_and_keep_the_others() {
        let skip = vec!["_Z9transposev".to_string()];
        // One unfiltered run becomes one run over every other kernel.
        let p = exclude(Vec::new(), &skip);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].args, ["--kernel-name-exclude", "kne=_Z9transposev"]);
        let p = exclude(plan(&LaunchCounts::default(), Sampling::default()), &skip);
        assert_eq!(p[0].args, ["--kernel-name-exclude", "kne=_Z9transposev"]);
        // A sampled plan: the pass over the kernels not sampled leaves it out too; a pass that
        // names its kernel is left as it is, and the skipped kernel gets no pass of its own.
        let counts = LaunchCounts(
            [
                ("_Z3addPf".to_string(), 500),
                ("_Z9transposev".to_string(), 400),
            ]
            .into_iter()
            .collect(),
            skip.iter().cloned().collect(),
        );
        let p = exclude(plan(&without(&counts, &skip), Sampling::default()), &skip);
        assert!(
            p.iter()
                .all(|q| !q.args.contains(&"kne=_Z9transposev".to_string())
                    || q.args[0] == "--kernel-name-exclude"
                        && !q.args.contains(&"--kernel-name".to_string())),
            "{p:?}"
        );
        assert_eq!(
            p[0].args,
            [
                "--kernel-name-exclude",
                "kne=_Z3addPf",
                "--kernel-name-exclude",
                "kne=_Z9transposev"
            ]
        );
        assert!(p[1..]
            .iter()
            .all(|q| q.args.contains(&"kne=_Z3addPf".to_string())));
        // Nothing to leave out: the passes as they were.
        let before = plan(&counts, Sampling::default());
        assert_eq!(exclude(before.clone(), &[]), before);
    }
}
