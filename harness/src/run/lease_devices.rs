//! Which CUDA devices racegate's jobs run on: `--devices LIST` or `RACEGATE_DEVICES`, a count
//! (`2`: devices 0 and 1) or the devices' numbers (`0,1`; one device by number: `3,`). Each
//! device has its own pool of workers and its own GPU lease (its own lock and slot files), and
//! every child a thread tied to a device starts (a stress worker, a sanitizer or perf run, a
//! grading worker, a program under the gate) is told its device through
//! `CUDA_VISIBLE_DEVICES`: the binding is the process layer's
//! ([`crate::proc::watchdog::thread_env`]), which adds it wherever a child is started.
//!
//! Without either, racegate runs as it always has: on device 0, under the lease of device 0,
//! its children's environment left as it was. A job's result does not depend on its device: a
//! pool thread keeps one device for its life ([`bind_thread`]), so the worker it keeps (a stress
//! worker and its context) stays on that device, the threads it hands work to inherit it, and
//! nothing a job reports names it. A thread never tied to one (the main thread) runs on the
//! first device chosen: its lease, and its children's `CUDA_VISIBLE_DEVICES`.
//!
//! ```
//! use racegate::run::lease_devices::Devices;
//! let d = Devices::resolve(Some("0,1"), Some(2)).unwrap();
//! assert_eq!(d.ids(), &[0, 1]);
//! assert_eq!(d.for_worker(3), 1);
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::errors::{Error, Result};
use crate::proc::watchdog::thread_env::{self, Binding};

/// The variable that chooses the devices when `--devices` does not.
pub const DEVICES_ENV: &str = "RACEGATE_DEVICES";

/// The most devices a count may name (a CUDA machine shows at most a few dozen).
const MOST_DEVICES: u32 = 1024;

/// A test hook: the number of devices the driver is taken to report, so that host tests (no
/// GPU) can check a selection against a machine of several.
pub const FAKE_COUNT_ENV: &str = "RACEGATE_TEST_DEVICE_COUNT";

/// The devices chosen, in their order: the pools' threads take them in turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Devices {
    ids: Vec<u32>,
    /// Whether the user chose them (`--devices` or `RACEGATE_DEVICES`): only then are children
    /// told their device.
    chosen: bool,
}

impl Default for Devices {
    /// Device 0 alone, chosen by nobody: racegate's behaviour on one GPU.
    fn default() -> Self {
        Devices {
            ids: vec![0],
            chosen: false,
        }
    }
}

impl Devices {
    /// The devices `spec` names (a count, or numbers separated by commas), checked against the
    /// `visible` count when it is known (no device here: the syntax only, the work then stops
    /// for want of one); no `spec`: the default. A usage error (exit 2) saying what is wrong.
    pub fn resolve(spec: Option<&str>, visible: Option<usize>) -> Result<Devices> {
        let Some(spec) = spec else {
            return Ok(Devices::default());
        };
        let bad = |why: String| {
            Error::Usage(format!(
                "--devices `{spec}` ({DEVICES_ENV}): {why}; expected a count (2: devices 0 \
                 and 1) or device numbers separated by commas (0,1; one device by number: 3,)"
            ))
        };
        let t = spec.trim();
        let ids: Vec<u32> = if t.contains(',') {
            let mut ids = Vec::new();
            for part in t.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let id: u32 = part
                    .parse()
                    .map_err(|_| bad(format!("`{part}` is not a device number")))?;
                if ids.contains(&id) {
                    return Err(bad(format!("device {id} named twice")));
                }
                ids.push(id);
            }
            ids
        } else {
            let n: u32 = t
                .parse()
                .map_err(|_| bad("not a count nor a list".into()))?;
            // Checked before the list is made: a count past any machine is a mistake (the
            // devices this one shows are checked below).
            if n > MOST_DEVICES {
                return Err(bad(format!("{n} devices, more than any machine has")));
            }
            (0..n).collect()
        };
        if ids.is_empty() {
            return Err(bad("no device".into()));
        }
        if let Some(v) = visible {
            if let Some(id) = ids.iter().find(|&&id| id as usize >= v) {
                return Err(bad(format!(
                    "device {id} is not among the {v} device(s) the driver sees (0..{})",
                    v.saturating_sub(1)
                )));
            }
        }
        Ok(Devices { ids, chosen: true })
    }

    /// The devices, in the order the pools take them.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The device of the `i`-th worker of a pool: the devices in turn, so that each device's
    /// workers are one pool of their own, as many as the others' (one more at most).
    pub fn for_worker(&self, i: usize) -> u32 {
        self.ids[i % self.ids.len()]
    }

    /// The workers of a command told `jobs` at once (`given`: by `--jobs`, the whole count;
    /// else `jobs` is one device's default): each chosen device gets a pool of that size.
    pub fn workers(&self, jobs: usize, given: bool) -> usize {
        match given || !self.chosen {
            true => jobs,
            false => jobs * self.ids.len(),
        }
    }

    /// What a command says of where its `jobs` workers run: nothing for the default, else
    /// `; on devices 0 (4 workers), 1 (4 workers)`.
    pub fn describe(&self, jobs: usize) -> String {
        if !self.chosen {
            return String::new();
        }
        let each: Vec<String> = (self.pools(jobs).iter())
            .map(|(id, n)| format!("{id} ({n} workers)"))
            .collect();
        format!("; on devices {}", each.join(", "))
    }

    /// How many of `jobs` workers each device gets, by [`Devices::for_worker`].
    pub fn pools(&self, jobs: usize) -> Vec<(u32, usize)> {
        let n = self.ids.len();
        (self.ids.iter().enumerate())
            .map(|(k, &id)| (id, jobs / n + usize::from(k < jobs % n)))
            .collect()
    }

    /// The environment a child of a job on `device` gets: `CUDA_VISIBLE_DEVICES` naming it
    /// (through racegate's own `CUDA_VISIBLE_DEVICES`, `inherited`, when it has one: device
    /// numbers are the driver's, counted among what racegate was shown); nothing when the
    /// devices are the default.
    pub fn child_env(&self, device: u32, inherited: Option<&str>) -> Vec<(String, String)> {
        if !self.chosen {
            return Vec::new();
        }
        // The child runs on one device: it must not choose among several again.
        vec![
            ("CUDA_VISIBLE_DEVICES".into(), physical(device, inherited)),
            (DEVICES_ENV.into(), String::new()),
        ]
    }

    /// What ties a thread to `device`: the device and its children's [`Devices::child_env`]
    /// (`inherited`: racegate's own `CUDA_VISIBLE_DEVICES`).
    pub fn binding(&self, device: u32, inherited: Option<&str>) -> Binding {
        Binding::new(device, self.child_env(device, inherited))
    }
}

/// How `CUDA_VISIBLE_DEVICES` names racegate's `device` for a child: its entry in racegate's
/// own `inherited` list when there is one (a number, a UUID or a MIG instance; an empty list
/// hides every device, and a device past its end is none: the child is shown none), else the
/// number itself.
fn physical(device: u32, inherited: Option<&str>) -> String {
    match inherited {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .nth(device as usize)
            .unwrap_or("")
            .to_string(),
        None => device.to_string(),
    }
}

/// racegate's own `CUDA_VISIBLE_DEVICES`, through which device numbers are counted.
fn inherited_visible() -> Option<String> {
    std::env::var("CUDA_VISIBLE_DEVICES").ok()
}

/// The devices this process runs on, chosen once ([`select`]).
static SELECTED: OnceLock<Devices> = OnceLock::new();

/// How many devices the driver reports: [`FAKE_COUNT_ENV`] when set, none on a machine without
/// a device (`None`: not known).
pub fn visible_count() -> Option<usize> {
    if let Some(n) = std::env::var(FAKE_COUNT_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        return Some(n);
    }
    crate::run::device::probe().ok()?;
    // The driver was initialized by the look for a device above.
    let n = cudarc::driver::result::device::get_count().ok()?;
    usize::try_from(n).ok()
}

/// Chooses this process's devices once: `flag` (`--devices`), else [`DEVICES_ENV`], else the
/// default; checked against the devices the driver sees. Later calls return the first choice.
pub fn select(flag: Option<&str>) -> Result<&'static Devices> {
    if let Some(d) = SELECTED.get() {
        return Ok(d);
    }
    let env = std::env::var(DEVICES_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let spec = flag.map(str::to_string).or(env);
    let d = match spec {
        None => Devices::default(),
        Some(s) => Devices::resolve(Some(&s), visible_count())?,
    };
    let d = SELECTED.get_or_init(|| d);
    if d.chosen {
        // Threads never tied to a device run on the first one, as their lease does.
        thread_env::set_default(d.binding(d.ids[0], inherited_visible().as_deref()));
    }
    Ok(d)
}

/// The devices chosen ([`select`] without a flag when nothing chose them yet).
pub fn selected() -> Result<&'static Devices> {
    select(None)
}

/// The number of threads bound so far, machine pools of every command together.
static BOUND: AtomicUsize = AtomicUsize::new(0);

/// This thread's device: bound on the first call, to the next device in turn, and kept for the
/// thread's life (the worker a pool thread keeps stays on one device); a thread that inherited
/// one from the thread that started it keeps that one. From then on every child the thread
/// starts runs on it ([`thread_env`]).
pub fn bind_thread() -> Result<u32> {
    if let Some(d) = thread_env::device() {
        return Ok(d);
    }
    let devices = selected()?;
    let d = devices.for_worker(BOUND.fetch_add(1, Ordering::Relaxed));
    thread_env::bind(devices.binding(d, inherited_visible().as_deref()));
    Ok(d)
}

/// This thread's device: the one it is tied to, else the first chosen (device 0 by default).
pub fn current() -> u32 {
    thread_env::device()
        .or_else(|| selected().ok().map(|d| d.ids()[0]))
        .unwrap_or(0)
}

/// The name of `device`'s lease file in racegate's cache folder (its slot files are named
/// after it): after the GPU as `CUDA_VISIBLE_DEVICES` names it ([`physical`]), so that every
/// racegate process on the machine that runs on one GPU takes the same lease, whatever it was
/// shown (`gpu-0.lock` for device 0 with no `CUDA_VISIBLE_DEVICES`, as on one GPU).
pub fn lock_file(device: u32) -> String {
    lock_file_in(device, inherited_visible().as_deref())
}

fn lock_file_in(device: u32, inherited: Option<&str>) -> String {
    let name: String = physical(device, inherited)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.is_empty() {
        true => "gpu-none.lock".into(),
        false => format!("gpu-{name}.lock"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_or_a_list_of_devices_is_checked_against_what_the_driver_sees() {
        let ids = |s: &str, v: Option<usize>| Devices::resolve(Some(s), v).map(|d| d.ids.clone());
        assert_eq!(ids("2", Some(4)).unwrap(), vec![0, 1]);
        assert_eq!(ids("0,1", Some(2)).unwrap(), vec![0, 1]);
        assert_eq!(ids(" 3, ", Some(4)).unwrap(), vec![3]);
        assert_eq!(
            ids("2,0", None).unwrap(),
            vec![2, 0],
            "no device: syntax only"
        );
        let usage = |s: &str, v: Option<usize>, says: &str| match Devices::resolve(Some(s), v) {
            Err(e @ Error::Usage(_)) => assert!(e.to_string().contains(says), "{e}"),
            other => panic!("{s}: {other:?}"),
        };
        usage("0,1", Some(1), "device 1 is not among the 1 device(s)");
        usage("3", Some(2), "device 2 is not among");
        usage("0,0", Some(2), "named twice");
        usage("0", Some(2), "no device");
        usage(",", Some(2), "no device");
        usage("a,1", Some(2), "`a` is not a device number");
        usage("two", Some(2), "not a count nor a list");
        assert_eq!(Devices::resolve(None, Some(8)).unwrap(), Devices::default());
    }

    #[test]
    fn each_device_gets_a_pool_of_its_own_and_as_many_workers() {
        let d = Devices::resolve(Some("3"), Some(3)).unwrap();
        let seen: Vec<u32> = (0..7).map(|i| d.for_worker(i)).collect();
        assert_eq!(seen, vec![0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(d.pools(7), vec![(0, 3), (1, 2), (2, 2)]);
        assert_eq!(d.pools(2), vec![(0, 1), (1, 1), (2, 0)]);
        let total: usize = d.pools(16).iter().map(|p| p.1).sum();
        assert_eq!(total, 16);
        assert_eq!(
            d.workers(4, false),
            12,
            "a pool of the default size per device"
        );
        assert_eq!(d.workers(4, true), 4, "--jobs is the whole count");
        assert_eq!(
            d.describe(3),
            "; on devices 0 (1 workers), 1 (1 workers), 2 (1 workers)"
        );
        // The default: one pool, on device 0.
        let one = Devices::default();
        assert_eq!(one.pools(5), vec![(0, 5)]);
        assert!((0..5).all(|i| one.for_worker(i) == 0));
        assert_eq!((one.workers(4, false), one.describe(4)), (4, String::new()));
    }

    #[test]
    fn a_child_is_told_its_device_only_when_devices_were_chosen() {
        assert!(Devices::default().child_env(0, None).is_empty());
        assert!(Devices::default().child_env(0, Some("3")).is_empty());
        let d = Devices::resolve(Some("0,1"), Some(2)).unwrap();
        let env = |dev, inh| d.child_env(dev, inh)[0].1.clone();
        assert_eq!(d.child_env(1, None)[0].0, "CUDA_VISIBLE_DEVICES");
        assert_eq!(env(1, None), "1");
        // racegate itself shown devices 4 and 6: its device 1 is the machine's 6.
        assert_eq!(env(1, Some("4,6")), "6");
        assert_eq!(env(0, Some("GPU-abc, GPU-def")), "GPU-abc");
        // An empty list hides every device, and a device past the list is none: shown none.
        assert_eq!(env(1, Some("")), "");
        assert_eq!(env(2, Some("4,6")), "");
        // The child runs on its one device: it does not choose among several again.
        assert!(d
            .child_env(1, None)
            .contains(&(DEVICES_ENV.to_string(), String::new())));
    }

    #[test]
    fn a_lease_file_is_named_after_the_gpu_as_cuda_visible_devices_names_it() {
        assert_eq!(lock_file_in(0, None), "gpu-0.lock");
        assert_eq!(lock_file_in(1, None), "gpu-1.lock");
        // racegate shown the machine's 4 and 6: its device 1 takes the lease of the machine's 6,
        // as a racegate shown only 6 does for its device 0.
        assert_eq!(lock_file_in(1, Some("4,6")), lock_file_in(0, Some("6")));
        assert_eq!(lock_file_in(1, Some("4,6")), "gpu-6.lock");
        assert_eq!(
            lock_file_in(0, Some("MIG-GPU-ab/1/0")),
            "gpu-MIG-GPU-ab_1_0.lock"
        );
        assert_eq!(lock_file_in(0, Some("")), "gpu-none.lock");
    }

    #[test]
    fn a_count_past_any_machine_is_refused_before_a_list_is_made() {
        match Devices::resolve(Some("4000000000"), Some(2)) {
            Err(e @ Error::Usage(_)) => assert!(e.to_string().contains("more than any machine")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn without_a_choice_every_pool_thread_is_on_device_0_and_children_unchanged() {
        // This test process chose no devices (no --devices, no RACEGATE_DEVICES).
        let seen: Vec<(u32, Vec<(String, String)>)> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (bind_thread().unwrap(), thread_env::vars())))
                .collect();
            threads.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(
            seen.iter().all(|(d, env)| *d == 0 && env.is_empty()),
            "{seen:?}"
        );
        assert_eq!(current(), 0);
    }
}
