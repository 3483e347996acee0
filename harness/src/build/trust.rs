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

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The resolved `path` when it and every folder above it are trusted; otherwise why not, naming
/// the first folder or file that is not.
pub fn trusted(path: &Path) -> Result<PathBuf, String> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    trusted_for(path, me, |m| m.uid())
}

/// [`trusted`] for the user `me`; `owner_of` reads an owner (tests pass another uid).
pub fn trusted_for(
    path: &Path,
    me: u32,
    owner_of: impl Fn(&std::fs::Metadata) -> u32,
) -> Result<PathBuf, String> {
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    for at in real.ancestors().collect::<Vec<_>>().into_iter().rev() {
        let meta = std::fs::metadata(at).map_err(|e| format!("{}: {e}", at.display()))?;
        let owner = owner_of(&meta);
        if owner != me && owner != 0 {
            return Err(format!(
                "{} belongs to another user (uid {owner}; racegate runs as uid {me})",
                at.display()
            ));
        }
        let mode = meta.mode();
        let sticky_root_dir = meta.is_dir() && mode & 0o1000 != 0 && owner == 0;
        if mode & 0o022 != 0 && !sticky_root_dir {
            return Err(format!(
                "{} is writable by group or others (mode {:04o})",
                at.display(),
                mode & 0o7777
            ));
        }
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod");
    }

    #[test]
    fn a_private_file_is_trusted_and_any_writable_folder_above_it_is_named() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("a/b");
        std::fs::create_dir_all(&dir).expect("mkdir");
        let lib = dir.join("libx.so");
        std::fs::write(&lib, "x").expect("write");
        mode(&lib, 0o644);
        mode(&dir, 0o755);
        mode(&tmp.path().join("a"), 0o755);
        assert!(trusted(&lib).is_ok(), "{:?}", trusted(&lib));
        for (at, m) in [
            (tmp.path().join("a"), 0o775),
            (dir.clone(), 0o757),
            (lib.clone(), 0o666),
        ] {
            mode(&at, m);
            let why = trusted(&lib).expect_err("a writable component");
            assert!(
                why.contains(&at.display().to_string()) && why.contains("writable"),
                "{why}"
            );
            mode(&at, if at == lib { 0o644 } else { 0o755 });
        }
        // Another user's folder is refused; root's is not.
        let why = trusted_for(&lib, 4242, |m| if m.is_file() { 1000 } else { 0 })
            .expect_err("another user's file");
        assert!(why.contains("uid 1000"), "{why}");
        assert!(trusted_for(&lib, 4242, |_| 0).is_ok());
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
