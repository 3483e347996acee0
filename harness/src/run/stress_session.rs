//! The parent's side of a stress worker kept across cases. A [`Slot`] holds at most one
//! worker (`stress_worker.rs`); [`Slot::run_case`] sends it one case and reads that case's
//! lines under the trial deadline. The worker's device context outlives the case, so the next
//! case in the same slot skips the process start and the context's creation (H200 run 24:
//! 0.13-0.15 s alone, 1.2-1.9 s with 14 processes opening at once).
//!
//! What is *not* kept: a worker that missed a deadline is killed with everything it started
//! (the case is a hang), and one that ended by itself (a fault leaves the context unusable, so
//! the worker exits after it) is reaped; either way the next case starts a fresh worker. The
//! pool gives each of its threads one slot (`proc::pool::run_all_with`), and a slot ends its
//! worker when dropped, so a worker never outlives the run that started it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::errors::Result;
use crate::proc::watchdog::{Deadline, Exit, Finished, Spawn, Stop, Supervised};
use crate::run::stress_worker::Request;

/// How long a worker asked to stop (its stdin closed) may take to exit before it is killed.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// At most one stress worker, kept from one case to the next.
#[derive(Default)]
pub struct Slot {
    worker: Option<Worker>,
    /// Workers being closed behind the slot's next item ([`Slot::close_behind`]); waited for
    /// when the slot is dropped.
    closing: Vec<std::thread::JoinHandle<()>>,
}

struct Worker {
    child: Supervised,
    /// The program and catalog arguments it was started with: a case for another catalog
    /// gets another worker.
    exe: PathBuf,
    catalog_args: Vec<OsString>,
    /// Requests sent to it.
    cases: u32,
}

impl Slot {
    /// Runs one case in this slot's worker (started first if there is none, or if it was
    /// started for another program or catalog): sends `req`, passes every line the worker
    /// prints for it to `on_line`, and returns how the case's run ended. A case whose trials
    /// all reported ends with exit code 0 and no stderr, its worker kept; otherwise the worker
    /// is gone and [`Finished`] is its end (a timeout with the kill's findings, or its exit
    /// and stderr).
    pub fn run_case(
        &mut self,
        exe: &Path,
        catalog_args: &[OsString],
        req: &Request,
        idle: Duration,
        mut on_line: impl FnMut(&str),
    ) -> Result<Finished> {
        // A kept worker that ended between cases (or cannot take the request) is not this
        // case's doing: it is reaped and the request goes to a fresh worker, once.
        let mut sent = false;
        for _ in 0..2 {
            let reusable = self.worker.as_mut().is_some_and(|w| {
                w.exe == exe && w.catalog_args == catalog_args && !w.child.exited()
            });
            if !reusable {
                self.close();
                let mut args = catalog_args.to_vec();
                args.push(crate::proc::subcommands::STRESS_WORKER.into());
                self.worker = Some(Worker {
                    // On this thread's device: the process layer adds its CUDA_VISIBLE_DEVICES.
                    child: Supervised::start(exe, &args, &Spawn::default(), true, true)?,
                    exe: exe.to_path_buf(),
                    catalog_args: catalog_args.to_vec(),
                    cases: 0,
                });
            }
            let w = self.worker.as_mut().expect("started above");
            sent = {
                use std::io::Write;
                let line = serde_json::to_string(req).expect("serializable") + "\n";
                w.child.stdin.as_mut().is_some_and(|i| {
                    i.write_all(line.as_bytes())
                        .and_then(|()| i.flush())
                        .is_ok()
                })
            };
            w.cases += 1;
            if sent || w.cases == 1 {
                // A fresh worker that cannot take its first request has failed to start: its
                // exit and stderr are the answer.
                break;
            }
            self.close();
        }
        let w = self.worker.as_mut().expect("started above");
        let started = std::time::Instant::now();
        let mut forward = |l: &[u8]| {
            let l = String::from_utf8_lossy(l);
            if is_done(&l) {
                return true;
            }
            on_line(&l);
            false
        };
        // A request that could not be written (the worker already ended) reads what is left
        // and the end; `read` sees the exit. Until the worker's `ready` line (the module
        // loaded, and the context opened for its first case) it has [`START_DEADLINE`]: the
        // start is the driver's work, not the kernel's, and beside thirty other GPU processes
        // it took more than a 5 s trial deadline (H200 run 28, call C: a kernel that cannot
        // hang was reported hung, and its tools were then cut). After it, the trial deadline
        // applies to every trial on its own.
        let mut ready = false;
        let mut stop = w.child.read(
            Deadline {
                idle: START_DEADLINE.max(idle),
                total: None,
            },
            |l| {
                if forward(l) {
                    return true;
                }
                ready = is_ready(&String::from_utf8_lossy(l));
                ready
            },
        )?;
        if ready {
            stop = w.child.read(Deadline { idle, total: None }, &mut forward)?;
        } else if stop == Stop::TimedOut {
            // No kernel of the case ran: not a hang of it, but a device that would not start.
            let w = self.worker.take().expect("present");
            let end = w.child.finish(true, |_| {});
            return Err(crate::Error::Child(format!(
                "a stress worker did not say it was ready within {:.0} s (its device context and \
                 the case's module load); its stderr: {}",
                START_DEADLINE.max(idle).as_secs_f64(),
                end.stderr.trim()
            )));
        }
        if stop == Stop::Asked && sent {
            return Ok(Finished {
                exit: Exit::Code(0),
                stderr: String::new(),
                elapsed: started.elapsed(),
                left_behind: false,
                killed: Vec::new(),
                survivors: Vec::new(),
            });
        }
        let w = self.worker.take().expect("present");
        Ok(w.child.finish(stop == Stop::TimedOut, |l| {
            forward(l);
        }))
    }

    /// Asks the worker to stop (its stdin closed), gives it [`CLOSE_GRACE`] to exit, then ends
    /// whatever is left of it. A pool thread closes its slot once no stress run is left to
    /// start ([`StressLeft`]): an idle worker still holds a device context.
    pub fn close(&mut self) {
        if let Some(w) = self.worker.take() {
            w.close();
        }
    }

    /// Whether a worker is kept: the next case then starts none.
    pub fn has_worker(&self) -> bool {
        self.worker.is_some()
    }

    /// [`Slot::close`] on a thread of its own, so the slot's next item starts at once: a
    /// worker's exit is its device context's teardown, 2-3 s beside thirty GPU processes (H200
    /// run 28: a sanitizer batch that waited for it started 2.6 s after its kernels' stress
    /// verdicts). The slot waits for it when dropped, so a worker still never outlives the run
    /// that started it.
    pub fn close_behind(&mut self) {
        if let Some(w) = self.worker.take() {
            self.closing.push(std::thread::spawn(move || w.close()));
        }
    }
}

impl Worker {
    fn close(mut self) {
        drop(self.child.stdin.take());
        // ignored: an error waiting or a timeout ends in the kill below either way
        let _ = self.child.read(
            Deadline {
                idle: CLOSE_GRACE,
                total: Some(CLOSE_GRACE),
            },
            |_| false,
        );
        self.child.finish(false, |_| {});
    }
}

/// How many stress runs of a pool's items have not started yet: a thread whose next item is not
/// a stress run closes its slot's worker once none is left ([`StressLeft::before`]). In the
/// corpus gate of H200 run 26, fifteen idle workers held their contexts for the 40 s after the
/// last stress run, while every sanitizer process beside them ran several times slower than
/// alone (the idle contexts are the suspect; closing them costs nothing when none is needed).
pub struct StressLeft(std::sync::atomic::AtomicUsize);

impl StressLeft {
    pub fn new(stress_items: usize) -> StressLeft {
        StressLeft(std::sync::atomic::AtomicUsize::new(stress_items))
    }

    /// Called before each item a pool thread runs (`is_stress`: whether it is a stress run):
    /// counts a stress run as started, or closes `slot` when no stress run is left to start
    /// (behind the item, [`Slot::close_behind`]).
    pub fn before(&self, is_stress: bool, slot: &mut Slot) {
        use std::sync::atomic::Ordering;
        if is_stress {
            // ignored: never below zero (a count given too small only closes slots later)
            let _ = self
                .0
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        } else if self.0.load(Ordering::SeqCst) == 0 {
            slot.close_behind();
        }
    }

    #[cfg(test)]
    fn left(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.close();
        for h in self.closing.drain(..) {
            // ignored: a close that panicked has nothing left to wait for
            let _ = h.join();
        }
    }
}

/// The worker's end-of-case line.
fn is_done(line: &str) -> bool {
    line.starts_with("{\"done\"")
}

/// Whether `line` is a worker's `ready` line ([`super::stress_worker::Ready`]).
fn is_ready(line: &str) -> bool {
    serde_json::from_str::<super::stress_worker::Ready>(line).is_ok_and(|r| r.ready)
}

/// How long a worker may take to say it is ready for a case (start, device context, module
/// load) before it counts as hung: far more than any start seen on the H200 under load
/// (8-12 s for thirty GPU processes at once, run 28), far less than forever.
pub const START_DEADLINE: Duration = Duration::from_secs(if cfg!(test) { 4 } else { 60 });

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for `racegate __worker`: answers each request with its pid, hangs on a case
    /// named `hang`, exits 3 with a message on one named `crash`, and takes 1.2 s to say it
    /// is ready for one named `slow start`.
    pub(super) fn fake_worker(dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("fake-worker.sh");
        let script = r#"#!/bin/sh
while IFS= read -r line; do
  case "$line" in
    *'"case":"hang"'*) echo '{"ready":true}'; sleep 1000 ;;
    *'"case":"no start"'*) sleep 1000 ;;
    *'"case":"slow start"'*) sleep 1.2; echo '{"ready":true,"open_us":1200000}'; echo "{\"pid\":$$}"; echo '{"done":true}' ;;
    *'"case":"crash"'*) echo "{\"pid\":$$}"; echo boom >&2; exit 3 ;;
    *'"case":"slow exit"'*) slow=1; echo "{\"pid\":$$}"; echo '{"done":true}' ;;
    *'"case":"quits"'*) echo "{\"pid\":$$}"; echo '{"done":true}'; echo idle death >&2; exit 7 ;;
    *) echo "{\"pid\":$$}"; echo '{"done":true}' ;;
  esac
done
[ -n "$slow" ] && sleep 1.5
"#;
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn request(case: &str) -> Request {
        Request {
            case: case.into(),
            ptx: "k.ptx".into(),
            ref_ptx: None,
            trials: 1,
            seed: 1,
            per_set: 1,
            size: None,
            jitter: crate::run::schedule::JitterMode::None,
        }
    }

    #[test]
    fn the_ready_line_is_the_workers_own_and_nothing_else() {
        use super::super::stress_worker::Ready;
        let real = |r: &Ready| serde_json::to_string(r).unwrap();
        assert!(is_ready(&real(&Ready {
            ready: true,
            catalog_us: 7,
            open_us: 90_000,
            load_us: 3
        })));
        assert!(is_ready(&real(&Ready {
            ready: true,
            ..Ready::default()
        })));
        assert!(!is_ready(&real(&Ready::default())), "ready: false");
        for other in [
            "{\"done\":true}",
            "{\"trial\":0,\"ready\":\"yes\"}",
            "ready",
            "",
            "{\"pid\":4}",
        ] {
            assert!(!is_ready(other), "{other}");
        }
    }

    #[test]
    fn a_request_reaches_the_worker_as_it_was_sent() {
        use crate::run::schedule::JitterMode;
        use crate::source::exercises::SizeChoice;
        for (size, jitter) in [
            (None, JitterMode::None),
            (Some(SizeChoice::Random { lo: 3, hi: 900 }), JitterMode::Pct),
            (Some(SizeChoice::Fixed(77)), JitterMode::Dense),
            (Some(SizeChoice::Sanitize), JitterMode::Pct),
        ] {
            let r = Request {
                size,
                jitter,
                ref_ptx: Some("ref.ptx".into()),
                ..request("a b \"c\"")
            };
            let line = serde_json::to_string(&r).unwrap();
            assert!(!line.contains('\n'));
            assert_eq!(serde_json::from_str::<Request>(&line).unwrap(), r);
        }
    }

    /// Runs `case` in `slot`: the pid the worker gave (if any), every line but the done line,
    /// and how the case ended.
    pub(super) fn run(
        slot: &mut Slot,
        exe: &Path,
        args: &[&str],
        case: &str,
    ) -> (Option<u32>, Finished) {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let mut pid = None;
        let f = slot
            .run_case(
                exe,
                &args,
                &request(case),
                Duration::from_millis(500),
                |l| {
                    assert!(!is_done(l), "the done line is the slot's own");
                    if let Some(p) = l.strip_prefix("{\"pid\":") {
                        pid = p.trim_end_matches('}').parse().ok();
                    }
                },
            )
            .unwrap();
        (pid, f)
    }

    pub(super) fn alive(pid: u32) -> bool {
        // A zombie is not alive: its status line says so.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }

    #[test]
    fn a_worker_is_kept_across_cases_and_replaced_after_a_hang_a_crash_or_another_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let exe = fake_worker(dir.path());
        let mut slot = Slot::default();
        let (a, fa) = run(&mut slot, &exe, &["--root", "x"], "a");
        let (b, fb) = run(&mut slot, &exe, &["--root", "x"], "b");
        assert_eq!(fa.exit, Exit::Code(0));
        assert_eq!(fb.exit, Exit::Code(0));
        let a = a.expect("a pid");
        assert_eq!(Some(a), b, "the second case ran in the first case's worker");
        assert!(alive(a));

        // A hang: the worker is killed, the case times out, the next case gets a new worker.
        let (_, hang) = run(&mut slot, &exe, &["--root", "x"], "hang");
        assert_eq!(hang.exit, Exit::TimedOut);
        assert!(!alive(a), "the hung worker was killed");
        let (c, _) = run(&mut slot, &exe, &["--root", "x"], "c");
        let c = c.expect("c pid");
        assert_ne!(c, a);

        // A worker that ends by itself: its exit and stderr are the case's; the next is new.
        let (crash_pid, crash) = run(&mut slot, &exe, &["--root", "x"], "crash");
        assert_eq!(crash_pid, Some(c));
        assert_eq!(crash.exit, Exit::Code(3));
        assert!(crash.stderr.contains("boom"), "{}", crash.stderr);
        let (d, _) = run(&mut slot, &exe, &["--root", "x"], "d");
        let d = d.expect("d pid");
        assert_ne!(d, c);

        // A worker that ends after its case's done line: that case is fine, and the next
        // case is not blamed for the exit: it runs in a fresh worker.
        let (q, fq) = run(&mut slot, &exe, &["--root", "x"], "quits");
        assert_eq!((q, fq.exit), (Some(d), Exit::Code(0)));
        std::thread::sleep(Duration::from_millis(100));
        let (d2, fd2) = run(&mut slot, &exe, &["--root", "x"], "d2");
        assert_eq!(fd2.exit, Exit::Code(0), "{}", fd2.stderr);
        let d2 = d2.expect("d2 pid");
        assert_ne!(d2, d);
        let d = d2;

        // Another catalog: another worker; the first is ended.
        let (e, _) = run(&mut slot, &exe, &["--root", "y"], "e");
        let e = e.expect("e pid");
        assert_ne!(e, d);
        assert!(!alive(d));

        // A start longer than the trial deadline (500 ms here) is not a hang: until its ready
        // line the worker has START_DEADLINE; after it, each trial has the trial deadline.
        let (s, fs) = run(&mut slot, &exe, &["--root", "y"], "slow start");
        assert_eq!((s, fs.exit), (Some(e), Exit::Code(0)), "{}", fs.stderr);
        // A hang after the ready line is cut at the trial deadline, not the start's.
        let t = std::time::Instant::now();
        let (_, h) = run(&mut slot, &exe, &["--root", "y"], "hang");
        assert_eq!(h.exit, Exit::TimedOut);
        assert!(t.elapsed() < START_DEADLINE, "{:?}", t.elapsed());
        // No ready line within START_DEADLINE (4 s in tests, 60 s otherwise): an error that
        // says so, not a hang of a kernel that never ran; the worker is gone.
        let args: Vec<OsString> = ["--root", "y"].iter().map(OsString::from).collect();
        let t = std::time::Instant::now();
        let err = slot
            .run_case(
                &exe,
                &args,
                &request("no start"),
                Duration::from_millis(500),
                |_| {},
            )
            .expect_err("no ready line");
        assert!(
            err.to_string().contains("did not say it was ready"),
            "{err}"
        );
        assert!(t.elapsed() >= START_DEADLINE, "{:?}", t.elapsed());
        assert!(slot.worker.is_none());
        let (e, _) = run(&mut slot, &exe, &["--root", "y"], "after");
        let e = e.expect("a fresh worker");

        // Dropping the slot ends its worker.
        drop(slot);
        assert!(!alive(e), "the worker outlived its slot");
    }
}

#[cfg(test)]
mod stress_left_tests {
    use super::{Slot, StressLeft};

    #[test]
    fn counts_started_stress_runs_down_to_zero_and_no_further() {
        let left = StressLeft::new(2);
        let mut slot = Slot::default();
        left.before(false, &mut slot);
        assert_eq!(left.left(), 2, "another item does not count");
        left.before(true, &mut slot);
        left.before(true, &mut slot);
        assert_eq!(left.left(), 0);
        left.before(true, &mut slot);
        assert_eq!(left.left(), 0, "never below zero");
        // With none left, another item closes the slot (an empty one stays empty).
        left.before(false, &mut slot);
        assert!(slot.worker.is_none());
    }

    #[test]
    fn a_slot_closed_behind_its_next_item_does_not_wait_for_the_worker_but_its_drop_does() {
        let dir = tempfile::tempdir().unwrap();
        let exe = super::tests::fake_worker(dir.path());
        let mut slot = Slot::default();
        // This worker takes 1.5 s to exit once asked to stop.
        let (pid, _) = super::tests::run(&mut slot, &exe, &["--root", "x"], "slow exit");
        let pid = pid.expect("a pid");
        let left = StressLeft::new(0);
        let t = std::time::Instant::now();
        left.before(false, &mut slot);
        assert!(
            t.elapsed().as_millis() < 500,
            "the item waited {:?} for the close",
            t.elapsed()
        );
        assert!(slot.worker.is_none());
        assert!(super::tests::alive(pid), "still closing");
        drop(slot);
        assert!(
            t.elapsed().as_millis() >= 1400,
            "the drop did not wait: {:?}",
            t.elapsed()
        );
        assert!(!super::tests::alive(pid), "the worker outlived its slot");
    }
}
