//! Reports inside a library's own code that are known false positives
//! ([`crate::judge::sanitize::known_false_positives`], CUB's initcheck reports today): set aside
//! as a sanitizer run becomes findings ([`super::sanitizers::add`]), then, once the whole run is
//! known, named in a note per subject and tool, or kept as findings (`--keep-library-reports`).
//!
//! Set aside, they are no finding: they neither fail the gate nor enter the baseline, and a
//! baseline entry accepting one from before reads as fixed. The note says where each was, which
//! upstream issues report them, and what initcheck does not judge there.

use super::finding::{GateRun, LibraryReport};

/// `run` with its library reports settled: named in notes, or put back into the findings when
/// `keep`.
pub fn settled(mut run: GateRun, keep: bool) -> GateRun {
    let reports = std::mem::take(&mut run.library_reports);
    // One note per (subject, detector, library), in the order of the sorted reports.
    let mut groups: Vec<Vec<&LibraryReport>> = Vec::new();
    for r in &reports {
        let key = |x: &LibraryReport| {
            (
                x.finding.subject().to_string(),
                x.finding.detector().to_string(),
                x.known.library,
            )
        };
        match groups.iter_mut().find(|g| key(g[0]) == key(r)) {
            Some(g) => g.push(r),
            None => groups.push(vec![r]),
        }
    }
    for g in &groups {
        run.notes.push(note(g, keep));
    }
    if keep {
        run.findings.extend(reports.into_iter().map(|r| r.finding));
        run.findings.sort();
        run.findings.dedup();
    }
    run
}

/// The note of one group (one subject, detector and library).
fn note(g: &[&LibraryReport], keep: bool) -> String {
    let Some(first) = g.first() else {
        return String::new();
    };
    let (subject, detector, library) = (
        first.finding.subject(),
        first.finding.detector(),
        first.known.library,
    );
    let mut issues: Vec<&str> = Vec::new();
    for i in g.iter().flat_map(|r| r.known.issues.split(", ")) {
        if !issues.contains(&i) {
            issues.push(i);
        }
    }
    let places = g
        .iter()
        .map(|r| {
            let f = &r.finding;
            match f.id.function.is_empty() {
                true => f.location(),
                false => format!("{} ({})", f.location(), f.id.function),
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let n = g.len();
    let issues = issues.join(", ");
    match keep {
        false => format!(
            "{subject}: {detector}: {n} report(s) inside {library}'s own code set aside, known \
             false positives of the tool ({issues}): {places}. {library} reads its own temporary \
             storage there before writing it, by design; a never-written input the program \
             hands {library} (to thrust::sort, say) would be reported at the same lines, so \
             {detector} does not judge those reads (--keep-library-reports counts them)"
        ),
        true => format!(
            "{subject}: {detector}: {n} report(s) inside {library}'s own code kept as findings \
             (--keep-library-reports), though the tool is known to report them in correct \
             programs ({issues}): {places}"
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::fingerprint::Sources;
    use super::super::sanitizers;
    use super::*;
    use crate::judge::sanitize::normalize::{self, Finding};
    use crate::judge::sanitize::{xml, SanitizerRun, Tool};

    /// The toolkit's CCCL on the H100 of run 34.
    const CCCL: &str = "/usr/local/cuda-13.0/targets/x86_64-linux/include/cccl/cub";

    /// An initcheck finding as normalization makes it (`normalize::raw` of an Initcheck record).
    fn initcheck(function: &str, location: &str, what: &str) -> Finding {
        Finding {
            kind: "Initcheck".into(),
            level: "Error".into(),
            kernel: function.into(),
            location: location.into(),
            accesses: String::new(),
            what: what.into(),
        }
    }

    /// The six initcheck findings of NVIDIA's correct `thrust/examples/sorting_aos_vs_soa.cu` on
    /// an H100 (run 34, `docs/h200/run-34/a.tgz`, `thrust-sorting-aos-soa/gate.json`): four at
    /// CUB's own loads, the host copy of never-written memory, and the tool's dropped records.
    fn sorting_aos_vs_soa() -> Vec<Finding> {
        let read = |size: u32| format!("Uninitialized __global__ memory read of size {size} bytes");
        let line_less = |name: &str, what: &str| Finding {
            kind: format!("Unknown({name})"),
            level: String::new(),
            kernel: "-".into(),
            location: "<no line info>".into(),
            accesses: String::new(),
            what: what.into(),
        };
        vec![
            initcheck(
                "ThreadLoad",
                &format!("{CCCL}/thread/thread_load.cuh:260"),
                &read(2),
            ),
            initcheck(
                "MergePath",
                &format!("{CCCL}/block/block_merge_sort.cuh:69"),
                &read(4),
            ),
            initcheck(
                "ThreadLoad",
                &format!("{CCCL}/thread/thread_load.cuh:287"),
                &read(4),
            ),
            initcheck(
                "consume_tile",
                &format!("{CCCL}/agent/agent_merge_sort.cuh:512"),
                &read(4),
            ),
            line_less("InitcheckApiError", "Host API uninitialized memory access"),
            line_less(
                "Sanitizer",
                "Warning: Error buffer overflow has been detected. Some records have been dropped",
            ),
        ]
    }

    fn run_of(tool: Tool, findings: Vec<Finding>) -> SanitizerRun {
        crate::judge::sanitize::batch_fixtures::found("p", tool, findings)
    }

    /// The gate's run of `findings` as `tool`'s, settled with `keep`.
    fn gated(tool: Tool, findings: Vec<Finding>, keep: bool) -> GateRun {
        let mut run = GateRun::default();
        let mut sources = Sources::new(Path::new("/nonexistent-root"));
        let hang = sanitizers::add(
            "thrust-sorting-aos-soa",
            &run_of(tool, findings),
            "bin/p",
            &mut sources,
            &mut run,
        );
        assert!(hang.is_none());
        run.tidy();
        settled(run, keep)
    }

    /// CUB's own reads in NVIDIA's correct thrust example are set aside and named in one note;
    /// the host copy of never-written memory still counts, and the tool's dropped records make
    /// the run inconclusive (what was dropped is not judged). Without the list all six were new
    /// findings (run 34).
    #[test]
    fn cubs_own_reads_in_a_correct_thrust_example_are_set_aside_and_noted() {
        let run = gated(Tool::Initcheck, sorting_aos_vs_soa(), false);
        let kinds: Vec<&str> = run.findings.iter().map(|f| f.id.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["Unknown(InitcheckApiError): Host API uninitialized memory access"]
        );
        assert_eq!(run.inconclusive.len(), 1, "{:?}", run.inconclusive);
        assert!(
            format!("{:?}", run.inconclusive).contains("dropped records"),
            "{:?}",
            run.inconclusive
        );
        assert!(run.library_reports.is_empty());
        assert_eq!(run.notes.len(), 1, "{:?}", run.notes);
        let note = &run.notes[0];
        for part in [
            "thrust-sorting-aos-soa: initcheck: 4 report(s) inside CUB's own code set aside",
            "NVIDIA/cccl#2104",
            "NVIDIA/cccl#8054",
            &format!("{CCCL}/thread/thread_load.cuh:260 (ThreadLoad)"),
            &format!("{CCCL}/thread/thread_load.cuh:287 (ThreadLoad)"),
            &format!("{CCCL}/block/block_merge_sort.cuh:69 (MergePath)"),
            &format!("{CCCL}/agent/agent_merge_sort.cuh:512 (consume_tile)"),
            "thrust::sort",
            "--keep-library-reports",
        ] {
            assert!(note.contains(part), "no {part:?} in {note}");
        }
    }

    /// `--keep-library-reports`: the same six findings as without the list, and a note that
    /// says which are known false positives.
    #[test]
    fn keep_library_reports_counts_them_as_findings() {
        let run = gated(Tool::Initcheck, sorting_aos_vs_soa(), true);
        assert_eq!(
            run.findings.len(),
            5,
            "the dropped records are never a finding"
        );
        assert_eq!(run.notes.len(), 1);
        assert!(run.notes[0].contains("4 report(s) inside CUB's own code kept as findings"));
    }

    /// What is not CUB's own read at the headers the list names stays a finding: a read in the
    /// user's own file (the H200 fixture of `histogram_global::uninit_bins`), a read in another
    /// CUB function or header, the same line reported by another tool, another kind of report.
    #[test]
    fn reads_outside_the_listed_cub_functions_still_count() {
        let fixture =
            include_str!("../../tests/fixtures/h200/histogram_global__uninit_bins__initcheck.xml");
        let user = normalize::findings(&xml::parse(fixture).unwrap(), Path::new("/work/main"));
        assert_eq!(user.len(), 1, "{user:?}");
        assert_eq!(
            user[0].location,
            "buggy_variants/histogram_global/uninit_bins.cu:25"
        );
        let read = "Uninitialized __global__ memory read of size 4 bytes";
        let mut found = user.clone();
        found.extend([
            // A function of the user's named like CUB's, in the user's file.
            initcheck("ThreadLoad", "src/thread_load.cuh:260", read),
            // CUB's block load of the program's own input: not on the list.
            initcheck(
                "LoadDirectBlocked",
                &format!("{CCCL}/block/block_load.cuh:115"),
                read,
            ),
            // A listed header, another function.
            initcheck(
                "AgentPartition",
                &format!("{CCCL}/agent/agent_merge_sort.cuh:300"),
                read,
            ),
        ]);
        let run = gated(Tool::Initcheck, found.clone(), false);
        assert_eq!(run.findings.len(), found.len(), "{:?}", run.findings);
        assert!(run.notes.is_empty(), "{:?}", run.notes);
        // A listed read, but memcheck's (an out-of-bounds read there is a bug).
        let mut oob = sorting_aos_vs_soa()[0].clone();
        oob.kind = "Precise".into();
        oob.what = "Invalid __global__ read of size 2 bytes".into();
        let run = gated(Tool::Memcheck, vec![oob], false);
        assert_eq!(run.findings.len(), 1);
        assert!(run.notes.is_empty());
    }
}
