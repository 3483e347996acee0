//! One plain run of a program under the gate, and what it says: its exit (or the regex
//! oracle), its deadline (missed, it is run again before it counts: [`second_look`]), what it
//! left running, its output for the comparisons that follow.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::finding::{GateConfig, GateRun};
use super::jitter::JitterEnv;
use super::judge::{self, RunOutput};
use super::measure::{Hold, Lease};
use super::oracles::RegexVerdict;
use super::target::Target;
use crate::errors::Result;
use crate::proc::watchdog::{self, Deadline, Exit};
use crate::run::lease::Access;

/// A plain run that missed its deadline beside other GPU work runs again beside it with this
/// many times the deadline before it waits for the GPU alone.
const BESIDE_AGAIN: u32 = 4;

/// kind -> (detector, runs it happened in, last stderr line)
pub(super) type Failures = BTreeMap<String, (&'static str, Vec<u32>, String)>;

/// The plain runs of one program so far.
pub(super) struct Runs<'a> {
    pub(super) exe: &'a Path,
    pub(super) t: &'a Target,
    pub(super) cfg: &'a GateConfig,
    /// The deadline of a run without and with jitter.
    pub(super) deadlines: [Duration; 2],
    pub(super) lease: Lease,
    pub(super) outputs: Vec<RunOutput>,
    pub(super) failures: Failures,
    pub(super) seconds: f64,
    /// The slowest run that finished, in seconds, by whether it ran under jitter.
    pub(super) slowest: [f64; 2],
    pub(super) hung: bool,
}

impl Runs<'_> {
    /// Run `i` (from 1), under `jitter` when given.
    pub(super) fn one(
        &mut self,
        i: u32,
        jitter: Option<&JitterEnv>,
        run: &mut GateRun,
    ) -> Result<()> {
        let (t, cfg, subject) = (self.t, self.cfg, self.t.subject.as_str());
        let mut spawn = watchdog::Spawn {
            env: t.env.clone(),
            cwd: t.cwd.clone(),
            ..Default::default()
        };
        if let Some((dir, env)) = jitter {
            spawn.env.extend(env.iter().cloned());
            // Each run its own schedule: the seed moves with the run.
            spawn.env.push((
                "RACEGATE_GC_SEED".into(),
                (cfg.battery.seed + u64::from(i)).to_string(),
            ));
            spawn
                .env
                .push(("RACEGATE_GC_DIR".into(), dir.path().display().to_string()));
        }
        // The whole of a long output stays (on disk) past its run only for the oracles that
        // need it.
        let whole = cfg.oracles.expect.is_some() || cfg.oracles.check.is_some();
        // Bounded memory whatever the program prints: its head and tail, and past them the
        // whole on disk, read back after the run (masks and regexes cost racegate's time, not
        // the program's deadline).
        let timeout = self.deadlines[usize::from(jitter.is_some())];
        let lease = self.lease;
        let run_once = |deadline: Duration| {
            let mut stdout = watchdog::Output::spilling();
            let f = watchdog::run(
                self.exe,
                &t.argv[1..],
                &spawn,
                Deadline {
                    idle: deadline,
                    total: Some(deadline),
                },
                |l| stdout.push_line(l),
            );
            stdout.finish();
            f.map(|f| (f, stdout))
        };
        let (first, crowded) = lease.watched(|| run_once(timeout))?;
        let first = First {
            run: first?,
            crowded,
        };
        let missed = |r: &(watchdog::Finished, watchdog::Output)| r.0.exit == Exit::TimedOut;
        let took = |r: &(watchdog::Finished, watchdog::Output)| r.0.elapsed.as_secs_f64();
        let (counts, said) = second_look(&lease, first, timeout, run_once, (missed, took))?;
        let (f, mut stdout) = counts;
        match said {
            Said::Nothing => {}
            Said::Note(n) => run.notes.push(format!("{subject}: run {i} {n}")),
            Said::Slow(why) => run.mark_inconclusive(
                subject,
                "watchdog",
                format!("slow under contention: run {i} {why}"),
            ),
        }
        let mut scan = cfg.oracles.scan();
        let masked = judge::read_back(&stdout, &cfg.masks, &mut scan);
        if !whole {
            stdout.discard_spill();
        }
        self.seconds += f.elapsed.as_secs_f64();
        if f.exit != Exit::TimedOut {
            let k = usize::from(jitter.is_some());
            self.slowest[k] = self.slowest[k].max(f.elapsed.as_secs_f64());
        }
        if !f.killed.is_empty() && f.exit != Exit::TimedOut {
            run.notes.push(format!(
                "{subject}: run {i} left {} running after it exited; killed: {}",
                f.killed.len(),
                f.killed.join(", ")
            ));
        }
        if !f.survivors.is_empty() {
            run.mark_inconclusive(
                subject,
                "watchdog",
                format!("run {i}: could not kill {}", f.survivors.join(", ")),
            );
        }
        let (det, kind) = match f.exit {
            Exit::Code(c) => {
                // CTest matches stdout and stderr together: the whole output when it is kept
                // in memory, else line by line as it was read back.
                let verdict = if masked.is_some() {
                    f.stderr.lines().for_each(|l| scan.line(l.as_bytes()));
                    scan.verdict(c)
                } else {
                    let mut both = stdout.bytes();
                    both.extend_from_slice(f.stderr.as_bytes());
                    cfg.oracles.regex_verdict(c, &both)
                };
                match verdict {
                    Some(RegexVerdict::Pass) => {
                        self.outputs
                            .push(RunOutput::new(i, stdout, masked, &cfg.masks));
                        return Ok(());
                    }
                    Some(RegexVerdict::Fail(kind)) => ("regex", kind),
                    None if c == 0 => {
                        self.outputs
                            .push(RunOutput::new(i, stdout, masked, &cfg.masks));
                        return Ok(());
                    }
                    None => ("exit", format!("exits with code {c}")),
                }
            }
            Exit::Signal(s) => ("exit", format!("killed by signal {s}")),
            Exit::TimedOut => {
                self.hung = true;
                (
                    "watchdog",
                    format!("hang: no exit within {:.0} s", timeout.as_secs_f64()),
                )
            }
        };
        let e = self
            .failures
            .entry(kind)
            .or_insert((det, Vec::new(), String::new()));
        e.1.push(i);
        e.2 = f.stderr.lines().last().unwrap_or("").to_string();
        Ok(())
    }
}

/// The run a second look starts from: made holding the GPU shared, and whether another run
/// held it at some moment meanwhile ([`Hold::watched`]).
pub(super) struct First<R> {
    pub(super) run: R,
    pub(super) crowded: bool,
}

/// What a second look at a run that missed its deadline adds to the report.
#[derive(Debug, PartialEq)]
pub(super) enum Said {
    Nothing,
    /// A note: the run missed its deadline with nothing else on the GPU and finished when run
    /// again (an intermittent hang: the miss stays the run).
    Note(String),
    /// Inconclusive: slow beside other GPU work, not a hang.
    Slow(String),
}

/// The run that counts, given the `first` (made beside other GPU work with `timeout`) and
/// `run_once` (a run with the deadline given), and what the report says of it. A first run that
/// missed its deadline runs again and that run is the run: a neighbour may slow the program, not
/// make it hang. Alone at once when nothing else holds the GPU; otherwise beside the others with
/// [`BESIDE_AGAIN`] times the deadline, and only a miss there too waits for the GPU alone to
/// confirm the hang (an asker for it stops every new run on the machine until the runs in flight
/// end, which may be other programs' tool runs of many minutes). `(missed, took)` read a run.
pub(super) fn second_look<L: Hold, R>(
    lease: &L,
    first: First<R>,
    timeout: Duration,
    run_once: impl Fn(Duration) -> Result<R>,
    (missed, took): (impl Fn(&R) -> bool, impl Fn(&R) -> f64),
) -> Result<(R, Said)> {
    let First {
        run: first,
        crowded,
    } = first;
    if !missed(&first) || !lease.confirms() {
        return Ok((first, Said::Nothing));
    }
    let d = timeout.as_secs_f64();
    if let Some(again) = lease.try_alone(|| run_once(timeout))? {
        let again = again?;
        // Nothing else held the GPU: the miss now is not the neighbours' doing and is a hang.
        if missed(&again) {
            return Ok((again, Said::Nothing));
        }
        if crowded {
            // The first run had neighbours: their slowdown or an intermittent hang, which
            // this run cannot tell apart, so it accuses nothing.
            let why = format!(
                "missed its {d:.0} s deadline beside other GPU work and finished in {:.1} s run \
                 again with the GPU held alone: not a hang",
                took(&again)
            );
            return Ok((again, Said::Slow(why)));
        }
        // Nobody was beside the first run either: it missed on its own time (an intermittent
        // deadlock hangs some runs only), and that miss stays the run.
        let note = format!(
            "missed its {d:.0} s deadline with no other racegate run seen on the GPU; run again \
             alone it finished in {:.1} s (an intermittent hang)",
            took(&again)
        );
        return Ok((first, Said::Note(note)));
    }
    let longer = timeout * BESIDE_AGAIN;
    let (beside, _) = lease.with(Access::Shared, || run_once(longer))?;
    let beside = beside?;
    if !missed(&beside) {
        let why = format!(
            "missed its {d:.0} s deadline beside other GPU work and finished in {:.1} s when run \
             again beside it (deadline {:.0} s): not a hang",
            took(&beside),
            longer.as_secs_f64()
        );
        return Ok((beside, Said::Slow(why)));
    }
    let (alone, waited) = lease.with(Access::Exclusive, || run_once(timeout))?;
    let alone = alone?;
    if missed(&alone) {
        return Ok((alone, Said::Nothing));
    }
    let why = format!(
        "missed its {d:.0} s deadline beside other GPU work (and its {:.0} s run again beside \
         it) and finished in {:.1} s with the GPU held alone (after {:.0} s waiting for it): not \
         a hang",
        longer.as_secs_f64(),
        took(&alone),
        waited.as_secs_f64()
    );
    Ok((alone, Said::Slow(why)))
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};

    use super::*;

    /// A GPU lease stand-in: whether the GPU is free when a run asks to have it alone at once,
    /// and how each run held it.
    struct Recorded {
        free: bool,
        held: RefCell<Vec<&'static str>>,
    }

    impl Hold for Recorded {
        fn confirms(&self) -> bool {
            true
        }

        fn with<T>(&self, access: Access, f: impl FnOnce() -> T) -> Result<(T, Duration)> {
            self.held.borrow_mut().push(match access {
                Access::Shared => "shared",
                Access::Exclusive => "waited alone",
            });
            Ok((f(), Duration::from_secs(9)))
        }

        fn try_alone<T>(&self, f: impl FnOnce() -> T) -> Result<Option<T>> {
            if !self.free {
                return Ok(None);
            }
            self.held.borrow_mut().push("alone now");
            Ok(Some(f()))
        }
    }

    /// [`second_look`] at a first run that missed its 10 s deadline, the runs after it given as
    /// (missed, seconds) one call after another: the run that counts, what is said, how each
    /// run held the GPU and each one's deadline.
    fn look(free: bool, then: &[(bool, f64)]) -> ((bool, f64), Said, Vec<&'static str>, Vec<u64>) {
        look_after(true, free, then)
    }

    /// [`look`], with whether another run was beside the first one.
    fn look_after(
        crowded: bool,
        free: bool,
        then: &[(bool, f64)],
    ) -> ((bool, f64), Said, Vec<&'static str>, Vec<u64>) {
        let lease = Recorded {
            free,
            held: RefCell::new(Vec::new()),
        };
        let (calls, deadlines) = (Cell::new(0), RefCell::new(Vec::new()));
        let run_once = |d: Duration| {
            deadlines.borrow_mut().push(d.as_secs());
            let k = calls.get();
            calls.set(k + 1);
            Ok(then[k])
        };
        let first = First {
            run: (true, 10.0),
            crowded,
        };
        let (counts, said) = second_look(
            &lease,
            first,
            Duration::from_secs(10),
            run_once,
            (|r: &(bool, f64)| r.0, |r: &(bool, f64)| r.1),
        )
        .expect("no lease error");
        (
            counts,
            said,
            lease.held.into_inner(),
            deadlines.into_inner(),
        )
    }

    #[test]
    fn beside_busy_neighbours_a_missed_run_is_run_again_beside_them_before_any_wait_alone() {
        // Finished beside them with 4x the deadline: slow, not a hang, and nothing waited.
        let (counts, said, held, deadlines) = look(false, &[(false, 23.0)]);
        assert_eq!(held, ["shared"]);
        assert_eq!(deadlines, [40]);
        assert_eq!(counts, (false, 23.0));
        match said {
            Said::Slow(why) => assert!(why.contains("finished in 23.0 s when run again beside it")),
            other => panic!("{other:?}"),
        }
        // Missed that too: the GPU alone confirms; finished there it is still no hang.
        let (counts, said, held, deadlines) = look(false, &[(true, 40.0), (false, 2.0)]);
        assert_eq!(held, ["shared", "waited alone"]);
        assert_eq!(deadlines, [40, 10]);
        assert_eq!(counts, (false, 2.0));
        assert!(matches!(said, Said::Slow(ref w) if w.contains("after 9 s waiting")));
        // Missed alone too: the hang is confirmed and that run counts.
        let (counts, said, _, _) = look(false, &[(true, 40.0), (true, 10.0)]);
        assert_eq!((counts, said), ((true, 10.0), Said::Nothing));
    }

    #[test]
    fn a_run_that_missed_alone_and_finishes_alone_when_run_again_is_an_intermittent_hang() {
        let (counts, said, held, deadlines) = look_after(false, true, &[(false, 1.5)]);
        assert_eq!(held, ["alone now"]);
        assert_eq!(deadlines, [10]);
        // Nothing else was on the GPU then or now: the first run's miss stands.
        assert_eq!(counts, (true, 10.0));
        assert!(matches!(said, Said::Note(ref n) if n.contains("intermittent hang")));
        let (counts, said, _, _) = look_after(false, true, &[(true, 10.0)]);
        assert_eq!((counts, said), ((true, 10.0), Said::Nothing));
    }

    #[test]
    fn a_run_that_missed_beside_others_and_finishes_alone_is_slow_not_a_hang() {
        // The neighbours have gone by the second look: the GPU is free now, but the first run
        // was not alone, so its miss may be theirs.
        let (counts, said, held, _) = look_after(true, true, &[(false, 1.5)]);
        assert_eq!(held, ["alone now"]);
        assert_eq!(counts, (false, 1.5), "the run alone counts, not the miss");
        match said {
            Said::Slow(why) => {
                assert!(
                    why.contains("beside other GPU work") && why.contains("1.5 s"),
                    "{why}"
                )
            }
            other => panic!("{other:?}"),
        }
        // Missed alone too: a hang, whoever was beside the first run.
        let (counts, said, _, _) = look_after(true, true, &[(true, 10.0)]);
        assert_eq!((counts, said), ((true, 10.0), Said::Nothing));
    }
}
