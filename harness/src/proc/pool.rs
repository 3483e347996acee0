//! Runs independent jobs (stress workers, sanitizer processes) side by side, at most `jobs` at
//! a time, and returns their results in input order. The pool's threads are tied to the device
//! of the thread that started the pool, if it is tied to one
//! ([`crate::proc::watchdog::thread_env`]).

use std::sync::Mutex;

/// Applies `f` to every item on up to `jobs` threads; `on_done` sees each result as it comes.
pub fn run_all<T: Send, R: Send>(
    items: Vec<T>,
    jobs: usize,
    f: impl Fn(T) -> R + Sync,
    on_done: impl Fn(&R) + Sync,
) -> Vec<R> {
    run_all_with(items, jobs, || (), |(), t| f(t), on_done)
}

/// [`run_all`] where each thread keeps a state of its own from one item to the next (made by
/// `init` when the thread starts, dropped when it has no more items): a stress worker kept
/// across cases (`run::stress::Slot`).
pub fn run_all_with<T: Send, R: Send, S>(
    items: Vec<T>,
    jobs: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, T) -> R + Sync,
    on_done: impl Fn(&R) + Sync,
) -> Vec<R> {
    // Every item ranked alike: the earliest first, in input order.
    run_all_ranked(items, jobs, init, |_| 0.0, f, on_done)
}

/// A rank that says an item cannot start yet ([`run_all_ranked`]).
pub const NOT_YET: f64 = f64::NEG_INFINITY;

/// [`run_all`] where each thread keeps a state (as [`run_all_with`]) and the next item a free
/// thread takes is the one `rank` puts highest at that moment (the earliest of equals), so a
/// job can move ahead once another's result is in (the gate runs a kernel's tools first once
/// its stress run has hung). `rank` is asked again at every pick and may read state the jobs
/// update. An item ranked [`NOT_YET`] waits: a free thread whose best item is such waits until
/// another item ends and asks again, unless no item is running (then nothing could change the
/// ranks, and it takes the best anyway: every item runs).
pub fn run_all_ranked<T: Send, R: Send, S>(
    items: Vec<T>,
    jobs: usize,
    init: impl Fn() -> S + Sync,
    rank: impl Fn(&T) -> f64 + Sync,
    f: impl Fn(&mut S, T) -> R + Sync,
    on_done: impl Fn(&R) + Sync,
) -> Vec<R> {
    run_all_picked(items, jobs, init, rank, |_| {}, f, on_done)
}

/// [`run_all_ranked`] where `picked` sees each item as a thread takes it, under the same lock
/// as `rank`: a count it keeps (the gate's stress runs at once) is exact at the next pick.
pub fn run_all_picked<T: Send, R: Send, S>(
    items: Vec<T>,
    jobs: usize,
    init: impl Fn() -> S + Sync,
    rank: impl Fn(&T) -> f64 + Sync,
    picked: impl Fn(&T) + Sync,
    f: impl Fn(&mut S, T) -> R + Sync,
    on_done: impl Fn(&R) + Sync,
) -> Vec<R> {
    let n = items.len();
    // The items not started, and how many are running.
    let queue: Mutex<(Vec<Option<T>>, usize)> =
        Mutex::new((items.into_iter().map(Some).collect(), 0));
    let ended = std::sync::Condvar::new();
    let pick = || {
        let mut q = queue.lock().expect("queue");
        loop {
            let best =
                q.0.iter()
                    .enumerate()
                    .filter_map(|(i, t)| t.as_ref().map(|t| (i, rank(t))))
                    .fold(None, |best: Option<(usize, f64)>, (i, r)| match best {
                        Some((_, b)) if b >= r => best,
                        _ => Some((i, r)),
                    })?;
            if best.1 == NOT_YET && q.1 > 0 {
                // The timeout only guards against a rank that changes without an item ending.
                q = ended
                    .wait_timeout(q, std::time::Duration::from_millis(200))
                    .expect("queue")
                    .0;
                continue;
            }
            let item = q.0[best.0].take()?;
            q.1 += 1;
            picked(&item);
            return Some((best.0, item));
        }
    };
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    // The threads run on the device of the thread that starts them, if it is tied to one.
    let binding = crate::proc::watchdog::thread_env::inherited();
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            s.spawn(|| {
                crate::proc::watchdog::thread_env::adopt(binding.clone());
                let mut state = init();
                while let Some((i, item)) = pick() {
                    // Uncounted when the item ends, a panic included: the others' waits end.
                    let _running = Running(&queue, &ended);
                    let r = f(&mut state, item);
                    on_done(&r);
                    results.lock().expect("results")[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("results")
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// One running item of [`run_all_picked`]: dropped (after the item, or while a panic unwinds
/// its thread), it takes the item off the running count and wakes the waiting threads.
struct Running<'a, Q>(&'a Mutex<(Q, usize)>, &'a std::sync::Condvar);

impl<Q> Drop for Running<'_, Q> {
    fn drop(&mut self) {
        let mut q = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        q.1 = q.1.saturating_sub(1);
        drop(q);
        self.1.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use crate::proc::watchdog::thread_env;

    #[test]
    fn a_pool_runs_on_the_device_of_the_thread_that_started_it() {
        let seen = std::thread::spawn(|| {
            let unbound =
                super::run_all((0..4).collect(), 4, |_: u32| thread_env::device(), |_| {});
            thread_env::bind(thread_env::Binding::new(1, Vec::new()));
            let bound = super::run_all((0..4).collect(), 4, |_: u32| thread_env::device(), |_| {});
            (unbound, bound)
        })
        .join()
        .unwrap();
        assert!(seen.0.iter().all(Option::is_none), "{seen:?}");
        assert!(seen.1.iter().all(|d| *d == Some(1)), "{seen:?}");
    }

    #[test]
    fn results_keep_input_order_and_every_job_runs() {
        let seen = std::sync::atomic::AtomicUsize::new(0);
        let out = super::run_all(
            (0..50).collect(),
            4,
            |x: u64| x * x,
            |_| {
                seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            },
        );
        assert_eq!(out, (0..50).map(|x| x * x).collect::<Vec<_>>());
        assert_eq!(seen.into_inner(), 50);
    }

    #[test]
    fn each_thread_keeps_one_state_across_its_items_and_drops_it_at_the_end() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counted<'a>(&'a AtomicUsize, usize);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let made = AtomicUsize::new(0);
        let dropped = AtomicUsize::new(0);
        let out = super::run_all_with(
            (0..40).collect(),
            3,
            || {
                made.fetch_add(1, Ordering::Relaxed);
                Counted(&dropped, 0)
            },
            |state, x: usize| {
                state.1 += 1;
                (x, state.1)
            },
            |_| {},
        );
        // Every item ran once, in order; at most 3 states were made, all dropped, and some
        // state served more than one item.
        assert_eq!(
            out.iter().map(|r| r.0).collect::<Vec<_>>(),
            (0..40).collect::<Vec<_>>()
        );
        let made = made.into_inner();
        assert!((1..=3).contains(&made), "{made} states");
        assert_eq!(dropped.into_inner(), made);
        assert!(out.iter().any(|r| r.1 > 1), "no state was reused: {out:?}");
    }

    #[test]
    fn the_next_job_is_the_one_ranked_highest_when_a_thread_is_free() {
        use std::sync::atomic::{AtomicBool, Ordering};
        // One thread: job 0 runs first (ranked highest), and when it is done it makes job 3
        // jump ahead of jobs 1 and 2; results stay in input order.
        let boosted = AtomicBool::new(false);
        let order = std::sync::Mutex::new(Vec::new());
        let out = super::run_all_ranked(
            vec![0u32, 1, 2, 3],
            1,
            || (),
            |&j| match j {
                0 => 10.0,
                3 if boosted.load(Ordering::SeqCst) => 20.0,
                _ => 1.0,
            },
            |(), j| {
                order.lock().unwrap().push(j);
                if j == 0 {
                    boosted.store(true, Ordering::SeqCst);
                }
                j * 10
            },
            |_| {},
        );
        assert_eq!(out, vec![0, 10, 20, 30]);
        assert_eq!(order.into_inner().unwrap(), vec![0, 3, 1, 2]);
    }

    #[test]
    fn an_item_not_ready_waits_for_the_one_it_needs_and_every_item_runs() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // Items 10.. need item k (k = item - 10) ended: ranked NOT_YET until then. Four threads,
        // so free threads have only waiting items to look at while 0..4 run; none may start
        // before the item it needs has ended.
        for round in 0..20u64 {
            let ended: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
            let started_early = AtomicUsize::new(0);
            let items: Vec<usize> = (0..4).chain(10..14).collect();
            let out = super::run_all_ranked(
                items,
                4,
                || (),
                |&j| match j {
                    j if j >= 10 && ended[j - 10].load(Ordering::SeqCst) == 0 => super::NOT_YET,
                    j => -(j as f64),
                },
                |(), j| {
                    if j >= 10 && ended[j - 10].load(Ordering::SeqCst) == 0 {
                        started_early.fetch_add(1, Ordering::SeqCst);
                    }
                    if j < 10 {
                        // Uneven lengths, so items end in different orders from round to round.
                        std::thread::sleep(std::time::Duration::from_millis(
                            ((j as u64) * 7 + round * 3) % 11,
                        ));
                        ended[j].store(1, Ordering::SeqCst);
                    }
                    j
                },
                |_| {},
            );
            assert_eq!(out, vec![0, 1, 2, 3, 10, 11, 12, 13]);
            assert_eq!(started_early.into_inner(), 0, "round {round}");
        }
        // Nothing running and only items that are not ready: they run anyway, in order.
        let out = super::run_all_ranked(
            vec![1u8, 2, 3],
            2,
            || (),
            |_| super::NOT_YET,
            |(), j| j,
            |_| {},
        );
        assert_eq!(out, vec![1, 2, 3]);
    }

    #[test]
    fn a_job_that_panics_does_not_leave_the_others_waiting() {
        // Item 0 panics; item 1 is never ready, so it runs only once nothing else is running.
        // Were the panicked item still counted as running, item 1's thread would wait forever:
        // the pool runs on a thread of its own, and must end (with the panic) within 10 s.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let ran = std::sync::atomic::AtomicBool::new(false);
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                super::run_all_ranked(
                    vec![0u8, 1],
                    2,
                    || (),
                    |&j| if j == 1 { super::NOT_YET } else { 1.0 },
                    |(), j| {
                        if j == 0 {
                            std::thread::sleep(std::time::Duration::from_millis(100));
                            panic!("a job's bug");
                        }
                        ran.store(true, std::sync::atomic::Ordering::SeqCst);
                        j
                    },
                    |_| {},
                )
            }));
            // ignored: the test's receiver is gone only when it has already failed
            let _ = tx.send((result.is_err(), ran.into_inner()));
        });
        let (panicked, ran) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the pool ended after a job panicked");
        assert!(panicked, "the panic reaches the caller");
        assert!(ran, "the waiting item still ran");
    }

    #[test]
    fn picked_sees_each_item_under_the_lock_so_a_count_it_keeps_is_exact() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // At most 3 of 16 threads in items: the count goes up when picked (under the queue's
        // lock) and down when the item ends.
        for _ in 0..20 {
            let running = AtomicUsize::new(0);
            let most = AtomicUsize::new(0);
            super::run_all_picked(
                (0..60u32).collect(),
                16,
                || (),
                |_| {
                    if running.load(Ordering::SeqCst) >= 3 {
                        super::NOT_YET
                    } else {
                        1.0
                    }
                },
                |_| {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                },
                |(), j| {
                    std::thread::sleep(std::time::Duration::from_millis(u64::from(j % 3)));
                    running.fetch_sub(1, Ordering::SeqCst);
                },
                |_| {},
            );
            assert!(
                most.load(Ordering::SeqCst) <= 3,
                "{} at once",
                most.load(Ordering::SeqCst)
            );
        }
    }
}
