//! Progress for long commands, rendered from the engine's events (the engine never prints). On
//! a terminal: an indicatif bar, with every failure printed above it. Anywhere else (CI logs):
//! one line per finished item on stderr, nextest style, `PASS [   0.41s] (12/217) case::racecheck`,
//! so a CI job is never silent for minutes and every failure line is kept in the log.

use std::io::IsTerminal;
use std::sync::Mutex;

/// How an item ended, as its line shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    /// Found something that a baseline may still accept (the gate): printed, not judged.
    Found,
    /// Decided nothing (a tool missing or failing): shown like a failure, never as a pass.
    Inconclusive,
    /// Killed at its deadline: a hang, or the tool's slowness, as the report then says.
    Timeout,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Found => "FOUND",
            Status::Inconclusive => "INCONCLUSIVE",
            Status::Timeout => "TIMEOUT",
        }
    }
}

/// A bar on a terminal, lines elsewhere. Shared by worker threads (`&self` everywhere).
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    /// (finished, total): the count on each line; locked so lines come out numbered in order.
    count: Mutex<(u64, u64)>,
}

impl Progress {
    /// `total` items counted in `unit`. `no_bar`: lines even on a terminal (a command whose
    /// stdout carries data, where a bar would only interleave with it).
    pub fn new(total: u64, unit: &str, no_bar: bool) -> Progress {
        let bar = (!no_bar && std::io::stderr().is_terminal())
            .then(|| super::settings::progress(total, unit, false));
        Progress {
            bar,
            count: Mutex::new((0, total)),
        }
    }

    /// One finished item; `detail` goes under a failure's line.
    pub fn item(&self, status: Status, name: &str, seconds: f64, detail: Option<&str>) {
        let mut count = self.count.lock().expect("count");
        count.0 += 1;
        // An item nobody counted ahead (an oracle that decides after a program's plain runs)
        // grows the total rather than reading `(5/4)`.
        if count.0 > count.1 {
            count.1 = count.0;
            if let Some(b) = &self.bar {
                b.set_length(count.1);
            }
        }
        let line = format!(
            "{:>12} [{seconds:>8.3}s] ({}/{}) {name}",
            status.label(),
            count.0,
            count.1
        );
        let line = match (status, detail) {
            (Status::Pass, _) | (_, None) => line,
            (_, Some(d)) => format!("{line}\n{d}"),
        };
        // Names and details come from file names, manifests and program output: shown, never
        // obeyed (escape sequences as `\xNN`).
        let line = crate::report::visible::visible(&line);
        match &self.bar {
            Some(b) => {
                b.inc(1);
                if status != Status::Pass {
                    b.println(line);
                }
            }
            None => eprintln!("{line}"),
        }
    }

    /// Clears the bar (lines stay).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// One finished run as a progress line: FOUND before the baseline is read (the summary after
/// the run says which findings are new).
pub(super) fn show_gate_event(progress: &Progress, e: &crate::gate::GateEvent) {
    let status = if e.hung {
        Status::Timeout
    } else if e.inconclusive {
        Status::Inconclusive
    } else if e.findings > 0 {
        Status::Found
    } else {
        Status::Pass
    };
    // The reason of an inconclusive run is in the summary; a finding's count is worth a line,
    // and a killed run says how it will be judged.
    let detail = match status {
        Status::Found => Some(format!("       {} finding(s)", e.findings)),
        Status::Timeout => Some(
            "       killed at its deadline: a hang if the plain runs hang too, else the tool's slowdown (inconclusive)"
                .to_string(),
        ),
        _ => None,
    };
    progress.item(
        status,
        &format!("{}::{}", e.subject, e.detector),
        e.seconds,
        detail.as_deref(),
    );
}
