//! `gate::<name>`: `racegate gate -- PROGRAM` end to end, with fake compute-sanitizers and fake
//! programs (host). The fake programs stand in for CUDA programs, so every gate here is judged
//! as on a machine with a device (`RACEGATE_TEST_PROGRAM_DEVICE`, a test build's switch): the
//! exit codes are a GPU machine's. What a gate does without a device is
//! `tests/host/no_device_artifacts.rs`'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::runner::racegate;
use crate::{temp_dir, write_script, Failed};

/// The exit code a gate gives when it would give `want` with a device: the same, since every
/// gate here is judged as on one.
fn expected(want: i32) -> i32 {
    want
}

/// A gate run's outcome: exit code, stdout, stderr, the `--json` document, wall time.
struct Gate {
    code: i32,
    out: String,
    err: String,
    json: serde_json::Value,
    took: Duration,
}

impl Gate {
    fn new_count(&self) -> u64 {
        self.json["counts"]["new"].as_u64().unwrap_or(u64::MAX)
    }

    fn findings(&self, detector: &str) -> Vec<&serde_json::Value> {
        self.json["findings"]
            .as_array()
            .map(|a| a.iter().filter(|f| f["detector"] == detector).collect())
            .unwrap_or_default()
    }

    fn fail(&self, what: &str) -> Failed {
        format!(
            "{what}\nexit {}\n{}\n{}\n{}",
            self.code,
            self.out,
            self.err,
            serde_json::to_string_pretty(&self.json).unwrap_or_default()
        )
        .into()
    }
}

/// `racegate gate ARGS` in `dir`, with `env`; the JSON goes to `dir/gate.json`.
fn gate(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Gate {
    let json = dir.join("gate.json");
    let _ = std::fs::remove_file(&json);
    let start = Instant::now();
    // These tests stand a script in for compute-sanitizer; globalcheck is no compute-sanitizer
    // tool and has nothing to fake it with, so it is left out where a test picks no tools.
    let fake = env.iter().any(|(k, _)| *k == "RACEGATE_COMPUTE_SANITIZER");
    let picks_tools = args.iter().any(|a| a.starts_with("--tools"));
    let four: &[&str] = if fake && !picks_tools {
        &["--tools", "racecheck,synccheck,memcheck,initcheck"]
    } else {
        &[]
    };
    let ran = racegate(["gate", "--json"])
        .args([&json])
        .args(four)
        .args(args)
        .at(dir)
        .program_device()
        .envs(env)
        .run();
    Gate {
        code: ran.exit(),
        out: ran.stdout,
        err: ran.stderr,
        json: std::fs::read_to_string(&json)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default(),
        took: start.elapsed(),
    }
}

/// A fake compute-sanitizer: for racecheck it saves the XML named by `$FAKE_XML` (when set)
/// and exits with the findings code; otherwise it writes an XML without records and exits 0.
fn clean_sanitizer(dir: &Path) -> Result<PathBuf, Failed> {
    write_script(
        dir,
        "compute-sanitizer",
        r#"#!/bin/sh
tool=; save=
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2; shift ;;
    --save) save=$2; shift ;;
  esac
  shift
done
if [ "$tool" = racecheck ] && [ -n "$FAKE_XML" ]; then cp "$FAKE_XML" "$save"; exit 86; fi
echo '<?xml version="1.0"?><ComputeSanitizerOutput></ComputeSanitizerOutput>' > "$save"
exit 0
"#,
    )
}

/// A fake compute-sanitizer that refuses the device: every tool inconclusive.
fn refusing_sanitizer(dir: &Path) -> Result<PathBuf, Failed> {
    write_script(
        dir,
        "refusing-sanitizer",
        "#!/bin/sh\necho 'Device not supported' >&2\nexit 255\n",
    )
}

fn env_of(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// A temporary folder with [`clean_sanitizer`] in it, and the path of that fake as
/// `RACEGATE_COMPUTE_SANITIZER` takes it.
fn with_clean_sanitizer() -> Result<(tempfile::TempDir, String), Failed> {
    let dir = temp_dir("racegate-gate-")?;
    let fake = env_of(&clean_sanitizer(dir.path())?);
    Ok((dir, fake))
}

/// A program whose output differs under schedule jitter (a run with racegate's injection set)
/// and never without it: a number stable over the plain runs that changes under jitter, as a
/// race's result would (a number that varies without jitter too is noise, not a finding).
const FLAKY: &str = "#!/bin/sh\nif [ -n \"$CUDA_INJECTION64_PATH\" ]; then echo \"value 1$(date +%N)\"; else echo \"value 42\"; fi\n";

/// A program whose output changes under jitter: a new finding; `--update-baseline` accepts it into
/// the program baseline (the default file of program mode), and the next run has nothing new.
#[test]
fn program_findings_and_the_baseline_flow() -> Result<(), Failed> {
    let dir = temp_dir("racegate-gate-")?;
    let fake = refusing_sanitizer(dir.path())?;
    write_script(dir.path(), "flaky", FLAKY)?;
    let env = [("RACEGATE_COMPUTE_SANITIZER", fake.to_str().unwrap())];
    let g1 = gate(dir.path(), &["--", "./flaky"], &env);
    if g1.code != expected(3)
        || !g1.out.contains("NEW      flaky [output]")
        || !g1.out.contains("INCONCLUSIVE flaky [racecheck]")
        || g1.new_count() != 1
    {
        return Err(g1.fail("first run"));
    }
    // Not a terminal: one nextest-style line per finished detector on stderr (exit, watchdog
    // and output first: their runs under jitter count the launches the tools then sample; then
    // the 4 sanitizers).
    if !g1.err.contains("INCONCLUSIVE [")
        || !g1.err.contains("(3/7) flaky::output")
        || !g1.err.contains("(7/7) flaky::")
        || !g1.err.contains("FOUND [")
    {
        return Err(g1.fail("progress lines"));
    }
    let g2 = gate(dir.path(), &["--update-baseline", "--", "./flaky"], &env);
    let base = dir.path().join(racegate::gate::PROGRAM_BASELINE);
    if g2.code != expected(3) || !g2.out.contains("baseline written") || !base.is_file() {
        return Err(g2.fail("update"));
    }
    if dir.path().join(racegate::gate::BASELINE).exists() {
        return Err("program mode wrote the manifest baseline's file".into());
    }
    let g3 = gate(dir.path(), &["--", "./flaky"], &env);
    if g3.code != expected(3) || !g3.out.contains("accepted flaky [output]") || g3.new_count() != 0
    {
        return Err(g3.fail("after the baseline"));
    }
    let f = &g3.findings("output")[0];
    if f["baseline_state"] != "accepted" || f["fingerprint"].as_str().is_none_or(|s| s.len() != 16)
    {
        return Err(g3.fail("the JSON finding"));
    }
    Ok(())
}

/// The plain runs of a program get globalcheck's tool in jitter mode (built from the pinned
/// wheels of `ci/setup` here), with a seed per run; `--no-jitter` runs them without it.
#[test]
fn plain_runs_get_the_jitter_injection_unless_no_jitter() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    write_script(
        dir.path(),
        "shows_env",
        "#!/bin/sh\necho \"mode=$RACEGATE_GC_MODE tool=${CUDA_INJECTION64_PATH:+set} seeded=${RACEGATE_GC_SEED:+yes}\"\n",
    )?;
    let env = [("RACEGATE_COMPUTE_SANITIZER", fake.as_str())];
    let want = [
        "--runs",
        "2",
        "--pass-regex",
        "mode=jitter tool=set seeded=yes",
    ];
    let g = gate(
        dir.path(),
        &[&want[..], &["--", "./shows_env"]].concat(),
        &env,
    );
    if g.code != expected(0) || g.new_count() != 0 {
        return Err(g.fail("the plain runs must see the jitter injection (did ci/setup run?)"));
    }
    let g = gate(
        dir.path(),
        &[&want[..], &["--no-jitter", "--", "./shows_env"]].concat(),
        &env,
    );
    if g.code != expected(1) || g.new_count() != 1 || g.findings("regex").is_empty() {
        return Err(g.fail("--no-jitter runs without the injection"));
    }
    Ok(())
}

/// `gate -- echo hi`: a bare name is found through PATH.
#[test]
fn a_program_found_through_path_starts() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    let g = gate(
        dir.path(),
        &["--runs", "2", "--", "echo", "hi"],
        &[("RACEGATE_COMPUTE_SANITIZER", fake.as_str())],
    );
    if g.code != expected(0)
        || g.new_count() != 0
        || g.out.contains("could not start")
        || g.json["checked"].as_array().is_none_or(|c| c.len() != 7)
    {
        return Err(g.fail("echo hi"));
    }
    let g = gate(dir.path(), &["--", "no-such-program-racegate"], &[]);
    if g.code != 2 || !g.err.contains("not found in PATH") {
        return Err(g.fail("a missing program is bad input"));
    }
    Ok(())
}

/// Timings, timestamps, addresses and pids differ run to run and pass; a counter that differs
/// fails, with a unified diff of the two outputs.
#[test]
fn timings_are_masked_and_a_real_difference_fails_with_a_diff() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    let env = [("RACEGATE_COMPUTE_SANITIZER", fake.as_str())];
    write_script(
        dir.path(),
        "timings",
        "#!/bin/sh\necho \"[$(date +%H:%M:%S.%N)] start (pid $$)\"\necho \"result: 51200\"\necho \"Passed 0.$(date +%N) sec\"\n",
    )?;
    let g = gate(dir.path(), &["--", "./timings"], &env);
    if g.code != expected(0) || g.new_count() != 0 {
        return Err(g.fail("timings must be masked"));
    }
    // Without the masks the runs themselves show what varies: a measurement that differs
    // between plain runs is noise wherever it stands (named in a note); so is the pid, a bare
    // integer that varies (its line is not judged, a note says so); the stable result is still
    // compared.
    let g = gate(dir.path(), &["--no-builtin-masks", "--", "./timings"], &env);
    if g.code != expected(0)
        || !g.findings("output").is_empty()
        || !g.out.contains("treated as noise")
        || !g.out.contains("`Passed <noise> sec`")
        || !g.out.contains("hold a whole number that differs")
    {
        return Err(g.fail("without the masks the timings are learned as noise"));
    }
    // The gate's first run of a program measures it and is not compared: the counter is off
    // in the second run, which is plain run 1.
    write_script(
        dir.path(),
        "counter",
        "#!/bin/sh\nn=$(cat state 2>/dev/null || echo 0); n=$((n + 1)); echo $n > state\nif [ $n = 2 ]; then echo 'counter: 1 expected: 51200'; else echo 'counter: 51200'; fi\necho 'took 3 ms'\n",
    )?;
    let g = gate(dir.path(), &["--", "./counter"], &env);
    let diff = "-counter: 1 expected: 51200\n+counter: 51200";
    let found = g.findings("output");
    if g.code != expected(1)
        || found.len() != 1
        || !found[0]["detail"].as_str().unwrap_or("").contains(diff)
        || !g.out.contains("--- run 1")
        || !g.out.contains("-counter: 1 expected: 51200")
    {
        return Err(g.fail("a real difference fails with a diff"));
    }
    let g = gate(dir.path(), &["--mask", "(", "--", "./counter"], &env);
    if g.code != 2 {
        return Err(g.fail("a bad --mask is bad input"));
    }
    Ok(())
}

/// Bytes that are not UTF-8 on stdout are output like any other.
#[test]
fn output_that_is_not_utf8_is_judged_normally() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    write_script(
        dir.path(),
        "binary",
        "#!/bin/sh\nprintf 'ok \\377\\376\\n\\200 done'\n",
    )?;
    let g = gate(
        dir.path(),
        &["--", "./binary"],
        &[("RACEGATE_COMPUTE_SANITIZER", fake.as_str())],
    );
    if g.code != expected(0) || g.new_count() != 0 || !g.findings("exit").is_empty() {
        return Err(g.fail("invalid UTF-8 must not be a finding"));
    }
    Ok(())
}

/// Whether a process whose command line holds `marker` is alive.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten().any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .map(|c| {
                        String::from_utf8_lossy(&c)
                            .replace('\0', " ")
                            .contains(marker)
                    })
                    .unwrap_or(false)
            })
        })
        .unwrap_or(false)
}

/// A program that starts a `setsid` child holding stdout: one that exits at once is no hang
/// and its child is killed; one that waits for it hangs, and is killed at the deadline.
///
/// The bounds are on the whole gate's wall time, so nothing else may count in it: no GPU lease
/// (`RACEGATE_NO_GPU`: on a GPU machine the measuring run would wait to hold the GPU alone
/// while the suite's GPU trials use it; the gate is still judged as on one, by
/// `RACEGATE_TEST_PROGRAM_DEVICE`) and no schedule jitter (`--no-jitter`: its tool is built on
/// first use where nvcc is found).
#[test]
fn a_setsid_child_does_not_hold_the_gate_past_its_deadline() -> Result<(), Failed> {
    // Without setsid (util-linux) this would test nothing: a failure, not a pass.
    if !["/usr/bin/setsid", "/bin/setsid"]
        .iter()
        .any(|p| Path::new(p).exists())
    {
        return Err("setsid (util-linux) is needed".into());
    }
    let (dir, fake) = with_clean_sanitizer()?;
    let env = [
        ("RACEGATE_COMPUTE_SANITIZER", fake.as_str()),
        ("RACEGATE_NO_GPU", "1"),
    ];
    write_script(
        dir.path(),
        "detach",
        "#!/bin/sh\nsetsid sleep 987.25 &\necho started\n",
    )?;
    let g = gate(
        dir.path(),
        &[
            "--runs",
            "2",
            "--no-jitter",
            "--timeout",
            "5",
            "--",
            "./detach",
        ],
        &env,
    );
    if g.code != expected(0)
        || g.new_count() != 0
        || g.took > Duration::from_secs(4)
        || !g
            .out
            .contains("note     detach: run 1 left 1 running after it exited; killed: sleep")
        || running("sleep 987.25")
    {
        return Err(g.fail(&format!("a program that exits ({:?})", g.took)));
    }
    write_script(
        dir.path(),
        "waits",
        "#!/bin/sh\nsetsid sleep 987.5 &\necho started\nwait\n",
    )?;
    let g = gate(
        dir.path(),
        &[
            "--runs",
            "1",
            "--no-jitter",
            "--timeout",
            "2",
            "--",
            "./waits",
        ],
        &env,
    );
    let hang = g.findings("watchdog");
    if hang.len() != 1
        || !hang[0]["kind"].as_str().unwrap_or("").starts_with("hang")
        || g.took > Duration::from_secs(6)
        || running("sleep 987.5")
    {
        return Err(g.fail(&format!("a program that waits ({:?})", g.took)));
    }
    Ok(())
}

/// A race accepted with a working sanitizer, then `--update-baseline` where every tool is
/// inconclusive: the baseline file does not change by a byte.
#[test]
fn an_update_that_judged_nothing_leaves_the_baseline_byte_for_byte() -> Result<(), Failed> {
    let root = &crate::repo_root();
    let dir = temp_dir("racegate-gate-")?;
    let fixture = race_fixture(root, dir.path(), 0)?;
    let clean = clean_sanitizer(dir.path())?;
    let refusing = refusing_sanitizer(dir.path())?;
    let g = gate(
        dir.path(),
        &["--update-baseline", "--", "echo", "hi"],
        &[
            ("RACEGATE_COMPUTE_SANITIZER", &env_of(&clean)),
            ("FAKE_XML", &env_of(&fixture)),
        ],
    );
    let base = dir.path().join(racegate::gate::PROGRAM_BASELINE);
    let before = std::fs::read(&base).map_err(|e| g.fail(&e.to_string()))?;
    if !String::from_utf8_lossy(&before).contains("\"detector\": \"racecheck\"") {
        return Err(g.fail("the race was not accepted"));
    }
    let g = gate(
        dir.path(),
        &["--update-baseline", "--", "echo", "hi"],
        &[("RACEGATE_COMPUTE_SANITIZER", &env_of(&refusing))],
    );
    let after = std::fs::read(&base).unwrap_or_default();
    if after != before || g.code != expected(3) || !g.out.contains("baseline unchanged") {
        return Err(g.fail("an update that judged nothing changed the baseline"));
    }
    Ok(())
}

/// Copies the source of the H200 racecheck fixture into `dir` with `inserted` lines added at
/// the top, and writes the fixture's XML with its lines shifted to match: what the sanitizer
/// reports after such an edit. The XML's path.
fn race_fixture(root: &Path, dir: &Path, inserted: u32) -> Result<PathBuf, Failed> {
    let src_rel = "buggy_variants/reduce_sequential/no_loop_sync.cu";
    let xml = std::fs::read_to_string(
        root.join("harness/tests/fixtures/h200/reduce_sequential__no_loop_sync__racecheck.xml"),
    )
    .map_err(|e| e.to_string())?;
    let src = std::fs::read_to_string(root.join(src_rel)).map_err(|e| e.to_string())?;
    let to = dir.join(src_rel);
    std::fs::create_dir_all(to.parent().unwrap()).map_err(|e| e.to_string())?;
    let pad = "// inserted\n".repeat(inserted as usize);
    std::fs::write(&to, format!("{pad}{src}")).map_err(|e| e.to_string())?;
    let re = regex::Regex::new(r"<line>(\d+)</line>").unwrap();
    let shifted = re.replace_all(&xml, |c: &regex::Captures| {
        format!("<line>{}</line>", c[1].parse::<u32>().unwrap() + inserted)
    });
    let out = dir.join(format!("racecheck-{inserted}.xml"));
    std::fs::write(&out, shifted.as_bytes()).map_err(|e| e.to_string())?;
    Ok(out)
}

/// The H200 race accepted, then the source edited (a blank line and a comment above the racy
/// line): the rerun finds the race at another line and reports nothing new.
#[test]
fn a_fingerprint_survives_lines_inserted_above_the_race() -> Result<(), Failed> {
    let root = &crate::repo_root();
    let dir = temp_dir("racegate-gate-")?;
    let clean = clean_sanitizer(dir.path())?;
    let run = |xml: &Path, extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(["--tools", "racecheck", "--runs", "1", "--", "echo", "hi"]);
        gate(
            dir.path(),
            &args,
            &[
                ("RACEGATE_COMPUTE_SANITIZER", &env_of(&clean)),
                ("FAKE_XML", xml.to_str().unwrap()),
            ],
        )
    };
    let first = race_fixture(root, dir.path(), 0)?;
    let g = run(&first, &["--update-baseline"]);
    if g.code != expected(0) {
        return Err(g.fail("accepting the race"));
    }
    let moved = race_fixture(root, dir.path(), 2)?;
    let g = run(&moved, &[]);
    let race = g.findings("racecheck");
    if g.new_count() != 0
        || race.is_empty()
        || race.iter().any(|f| f["baseline_state"] != "accepted")
        || race[0]["line"] != 26
    {
        return Err(g.fail("the moved race must stay accepted"));
    }
    Ok(())
}

/// A sanitizer that runs past its deadline while every plain run finishes: inconclusive, not
/// a hang finding.
#[test]
fn a_sanitizer_deadline_is_inconclusive_when_plain_runs_finish() -> Result<(), Failed> {
    let dir = temp_dir("racegate-gate-")?;
    let slow = write_script(dir.path(), "slow-sanitizer", "#!/bin/sh\nsleep 30\n")?;
    let g = gate(
        dir.path(),
        &[
            "--sanitize-timeout",
            "1",
            "--tools",
            "memcheck",
            "--runs",
            "1",
            "--",
            "echo",
            "hi",
        ],
        &[("RACEGATE_COMPUTE_SANITIZER", &env_of(&slow))],
    );
    let why = g.json["inconclusive"][0]["reason"].as_str().unwrap_or("");
    if g.code != expected(3) || g.new_count() != 0 || !why.contains("every plain run finished") {
        return Err(g.fail("a sanitizer deadline alone"));
    }
    Ok(())
}

/// A baseline written by racegate before fingerprints is refused with what to do, and left as
/// it is.
#[test]
fn an_old_baseline_is_refused_with_what_to_do() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    let base = dir.path().join(racegate::gate::PROGRAM_BASELINE);
    let old = r#"{"accepted":[{"subject":"echo","detector":"racecheck","key":"Analysis Error k at k.cu:13: Race condition"}]}"#;
    std::fs::write(&base, old).map_err(|e| e.to_string())?;
    let g = gate(
        dir.path(),
        &["--", "echo", "hi"],
        &[("RACEGATE_COMPUTE_SANITIZER", fake.as_str())],
    );
    if g.code != 2 || !g.err.contains("older racegate") || !g.err.contains("--update-baseline") {
        return Err(g.fail("an old baseline"));
    }
    if std::fs::read_to_string(&base).unwrap_or_default() != old {
        return Err("the old baseline was changed".into());
    }
    Ok(())
}

/// `--update-baseline` killed at several moments: the baseline is always the old one or the
/// new one, whole.
#[test]
fn a_killed_update_never_leaves_a_broken_baseline() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    write_script(dir.path(), "flaky", FLAKY)?;
    let base = dir.path().join(racegate::gate::PROGRAM_BASELINE);
    let old = "{\n  \"version\": 2,\n  \"accepted\": []\n}\n";
    for delay_ms in [0u64, 20, 50, 100, 150, 200, 300, 400] {
        std::fs::write(&base, old).map_err(|e| e.to_string())?;
        let mut child = racegate(["gate", "--update-baseline", "--runs", "2", "--", "./flaky"])
            .at(dir.path())
            .program_device()
            .env("RACEGATE_COMPUTE_SANITIZER", &fake)
            .command()
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        let text = std::fs::read_to_string(&base).map_err(|e| e.to_string())?;
        if text != old && racegate::gate::Baseline::load(&base).is_err() {
            return Err(format!("killed after {delay_ms} ms, the baseline reads:\n{text}").into());
        }
    }
    Ok(())
}

/// The SARIF of a run with an accepted race (suppressed), a new output difference (no line) and
/// the program outside the root (a `file://` URI) validates against the SARIF 2.1.0 schema.
#[test]
fn sarif_validates_against_the_2_1_0_schema() -> Result<(), Failed> {
    let root = &crate::repo_root();
    let dir = temp_dir("racegate-gate-")?;
    let clean = clean_sanitizer(dir.path())?;
    let xml = race_fixture(root, dir.path(), 0)?;
    write_script(dir.path(), "flaky", FLAKY)?;
    let env = [
        ("RACEGATE_COMPUTE_SANITIZER", env_of(&clean)),
        ("FAKE_XML", env_of(&xml)),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let base = dir.path().join("race-only.json");
    let g = gate(
        dir.path(),
        &[
            "--update-baseline",
            "--baseline",
            base.to_str().unwrap(),
            "--",
            "echo",
            "hi",
        ],
        &env,
    );
    if !base.is_file() {
        return Err(g.fail("accepting the race"));
    }
    // The accepted race's subject is `echo`; run `flaky` against a baseline holding it too.
    let text = std::fs::read_to_string(&base).map_err(|e| e.to_string())?;
    let b: racegate::gate::Baseline = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let mut accepted = b.clone();
    for a in &b.accepted {
        let mut entry = a.clone();
        entry.id.subject = "flaky".into();
        entry.fingerprint = entry.id.fingerprint();
        accepted.accepted.push(entry);
    }
    accepted.save(&base).map_err(|e| e.to_string())?;
    let sarif = dir.path().join("gate.sarif");
    let cq = dir.path().join("codequality.json");
    let g = gate(
        dir.path(),
        &[
            "--baseline",
            base.to_str().unwrap(),
            "--sarif",
            sarif.to_str().unwrap(),
            "--codequality",
            cq.to_str().unwrap(),
            "--",
            "./flaky",
        ],
        &env,
    );
    let log: serde_json::Value = std::fs::read_to_string(&sarif)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| g.fail("no SARIF"))?;
    let results = log["runs"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let suppressed = results
        .iter()
        .filter(|r| r["suppressions"].is_array())
        .count();
    if results.len() < 2 || suppressed == 0 || suppressed == results.len() {
        return Err(g.fail("the SARIF needs a new and a suppressed result"));
    }
    // GitLab Code Quality: the new findings only, each with the fields GitLab requires.
    let issues: Vec<serde_json::Value> = std::fs::read_to_string(&cq)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| g.fail("no Code Quality report"))?;
    let complete = issues.iter().all(|i| {
        ["description", "check_name", "fingerprint", "severity"]
            .iter()
            .all(|k| i[k].is_string())
            && i["location"]["path"].is_string()
            && i["location"]["lines"]["begin"].is_u64()
    });
    if issues.len() != results.len() - suppressed || !complete {
        return Err(g.fail("the Code Quality report holds the new findings, complete"));
    }
    let text =
        std::fs::read_to_string(root.join("harness/tests/fixtures/sarif/sarif-schema-2.1.0.json"))
            .map_err(|e| e.to_string())?;
    // The schema's `language` pattern has a lone `]`, a literal in ECMA-262 regexes but an
    // error in Rust's engines: escaped here, the only change.
    let lone = r#"[a-zA-Z]{2}]?$"#;
    if !text.contains(lone) {
        return Err("the schema's language pattern changed; revisit this workaround".into());
    }
    let text = text.replace(lone, r#"[a-zA-Z]{2}\\]?$"#);
    let schema: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let validator = jsonschema::draft4::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(&schema)
        .map_err(|e| e.to_string())?;
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if !errors.is_empty() {
        return Err(format!("the SARIF breaks the schema:\n{}", errors.join("\n")).into());
    }
    // SARIF from elsewhere (a GPU run's files, fetched here): RACEGATE_VALIDATE_SARIF=F1:F2...
    if let Some(files) = std::env::var_os("RACEGATE_VALIDATE_SARIF") {
        for f in std::env::split_paths(&files) {
            let other: serde_json::Value = std::fs::read_to_string(&f)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .ok_or_else(|| format!("{}: not readable JSON", f.display()))?;
            let errors: Vec<String> = validator
                .iter_errors(&other)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            if !errors.is_empty() {
                return Err(
                    format!("{} breaks the schema:\n{}", f.display(), errors.join("\n")).into(),
                );
            }
            eprintln!("{}: valid SARIF 2.1.0", f.display());
        }
    }
    // The schema itself rejects what it must: a result without a message.
    let mut broken = log.clone();
    broken["runs"][0]["results"][0]
        .as_object_mut()
        .map(|o| o.remove("message"));
    if validator.is_valid(&broken) {
        return Err("the schema accepted a result without a message".into());
    }
    Ok(())
}

/// The same wrong answer every run: variance sees nothing, `--expect` fails with a diff and
/// leaves the output in FILE.new; `--bless` writes FILE and the next run passes.
#[test]
fn a_deterministic_wrong_answer_fails_expect_and_passes_after_bless() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    let env = [("RACEGATE_COMPUTE_SANITIZER", fake.as_str())];
    write_script(
        dir.path(),
        "counter",
        "#!/bin/sh\necho 'counter: 1 expected: 51200'\necho \"took 0.$(date +%N) s\"\n",
    )?;
    std::fs::write(
        dir.path().join("counter.out"),
        "counter: 51200\ntook <duration>\n",
    )?;
    let args = ["--expect", "counter.out", "--", "./counter"];
    let g = gate(dir.path(), &args, &env);
    let found = g.findings("golden");
    let diff = "-counter: 51200\n+counter: 1 expected: 51200";
    if g.code != expected(1)
        || found.len() != 1
        || !g.findings("output").is_empty()
        || found[0]["oracle"] != "golden"
        || !found[0]["detail"].as_str().unwrap_or("").contains(diff)
        || !found[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("runs 1, 2, 3")
        || !g.out.contains("mv counter.out.new counter.out")
        || !g.out.contains("--bless")
    {
        return Err(g.fail("a wrong golden output fails with a diff"));
    }
    let pending = std::fs::read_to_string(dir.path().join("counter.out.new"))?;
    if pending != "counter: 1 expected: 51200\ntook <duration>\n" {
        return Err(format!("FILE.new holds the masked output, not {pending:?}").into());
    }
    let g = gate(
        dir.path(),
        &["--bless", "--expect", "counter.out", "--", "./counter"],
        &env,
    );
    if g.code != expected(0) || dir.path().join("counter.out.new").exists() {
        return Err(g.fail("--bless writes the file and drops FILE.new"));
    }
    let g = gate(dir.path(), &args, &env);
    if g.code != expected(0) || g.new_count() != 0 {
        return Err(g.fail("after --bless the same output passes"));
    }
    let g = gate(dir.path(), &["--bless", "--", "./counter"], &env);
    if g.code != 2 {
        return Err(g.fail("--bless without --expect is bad input"));
    }
    Ok(())
}

/// `--check CMD`: `sh -c`, the output in `$RACEGATE_OUTPUT` and on stdin; exit 0 accepts, a
/// rejection is a finding carrying the checker's message; a checker past its deadline is
/// inconclusive.
#[test]
fn a_checker_decides_with_its_exit_and_its_message() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    let env = [("RACEGATE_COMPUTE_SANITIZER", fake.as_str())];
    write_script(dir.path(), "counter", "#!/bin/sh\necho 'counter: 1'\n")?;
    let accept = r#"grep -q 'counter: 1' "$RACEGATE_OUTPUT" && grep -q counter"#;
    let g = gate(dir.path(), &["--check", accept, "--", "./counter"], &env);
    if g.code != expected(0) || g.new_count() != 0 {
        return Err(g.fail("an accepting checker"));
    }
    let reject = r#"v=$(sed 's/counter: //'); [ "$v" = 51200 ] || { echo "counter is $v, want 51200"; exit 1; }"#;
    let g = gate(dir.path(), &["--check", reject, "--", "./counter"], &env);
    let found = g.findings("checker");
    if g.code != expected(1)
        || found.len() != 1
        || found[0]["oracle"] != "checker"
        || !found[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("counter is 1, want 51200")
        || !found[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("runs 1, 2, 3")
        || !found[0]["kind"]
            .as_str()
            .unwrap_or("")
            .contains("exits with code 1")
    {
        return Err(g.fail("a rejecting checker"));
    }
    let g = gate(
        dir.path(),
        &[
            "--check",
            "sleep 10",
            "--check-timeout",
            "0.3",
            "--runs",
            "1",
            "--",
            "./counter",
        ],
        &env,
    );
    let late = g.json["inconclusive"]
        .as_array()
        .is_some_and(|a| a.iter().any(|i| i["detector"] == "checker"));
    if g.code != expected(3) || !late {
        return Err(g.fail("a checker past its deadline"));
    }
    Ok(())
}

/// CTest's meaning: a pass regex overrides the exit code, a fail regex fails a run that exits
/// 0, WILL_FAIL inverts; a signal still fails under WILL_FAIL.
#[test]
fn regex_verdicts_follow_ctest() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    let env = [("RACEGATE_COMPUTE_SANITIZER", fake.as_str())];
    write_script(
        dir.path(),
        "exit3",
        "#!/bin/sh\necho 'Test PASSED'\nexit 3\n",
    )?;
    write_script(
        dir.path(),
        "warns",
        "#!/bin/sh\necho 'ERROR: mismatch' >&2\n",
    )?;
    write_script(dir.path(), "killed", "#!/bin/sh\nkill -9 $$\n")?;
    let cases: &[(&[&str], i32, &str)] = &[
        (&["--", "./exit3"], 1, "exit"),
        (&["--pass-regex", "PASSED", "--", "./exit3"], 0, ""),
        (
            &[
                "--pass-regex",
                "nope",
                "--pass-regex",
                "PASSED",
                "--",
                "./exit3",
            ],
            0,
            "",
        ),
        (&["--pass-regex", "nope", "--", "./exit3"], 1, "regex"),
        (&["--fail-regex", "ERROR", "--", "./warns"], 1, "regex"),
        (
            &[
                "--pass-regex",
                ".",
                "--fail-regex",
                "ERROR",
                "--",
                "./warns",
            ],
            1,
            "regex",
        ),
        (&["--will-fail", "--", "./exit3"], 0, ""),
        (&["--will-fail", "--", "./warns"], 1, "regex"),
        (
            &["--will-fail", "--fail-regex", "ERROR", "--", "./warns"],
            0,
            "",
        ),
        (&["--will-fail", "--", "./killed"], 1, "exit"),
    ];
    for (args, want, det) in cases {
        let g = gate(dir.path(), args, &env);
        let ok = g.code == expected(*want)
            && (det.is_empty() && g.new_count() == 0
                || !det.is_empty() && g.new_count() == 1 && g.findings(det).len() == 1);
        if !ok {
            return Err(g.fail(&format!("{args:?}")));
        }
    }
    let g = gate(dir.path(), &["--pass-regex", "(", "--", "./exit3"], &env);
    if g.code != 2 {
        return Err(g.fail("a bad regex is bad input"));
    }
    Ok(())
}

/// The real `ctest --show-only=json-v1` of `examples/ctest`, written by CMake 4.4.3 on the H200
/// (docs/h200/run-12, copied unedited): both tests, their commands, regexes, timeout, folder.
#[test]
fn ctest_discovery_parses_real_ctest_output() -> Result<(), Failed> {
    let root = &crate::repo_root();
    let p = root.join("harness/tests/fixtures/ctest/h200-show-only-json-v1.json");
    let tests = racegate::gate::ctest::parse(&std::fs::read_to_string(p)?)?;
    let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
    if names != ["block_sum", "block_sum_racy"] {
        return Err(format!("names {names:?}").into());
    }
    for t in &tests {
        if t.command.is_empty()
            || !t.command[0].ends_with(&format!("/{}", t.name))
            || t.pass_regex.is_empty()
            || t.cwd.is_none()
            || t.disabled
        {
            return Err(format!("{t:?}").into());
        }
    }
    Ok(())
}

/// The committed `ctest --show-only=json-v1` sample: commands, regexes, WILL_FAIL, TIMEOUT (0
/// is none), WORKING_DIRECTORY, ENVIRONMENT (a value with `=` kept whole), a test without a
/// command, DISABLED, and a FIXTURES_SETUP test listed last that runs first.
#[test]
fn ctest_discovery_parses_the_json_v1_sample() -> Result<(), Failed> {
    let root = &crate::repo_root();
    let p = root.join("harness/tests/fixtures/ctest/show-only-json-v1.json");
    let tests = racegate::gate::ctest::parse(&std::fs::read_to_string(p)?)?;
    let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
    // A fixture's setup runs first, as CTest runs it.
    let want = [
        "prepare_data",
        "block_sum",
        "block_sum_racy",
        "rejects_bad_arguments",
        "not_built",
        "slow_soak",
    ];
    if names != want {
        return Err(format!("names {names:?}").into());
    }
    let (sum, racy, bad, none) = (&tests[1], &tests[2], &tests[3], &tests[4]);
    let ok = sum.command == ["/tmp/ctest-build/block_sum", "4096"]
        && sum.pass_regex == ["sum: 4096 expected: 4096"]
        && sum.timeout == Some(30.0)
        && sum.cwd.as_deref() == Some(Path::new("/tmp/ctest-build"))
        && racy.fail_regex == ["MISMATCH", "error"]
        && racy.env
            == [
                ("BLOCK".into(), "256".into()),
                ("MODE".into(), "fast=yes".into()),
            ]
        && bad.will_fail
        && bad.timeout.is_none()
        && none.command.is_empty()
        && tests[5].disabled
        && !sum.disabled;
    if !ok {
        return Err(format!("{tests:#?}").into());
    }
    if racegate::gate::ctest::parse(r#"{"kind":"other","version":{"major":1}}"#).is_ok() {
        return Err("a document of another kind parses".into());
    }
    Ok(())
}

/// `--ctest` with a fake `ctest`: the pass regex overrides an exit code, a test whose output
/// misses it is a regex finding, WILL_FAIL turns a failing exit into a pass, the working folder
/// and environment reach the test, `-R` goes to ctest, and a folder without tests is bad input.
#[test]
fn a_ctest_suite_is_gated_with_its_test_properties() -> Result<(), Failed> {
    let (dir, fake) = with_clean_sanitizer()?;
    let build = dir.path().join("build");
    std::fs::create_dir_all(build.join("sub"))?;
    std::fs::write(build.join("CTestTestfile.cmake"), "# fake\n")?;
    let b = build.display();
    write_script(
        &build,
        "sum",
        "#!/bin/sh\necho \"sum: 4096 expected: 4096 in $(basename $PWD) $BLOCK\"\nexit 3\n",
    )?;
    write_script(&build, "racy", "#!/bin/sh\necho 'sum: 1 expected: 4096'\n")?;
    write_script(&build, "bad_args", "#!/bin/sh\necho usage >&2\nexit 1\n")?;
    let json = format!(
        r#"{{"kind":"ctestInfo","version":{{"major":1,"minor":0}},"tests":[
{{"name":"sum","command":["{b}/sum"],"properties":[
 {{"name":"PASS_REGULAR_EXPRESSION","value":["expected: 4096 in sub 256"]}},
 {{"name":"WORKING_DIRECTORY","value":"{b}/sub"}},
 {{"name":"ENVIRONMENT","value":["BLOCK=256"]}}]}},
{{"name":"racy","command":["{b}/racy"],"properties":[
 {{"name":"PASS_REGULAR_EXPRESSION","value":["sum: 4096 expected: 4096"]}}]}},
{{"name":"bad_args","command":["{b}/bad_args"],"properties":[{{"name":"WILL_FAIL","value":true}}]}}]}}"#
    );
    std::fs::write(dir.path().join("tests.json"), json)?;
    let ctest = write_script(
        dir.path(),
        "ctest",
        &format!(
            "#!/bin/sh\necho \"$@\" > {0}/ctest-args\ncat {0}/tests.json\n",
            dir.path().display()
        ),
    )?;
    let env = [
        ("RACEGATE_COMPUTE_SANITIZER", fake.clone()),
        ("RACEGATE_CTEST", env_of(&ctest)),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let g = gate(
        dir.path(),
        &["--ctest", "build", "-R", "sum|racy|bad"],
        &env,
    );
    let found = g.findings("regex");
    let subjects: Vec<&str> = found.iter().filter_map(|f| f["subject"].as_str()).collect();
    if g.code != expected(1)
        || g.new_count() != 1
        || subjects != ["racy"]
        || !found[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("required regular expression")
        || !g.out.contains("3 CTest test(s)")
    {
        return Err(g.fail("the suite"));
    }
    let args = std::fs::read_to_string(dir.path().join("ctest-args"))?;
    if args.trim() != "--show-only=json-v1 -R sum|racy|bad" {
        return Err(format!("ctest got {args:?}").into());
    }
    std::fs::write(
        dir.path().join("tests.json"),
        r#"{"kind":"ctestInfo","version":{"major":1},"tests":[]}"#,
    )?;
    let g = gate(dir.path(), &["--ctest", "build"], &env);
    if g.code != 2 || !g.err.contains("no test") {
        return Err(g.fail("no tests is bad input"));
    }
    let g = gate(dir.path(), &["--ctest", "."], &env);
    if g.code != 2 || !g.err.contains("CTestTestfile.cmake") {
        return Err(g.fail("not a build folder"));
    }
    Ok(())
}

/// A `[[program]]` key with a bad value stops `racegate gate` with exit 2 and the manifest's
/// file, line and key, before anything runs (whatever the machine).
#[test]
fn a_bad_program_table_is_bad_input_with_file_line_key() -> Result<(), Failed> {
    let dir = temp_dir("racegate-gate-")?;
    std::fs::write(
        dir.path().join("racegate.toml"),
        "[[program]]\nname = \"counter\"\ncommand = \"./counter\"\nvary = \"often\"\n",
    )?;
    let g = gate(dir.path(), &[], &[]);
    if g.code != 2 || !g.err.contains("racegate.toml:4: `vary`") {
        return Err(g.fail("a bad vary"));
    }
    Ok(())
}
