//! The tests of [`super::check`] and [`super::mutate`]: a matrix and a mutation report written
//! as shards by the writers `check` and `mutate` use, merged back into what one run writes.

use super::tests::stamp_of;
use super::*;
use crate::judge::check::{Cell, Evidence, Judgement, Matrix, Observed};
use crate::judge::perf::expect::{Judged, Outcome as PerfOutcome};
use crate::mutate::score::{Control, KernelResult};
use crate::mutate::{MutantResult, MutationReport, Operator, Outcome};
use crate::source::catalog::{Catalog, Detector};

fn catalog() -> Catalog {
    let root = crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap();
    Catalog::discover(&root).unwrap()
}

/// Every case of `catalog` under three detectors, judged each way in turn, with the evidence of
/// a stress run or a sanitizer's, and a perf expectation for every third case.
fn whole_matrix(catalog: &Catalog) -> Matrix {
    let judgements = [
        Judgement::Ok,
        Judgement::Missed,
        Judgement::Unexpected,
        Judgement::Inconclusive,
    ];
    let mut cells: Vec<Cell> = Vec::new();
    let mut seconds: BTreeMap<Detector, f64> = BTreeMap::new();
    let mut perf = Vec::new();
    for (i, c) in catalog.cases.iter().enumerate() {
        for (j, d) in [Detector::Stress, Detector::Racecheck, Detector::Watchdog]
            .into_iter()
            .enumerate()
        {
            let mut cell = crate::report::fixtures::cell();
            cell.case = c.name.clone();
            cell.detector = d;
            cell.judgement = judgements[(i + j) % 4];
            cell.observed = Observed::Flagged(format!("{i}/{j}"));
            cell.seconds = 0.25 * ((i + j) % 5) as f64;
            if d != Detector::Racecheck {
                let mut r = crate::report::fixtures::stress_report();
                r.case = c.name.clone();
                r.seed = i as u64;
                cell.evidence = Evidence::Stress(Box::new(r));
            }
            *seconds.entry(d).or_default() += cell.seconds;
            cells.push(cell);
        }
        if i % 3 == 0 {
            perf.push(Judged {
                case: c.name.clone(),
                expectation: "bank-conflicts=none".into(),
                at: format!("{}:1", c.path),
                outcome: PerfOutcome::Skipped {
                    reason: "no ncu".into(),
                },
            });
        }
    }
    // Summed here as the cells are made, not by the merge's own sum: the merge must give it. A
    // detector without cells has -0.0, f64's empty sum, as `check` writes it.
    let seconds_per_detector = Detector::ALL
        .iter()
        .map(|d| (*d, seconds.get(d).copied().unwrap_or(-0.0)))
        .collect();
    Matrix {
        cells,
        wall_seconds: 7.5,
        seconds_per_detector,
        perf,
    }
}

/// The exit code `check` gives a matrix (ncu present).
fn check_code(m: &Matrix) -> u8 {
    let broken = m.count(Judgement::Missed) + m.count(Judgement::Unexpected);
    if broken > 0 {
        exit::FOUND
    } else if m.count(Judgement::Inconclusive) + m.perf.len() > 0 {
        exit::INCONCLUSIVE
    } else {
        exit::OK
    }
}

/// `whole` cut into `n` check shards as `check --partition K/N --json` writes them (into `t`).
fn check_shards(t: &tempfile::TempDir, catalog: &Catalog, whole: &Matrix, n: u32) -> Vec<PathBuf> {
    let input = fnv(&catalog_input(catalog).unwrap());
    (1..=n)
        .map(|k| {
            let p = Partition { k, n };
            let cases: Vec<&crate::source::catalog::Case> =
                catalog.cases.iter().filter(|c| p.has(&c.name)).collect();
            let mut m = whole.clone();
            m.cells.retain(|c| p.has(&c.case));
            m.perf.retain(|j| p.has(&j.case));
            m.wall_seconds = if k == 1 { whole.wall_seconds } else { 1.0 };
            let json = settings::json(&m) + "\n";
            let text = stamped_check(
                &json,
                &stamp_of(k, n, "check", &input),
                &cases,
                check_code(&m),
            );
            let path = t.path().join(format!("check-{k}.json"));
            std::fs::write(&path, text.unwrap()).unwrap();
            path
        })
        .collect()
}

#[test]
fn check_shards_merge_into_the_matrix_one_run_writes() {
    let catalog = catalog();
    let whole = whole_matrix(&catalog);
    let t = tempfile::tempdir().unwrap();
    for n in [1, 2, 4] {
        let mut paths = check_shards(&t, &catalog, &whole, n);
        paths.reverse();
        let shards = check::read(&paths, &catalog).unwrap();
        let m = check::matrix(&catalog, &shards).unwrap();
        assert_eq!(settings::json(&m), settings::json(&whole), "{n} shards");
        assert_eq!(
            report::markdown::course_table(&m, &catalog),
            report::markdown::course_table(&whole, &catalog)
        );
        assert_eq!(report::junit::check(&m), report::junit::check(&whole));
        assert_eq!(
            report::text::check_summary(&m),
            report::text::check_summary(&whole)
        );
        assert_eq!(check::code(&shards), check_code(&whole));
    }
}

#[test]
fn check_shards_that_are_not_one_run_are_refused() {
    let catalog = catalog();
    let whole = whole_matrix(&catalog);
    let t = tempfile::tempdir().unwrap();
    let paths = check_shards(&t, &catalog, &whole, 3);
    let err = |paths: &[PathBuf]| match check::read(paths, &catalog) {
        Err(e @ Error::Usage(_)) => e.to_string(),
        Err(e) => panic!("not a usage error: {e}"),
        Ok(_) => panic!("merged"),
    };
    assert!(err(&paths[..2]).contains("3/3 missing"));
    let twice = [paths[0].clone(), paths[1].clone(), paths[1].clone()];
    assert!(err(&twice).contains("given twice"));
    // A shard of another catalog: its input differs from the catalog here.
    let other = t.path().join("other.json");
    let text = std::fs::read_to_string(&paths[2]).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["shard"]["input"] = "0000000000000000".into();
    std::fs::write(&other, v.to_string()).unwrap();
    let all_other = [paths[0].clone(), paths[1].clone(), other.clone()];
    let e = err(&all_other);
    assert!(
        e.contains("different runs") && e.contains("other.json"),
        "{e}"
    );
    // One shard without a device among shards with one.
    v["shard"]["input"] =
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["shard"]["input"].clone();
    v["verdict"] = "no_device".into();
    std::fs::write(&other, v.to_string()).unwrap();
    let e = err(&all_other);
    assert!(
        e.contains("without a CUDA device") && e.contains("other.json"),
        "{e}"
    );
}

/// A mutant of `file` with outcome `o` (its id `op:file:i`).
fn mutant(file: &str, i: usize, o: Outcome) -> MutantResult {
    let op = [Operator::ALL[0], Operator::ALL[1]][i % 2];
    MutantResult {
        mutant: crate::mutate::mutant::Mutant {
            id: format!("{}:{file}:{i}", op.name()),
            operator: op,
            file: file.into(),
            function: "f".into(),
            line: i,
            span: 0..0,
            original: "a".into(),
            replacement: "b".into(),
        },
        outcome: o,
        seconds: 0.5,
        diff: format!("-a\n+b {i}\n"),
    }
}

/// Three kernels: one whose mutants are killed, survive or are inconclusive, one with an
/// equivalent whose mutant is gone (stale), one without any mutant.
fn whole_report() -> MutationReport {
    let outcomes = |i: usize| match i % 4 {
        0 => Outcome::Killed {
            by: Detector::Stress,
            detail: "wrong".into(),
        },
        1 => Outcome::Survived,
        2 => Outcome::TimedOut {
            by: Detector::Watchdog,
        },
        _ => Outcome::Inconclusive { why: "x".into() },
    };
    let kernel = |name: &str, count: usize, stale: &[&str]| {
        let mutants: Vec<MutantResult> = (0..count).map(|i| mutant(name, i, outcomes(i))).collect();
        KernelResult {
            kernel: name.into(),
            file: name.into(),
            cases: vec![name.into()],
            control: Some(Control {
                flagged_by: None,
                inconclusive: false,
                detail: "clean".into(),
                seconds: 1.0,
            }),
            score: crate::mutate::OperatorScore::of(name, mutants.iter()),
            mutants,
            wall_seconds: 2.0,
            stale_equivalents: stale.iter().map(|s| s.to_string()).collect(),
            unreachable: vec!["g".into()],
        }
    };
    let kernels = vec![
        kernel("kernels/a.cu", 9, &[]),
        kernel("kernels/b.cu", 5, &["b.cu.equivalent.toml:3: `x` is stale"]),
        kernel("kernels/c.cu", 0, &[]),
    ];
    MutationReport::new(true, Operator::ALL[..2].to_vec(), kernels, 4.0)
}

/// `whole` cut into `n` shards as `mutate --run --partition K/N --json` writes them.
fn mutate_shards(t: &tempfile::TempDir, whole: &MutationReport, n: u32) -> Vec<PathBuf> {
    (1..=n)
        .map(|k| {
            let p = Partition { k, n };
            let mut kernels = Vec::new();
            let mut places = Vec::new();
            for (i, kr) in whole.kernels.iter().enumerate() {
                let at: Vec<usize> = (0..kr.mutants.len())
                    .filter(|j| p.has(&kr.mutants[*j].mutant.id))
                    .collect();
                let mine = match kr.mutants.is_empty() {
                    true => p.has(&kr.kernel),
                    false => !at.is_empty(),
                };
                if !mine {
                    continue;
                }
                let mut kr = kr.clone();
                // What a shard sees as stale: the equivalents of mutants it did not have too.
                if at.len() < kr.mutants.len() {
                    kr.stale_equivalents.push(format!("elsewhere-{k}"));
                }
                kr.mutants = at.iter().map(|j| kr.mutants[*j].clone()).collect();
                kr.score = crate::mutate::OperatorScore::of(&kr.kernel, kr.mutants.iter());
                kernels.push(kr);
                places.push(Place {
                    kernel: i,
                    mutants: at,
                });
            }
            let r = MutationReport::new(true, whole.operators.clone(), kernels, 1.0 + k as f64);
            let text = stamped_mutate(&settings::json(&r), &stamp_of(k, n, "mutate", "i"), &places);
            let path = t.path().join(format!("mutate-{k}.json"));
            std::fs::write(&path, text.unwrap()).unwrap();
            path
        })
        .collect()
}

#[test]
fn mutate_shards_merge_into_the_report_one_run_writes() {
    let whole = whole_report();
    let t = tempfile::tempdir().unwrap();
    for n in [1, 2, 3] {
        let mut paths = mutate_shards(&t, &whole, n);
        paths.reverse();
        let mut r = mutate::report(mutate::read(&paths).unwrap()).unwrap();
        r.wall_seconds = whole.wall_seconds;
        assert_eq!(settings::json(&r), settings::json(&whole), "{n} shards");
        assert_eq!(
            report::mutate::markdown(&r),
            report::mutate::markdown(&whole)
        );
        assert_eq!(r.exit_code(), whole.exit_code());
        assert_eq!(r.total.kill_rate, whole.total.kill_rate);
    }
}

#[test]
fn mutate_shards_keep_a_flagged_control_and_refuse_what_is_not_one_run() {
    let whole = whole_report();
    let t = tempfile::tempdir().unwrap();
    let paths = mutate_shards(&t, &whole, 2);
    // A control flagged in one shard: the merged kernel's control is flagged.
    let text = std::fs::read_to_string(&paths[1]).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["kernels"][0]["control"]["flagged_by"] = "racecheck".into();
    let flagged = t.path().join("flagged.json");
    std::fs::write(&flagged, v.to_string()).unwrap();
    let r = mutate::report(mutate::read(&[paths[0].clone(), flagged]).unwrap()).unwrap();
    let flagged_by = r.kernels[0].control.as_ref().and_then(|c| c.flagged_by);
    assert_eq!(flagged_by, Some(Detector::Racecheck));
    assert_eq!(r.flagged_controls().count(), 1);
    let err = |paths: &[PathBuf]| match mutate::read(paths).and_then(mutate::report) {
        Err(e @ Error::Usage(_)) => e.to_string(),
        Err(e) => panic!("not a usage error: {e}"),
        Ok(_) => panic!("merged"),
    };
    assert!(err(&paths[..1]).contains("2/2 missing"));
    assert!(err(&[paths[0].clone(), paths[0].clone()]).contains("given twice"));
    // Places that do not fit the report's mutants.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["places"][0]["mutants"] = serde_json::json!([]);
    let bad = t.path().join("bad.json");
    std::fs::write(&bad, v.to_string()).unwrap();
    let e = err(&[paths[0].clone(), bad]);
    assert!(e.contains("bad.json") && e.contains("places"), "{e}");
}
