//! Source to code a device runs: NVRTC and the compile child, toolchain, PTX, signatures, tool build.
//! Layer 2: may import `errors`, `proc/` and `source/`.

pub mod cache;
pub mod compile;
pub mod compile_child;
pub mod compile_jail;
pub mod globalcheck;
pub mod headers;
pub mod locations;
pub mod nvrtc_lib;
pub mod ptx;
pub mod setup;
pub mod signature;
pub mod toolchain;
pub mod trust;
