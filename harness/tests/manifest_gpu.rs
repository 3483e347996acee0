//! `manifest_gpu::<kernel>::<detector>`: every buffer kind (in, out, inout) and comparison mode
//! (exact, tolerance, unordered, prefix, ignore) of a `racegate.toml`, on the GPU, through the
//! real binary. The manifest and kernels are `tests/fixtures/manifest_gpu/`: each kernel is
//! correct and must pass, except `*_racy`, which must be caught; outputs declared `unwritten`
//! must not make initcheck report the copy back of bytes nobody was meant to write. Listed as
//! ignored when there is no CUDA device; run anyway, each fails with "no CUDA device".

use libtest_mimic::{Completion, Trial};

use crate::util::{gpu_slots, run_cli, Device};

/// (kernel, detector, what must happen).
const CASES: &[(&str, &str, &str)] = &[
    ("inout_accumulate", "stress", "pass"),
    ("inout_inplace", "stress", "pass"),
    ("out_unordered_prefix", "stress", "pass"),
    ("out_unordered_prefix", "initcheck", "clean"),
    ("out_unordered_prefix_racy", "stress", "fail"),
    ("out_tolerance", "stress", "pass"),
    ("out_ignore", "stress", "pass"),
    ("out_ignore", "initcheck", "clean"),
    ("types_and_shared", "stress", "pass"),
    ("types_and_shared", "memcheck", "clean"),
];

pub fn trials(root: &std::path::Path, device: &Device) -> Vec<Trial> {
    let manifest = root.join("harness/tests/fixtures/manifest_gpu/racegate.toml");
    let slots = gpu_slots();
    CASES
        .iter()
        .map(|&(kernel, detector, want)| {
            let (root, manifest, dev, slots) = (
                root.to_path_buf(),
                manifest.clone(),
                device.clone(),
                slots.clone(),
            );
            Trial::ignorable_test(format!("manifest_gpu::{kernel}::{detector}"), move || {
                if let Err(why) = dev {
                    return Err(crate::util::no_device(&why));
                }
                let _slot = slots.take();
                let m = manifest.to_string_lossy().into_owned();
                let args: Vec<&str> = match detector {
                    "stress" => vec![
                        "stress",
                        kernel,
                        "--manifest",
                        &m,
                        "--trials",
                        "40",
                        "--seed",
                        "1",
                        "--json",
                        "-",
                    ],
                    tool => vec![
                        "sanitize",
                        kernel,
                        "--manifest",
                        &m,
                        "--tool",
                        tool,
                        "--timeout",
                        "60",
                        "--json",
                        "-",
                    ],
                };
                let (code, stdout, stderr) = run_cli(&root, &args, &[]);
                let v: serde_json::Value = serde_json::from_str(&stdout).map_err(|e| {
                    format!(
                        "racegate {} exited {code} without JSON ({e}):\n{stdout}\n{stderr}",
                        args.join(" ")
                    )
                })?;
                // stress: `{"verdict": "pass"}`; sanitize: `{"outcome": {"outcome": "clean"}}`.
                let got = v
                    .get("verdict")
                    .or_else(|| v.get("outcome").and_then(|o| o.get("outcome")))
                    .and_then(|x| x.as_str())
                    .unwrap_or("?");
                if got == want {
                    Ok(Completion::Completed)
                } else {
                    Err(format!(
                        "racegate {}: expected {want}, got {got} (exit {code})\n{}",
                        args.join(" "),
                        serde_json::to_string_pretty(&v).unwrap_or_default()
                    )
                    .into())
                }
            })
            .with_kind("gpu")
        })
        .collect()
}
