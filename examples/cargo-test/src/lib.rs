//! A stand-in for a user's crate: its CUDA kernels are in `kernels/`, checked by racegate from
//! `tests/racegate.rs`.
