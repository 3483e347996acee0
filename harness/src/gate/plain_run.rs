//! One plain run of a program under the gate, and what it says: its exit (or the regex
//! oracle), its deadline (missed beside other GPU work, it is run again with the GPU held
//! alone before it counts), what it left running, its output for the comparisons that follow.

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

/// A wait for the lease at least this long means another racegate process held the GPU.
const CONTENDED: Duration = Duration::from_millis(50);

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
        let attempt = |access: Access| {
            self.lease.with(access, || {
                let mut stdout = watchdog::Output::spilling();
                let f = watchdog::run(
                    self.exe,
                    &t.argv[1..],
                    &spawn,
                    Deadline {
                        idle: timeout,
                        total: Some(timeout),
                    },
                    |l| stdout.push_line(l),
                );
                stdout.finish();
                f.map(|f| (f, stdout))
            })
        };
        // Beside other GPU work first; a run that missed its deadline there runs again with the
        // GPU held alone, and that run is the run: a neighbour may slow the program, not make it
        // hang.
        let (mut f, mut stdout) = attempt(Access::Shared)?.0?;
        if f.exit == Exit::TimedOut && self.lease.confirms() {
            let (again, waited) = attempt(Access::Exclusive)?;
            let (g, out) = again?;
            // The lease came at once: nothing else held the GPU, so the miss was not the
            // neighbours' doing and stays a hang (an intermittent deadlock hangs some runs only).
            let contended = waited >= CONTENDED;
            if g.exit != Exit::TimedOut && !contended {
                run.notes.push(format!(
                    "{subject}: run {i} missed its {:.0} s deadline with nothing else on the GPU; \
                     run again alone it finished in {:.1} s (an intermittent hang)",
                    timeout.as_secs_f64(),
                    g.elapsed.as_secs_f64()
                ));
            } else if g.exit != Exit::TimedOut {
                run.mark_inconclusive(
                    subject,
                    "watchdog",
                    format!(
                        "slow under contention: run {i} missed its {:.0} s deadline beside other \
                         GPU work and finished in {:.1} s with the GPU held alone (after {:.0} s \
                         waiting for it): not a hang",
                        timeout.as_secs_f64(),
                        g.elapsed.as_secs_f64(),
                        waited.as_secs_f64()
                    ),
                );
            }
            if contended || g.exit == Exit::TimedOut {
                (f, stdout) = (g, out);
            }
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
