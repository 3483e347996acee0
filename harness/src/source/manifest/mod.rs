//! `racegate.toml`: a team's kernels and programs, parsed, validated and drawn into problems.
//! Part of `source/`: may import `errors` and the rest of `source/`.
//!
//! A manifest describes each kernel well enough to stress it and sanitize it with no Rust
//! written.
//!
//! ```toml
//! [[kernel]]
//! name = "block_sum"                    # the name in reports and in the baseline
//! source = "kernels/block_sum.cu"       # relative to the manifest's folder
//! entry = "block_sum"                   # extern "C" name, or a name expression: "sum<float, 256>"
//! options = ["-DBLOCK=256"]             # extra NVRTC options (optional)
//! include = ["include"]                 # include folders, relative to the manifest (optional)
//! sizes = { n = [1, 1000000] }          # named sizes: [lo, hi] drawn per input set, or a number
//! sanitize_sizes = { n = 1000 }         # small sizes for the sanitizers (default: each lo)
//! grid = ["ceil_div(n, 256)"]           # 1 to 3 integer expressions over the sizes
//! block = ["256"]
//! shared = "256 * 4"                    # dynamic shared memory in bytes (default 0)
//! oracle = { reference = "ref.cu:sum_ref" }   # or "determinism", or "none"
//! args = [
//!   { name = "x", kind = "in", type = "f32", len = "n", gen = "int(0, 8)" },
//!   { name = "out", kind = "out", type = "f32", len = "ceil_div(n, 256)" },
//!   { name = "n", kind = "scalar", type = "i32", value = "n" },
//! ]
//! ```
//!
//! Types: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64, for buffers and scalars alike.
//! Generators: see `gen.rs`. An out or inout buffer may say how it is compared (`compare =
//! "exact"` by default, `"ignore"`, `"unordered"`, or `{ tolerance = { abs, rel, ulp },
//! unordered, prefix = "count[0]" }`) and an out buffer that it may stay partly unwritten
//! (`unwritten = true`). A kernel of several launches gives `[[kernel.launch]]` tables (entry,
//! grid, block, shared, `args`, the argument names in parameter order, and `stream`, 0 to 7,
//! the same for every launch until the runner launches on several streams) instead of the
//! kernel-level launch; a reference may have its own launch (`oracle.grid`, `.block`,
//! `.shared`, `.args`).
//!
//! `[[program]]` tables name existing CUDA programs gated with the kernels (command, args, cwd,
//! env, masks, expect, check, pass_regex, fail_regex, will_fail, runs, timeout, sanitizers,
//! `vary = "ok"`); `program.rs` checks them. A manifest holds kernels, programs, or both.
//!
//! `parse.rs` reads the file (`args.rs` one argument), `validate.rs` checks every expression
//! over the whole size range before anything runs, `draw.rs` makes problems, `spec.rs` holds
//! the types. Every error names the manifest, the line and the key.

pub mod args;
pub mod draw;
pub mod gen;
pub mod parse;
pub mod program;
mod sizes;
pub mod spec;
pub mod validate;

pub use spec::{ArgSpec, Check, KernelSpec, LaunchSpec, Manifest, ProgramSpec, FILE};
