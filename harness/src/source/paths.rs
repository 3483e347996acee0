//! Where a project is and how reports name its files: the root (the folder holding `kernels/` or
//! `racegate.toml`), the folder report paths are relative to (the git top), and paths normalized
//! by reading alone. Below the compile stage, so the catalog and manifests can use it.

use std::path::{Path, PathBuf};

/// The project root: the nearest ancestor of `start` holding `kernels/` or `racegate.toml`.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join("kernels").is_dir() || d.join("racegate.toml").is_file())
        .map(Path::to_path_buf)
}

/// The folder every report's paths are relative to: the top of the git work tree that holds
/// `dir` (the nearest ancestor with `.git`), else `dir` itself. Canonical when it exists.
pub fn report_root(dir: &Path) -> PathBuf {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
        .unwrap_or(dir)
}

/// `path` with `.` and `..` resolved by reading alone (no file system), as reports show it.
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(c),
            },
            c => out.push(c),
        }
    }
    out.iter().collect()
}

/// `path` relative to `root`, both normalized; `None` when it is outside `root`.
pub fn relative_to(root: &Path, path: &Path) -> Option<String> {
    let (root, path) = (normalize(root), normalize(path));
    path.strip_prefix(&root)
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// The package folder (`harness/`) for unit tests: the runtime `CARGO_MANIFEST_DIR` (cargo
/// and nextest set it, a nextest archive run from another checkout to the new place), else the
/// current folder (`cargo test` runs unit tests in the package folder). Never the path the
/// binary was built at: that checkout may be gone, or another one.
#[cfg(test)]
pub(crate) fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        // ignored: no variable and no current folder (deleted under the test): an empty path,
        // under which the test's files are then not found and it fails saying which
        .unwrap_or_default()
}
