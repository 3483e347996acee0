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
    // SAFETY: only dlopens libcuda by name.
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


