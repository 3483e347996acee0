//! Writing a command's output to standard output without panicking (`print!` does when stdout
//! is closed or full): a reader that went away (`| head`) ends the output quietly, any other
//! failure is an error (exit 3), never a crash.

use std::io::Write;

use racegate::{Error, Result};

/// Writes `text` to standard output and flushes it.
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::io("writing", "standard output", e)),
    }
}

/// A note for the person running racegate, on standard error (ignored if that is closed).
pub fn note(text: &str) {
    let _ = writeln!(std::io::stderr(), "note: {text}");
}

/// `print!` through [`print`]: returns the error from the enclosing function with `?`.
macro_rules! out {
    ($($t:tt)*) => {
        crate::cli::output::print(&format!($($t)*))?
    };
}

/// `println!` through [`print`].
macro_rules! outln {
    ($($t:tt)*) => {
        crate::cli::output::print(&format!("{}\n", format_args!($($t)*)))?
    };
}

pub(crate) use {out, outln};
