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
    let n = items.len();
    let queue = Mutex::new(items.into_iter().enumerate());
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let Some((i, item)) = queue.lock().expect("queue").next() else {
                    break;
                };
                let r = f(item);
                on_done(&r);
                results.lock().expect("results")[i] = Some(r);
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
}
