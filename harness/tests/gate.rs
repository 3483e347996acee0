//! `gate::<name>`: `racegate gate -- PROGRAM` end to end, with no GPU (host).

use std::path::Path;

use libtest_mimic::Trial;

use crate::util::{run_cli, temp_dir, write_script};

pub fn trials(root: &Path) -> Vec<Trial> {
    vec![program_findings_and_the_baseline_flow(root)]
}

/// A fake compute-sanitizer that refuses the device (inconclusive, never clean), a program whose
/// output changes every run (a new finding, exit 1), then `--update-baseline` (accepted: no new
/// finding, exit 3 for the inconclusive tools).
fn program_findings_and_the_baseline_flow(root: &Path) -> Trial {
    let r = root.to_path_buf();
    Trial::test("gate::program_findings_and_the_baseline_flow", move || {
        let dir = temp_dir("racegate-gate-")?;
        let fake = write_script(
            dir.path(),
            "compute-sanitizer",
            "#!/bin/sh\necho 'Device not supported' >&2\nexit 255\n",
        )?;
        let prog = write_script(dir.path(), "flaky", "#!/bin/sh\ndate +%N\n")?;
        let base = dir.path().join("baseline.json");
        let env = [("RACEGATE_COMPUTE_SANITIZER", fake.to_str().unwrap())];
        let args = |extra: &[&'static str]| {
            let mut a = vec!["gate", "--baseline", base.to_str().unwrap()];
            a.extend_from_slice(extra);
            a.push("--");
            a.push(prog.to_str().unwrap());
            a.into_iter().map(String::from).collect::<Vec<_>>()
        };
        let call =
            |a: Vec<String>| run_cli(&r, &a.iter().map(String::as_str).collect::<Vec<_>>(), &env);
        let (c1, o1, e1) = call(args(&[]));
        let (c2, o2, _) = call(args(&["--update-baseline"]));
        let (c3, o3, _) = call(args(&[]));
        if c1 != 1
            || !o1.contains("NEW      flaky [output]")
            || !o1.contains("INCONCLUSIVE flaky [racecheck]")
        {
            return Err(format!("first run: exit {c1}\n{o1}\n{e1}").into());
        }
        if c2 != 3 || !o2.contains("baseline written") {
            return Err(format!("update: exit {c2}\n{o2}").into());
        }
        if c3 != 3 || !o3.contains("accepted flaky [output]") || o3.contains("NEW ") {
            return Err(format!("after the baseline: exit {c3}\n{o3}").into());
        }
        Ok(())
    })
    .with_kind("host")
}
