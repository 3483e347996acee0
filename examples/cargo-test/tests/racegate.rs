//! Every kernel of racegate.toml x every detector, as tests of this crate: `cargo test` (or
//! `cargo nextest run`). The test binary is also racegate's worker, so `main` is all there is.

fn main() {
    racegate::testing::main("racegate.toml");
}
