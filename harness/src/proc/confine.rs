//! Confinement of a process that must not read files: the kernel refuses, whatever the request
//! looks like. A compile child of a submission calls [`no_file_access`] once NVRTC and
//! everything it loads are in memory and the files it needs are open; from then on no path can
//! be opened, probed or executed, so no spelling of `#include` (a vertical tab after `#`, `%:`,
//! a macro, `__has_include` pasted together) reaches a file.
//!
//! Three layers, each applied where the kernel offers it, strongest last:
//! 1. an empty mount namespace (a user namespace, then an empty tmpfs as `/`): no path names
//!    any file of the machine;
//! 2. a Landlock ruleset that handles every file-system right and grants none;
//! 3. a seccomp-bpf filter that fails every syscall that opens, probes or executes a path, or
//!    reaches another process or the network, with `EACCES`.
//!
//! The pattern checks before it (the token scanner's include refusal) stay as a friendly first
//! line; no guarantee rests on them.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use serde::{Deserialize, Serialize};

/// The layers that applied to a process, and why the others did not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layers {
    /// The seccomp-bpf filter refusing file, process and network syscalls.
    pub seccomp: bool,
    /// A Landlock ruleset granting no file-system access.
    pub landlock: bool,
    /// An empty mount namespace.
    pub mount_namespace: bool,
    /// For each layer that did not apply: `layer: why`.
    pub missing: Vec<String>,
}

impl Layers {
    /// Whether any layer stops file access (the guarantee needs one).
    pub fn any(&self) -> bool {
        self.seccomp || self.landlock || self.mount_namespace
    }

    /// `seccomp, Landlock, mount namespace` (those that applied), or `none`.
    pub fn names(&self) -> String {
        let v: Vec<&str> = [
            (self.seccomp, "seccomp-bpf"),
            (self.landlock, "Landlock"),
            (self.mount_namespace, "empty mount namespace"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect();
        match v.is_empty() {
            true => "none".into(),
            false => v.join(", "),
        }
    }

    /// One line for people: what applied, then what did not and why.
    pub fn describe(&self) -> String {
        let mut s = format!("kernel-level file confinement: {}", self.names());
        if !self.missing.is_empty() {
            s.push_str(&format!(" (not applied: {})", self.missing.join("; ")));
        }
        s
    }
}

/// Which layers to try; tests switch single layers off to show each one holds alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wanted {
    pub seccomp: bool,
    pub landlock: bool,
    pub mount_namespace: bool,
}

impl Default for Wanted {
    fn default() -> Self {
        Wanted {
            seccomp: true,
            landlock: true,
            mount_namespace: true,
        }
    }
}

/// The first half of the empty mount namespace, taken while the process is still
/// single-threaded and before anything is loaded: a new user and mount namespace (the old root
/// still visible). [`no_file_access`] empties it once NVRTC is in memory (pivoting the root
/// works with threads running; entering a user namespace does not, and NVRTC may start one).
pub fn enter_namespaces() -> Result<(), String> {
    let n = threads();
    if n != 1 {
        return Err(format!("the process has {n} threads (it needs one)"));
    }
    let os = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    // SAFETY: getuid/getgid only read ids.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare with namespace flags changes only this (single-threaded) process.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } != 0 {
        return Err(os("unshare"));
    }
    let write = |path: &str, text: String| {
        std::fs::write(path, text).map_err(|e| format!("writing {path}: {e}"))
    };
    // Map our own ids only, so files keep their owners and nothing gains rights.
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

/// Confines the calling process so that it can no longer open, probe or execute any path.
/// Files already open stay usable. `namespaces` is what [`enter_namespaces`] gave, called
/// earlier (`None`: the mount namespace is not wanted). The other layers cover every thread,
/// present and future. Never fails: what could not be applied is in [`Layers::missing`], and
/// the caller decides whether that is acceptable.
pub fn no_file_access(want: Wanted, namespaces: Option<Result<(), String>>) -> Layers {
    let mut layers = Layers::default();
    match namespaces {
        Some(Ok(())) => match empty_root() {
            Ok(()) => layers.mount_namespace = true,
            Err(why) => layers.missing.push(format!("mount namespace: {why}")),
        },
        Some(Err(why)) => layers.missing.push(format!("mount namespace: {why}")),
        None => {}
    }
    if want.landlock {
        match landlock_nothing() {
            Ok(()) => layers.landlock = true,
            Err(why) => layers.missing.push(format!("Landlock: {why}")),
        }
    }
    if want.seccomp {
        match seccomp_filter() {
            Ok(()) => layers.seccomp = true,
            Err(why) => layers.missing.push(format!("seccomp: {why}")),
        }
    }
    layers
}

/// The syscalls refused outright (each with `EACCES`): every way to reach a file by path, to
/// run a program, to reach another process's memory or files, or the network.
fn refused() -> Vec<i64> {
    let mut v = vec![
        libc::SYS_openat,
        libc::SYS_openat2,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_faccessat,
        libc::SYS_faccessat2,
        libc::SYS_readlinkat,
        libc::SYS_execve,
        libc::SYS_execveat,
        libc::SYS_socket,
        libc::SYS_socketpair,
        libc::SYS_connect,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_open,
        libc::SYS_pidfd_getfd,
        libc::SYS_chdir,
        libc::SYS_fchdir,
        libc::SYS_chroot,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mknodat,
        libc::SYS_linkat,
        libc::SYS_symlinkat,
        libc::SYS_unlinkat,
        libc::SYS_renameat,
        libc::SYS_renameat2,
        libc::SYS_mkdirat,
        libc::SYS_getxattr,
        libc::SYS_lgetxattr,
        libc::SYS_listxattr,
        libc::SYS_llistxattr,
        libc::SYS_inotify_add_watch,
        libc::SYS_fanotify_mark,
        libc::SYS_io_uring_setup,
        libc::SYS_truncate,
        libc::SYS_statfs,
        libc::SYS_fchmodat,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_open_tree,
        libc::SYS_fsopen,
        libc::SYS_fspick,
        libc::SYS_fsmount,
        libc::SYS_move_mount,
        libc::SYS_mount_setattr,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        libc::SYS_tkill,
        libc::SYS_pidfd_send_signal,
        libc::SYS_memfd_secret,
        libc::SYS_quotactl,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_acct,
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        libc::SYS_open,
        libc::SYS_creat,
        libc::SYS_stat,
        libc::SYS_lstat,
        libc::SYS_access,
        libc::SYS_readlink,
        libc::SYS_uselib,
        libc::SYS_mknod,
        libc::SYS_link,
        libc::SYS_symlink,
        libc::SYS_unlink,
        libc::SYS_rename,
        libc::SYS_mkdir,
        libc::SYS_rmdir,
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    v
}

/// The BPF program: [`refused`] syscalls fail with `EACCES`; `newfstatat` and `statx` fail
/// unless they name an open descriptor (`AT_EMPTY_PATH` with a real descriptor, how `fstat` is
/// made today), so a file already open can still be asked its size but no path from the
/// current folder or the root can be probed; `kill` and `tgkill` fail unless aimed at this
/// process itself (`abort` signals itself).
pub fn seccomp_program() -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        refused().into_iter().map(|s| (s, Vec::new())).collect();
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(|e| e.to_string())
    };
    let rule = |c: SeccompCondition| SeccompRule::new(vec![c]).map_err(|e| e.to_string());
    // Refused when any rule matches: no AT_EMPTY_PATH, or a lookup from the current folder.
    let by_descriptor_only = |flags_arg: u8| -> Result<Vec<SeccompRule>, String> {
        Ok(vec![
            rule(cond(
                flags_arg,
                SeccompCmpOp::MaskedEq(libc::AT_EMPTY_PATH as u64),
                0,
            )?)?,
            rule(cond(
                0,
                SeccompCmpOp::Eq,
                u64::from(libc::AT_FDCWD.cast_unsigned()),
            )?)?,
        ])
    };
    rules.insert(libc::SYS_newfstatat, by_descriptor_only(3)?);
    rules.insert(libc::SYS_statx, by_descriptor_only(2)?);
    let me = std::process::id() as u64;
    let not_me =
        || -> Result<Vec<SeccompRule>, String> { Ok(vec![rule(cond(0, SeccompCmpOp::Ne, me)?)?]) };
    rules.insert(libc::SYS_kill, not_me()?);
    rules.insert(libc::SYS_tgkill, not_me()?);
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

fn seccomp_filter() -> Result<(), String> {
    let program = seccomp_program()?;
    // Every thread, present and future (TSYNC): NVRTC may have started threads of its own.
    seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string())
}

fn landlock_nothing() -> Result<(), String> {
    use landlock::{
        Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, ABI,
    };
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI::V5))
        .and_then(|r| r.create())
        .and_then(|r| r.no_new_privs(true).restrict_self())
        .map_err(|e| e.to_string())?;
    match status.ruleset {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err("the kernel does not enforce Landlock".into()),
    }
}

/// Threads of this process (the mount namespace needs one).
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The second half: this (already private) mount namespace's root becomes an empty,
/// read-only tmpfs, and the old root is detached.
fn empty_root() -> Result<(), String> {
    let os = |what: &str| format!("{what}: {}", std::io::Error::last_os_error());
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL");
    let (none, root, tmpfs) = (c("none"), c("/"), c("tmpfs"));
    // SAFETY: mount/chdir/pivot_root/umount2 with valid C strings, inside our own namespace.
    unsafe {
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(os("making / private"));
        }
        // An empty tmpfs over /tmp's mount point would need a folder; mount it on / of the
        // new namespace's view through the current folder instead: the folder exists, and
        // after pivot_root nothing else is reachable.
        let here = c(".");
        if libc::mount(
            none.as_ptr(),
            here.as_ptr(),
            tmpfs.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c("size=4k,mode=0500").as_ptr().cast(),
        ) != 0
        {
            return Err(os("mounting an empty tmpfs"));
        }
        // Enter the new mount (the old folder is under it).
        let cwd = std::env::current_dir().map_err(|e| format!("current folder: {e}"))?;
        let cwd = c(&cwd.to_string_lossy());
        if libc::chdir(cwd.as_ptr()) != 0 {
            return Err(os("entering the tmpfs"));
        }
        if libc::syscall(libc::SYS_pivot_root, here.as_ptr(), here.as_ptr()) != 0 {
            return Err(os("pivot_root"));
        }
        if libc::umount2(here.as_ptr(), libc::MNT_DETACH) != 0 {
            return Err(os("detaching the old root"));
        }
        if libc::chdir(root.as_ptr()) != 0 {
            return Err(os("entering the new root"));
        }
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY,
            std::ptr::null(),
        ) != 0
        {
            return Err(os("making the new root read-only"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_machine() {
        let p = seccomp_program().unwrap();
        // One instruction per refused syscall at least, plus the architecture check.
        assert!(p.len() > refused().len(), "{}", p.len());
    }

    #[test]
    fn layers_describe_what_applied_and_what_did_not() {
        let l = Layers {
            seccomp: true,
            landlock: false,
            mount_namespace: false,
            missing: vec!["Landlock: the kernel does not enforce Landlock".into()],
        };
        assert!(l.any());
        assert_eq!(l.names(), "seccomp-bpf");
        assert!(
            l.describe().contains("not applied: Landlock"),
            "{}",
            l.describe()
        );
        assert_eq!(Layers::default().names(), "none");
        assert!(!Layers::default().any());
    }
}
