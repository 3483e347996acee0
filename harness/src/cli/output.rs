//! Where a command's output goes, the same on every command, and writing it without panicking.
//! `--json FILE` writes the result as JSON to FILE, and `--json -` to standard output, which then
//! holds nothing else: everything the command would print there (its text report, progress lines)
//! goes to standard error. `print!` panics when stdout is closed or full: here a reader that went
//! away (`| head`) ends the output quietly, any other failure is an error (exit 3), never a crash.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{Error, Result};

use super::settings;

/// The real standard output, once `--json -` claimed it.
static JSON_FD: OnceLock<i32> = OnceLock::new();

/// `--json FILE`, flattened into each command's arguments.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct JsonArg {
    /// Write the result as JSON to FILE; `-` writes it to standard output (the text report then
    /// goes to standard error).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `--html DIR` and `--lang` ([`super::flags::LangArg`]), the same on every command that reports:
/// the result, as its `--json` has it, rendered as the HTML report (`report::html`).
#[derive(clap::Args)]
pub struct HtmlArg {
    /// Also write the result as an HTML report into this folder: an index with the verdict and
    /// the matrix or findings, a page per finding with the source, its explanation and fix hint,
    /// and the repro command (nothing outside the folder is referenced).
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub lang: super::flags::LangArg,
}

impl HtmlArg {
    /// Checks `--html` before any work ([`settings::check_html_dir`]), with the command's other
    /// reports (`outputs`), none of which may be inside its folder.
    pub fn check(&self, outputs: &[(&str, Option<&Path>)]) -> Result<()> {
        match &self.html {
            Some(dir) => settings::check_html_dir(dir, outputs),
            None => Ok(()),
        }
    }

    /// Renders `json` (the text `--json` writes) into `--html`'s folder; nothing without it.
    pub fn write(&self, json: &str, root: &Path) -> Result<()> {
        let Some(dir) = &self.html else {
            return Ok(());
        };
        let doc: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| Error::input("the result is not JSON (racegate's bug)", e))?;
        let pages =
            crate::report::html::render(&doc, root, self.lang.get(), None).map_err(Error::Usage)?;
        crate::report::html::write(dir, &pages)
            .map_err(|e| Error::io("writing the report into", dir, e))
    }

    /// [`HtmlArg::write`] of a value as `--json` would write it.
    pub fn write_value(&self, value: &impl serde::Serialize, root: &Path) -> Result<()> {
        if self.html.is_none() {
            return Ok(());
        }
        self.write(&settings::json(value), root)
    }
}

impl JsonArg {
    /// Without a device `--json` still gets a result (a CI step that uploads it must not
    /// break): the verdict, the exit code and why.
    pub fn write_no_device(&self, e: &crate::Error) -> crate::Result<()> {
        self.write(&serde_json::json!({
            "verdict": "no_device", "exit_code": e.exit_code(), "reason": e.to_string(),
        }))
    }

    /// Whether the JSON takes standard output.
    pub fn on_stdout(&self) -> bool {
        self.json.as_deref() == Some(Path::new("-"))
    }

    /// With `--json -`, keeps standard output for the JSON alone: the real standard output is
    /// set aside for [`JsonArg::write`] and file descriptor 1 becomes standard error, so every
    /// other print of the command lands there. Call it first thing in a command.
    pub fn claim_stdout(&self) {
        if !self.on_stdout() || JSON_FD.get().is_some() {
            return;
        }
        // ignored: a failed flush shows again, and is reported, on the write that follows
        let _ = std::io::stdout().flush();
        // SAFETY: duplicates and redirects this process's own standard descriptors.
        let fd = unsafe { libc::dup(1) };
        if fd >= 0 && unsafe { libc::dup2(2, 1) } >= 0 {
            // ignored: set only when unset (checked at the top of this function)
            let _ = JSON_FD.set(fd);
        }
    }

    /// Checks the `--json` file before any work ([`settings::check_outputs`]): a regular file or
    /// none yet, and none of the files `catalog` was read from.
    pub fn check(&self, catalog: &crate::source::catalog::Catalog) -> Result<()> {
        let inputs = settings::inputs_of(catalog);
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        settings::check_outputs(&[("--json", self.json.as_deref())], &inputs)
    }

    /// Prints the text report (to standard error when the JSON has standard output: see
    /// [`JsonArg::claim_stdout`]).
    pub fn text(&self, s: &str) -> Result<()> {
        print(s)
    }

    /// Writes `value` as JSON where `--json` says (nothing without it).
    pub fn write(&self, value: &impl serde::Serialize) -> Result<()> {
        self.write_text(&(settings::json(value) + "\n"))
    }

    /// Writes JSON text where `--json` says (nothing without it).
    pub fn write_text(&self, text: &str) -> Result<()> {
        match &self.json {
            None => Ok(()),
            Some(p) if p == Path::new("-") => {
                // ignored: a failed flush shows again, and is reported, on the write that follows
                let _ = std::io::stdout().flush();
                match JSON_FD.get() {
                    Some(&fd) => {
                        use std::os::fd::FromRawFd;
                        // SAFETY: `fd` is the duplicate of standard output made by
                        // `claim_stdout`; ManuallyDrop keeps it open for later writes.
                        let mut f =
                            std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
                        f.write_all(text.as_bytes())
                            .and_then(|_| f.flush())
                            .map_err(|e| Error::io("writing", "standard output", e))
                    }
                    None => print(text),
                }
            }
            Some(p) => settings::write_file(p, text),
        }
    }
}

/// Writes `text` to standard output and flushes it, control characters but newlines and tabs
/// shown as `\xNN` ([`crate::report::visible::visible`]): a compile log, a program's output or a
/// file name never moves the cursor or colours the terminal. racegate prints none of its own.
pub fn print(text: &str) -> Result<()> {
    let text = crate::report::visible::visible(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::io("writing", "standard output", e)),
    }
}

/// A note for the person running racegate, on standard error (ignored if that is closed).
pub fn note(text: &str) {
    // ignored: a note on a closed standard error has nowhere else to go
    let _ = writeln!(
        std::io::stderr(),
        "note: {}",
        crate::report::visible::visible(text)
    );
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

/// Fails (exit 2) unless `path` can be written, leaving no file behind that was not there.
pub(super) fn check_writable(path: &Path) -> Result<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| {
            let what = format!(
                "--output {}: nothing was graded; cannot write there",
                path.display()
            );
            Error::input(what, e)
        })?;
    if !existed {
        // ignored: the probe file made just now; one left behind is empty and the grade
        // writes over it
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Where a grade that was not given writes nothing: says so when `path` was there before this
/// run (left as it was, never deleted: racegate did not create it).
pub(super) fn leave_untouched(path: &Path) -> Result<()> {
    if path.exists() {
        note(&format!(
            "--output {}: left as it was (it was there before this run); it does not hold this \
             run's grade",
            crate::report::visible::visible_path(path)
        ));
    }
    Ok(())
}
