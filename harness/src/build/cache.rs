//! racegate's private cache folder: `$RACEGATE_CACHE`, else `$XDG_CACHE_HOME/racegate`, else
//! `~/.cache/racegate`. It holds the PTX handed to worker processes, the grader's scratch
//! folders and the GPU lock, so nobody else may own or write it: a folder another user created
//! there first (as anyone could in a shared `/tmp`) is refused with an error, never used, and
//! one of ours is kept at mode 0700.
//!
//! ```no_run
//! let dir = racegate::build::cache::dir()?; // created on first use, checked once per process
//! # Ok::<(), racegate::Error>(())
//! ```

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::errors::{Error, Result};

/// The folder, created private on first use and checked once per process.
pub fn dir() -> Result<PathBuf> {
    static DIR: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = location()?;
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        make_private(&dir, me, |m| m.uid())?;
        Ok(dir)
    })
    .clone()
    .map_err(Error::Cache)
}

/// Where racegate runs keep their records of the jobs they started, for the run after one
/// that was killed outright (`runs/` in the folder).
pub fn runs_dir() -> Result<PathBuf> {
    Ok(dir()?.join("runs"))
}

/// Where the folder is, from the environment. A relative `RACEGATE_CACHE` or `HOME` is refused
/// (it would put racegate's private cache in whatever the current folder is: a student's
/// repository, when grading); so is any relative value of the variables naming a place racegate
/// loads from ([`crate::build::locations::PATH_VARS`]): every command that works asks for this
/// folder first, so one of them set wrong stops it before anything is loaded or run.
fn location() -> std::result::Result<PathBuf, String> {
    crate::build::locations::check_path_vars()?;
    place()
}

/// Where the folder is, from `RACEGATE_CACHE`, `XDG_CACHE_HOME` or `HOME` alone.
fn place() -> std::result::Result<PathBuf, String> {
    if let Some(d) = crate::build::locations::path_var("RACEGATE_CACHE")? {
        return Ok(d);
    }
    let var = |k| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    // The XDG base directory spec: a relative value is invalid and ignored.
    if let Some(d) = var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
        return Ok(d.join("racegate"));
    }
    match var("HOME") {
        Some(h) if h.is_absolute() => Ok(h.join(".cache").join("racegate")),
        Some(h) => Err(format!(
            "no cache folder: HOME={} is a relative path; set HOME, or RACEGATE_CACHE, to an \
             absolute path of your own",
            h.display()
        )),
        None => Err(
            "no cache folder: HOME is not set; set RACEGATE_CACHE to a folder of your own".into(),
        ),
    }
}

/// Creates `dir` (mode 0700) if needed and makes sure it is a folder owned by `me` that nobody
/// else can write: a folder owned by another user is refused, one of ours with looser modes is
/// tightened. `owner_of` reads a folder's owner (tests pass another uid).
pub fn make_private(
    dir: &Path,
    me: u32,
    owner_of: impl Fn(&std::fs::Metadata) -> u32,
) -> std::result::Result<(), String> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("creating {}: {e}", dir.display())),
    }
    // Not followed: a link someone else planted is theirs, whatever it points to.
    let link = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for m in [&link, &meta] {
        let owner = owner_of(m);
        if owner != me {
            return Err(format!(
                "racegate's cache folder {} belongs to another user (uid {owner}, you are uid {me}); \
                 it is not used, since its owner could change what racegate builds and runs. \
                 Remove it or set RACEGATE_CACHE to a folder of your own",
                dir.display()
            ));
        }
    }
    if !meta.is_dir() {
        return Err(format!(
            "racegate's cache folder {} is not a folder",
            dir.display()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("making {} private (mode 0700): {e}", dir.display()))?;
    }
    Ok(())
}

/// Checks, before racegate loads or runs `path` from its cache (NVRTC that `racegate setup`
/// installed, nvcc, the globalcheck tool it built), that the file and every folder from the
/// cache folder down to it are owned by the current user or root and writable by nobody else,
/// and that none of them is a symbolic link. Otherwise it is refused with why (exit 3): whoever
/// else could write there could have replaced what racegate is about to run. A path outside
/// the cache is not this check's business.
pub fn check_trusted(path: &Path) -> Result<()> {
    let Ok(root) = place() else {
        return Ok(());
    };
    // As named, else as resolved: a path that reaches the cache through a link is checked too.
    let (root, path) = match path.starts_with(&root) {
        true => (root, path.to_path_buf()),
        false => match (std::fs::canonicalize(&root), std::fs::canonicalize(path)) {
            (Ok(r), Ok(p)) if p.starts_with(&r) => (r, p),
            _ => return Ok(()),
        },
    };
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    check_trusted_in(&root, &path, me, |m| m.uid()).map_err(Error::Cache)
}

/// [`check_trusted`] under the cache folder `root`, for the user `me`; `owner_of` reads an
/// owner (tests pass another uid).
pub fn check_trusted_in(
    root: &Path,
    path: &Path,
    me: u32,
    owner_of: impl Fn(&std::fs::Metadata) -> u32,
) -> std::result::Result<(), String> {
    let Ok(rel) = path.strip_prefix(root) else {
        return Ok(());
    };
    let refuse = |at: &Path, why: String| {
        format!(
            "refusing to load {} from racegate's cache: {} {why}, so someone else could have \
             replaced what racegate would run. Remove it (racegate builds or `racegate setup` \
             installs it again) or make it yours and private: chmod go-w {}",
            path.display(),
            at.display(),
            at.display()
        )
    };
    // The cache folder itself as `dir()` checked it (it may be a link of ours), then every
    // component below it as it is, links not followed.
    let mut at = root.to_path_buf();
    let mut meta = std::fs::metadata(&at).map_err(|e| format!("{}: {e}", at.display()))?;
    let mut below = rel.components();
    loop {
        let owner = owner_of(&meta);
        if meta.file_type().is_symlink() {
            return Err(refuse(&at, "is a symbolic link".into()));
        }
        if owner != me && owner != 0 {
            return Err(refuse(
                &at,
                format!("belongs to another user (uid {owner}, you are uid {me})"),
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(refuse(
                &at,
                format!(
                    "is writable by group or others (mode {:04o})",
                    meta.mode() & 0o7777
                ),
            ));
        }
        let Some(c) = below.next() else {
            return Ok(());
        };
        at.push(c);
        meta = std::fs::symlink_metadata(&at).map_err(|e| format!("{}: {e}", at.display()))?;
    }
}

/// Takes the write bits of group and others off `dir` and everything in it (links are left as
/// they are, not followed): for what racegate has just made in its cache, before
/// [`check_trusted`] is asked about it.
pub fn tighten(dir: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if meta.mode() & 0o022 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(meta.mode() & 0o7755))?;
    }
    if meta.is_dir() {
        for e in std::fs::read_dir(dir)? {
            tighten(&e?.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_folder_is_private() {
        let base = tempfile::tempdir().unwrap();
        let d = base.path().join("a/racegate");
        make_private(&d, 7, |_| 7).unwrap();
        let mode = std::fs::metadata(&d).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_folder_of_another_user_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let d = base.path().join("racegate");
        std::fs::create_dir(&d).unwrap();
        let e = make_private(&d, 1000, |_| 1001).unwrap_err();
        assert!(e.contains("belongs to another user (uid 1001"), "{e}");
        assert!(e.contains("RACEGATE_CACHE"), "{e}");
    }

    #[test]
    fn a_loose_folder_of_ours_is_tightened_and_a_file_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let d = base.path().join("racegate");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        make_private(&d, 5, |_| 5).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        let f = base.path().join("file");
        std::fs::write(&f, "").unwrap();
        assert!(make_private(&f, 5, |_| 5)
            .unwrap_err()
            .contains("not a folder"));
    }

    #[test]
    fn a_loose_or_foreign_file_in_the_cache_is_not_trusted_until_tightened() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("racegate");
        make_private(&root, 5, |_| 5).unwrap();
        let lib = root.join("nvrtc/lib/libnvrtc.so.13");
        std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
        std::fs::write(&lib, "").unwrap();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        mode(&lib, 0o666);
        let e = check_trusted_in(&root, &lib, 5, |_| 5).unwrap_err();
        assert!(
            e.contains("is writable by group or others (mode 0666)"),
            "{e}"
        );
        mode(&lib, 0o644);
        mode(&root.join("nvrtc"), 0o777);
        let e = check_trusted_in(&root, &lib, 5, |_| 5).unwrap_err();
        assert!(
            e.contains(&format!("{} is writable", root.join("nvrtc").display())),
            "{e}"
        );
        tighten(&root).unwrap();
        assert_eq!(
            std::fs::metadata(root.join("nvrtc")).unwrap().mode() & 0o777,
            0o755
        );
        check_trusted_in(&root, &lib, 5, |_| 5).unwrap();
        // Another user's file, root's, a file outside the cache.
        let e = check_trusted_in(&root, &lib, 5, |m| if m.is_file() { 6 } else { 5 });
        assert!(e.unwrap_err().contains("uid 6"));
        check_trusted_in(&root, &lib, 5, |m| if m.is_file() { 0 } else { 5 }).unwrap();
        check_trusted_in(&root, Path::new("/usr/lib/x.so"), 5, |_| 6).unwrap();
        // A link inside the cache, to a file of ours: refused all the same.
        let link = root.join("nvrtc/lib/libnvrtc-link.so");
        std::os::unix::fs::symlink(&lib, &link).unwrap();
        let e = check_trusted_in(&root, &link, 5, |_| 5).unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
    }

    #[test]
    fn a_link_planted_by_another_user_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let target = base.path().join("mine");
        std::fs::create_dir(&target).unwrap();
        let link = base.path().join("racegate");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // The link reads as another user's, the folder it points to as ours.
        let e =
            make_private(&link, 5, |m| if m.file_type().is_symlink() { 6 } else { 5 }).unwrap_err();
        assert!(e.contains("uid 6"), "{e}");
    }
}
