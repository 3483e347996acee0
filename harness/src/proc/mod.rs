//! Child processes: own process groups, deadlines, TERM -> KILL, reaping, worker pools.
//! Layer 1 (lowest): may import `errors` only.

pub mod pool;
pub mod processes;
pub mod subcommands;
pub mod watchdog;
