//! sharedcheck: reads of shared memory no thread wrote, atomic/plain mixes of one word.
//! Part of `judge/`: may import the stages below `judge/` and `judge::sanitize`.
//!
//! Its part of the report
//! ([`report`]) -> its outcome ([`decide`]); confirm runs that tell a read whose value reaches
//! the output from one that does not ([`confirm`]); `__shared__` variables read and never
//! written, found in the unoptimized PTX ([`never_written`]).

pub mod confirm;
pub mod decide;
pub mod never_written;
pub mod report;
