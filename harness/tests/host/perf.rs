//! `racegate perf` without a GPU: ncu's `--csv` parsed on a hand-checked sample (always) and on
//! every capture from the H200 under `tests/fixtures/h200/ncu/` (when the folder is there: every
//! file must parse and every `//@ perf:` expectation of a kernel it holds must hold), the
//! `//@ perf:` header, and the exit codes the real binary gives where no device is.

use std::path::{Path, PathBuf};

use racegate::judge::perf::expect::{self, Outcome};
use racegate::judge::perf::ncu::{self, Counters};
use racegate::source::case::perf_lines;
use racegate::source::catalog::{parse_file, Catalog};

use super::{assert_rejects, package_dir, repo_root};
use crate::runner::racegate;

fn fixtures() -> PathBuf {
    package_dir().join("tests/fixtures")
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}

#[test]
fn the_hand_checked_sample_parses_to_the_numbers_worked_out_by_hand() {
    let text = std::fs::read_to_string(fixtures().join("ncu-hand/transpose.csv")).unwrap();
    let launches = ncu::parse_csv(&text).unwrap();
    let names: Vec<&str> = launches.iter().map(|l| l.kernel.as_str()).collect();
    assert_eq!(names, ["transpose_naive_tile", "transpose_padded"]);
    assert!(launches
        .iter()
        .all(|l| l.metrics.len() == ncu::METRICS.len()));
    assert_eq!(launches[0].block, "(32, 8, 1)");

    let naive = Counters::of(&ncu::of_kernel(&launches, "transpose_naive_tile"));
    let padded = Counters::of(&ncu::of_kernel(&launches, "transpose_padded"));
    // 16,381,996 conflicts over 524,288 shared loads; 23,385 over the same.
    let want = [
        (
            naive.shared_ld_conflicts_per_request,
            16_381_996.0 / 524_288.0,
        ),
        (padded.shared_ld_conflicts_per_request, 23_385.0 / 524_288.0),
        (naive.shared_st_conflicts_per_request, 0.0),
        (
            naive.shared_ld_wavefronts_per_request,
            16_906_284.0 / 524_288.0,
        ),
        (naive.shared_st_wavefronts_per_request, 1.0),
        (padded.global_ld_sectors_per_request, 4.0),
        (padded.global_st_sectors_per_request, 4.0),
        // 85.44 usecond and 33,600 nsecond, in microseconds.
        (naive.duration_us, 85.44),
        (padded.duration_us, 33.6),
        (naive.dram_bytes, 134.22e6),
        (naive.occupancy_pct, 88.41),
        (naive.branch_uniform_pct, 100.0),
    ];
    for (i, (got, want)) in want.iter().enumerate() {
        assert!(close(*got, *want), "value {i}: got {got:?}, want {want}");
    }
    // The header of kernels/transpose.cu, judged on these counters: every line holds.
    let source = std::fs::read_to_string(package_dir().join("../kernels/transpose.cu")).unwrap();
    let expects = perf_lines(&source).unwrap();
    for (entry, c) in [
        ("transpose_naive_tile", &naive),
        ("transpose_padded", &padded),
    ] {
        let judged = expect::judge(entry, entry, "kernels/transpose.cu", &expects, Ok(c));
        assert_eq!(judged.len(), 2, "{judged:?}");
        for j in judged {
            assert!(matches!(j.outcome, Outcome::Held { .. }), "{j:?}");
        }
    }
    // The padded counters under the unpadded kernel's header: both conflict lines break.
    let swapped = expect::judge(
        "transpose_naive_tile",
        "transpose_naive_tile",
        "kernels/transpose.cu",
        &expects,
        Ok(&padded),
    );
    assert!(
        matches!(swapped[0].outcome, Outcome::Broken { .. }),
        "{swapped:?}"
    );
}

#[test]
fn values_lose_separators_and_units_and_junk_is_an_error_naming_the_row() {
    assert_eq!(ncu::parse_value("16,381,996", ""), Some(16_381_996.0));
    assert_eq!(ncu::parse_value("1.5", "msecond"), Some(1.5e6));
    assert_eq!(ncu::parse_value("2", "Kbyte"), Some(2000.0));
    assert_eq!(ncu::parse_value("3", "Gbyte"), Some(3e9));
    assert_eq!(ncu::parse_value("97.5", "%"), Some(97.5));
    assert_eq!(ncu::parse_value("n/a", ""), None);
    assert_eq!(
        ncu::split_csv(r#""a","b ""q"", c",d"#).unwrap(),
        ["a", "b \"q\", c", "d"]
    );
    let bad = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
               \"0\",\"k\",\"dram__bytes.sum\",\"byte\",\"lots\"\n";
    let e = ncu::parse_csv(bad).unwrap_err();
    assert!(e.contains("line 2") && e.contains("dram__bytes.sum"), "{e}");
    assert!(ncu::parse_csv("==PROF== nothing profiled\n").is_err());
    let refused = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access \
                   NVIDIA GPU Performance Counters on the target device 0.\n";
    assert!(ncu::refusal(refused)
        .unwrap()
        .starts_with("==ERROR== ERR_NVGPUCTRPERM"));
    assert_eq!(
        ncu::base_name("void reduce<float, 256>(const float *, float *)"),
        "reduce<float, 256>"
    );
}

/// Every ncu capture from the H200 (`tests/fixtures/h200/ncu/CASE.csv`, from `ci/h200_run.py`
/// phase `ncu` or `racegate perf --save-csv`): each file parses with at least one launch, and a
/// kernel of the catalog it holds meets its `//@ perf:` lines. No folder: nothing captured yet
/// (the hand-checked sample above runs regardless); a folder without a CSV fails.
#[test]
fn every_h200_ncu_capture_parses_and_meets_the_headers() {
    let dir = fixtures().join("h200/ncu");
    if !dir.exists() {
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no .csv capture", dir.display());
    let catalog = Catalog::discover(&package_dir().join("..")).unwrap();
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let launches = match ncu::parse_csv(&text) {
            Ok(l) if !l.is_empty() => l,
            Ok(_) => {
                failures.push(format!("{}: no launch", f.display()));
                continue;
            }
            Err(e) => {
                failures.push(format!("{}: {e}", f.display()));
                continue;
            }
        };
        for case in catalog.cases.iter().filter(|c| !c.is_variant()) {
            let of = ncu::of_kernel(&launches, &case.entry.name);
            if of.is_empty() {
                continue;
            }
            let text = std::fs::read_to_string(catalog.root.join(&case.path)).unwrap();
            let c = Counters::of(&of);
            for j in expect::judge(
                &case.name,
                &case.entry.name,
                &case.path,
                &perf_lines(&text).unwrap(),
                Ok(&c),
            ) {
                if let Outcome::Broken { lint, .. } = &j.outcome {
                    failures.push(format!("{}: {lint}", f.display()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_perf_header_names_a_declared_entry_and_known_keys() {
    let base = "// t\n//@ exercise: transpose\n//@ entry: a\n//@ entry: b\n";
    let ok = format!("{base}//@ perf: a bank-conflicts=none coalesced=yes\n//@ perf: bank-conflicts=expected\nint x;\n");
    parse_file("kernels/t.cu", &ok).unwrap();
    let lines = perf_lines(&ok).unwrap();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].applies_to("a") && !lines[0].applies_to("b"));
    assert!(lines[1].applies_to("b") && lines[1].line == 6);
    for (bad, want) in [
        (
            "//@ perf: c bank-conflicts=none",
            "`perf` names `c`, which no `entry` declares",
        ),
        (
            "//@ perf: a bank-conflicts=some",
            "expected bank-conflicts=none|expected",
        ),
        ("//@ perf: a speed=fast", "unknown perf key `speed`"),
        ("//@ perf: a", "`perf` names no expectation"),
        ("//@ perf: a coalesced=yes coalesced=no", "given twice"),
    ] {
        assert_rejects(
            parse_file("kernels/t.cu", &format!("{base}{bad}\nint x;\n")),
            "kernels/t.cu:5: ",
            want,
        );
    }
}

#[test]
fn perf_exits_2_on_bad_input_and_4_without_a_device_with_the_json_saying_so() {
    let root = repo_root();
    let (code, _, err) = racegate(["--root", root.to_str().unwrap()])
        .args(["perf", "no_such_kernel"])
        .env("CUDA_VISIBLE_DEVICES", "")
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = racegate(["--root", root.to_str().unwrap()])
        .args(["perf", "--check", "--no-counters"])
        .env("CUDA_VISIBLE_DEVICES", "")
        .run()
        .parts();
    assert_eq!(code, 2, "{err}");
    // No device here (CUDA_VISIBLE_DEVICES is empty): 4 before anything is timed, whatever ncu.
    let (code, json, err) = racegate(["--root", root.to_str().unwrap()])
        .args(["perf", "transpose_padded", "--check", "--json", "-"])
        .env("CUDA_VISIBLE_DEVICES", "")
        .envs(&[("RACEGATE_NCU", "/nonexistent/ncu")])
        .run()
        .parts();
    assert_eq!(code, 4, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).expect("only JSON on stdout");
    assert_eq!(v["verdict"], "no_device");
    assert_eq!(v["exit_code"], 4);
    assert!(err.contains("no CUDA device"), "{err}");
}

#[test]
fn ncu_profiles_the_first_launch_of_the_entry_with_the_capture_metrics() {
    assert_eq!(
        ncu::Unavailable::Missing("x".into()).to_string(),
        "ncu not found: x"
    );
    let args = ncu::arguments(
        "reduce<float, 256>",
        Path::new("/bin/racegate"),
        &["__perf-worker".into()],
    );
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let k = args.iter().position(|a| a == "-k").unwrap();
    assert_eq!(args[k + 1], "regex:^reduce(<|$)");
    assert!(args
        .windows(2)
        .any(|w| w[0] == "--clock-control" && w[1] == "none"));
    assert!(args
        .iter()
        .any(|a| a.contains("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")));
    assert_eq!(&args[args.len() - 2..], ["/bin/racegate", "__perf-worker"]);
}
