//! Every kernel of racegate.toml x every detector, as tests of this crate: `cargo test` (or
//! `cargo nextest run`), plus one host test per kernel (`KERNEL::compile`) that runs without a
//! GPU. The test binary is also racegate's worker, so `main` is all there is.

fn main() {
    racegate::testing::main("racegate.toml");
}
