//! On the device: context, launches, oracles, trials, stress, benchmarks, and `doctor`.
//! Layer 3: may import `errors`, `proc/`, `source/` and `build/`.

pub mod bench;
pub mod calibrate;
pub mod compare;
pub mod detection;
pub mod device;
pub mod doctor;
pub mod launch;
pub mod lease;
pub mod lease_devices;
pub mod oracle;
pub mod perf;
pub mod poison;
pub mod readback;
pub mod schedule;
pub mod shrink;
pub mod stress;
pub mod stress_session;
pub mod stress_worker;
pub mod trial;
