//! The deadlines of a program's runs, derived from a measurement of the program instead of a
//! guess about it. The gate first runs the program once, plainly (no tool, no jitter), under a
//! generous cap ([`CAP`], or `--timeout` when the user gives one); what that run took is the
//! program's own time, and every later run's deadline follows from it: a plain run
//! [`PLAIN_FACTOR`] times it, a jittered run [`JITTER_FACTOR`] times it, a tool's run the tool's
//! factor ([`tool_factor`]) times it, each with a floor (a fast program keeps the deadlines it
//! always had). A deadline the user gave (`--timeout`, `--sanitize-timeout`) wins. The report
//! says each deadline and where it came from ([`Deadlines::describe`]).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::judge::sanitize::Tool;

/// The most the measuring run may take (30 minutes) when the user gave no `--timeout`.
pub const CAP: Duration = Duration::from_secs(30 * 60);
/// A plain run may take this many times the measured run.
pub const PLAIN_FACTOR: f64 = 3.0;
/// A jittered run may take this many times the measured run: the schedule jitter's slowdown
/// (at most 8.15x a bare launch on the H200, run 22's bench) with room.
pub const JITTER_FACTOR: f64 = 10.0;
/// The least a plain or jittered run gets.
pub const PLAIN_FLOOR: Duration = Duration::from_secs(10);
/// The least a tool's run gets.
pub const TOOL_FLOOR: Duration = Duration::from_secs(120);

/// How many times a plain run a tool's run may take. Upper bounds chosen above the slowdowns
/// racegate has seen (the tools instrument every access; racecheck tracks shared memory per
/// access and is the slowest); a program whose tool runs need more is inconclusive, never a
/// hang, unless its plain runs hang too.
pub fn tool_factor(t: Tool) -> f64 {
    match t {
        Tool::Racecheck => 200.0,
        Tool::Streamcheck => 20.0,
        _ => 100.0,
    }
}

/// Where a deadline came from, for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The user's flag.
    Given,
    /// The measured time times a factor.
    Measured,
    /// The floor (the measured time times the factor was less).
    Floor,
}

/// The deadlines of one program's runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Deadlines {
    /// What the measuring run took, in seconds; `None` when it did not exit within its cap.
    pub measured: Option<f64>,
    /// The measuring run's cap.
    pub cap: Duration,
    pub plain: (Duration, Origin),
    pub jittered: (Duration, Origin),
    pub tools: BTreeMap<Tool, (Duration, Origin)>,
}

impl Deadlines {
    /// The cap of the measuring run: the user's `--timeout`, else [`CAP`].
    pub fn cap(user_plain: Option<Duration>) -> Duration {
        user_plain.unwrap_or(CAP)
    }

    /// The deadlines from a measured run of `measured` seconds (`None`: it reached `cap`), the
    /// user's deadlines where given, for `tools`.
    pub fn derive(
        measured: Option<f64>,
        cap: Duration,
        user_plain: Option<Duration>,
        user_tool: Option<Duration>,
        tools: &[Tool],
    ) -> Deadlines {
        // A run that reached its cap is measured as the cap: the derived deadlines are then
        // long, and the runs that follow it are judged by them.
        let t = measured.unwrap_or(cap.as_secs_f64());
        let scaled = |factor: f64, floor: Duration| {
            let d = Duration::from_secs_f64((t * factor).min(7.0 * 24.0 * 3600.0));
            match d > floor {
                true => (d, Origin::Measured),
                false => (floor, Origin::Floor),
            }
        };
        let given = |u: Option<Duration>, derived: (Duration, Origin)| match u {
            Some(d) => (d, Origin::Given),
            None => derived,
        };
        // A first run that reached its cap hung: the tools' runs of a hung program hang too,
        // so they get the floor, never a multiple of the cap.
        let tool_deadline = |tool: Tool| match measured {
            Some(_) => scaled(tool_factor(tool), TOOL_FLOOR),
            None => (TOOL_FLOOR, Origin::Floor),
        };
        Deadlines {
            measured,
            cap,
            plain: given(user_plain, scaled(PLAIN_FACTOR, PLAIN_FLOOR)),
            jittered: given(user_plain, scaled(JITTER_FACTOR, PLAIN_FLOOR)),
            tools: tools
                .iter()
                .map(|&tool| (tool, given(user_tool, tool_deadline(tool))))
                .collect(),
        }
    }

    /// The deadline of one run of racegate's own tools in `group` (they share one run): the
    /// longest of theirs.
    pub fn for_group(&self, group: &[Tool]) -> Duration {
        group
            .iter()
            .filter_map(|t| self.tools.get(t).map(|d| d.0))
            .max()
            .unwrap_or(TOOL_FLOOR)
    }

    /// One line for the report: what was measured, each deadline and where it came from.
    pub fn describe(&self, subject: &str) -> String {
        let how = |(d, o): (Duration, Origin), factor: f64| match o {
            Origin::Given => format!("{:.0} s (given)", d.as_secs_f64()),
            Origin::Measured => format!("{:.0} s ({factor}x)", d.as_secs_f64()),
            Origin::Floor => format!("{:.0} s (the floor)", d.as_secs_f64()),
        };
        let first = match self.measured {
            Some(s) => format!(
                "the first plain run took {s:.2} s (measured under a {:.0} s cap)",
                self.cap.as_secs_f64()
            ),
            None => format!(
                "the first plain run did not exit within its {:.0} s cap",
                self.cap.as_secs_f64()
            ),
        };
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|(t, d)| format!("{} {}", t.name(), how(*d, tool_factor(*t))))
            .collect();
        format!(
            "{subject}: deadlines from a measurement: {first}; plain runs {}, jittered runs {}; \
             {}",
            how(self.plain, PLAIN_FACTOR),
            how(self.jittered, JITTER_FACTOR),
            tools.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn a_fast_program_keeps_the_floors_and_a_slow_one_gets_its_measure() {
        let tools = [Tool::Racecheck, Tool::Memcheck];
        let fast = Deadlines::derive(Some(0.4), CAP, None, None, &tools);
        assert_eq!(fast.plain, (PLAIN_FLOOR, Origin::Floor));
        assert_eq!(fast.jittered, (PLAIN_FLOOR, Origin::Floor));
        assert_eq!(fast.tools[&Tool::Memcheck], (TOOL_FLOOR, Origin::Floor));
        // A correct program of 30 s: no default deadline calls it hung.
        let slow = Deadlines::derive(Some(30.0), CAP, None, None, &tools);
        assert_eq!(slow.plain, (S(90), Origin::Measured));
        assert_eq!(slow.jittered, (S(300), Origin::Measured));
        assert_eq!(slow.tools[&Tool::Racecheck], (S(6000), Origin::Measured));
        assert_eq!(slow.tools[&Tool::Memcheck], (S(3000), Origin::Measured));
        assert_eq!(slow.for_group(&[Tool::Memcheck, Tool::Racecheck]), S(6000));
        let line = slow.describe("prog");
        for want in [
            "30.00 s",
            "plain runs 90 s (3x)",
            "jittered runs 300 s (10x)",
            "racecheck 6000 s (200x)",
        ] {
            assert!(line.contains(want), "{want}: {line}");
        }
    }

    #[test]
    fn the_users_deadlines_win_and_a_run_that_reached_its_cap_is_measured_as_the_cap() {
        let tools = [Tool::Synccheck];
        let given = Deadlines::derive(Some(30.0), S(5), Some(S(5)), Some(S(7)), &tools);
        assert_eq!(given.plain, (S(5), Origin::Given));
        assert_eq!(given.jittered, (S(5), Origin::Given));
        assert_eq!(given.tools[&Tool::Synccheck], (S(7), Origin::Given));
        assert!(given.describe("p").contains("plain runs 5 s (given)"));
        let capped = Deadlines::derive(None, S(20), None, None, &tools);
        assert_eq!(capped.plain, (S(60), Origin::Measured));
        assert_eq!(capped.tools[&Tool::Synccheck], (TOOL_FLOOR, Origin::Floor));
        assert!(capped
            .describe("p")
            .contains("did not exit within its 20 s cap"));
        assert_eq!(Deadlines::cap(None), CAP);
        assert_eq!(Deadlines::cap(Some(S(3))), S(3));
    }

    #[test]
    fn derived_deadlines_grow_with_the_measure_and_never_fall_below_their_floors() {
        let tools = Tool::ALL;
        let mut last: Option<Deadlines> = None;
        for tenth in 0..2000u32 {
            let d = Deadlines::derive(Some(f64::from(tenth) / 10.0), CAP, None, None, &tools);
            assert!(d.plain.0 >= PLAIN_FLOOR && d.jittered.0 >= d.plain.0);
            for t in tools {
                assert!(d.tools[&t].0 >= TOOL_FLOOR);
                if let Some(l) = &last {
                    assert!(d.tools[&t].0 >= l.tools[&t].0, "{t:?} shrank at {tenth}");
                }
            }
            if let Some(l) = &last {
                assert!(d.plain.0 >= l.plain.0 && d.jittered.0 >= l.jittered.0);
            }
            last = Some(d);
        }
    }
}
