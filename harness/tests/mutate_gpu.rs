//! `mutate::<kernel>` ([gpu]): `racegate mutate --run` on a correct catalog kernel through the
//! binary, with the operators whose mutants must die there: the control is clean, nothing is
//! inconclusive, and every mutant is killed or times out (a survivor is printed with its diff).

use libtest_mimic::{Completion, Trial};

use crate::util::{gpu_slots, run_cli, Device};

/// (kernel file, operators): each mutant of these is a real bug of that kernel, one the
/// detection matrix shows caught (`reduce_sequential::no_loop_sync`,
/// `matmul_tiled16::no_sync_after_load` and `::no_sync_after_compute`: stress 50/50). The
/// transpose's padding and swizzle removed are slow, not wrong: killed by `perf` (Nsight
/// Compute's bank conflicts against `//@ perf: ... bank-conflicts=none`), so this one needs ncu
/// with counters permitted, as on the H200.
const RUNS: [(&str, &str); 3] = [
    (
        "kernels/reduce_sequential.cu",
        "remove-barrier,drop-shared-init",
    ),
    ("kernels/matmul_tiled.cu", "remove-barrier"),
    ("kernels/transpose.cu", "padding-removal,swizzle-removal"),
];

pub fn trials(root: &std::path::Path, device: &Device) -> Vec<Trial> {
    let slots = gpu_slots();
    RUNS.iter()
        .map(|&(file, ops)| {
            let root = root.to_path_buf();
            let dev = device.clone();
            let slots = slots.clone();
            let stem = file
                .rsplit('/')
                .next()
                .unwrap_or(file)
                .trim_end_matches(".cu");
            Trial::ignorable_test(format!("mutate::{stem}"), move || {
                if let Err(why) = dev {
                    return Err(crate::util::no_device(&why));
                }
                let _slot = slots.take();
                let args = [
                    "mutate",
                    file,
                    "--operators",
                    ops,
                    "--run",
                    "--jobs",
                    "2",
                    "--trials",
                    "20",
                    "--sanitize-timeout",
                    "60",
                    "--json",
                    "-",
                ];
                let (code, stdout, stderr) = run_cli(&root, &args, &[]);
                let v: serde_json::Value = serde_json::from_str(&stdout).map_err(|e| {
                    format!(
                        "racegate {} exited {code} without JSON ({e}):\n{stderr}",
                        args.join(" ")
                    )
                })?;
                let k = &v["kernels"][0];
                let mut wrong = Vec::new();
                if !k["control"]["flagged_by"].is_null() {
                    wrong.push(format!(
                        "the control was flagged: {}",
                        k["control"]["detail"]
                    ));
                }
                for m in k["mutants"].as_array().into_iter().flatten() {
                    let o = m["outcome"].as_str().unwrap_or("?");
                    if o != "killed" && o != "timed-out" {
                        wrong.push(format!(
                            "{} {o}:\n{}",
                            m["id"],
                            m["diff"].as_str().unwrap_or("")
                        ));
                    }
                }
                match (wrong.is_empty(), code) {
                    (true, 0) => Ok(Completion::Completed),
                    _ => Err(format!("exit {code}\n{}\n{stderr}", wrong.join("\n")).into()),
                }
            })
            .with_kind("gpu")
        })
        .collect()
}
