//! Is there a CUDA device here? Asked without creating a context and without panicking.

use cudarc::driver::{result, sys};
use serde::Serialize;

/// What the driver says about device 0.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    /// e.g. 13000 for CUDA 13.0.
    pub driver_api_version: i32,
}

impl DeviceInfo {
    /// The NVRTC virtual architecture for this device, e.g. `compute_90`.
    pub fn arch(&self) -> String {
        format!(
            "compute_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }
}

/// Device 0, or the reason there is none ("no CUDA driver", "no CUDA device", ...).
pub fn probe() -> Result<DeviceInfo, String> {
    if std::env::var_os("RACEGATE_NO_GPU").is_some() {
        return Err("RACEGATE_NO_GPU is set".into());
    }
    // libcuda is the driver's, opened by its name: the loader then searches LD_LIBRARY_PATH,
    // where an empty or relative entry would be the current folder (a planted libcuda.so.1).
    crate::build::locations::check_loader_path()
        .map_err(|why| format!("the CUDA driver was not loaded: {why}"))?;
    // SAFETY: only dlopens libcuda by name, after the loader path was checked.
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver (libcuda.so) on this machine".into());
    }
    result::init().map_err(|e| format!("the CUDA driver did not initialize: {e:?}"))?;
    let count = result::device::get_count().map_err(|e| format!("{e:?}"))?;
    if count < 1 {
        return Err("the CUDA driver reports no device".into());
    }
    let dev = result::device::get(0).map_err(|e| format!("{e:?}"))?;
    let name = result::device::get_name(dev).map_err(|e| format!("{e:?}"))?;
    let attr = |a| unsafe { result::device::get_attribute(dev, a) }.map_err(|e| format!("{e:?}"));
    let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let mut version = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut version) };
    Ok(DeviceInfo {
        name,
        compute_capability: (major, minor),
        driver_api_version: version,
    })
}

/// The device, or "no CUDA device" (exit 4) when there is none.
pub fn require() -> crate::Result<DeviceInfo> {
    probe().map_err(crate::Error::NoDevice)
}

/// The virtual architecture to compile for: the device's, or `compute_90` without a device.
pub fn arch_or_default() -> String {
    probe()
        .map(|d| d.arch())
        .unwrap_or_else(|_| crate::build::compile::DEFAULT_ARCH.to_string())
}

/// [`crate::build::signature::check`] before anything runs: a wrong entry or argument list is bad input (exit 2); a
/// no-op for the built-in catalog. Without NVRTC the check cannot run: work that needs a device
/// says so first (exit 4 comes before 3).
pub fn check_signatures(
    catalog: &crate::source::catalog::Catalog,
    needs_device: bool,
) -> crate::Result<()> {
    match crate::build::signature::check(catalog, &arch_or_default()) {
        Err(crate::Error::NvrtcMissing { searched }) => {
            if needs_device {
                require()?;
            }
            Err(crate::Error::NvrtcMissing { searched })
        }
        other => other,
    }
}

/// The variable that sets how many hardware work queues (connections) a CUDA context opens:
/// eight unless it says otherwise.
pub const MAX_CONNECTIONS: &str = "CUDA_DEVICE_MAX_CONNECTIONS";

/// The environment racegate adds for a GPU process of its own that launches on one stream (a
/// grading worker; the target a sanitizer or racegate's own tool runs: `__sanitize-target`,
/// `__grade-worker`): one hardware queue instead of eight. A context's queues are set up and torn
/// down in the driver partly one process at a time, so each costs every process starting or
/// ending beside it; with one stream the other seven are never used. H200 run 30, call A
/// (`docs/h200/run-30/`): 48 processes of a one-kernel program 16 at once took 0.19-0.20 s each
/// with eight queues and 0.07 s with one, 0.20 s against 0.08 s under memcheck; the 30-submission
/// grading batch 73.9 s against 55.3 s, every grade the same. Not for the user's programs (they
/// may rely on streams running side by side), nor for stress workers (one process each for the
/// whole run). A value the user set is theirs: then nothing is added.
pub fn one_queue() -> Vec<(String, String)> {
    one_queue_given(std::env::var_os(MAX_CONNECTIONS).is_some())
}

/// [`one_queue`] when the user's environment has the variable (`set`) or not.
pub fn one_queue_given(set: bool) -> Vec<(String, String)> {
    if set {
        Vec::new()
    } else {
        vec![(MAX_CONNECTIONS.to_string(), "1".to_string())]
    }
}

/// Whether `program args` is racegate's own one-stream GPU target: this executable (after
/// links) running `__sanitize-target` or `__grade-worker`. A user's program that names one of
/// them is not this executable.
pub fn is_own_one_stream_target(program: &std::ffi::OsStr, args: &[std::ffi::OsString]) -> bool {
    use crate::proc::subcommands::{is_own, GRADE_WORKER, SANITIZE_TARGET};
    is_own(program, args, &[SANITIZE_TARGET, GRADE_WORKER])
}

#[cfg(test)]
mod one_queue_tests {
    use super::*;

    #[test]
    fn one_queue_is_added_unless_the_user_chose_a_count() {
        assert_eq!(
            one_queue_given(false),
            vec![(MAX_CONNECTIONS.to_string(), "1".to_string())]
        );
        assert!(one_queue_given(true).is_empty());
    }

    #[test]
    fn only_this_executable_running_its_own_target_is_a_one_stream_target() {
        use crate::proc::subcommands::{GRADE_WORKER, SANITIZE_TARGET, STRESS_WORKER};
        let me = std::env::current_exe().unwrap();
        let args = |a: &str| {
            vec![
                std::ffi::OsString::from("--manifest"),
                "m.toml".into(),
                a.into(),
            ]
        };
        assert!(is_own_one_stream_target(
            me.as_os_str(),
            &args(SANITIZE_TARGET)
        ));
        assert!(is_own_one_stream_target(
            me.as_os_str(),
            &args(GRADE_WORKER)
        ));
        // The stress worker keeps its queues, and so does this executable doing anything else.
        assert!(!is_own_one_stream_target(
            me.as_os_str(),
            &args(STRESS_WORKER)
        ));
        assert!(!is_own_one_stream_target(me.as_os_str(), &args("gate")));
        // Another program that names the subcommand is a user's program.
        let other = tempfile::NamedTempFile::new().unwrap();
        assert!(!is_own_one_stream_target(
            other.path().as_os_str(),
            &args(SANITIZE_TARGET)
        ));
        assert!(!is_own_one_stream_target(
            std::ffi::OsStr::new("racegate"),
            &args(SANITIZE_TARGET)
        ));
    }
}
