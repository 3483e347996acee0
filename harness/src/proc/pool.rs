//! Runs independent jobs (stress workers, sanitizer processes) side by side, at most `jobs` at
//! a time, and returns their results in input order.

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

/// [`run_all`] where each thread keeps a state (as [`run_all_with`]) and the next item a free
/// thread takes is the one `rank` puts highest at that moment (the earliest of equals), so a
/// job can move ahead once another's result is in (the gate runs a kernel's tools first once
/// its stress run has hung). `rank` is asked again at every pick and may read state the jobs
/// update.
pub fn run_all_ranked<T: Send, R: Send, S>(
    items: Vec<T>,
    jobs: usize,
    init: impl Fn() -> S + Sync,
    rank: impl Fn(&T) -> f64 + Sync,
    f: impl Fn(&mut S, T) -> R + Sync,
    on_done: impl Fn(&R) + Sync,
) -> Vec<R> {
    let n = items.len();
    let queue: Mutex<Vec<Option<T>>> = Mutex::new(items.into_iter().map(Some).collect());
    let pick = || {
        let mut q = queue.lock().expect("queue");
        let best = q
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.as_ref().map(|t| (i, rank(t))))
            .fold(None, |best: Option<(usize, f64)>, (i, r)| match best {
                Some((_, b)) if b >= r => best,
                _ => Some((i, r)),
            })?;
        q[best.0].take().map(|t| (best.0, t))
    };
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            s.spawn(|| {
                let mut state = init();
                while let Some((i, item)) = pick() {
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

#[cfg(test)]
mod tests {
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
        assert_eq!(out.iter().map(|r| r.0).collect::<Vec<_>>(), (0..40).collect::<Vec<_>>());
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
}
