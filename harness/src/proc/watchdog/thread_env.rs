//! The device a thread is tied to, and the variables every child it starts gets for it.
//!
//! A thread that runs work for one device (a pool thread of a command run with `--devices`)
//! records it here with [`bind`]: from then on the watchdog's `Supervised::start`, where every
//! child is started, adds the binding's variables (`CUDA_VISIBLE_DEVICES` naming the device)
//! after the caller's own `Spawn` environment is applied (a clean environment keeps them too:
//! the child must still run on the thread's device). A thread that has no binding of its own
//! uses the process's default ([`set_default`]); with neither, children get exactly the
//! environment the caller asked for. The threads of a pool (`proc::pool`) start with the
//! binding of the thread that started the pool ([`inherited`], [`adopt`]), so work a device's
//! thread hands to helper threads stays on that device.
//!
//! ```
//! use racegate::proc::watchdog::thread_env::{self, Binding};
//! let b = Binding::new(1, vec![("CUDA_VISIBLE_DEVICES".into(), "1".into())]);
//! std::thread::spawn(move || {
//!     thread_env::bind(b);
//!     assert_eq!(thread_env::device(), Some(1));
//!     assert_eq!(thread_env::vars()[0].1, "1");
//! })
//! .join()
//! .unwrap();
//! ```

use std::cell::RefCell;
use std::sync::{Arc, RwLock};

/// One device and the variables its children get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    device: u32,
    vars: Vec<(String, String)>,
}

impl Binding {
    /// Device `device`, whose children get `vars` added to their environment.
    pub fn new(device: u32, vars: Vec<(String, String)>) -> Binding {
        Binding { device, vars }
    }
}

thread_local! {
    /// This thread's own binding, once [`bind`] or a pool gave it one.
    static THREAD: RefCell<Option<Arc<Binding>>> = const { RefCell::new(None) };
}

/// The binding of threads without one of their own (none until [`set_default`]).
static DEFAULT: RwLock<Option<Arc<Binding>>> = RwLock::new(None);

/// Ties this thread to `binding` for the rest of its life (or until the next [`bind`]).
pub fn bind(binding: Binding) {
    adopt(Some(Arc::new(binding)));
}

/// The binding of threads that have none of their own: the children of an unbound thread get
/// its variables. Default: none (children's environment untouched).
pub fn set_default(binding: Binding) {
    *DEFAULT.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(binding));
}

/// This thread's own binding, to hand to a thread it starts ([`adopt`]).
pub fn inherited() -> Option<Arc<Binding>> {
    THREAD.with(|t| t.borrow().clone())
}

/// Takes `binding` (from [`inherited`] on the starting thread) as this thread's own; `None`
/// leaves the thread unbound.
pub fn adopt(binding: Option<Arc<Binding>>) {
    THREAD.with(|t| *t.borrow_mut() = binding);
}

/// `f`, made to run on a thread this one starts (`std::thread::scope`'s `spawn`) with this
/// thread's binding: the children it starts run on the same device.
pub fn carried<T>(f: impl FnOnce() -> T) -> impl FnOnce() -> T {
    let binding = inherited();
    move || {
        adopt(binding);
        f()
    }
}

/// The device this thread was tied to, if it was (the default binding does not count: an
/// unbound thread is not tied to a device).
pub fn device() -> Option<u32> {
    THREAD.with(|t| t.borrow().as_ref().map(|b| b.device))
}

/// The variables a child started on this thread gets: its own binding's, else the default's,
/// else none.
pub fn vars() -> Vec<(String, String)> {
    let own = THREAD.with(|t| t.borrow().clone());
    let binding = own.or_else(|| (DEFAULT.read().unwrap_or_else(|p| p.into_inner())).clone());
    binding.map(|b| b.vars.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_thread_has_its_device_and_an_unbound_one_none() {
        let b = Binding::new(2, vec![("CUDA_VISIBLE_DEVICES".into(), "GPU-b".into())]);
        let seen = std::thread::spawn(move || {
            let before = (device(), inherited());
            bind(b);
            let after = (device(), vars(), inherited().map(|b| b.device));
            adopt(None);
            (before, after, device())
        })
        .join()
        .unwrap();
        assert_eq!(seen.0, (None, None));
        assert_eq!(
            seen.1,
            (
                Some(2),
                vec![("CUDA_VISIBLE_DEVICES".to_string(), "GPU-b".to_string())],
                Some(2)
            )
        );
        assert_eq!(seen.2, None);
    }

    #[test]
    fn a_scoped_thread_keeps_its_starters_device_only_when_carried() {
        let seen = std::thread::spawn(|| {
            bind(Binding::new(1, Vec::new()));
            std::thread::scope(|s| {
                let carried_device = s.spawn(carried(device)).join().unwrap();
                let plain_device = s.spawn(device).join().unwrap();
                (carried_device, plain_device)
            })
        })
        .join()
        .unwrap();
        assert_eq!(seen, (Some(1), None));
    }
}
