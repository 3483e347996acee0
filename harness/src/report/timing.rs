//! Where a matrix run's process time went: the stress runs' phases and the
//! compute-sanitizer runs split into what their target timed itself and the rest. `check` prints
//! it under the matrix.

use std::fmt::Write;

use crate::judge::check::{Evidence, Matrix};
use crate::run::stress::StressReport;

/// Where the matrix's process time went: the stress cells' phases summed, and the
/// compute-sanitizer cells' time split into what their target said it spent (the line
/// `racegate target timing: ...` of each log) and the rest (the tool's own start,
/// report; the tool patches the code inside the target's timed module load and launch). Empty
/// when no cell has such figures.
pub fn time_breakdown(m: &Matrix) -> String {
    let mut out = String::new();
    let stress: Vec<&StressReport> = m
        .cells
        .iter()
        .filter_map(|c| match &c.evidence {
            Evidence::Stress(r) => Some(&**r),
            Evidence::Sanitizer(_) => None,
        })
        .collect();
    if !stress.is_empty() {
        let sum = |f: fn(&StressReport) -> f64| stress.iter().map(|r| f(r)).sum::<f64>();
        let _ = writeln!(
            out,
            "stress time ({} runs): {:.1} s in all; compile {:.1} s, worker start {:.1} s (catalog {:.1} s, device open {:.1} s, module load {:.1} s), trials {:.1} s (input sets {:.1} s of it)",
            stress.len(),
            sum(|r| r.seconds),
            sum(|r| r.phases.compile),
            sum(|r| r.phases.start),
            sum(|r| r.phases.catalog),
            sum(|r| r.phases.open),
            sum(|r| r.phases.load),
            sum(|r| r.phases.trials),
            sum(|r| r.phases.sets),
        );
    }
    let mut runs = 0usize;
    let (mut all, mut parts) = (0.0f64, [0.0f64; 4]);
    for c in &m.cells {
        let Evidence::Sanitizer(r) = &c.evidence else {
            continue;
        };
        if r.tool.is_own() {
            continue;
        }
        let Some(t) = target_timing(&r.log) else {
            continue;
        };
        runs += 1;
        all += r.seconds;
        for (p, v) in parts.iter_mut().zip(t) {
            *p += v / 1e3;
        }
    }
    if runs > 0 {
        let [catalog, open, load, launch] = parts;
        let _ = writeln!(
            out,
            "compute-sanitizer time ({runs} runs): {all:.1} s in all; the target's catalog {catalog:.1} s, device open {open:.1} s, module load with the tool's patching {load:.1} s, instrumented launch {launch:.1} s; the rest (process and tool start, report) {:.1} s",
            all - catalog - open - load - launch
        );
    }
    out
}

/// The four figures (ms) of a target's `racegate target timing:` line in `log`: catalog, device
/// open, module load, launch.
fn target_timing(log: &str) -> Option<[f64; 4]> {
    let line = log.lines().find_map(|l| {
        l.trim()
            .strip_prefix(crate::judge::sanitize::runner::TIMING)
    })?;
    let mut got = [0.0; 4];
    for (slot, key) in got.iter_mut().zip([
        "catalog ",
        "device open ",
        "module load ",
        "launch and read back ",
    ]) {
        let rest = &line[line.find(key)? + key.len()..];
        *slot = rest.split(' ').next()?.parse().ok()?;
    }
    Some(got)
}

#[cfg(test)]
mod time_tests {
    use super::{target_timing, time_breakdown};
    use crate::judge::check::Evidence;
    use crate::report::fixtures;

    #[test]
    fn the_stress_cells_phases_are_summed() {
        use crate::run::stress::{StressPhases, StressReport};
        let report = |compile: f64, open: f64, trials: f64| StressReport {
            seconds: compile + open + trials + 0.5,
            phases: StressPhases {
                compile,
                start: open + 0.25,
                catalog: 0.0,
                open,
                load: 0.25,
                sets: trials / 2.0,
                trials,
            },
            ..fixtures::stress_report()
        };
        let mut m = fixtures::matrix();
        for (c, o, t) in [(1.0, 0.5, 2.0), (0.0, 1.5, 4.0)] {
            let mut cell = fixtures::cell();
            cell.evidence = Evidence::Stress(Box::new(report(c, o, t)));
            m.cells.push(cell);
        }
        let out = time_breakdown(&m);
        assert!(
            out.contains("stress time (2 runs): 10.0 s in all; compile 1.0 s, worker start 2.5 s (catalog 0.0 s, device open 2.0 s, module load 0.5 s), trials 6.0 s (input sets 3.0 s of it)"),
            "{out}"
        );
    }

    #[test]
    fn a_targets_timing_line_is_read_and_anything_else_is_not() {
        let log = "========= COMPUTE-SANITIZER\nracegate target: k (n=1): results correct\nracegate target timing: catalog 12 ms, device open 340 ms, module load 85 ms, launch and read back 9 ms\n";
        assert_eq!(target_timing(log), Some([12.0, 340.0, 85.0, 9.0]));
        assert_eq!(target_timing("racegate target: k: results correct"), None);
        assert_eq!(
            target_timing("racegate target timing: catalog x ms, device open 1 ms"),
            None
        );
    }

    #[test]
    fn the_breakdown_splits_sanitizer_time_into_the_targets_parts_and_the_rest() {
        let mut m = fixtures::matrix();
        assert_eq!(time_breakdown(&m), "", "no figures, no line");
        if let Evidence::Sanitizer(r) = &mut m.cells[0].evidence {
            r.seconds = 3.0;
            r.log = "racegate target timing: catalog 100 ms, device open 500 ms, module load 250 ms, launch and read back 150 ms\n".into();
        }
        let out = time_breakdown(&m);
        assert!(
            out.contains("compute-sanitizer time (1 runs): 3.0 s in all; the target's catalog 0.1 s, device open 0.5 s, module load with the tool's patching 0.2 s, instrumented launch 0.1 s; the rest (process and tool start, report) 2.0 s"),
            "{out}"
        );
    }
}
