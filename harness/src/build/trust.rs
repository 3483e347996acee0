//! Whether a library or tool may be loaded or run: every folder on its whole path, and the file,
//! belong to root or to the user running racegate and are writable by nobody else.
//!
//! Loading a library runs its constructors, and running a tool runs it, with racegate's rights
//! (a grader's, reading a secret). So a file found in a place someone else could write is
//! refused, never loaded: whoever could write any folder on its path could have put another file
//! there. A world-writable folder with the sticky bit that root owns (`/tmp`) is allowed: others
//! can create files in it but not replace ours. The check is on the path as resolved (links
//! followed), and that resolved path is what the caller loads, so a link cannot be turned
//! elsewhere between the check and the load.

//!
//! Group write is allowed where the group is the owner's private group (the user-private-group
//! scheme of Debian, Ubuntu and Fedora, whose umask 002 makes every folder a user creates
//! group-writable): a group named after the owner, the owner's primary group, with no other
//! member and no other account's primary group. Any other group could hold someone else, so its
//! write bit is refused, and the message names the path and the `chmod` that fixes it.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// The resolved `path` when it and every folder above it are trusted; otherwise why not, naming
/// the first folder or file that is not and how to fix it.
pub fn trusted(path: &Path) -> Result<PathBuf, String> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    trusted_for(path, me, |m| m.uid(), private_group)
}

/// [`trusted`] for the user `me`; `owner_of` reads an owner and `private` says whether a group
/// is an owner's private group, `(owner, gid)` (tests pass their own).
pub fn trusted_for(
    path: &Path,
    me: u32,
    owner_of: impl Fn(&std::fs::Metadata) -> u32,
    private: impl Fn(u32, u32) -> bool,
) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for at in real.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let meta = std::fs::metadata(at).map_err(|e| format!("{}: {e}", at.display()))?;
        let owner = owner_of(&meta);
        if owner != me && owner != 0 {
            return Err(format!(
                "{} belongs to another user (uid {owner}; racegate runs as uid {me}): move it \
                 somewhere of your own, or have root own it",
                at.display()
            ));
        }
        let mode = meta.mode();
        let sticky_root_dir = meta.is_dir() && mode & 0o1000 != 0 && owner == 0;
        if sticky_root_dir {
            continue;
        }
        let group_ok = mode & 0o020 == 0 || private(owner, meta.gid());
        let others_ok = mode & 0o002 == 0;
        if group_ok && others_ok {
            continue;
        }
        let (who, fix) = match (group_ok, others_ok) {
            (false, true) => (
                format!(
                    "its group, gid {}, is not its owner's private group",
                    meta.gid()
                ),
                "g-w",
            ),
            (true, false) => ("others can write".to_string(), "o-w"),
            _ => (
                format!(
                    "its group, gid {}, is not its owner's private group, and others can write",
                    meta.gid()
                ),
                "go-w",
            ),
        };
        return Err(format!(
            "{} is writable by group or others (mode {:04o}): {who}; fix: chmod {fix} {}",
            at.display(),
            mode & 0o7777,
            at.display()
        ));
    }
    Ok(real)
}

/// Whether `gid` is `owner`'s private group: named after the owner, the owner's primary group,
/// listing no other member, and nobody else's primary group. Asked once per pair and process.
pub fn private_group(owner: u32, gid: u32) -> bool {
    static SEEN: OnceLock<Mutex<HashMap<(u32, u32), bool>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(v) = seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(owner, gid))
    {
        return *v;
    }
    let v = private_group_now(owner, gid);
    seen.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((owner, gid), v);
    v
}

fn private_group_now(owner: u32, gid: u32) -> bool {
    let Some((user, primary)) = account(owner) else {
        return false;
    };
    let Some((group, members)) = group(gid) else {
        return false;
    };
    primary == gid
        && group == user
        && members.iter().all(|m| *m == user)
        && !someone_else_in(gid, owner)
}

/// A C string as text (empty for null).
///
/// # Safety
/// `p` is null or a valid C string.
unsafe fn text(p: *const c_char) -> String {
    match p.is_null() {
        true => String::new(),
        // SAFETY: the caller's word.
        false => unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned(),
    }
}

/// The name and primary group of the account `uid`.
fn account(uid: u32) -> Option<(String, u32)> {
    let mut buf = vec![0 as c_char; 1 << 16];
    // SAFETY: an all-zero passwd is a valid value to be overwritten.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local; `buf` is as long as said.
    let rc = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r filled `pw` with strings in `buf`.
    Some((unsafe { text(pw.pw_name) }, pw.pw_gid))
}

/// The name and listed members of the group `gid`.
fn group(gid: u32) -> Option<(String, Vec<String>)> {
    let mut buf = vec![0 as c_char; 1 << 16];
    // SAFETY: an all-zero group is a valid value to be overwritten.
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local; `buf` is as long as said.
    let rc = unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() {
        return None;
    }
    let mut members = Vec::new();
    let mut at = gr.gr_mem;
    // SAFETY: gr_mem is a null-terminated array of C strings in `buf`.
    unsafe {
        while !at.is_null() && !(*at).is_null() {
            members.push(text(*at));
            at = at.add(1);
        }
    }
    // SAFETY: a C string in `buf`.
    Some((unsafe { text(gr.gr_name) }, members))
}

/// Whether an account other than `owner` has `gid` as its primary group (or the accounts
/// cannot be read to the end: then it is assumed so).
fn someone_else_in(gid: u32, owner: u32) -> bool {
    // The account list is one stream per process: one reader at a time.
    static LIST: Mutex<()> = Mutex::new(());
    let _held = LIST.lock().unwrap_or_else(|e| e.into_inner());
    let mut buf = vec![0 as c_char; 1 << 16];
    // SAFETY: an all-zero passwd is a valid value to be overwritten.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found = false;
    // SAFETY: setpwent/getpwent_r/endpwent with live locals, serialized by `LIST`.
    unsafe {
        libc::setpwent();
        loop {
            let mut out: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwent_r(&mut pw, buf.as_mut_ptr(), buf.len(), &mut out);
            if rc == libc::ENOENT || (rc == 0 && out.is_null()) {
                break;
            }
            if rc != 0 || (pw.pw_gid == gid && pw.pw_uid != owner) {
                found = true;
                break;
            }
        }
        libc::endpwent();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod");
    }

    /// [`trusted_for`] as the current user, with every group shared (`false`) or private.
    fn check(path: &Path, private: bool) -> Result<PathBuf, String> {
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        trusted_for(path, me, |m| m.uid(), |_, _| private)
    }

    #[test]
    fn a_private_file_is_trusted_and_any_writable_folder_above_it_is_named_with_its_fix() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("a/b");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let lib = dir.join("libx.so");
        std::fs::write(&lib, "x").expect("write");
        mode(&lib, 0o644);
        mode(&dir, 0o755);
        mode(&tmp.path().join("a"), 0o755);
        assert!(check(&lib, false).is_ok(), "{:?}", check(&lib, false));
        for (at, m, fix) in [
            (tmp.path().join("a"), 0o775, "g-w"),
            (dir.clone(), 0o757, "o-w"),
            (lib.clone(), 0o666, "go-w"),
        ] {
            mode(&at, m);
            let why = check(&lib, false).expect_err("a writable component");
            let shown = at.display().to_string();
            assert!(
                why.starts_with(&shown)
                    && why.contains("writable")
                    && why.ends_with(&format!("fix: chmod {fix} {shown}")),
                "{why}"
            );
            mode(&at, if at == lib { 0o644 } else { 0o755 });
        }
        // Another user's folder is refused; root's is not.
        let why = trusted_for(
            &lib,
            4242,
            |m| if m.is_file() { 1000 } else { 0 },
            |_, _| false,
        )
        .expect_err("another user's file");
        assert!(why.contains("uid 1000"), "{why}");
        assert!(trusted_for(&lib, 4242, |_| 0, |_, _| false).is_ok());
    }

    #[test]
    fn group_write_is_trusted_only_for_the_owners_private_group() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("checkout");
        std::fs::create_dir(&dir).expect("mkdir");
        let lib = dir.join("libx.so");
        std::fs::write(&lib, "x").expect("write");
        // What umask 002 makes.
        mode(&dir, 0o775);
        mode(&lib, 0o664);
        assert!(check(&lib, true).is_ok(), "{:?}", check(&lib, true));
        let why = check(&lib, false).expect_err("a shared group");
        assert!(why.contains("not its owner's private group"), "{why}");
        // Others' write is never excused by a private group.
        mode(&lib, 0o666);
        assert!(check(&lib, true).is_err());
    }

    #[test]
    fn a_group_with_another_member_or_another_name_is_not_private() {
        // SAFETY: geteuid cannot fail.
        let me = unsafe { libc::geteuid() };
        let Some((_, primary)) = account(me) else {
            return;
        };
        // No account's private group is a group it is not the primary of.
        assert!(!private_group(me, primary.wrapping_add(7919)));
        // The answer for the user's own primary group agrees with the account files.
        let (name, members) = group(primary).unwrap_or_default();
        let (user, _) = account(me).unwrap_or_default();
        if name != user || members.iter().any(|m| *m != user) {
            assert!(!private_group(me, primary));
        }
    }

    #[test]
    fn a_link_is_judged_where_it_leads_and_the_resolved_path_is_returned() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::write(open.join("libx.so"), "x").expect("write");
        mode(&open, 0o777);
        let link = tmp.path().join("libx.so");
        std::os::unix::fs::symlink(open.join("libx.so"), &link).expect("symlink");
        let why = trusted(&link).expect_err("the link leads into a world-writable folder");
        assert!(why.contains("open is writable"), "{why}");
        mode(&open, 0o755);
        assert_eq!(
            trusted(&link).expect("trusted once private"),
            std::fs::canonicalize(open.join("libx.so")).expect("canonical")
        );
    }
}
