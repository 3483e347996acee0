//! Where racegate may look for what it loads and runs: a variable that names a place is taken only
//! as an absolute path, and a search path (`PATH`, `LD_LIBRARY_PATH`) only through its absolute
//! entries.
//!
//! A relative value is resolved against the current folder, and the current folder belongs to
//! whoever racegate works for: a student's repository when grading. `CUDA_HOME=cuda`, an empty
//! `PATH` entry or `LD_LIBRARY_PATH=:/usr/lib` (a leading, trailing or doubled `:` is an empty
//! entry, which the dynamic loader reads as the current folder) would each make racegate load or
//! run a file that folder supplies. So a relative value of [`PATH_VARS`] is refused with an error
//! that names the variable (exit 3, before anything is loaded), and so is an `LD_LIBRARY_PATH` with
//! an empty or relative entry: that one cannot be stripped, since the dynamic loader reads it once,
//! when the process starts, for every library loaded later (NVRTC's own `librt.so.1` and
//! `libstdc++.so.6` included).
//!
//! ```no_run
//! # use racegate::build::locations;
//! locations::check_path_vars()?; // CUDA_HOME=cuda: "CUDA_HOME=cuda is a relative path ..."
//! let gxx = locations::tool_on_path("g++")?; // absolute PATH entries, trusted files only
//! # Ok::<(), String>(())
//! ```

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The variables that name a place racegate loads or runs something from, or keeps its cache in.
pub const PATH_VARS: [&str; 5] = [
    "RACEGATE_NVRTC_LIB",
    "CUDA_HOME",
    "CUDA_PATH",
    "RACEGATE_CACHE",
    "RACEGATE_COMPUTE_SANITIZER",
];

/// `var` as a path: `None` when it is unset or empty, an error naming it when it is relative.
pub fn path_var(var: &str) -> Result<Option<PathBuf>, String> {
    let Some(value) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let path = PathBuf::from(&value);
    if path.is_absolute() {
        return Ok(Some(path));
    }
    Err(format!(
        "{var}={} is a relative path: racegate looks for nothing relative to the current folder \
         (it may be a student's). Give an absolute path, such as {var}=$PWD/{}",
        path.display(),
        path.display()
    ))
}

/// [`path_var`] where an error cannot be returned: a relative value is left out, never resolved
/// (the commands that do work refuse it first, through [`check_path_vars`]).
pub fn absolute_var(var: &str) -> Option<PathBuf> {
    path_var(var).ok().flatten()
}

/// The first relative value among [`PATH_VARS`], as an error that names it.
pub fn check_path_vars() -> Result<(), String> {
    PATH_VARS.iter().try_for_each(|v| path_var(v).map(|_| ()))
}

/// Refuses an `LD_LIBRARY_PATH` that makes the dynamic loader search the current folder or a
/// folder relative to it: its empty and relative entries named, and the value to use instead.
pub fn check_loader_path() -> Result<(), String> {
    match std::env::var_os("LD_LIBRARY_PATH") {
        Some(v) => loader_path_problem(&v).map_or(Ok(()), Err),
        None => Ok(()),
    }
}

/// What is wrong with the `LD_LIBRARY_PATH` value `value`, if anything. The dynamic loader (glibc)
/// splits it at `:` and `;`, and ignores it when it is empty.
pub fn loader_path_problem(value: &OsStr) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    let entries: Vec<&[u8]> = value
        .as_bytes()
        .split(|b| *b == b':' || *b == b';')
        .collect();
    let bad: Vec<String> = entries
        .iter()
        .filter(|e| !e.starts_with(b"/"))
        .map(|e| match e.is_empty() {
            true => "an empty entry".to_string(),
            false => format!("`{}`", String::from_utf8_lossy(e)),
        })
        .collect();
    if bad.is_empty() {
        return None;
    }
    let kept: Vec<String> = entries
        .iter()
        .filter(|e| e.starts_with(b"/"))
        .map(|e| String::from_utf8_lossy(e).into_owned())
        .collect();
    let instead = match kept.is_empty() {
        true => "unset it".to_string(),
        false => format!("use LD_LIBRARY_PATH={}", kept.join(":")),
    };
    Some(format!(
        "refusing to load any library: LD_LIBRARY_PATH={} has {}, which the dynamic loader reads \
         as the current folder or a folder relative to it, so a library placed there (a \
         libnvrtc.so, or a librt.so.1 that NVRTC needs) would run inside racegate. A leading, \
         trailing or doubled `:` is an empty entry; {instead}",
        String::from_utf8_lossy(value.as_bytes()),
        bad.join(", ")
    ))
}

/// The absolute entries of `PATH`, in order; empty and relative ones (the current folder) left
/// out.
pub fn absolute_path_entries() -> Vec<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .filter(|d| d.is_absolute())
                .collect()
        })
        .unwrap_or_default()
}

/// A `PATH` for a child racegate runs (a compiler that finds its helpers through it): `first`,
/// then the absolute entries of racegate's own `PATH`.
pub fn child_path(first: &[&Path]) -> OsString {
    let dirs: Vec<PathBuf> = first
        .iter()
        .map(|d| d.to_path_buf())
        .chain(absolute_path_entries())
        .collect();
    // ignored: an entry holding `:` cannot be joined; such a PATH keeps `first` only
    std::env::join_paths(&dirs).unwrap_or_else(|_| std::env::join_paths(first).unwrap_or_default())
}

/// The tool `name` on `PATH`: the first file of that name in an absolute entry that is trusted
/// along its whole path ([`super::trust`]). One that is not is passed over, and the error (when
/// no trusted one is found) says why each was.
pub fn tool_on_path(name: &str) -> Result<PathBuf, String> {
    let mut passed_over = Vec::new();
    for dir in absolute_path_entries() {
        let p = dir.join(name);
        if !p.is_file() {
            continue;
        }
        match super::trust::trusted(&p) {
            // The file as found (a link such as /usr/bin/g++ -> g++-12 keeps its name, which
            // the tool may read), now known to lead somewhere trusted.
            Ok(_) => return Ok(p),
            Err(why) => passed_over.push(format!("{} passed over: {why}", p.display())),
        }
    }
    Err(match passed_over.is_empty() {
        true => format!("{name} is not on PATH (its absolute entries)"),
        false => format!("no trusted {name} on PATH: {}", passed_over.join("; ")),
    })
}

/// `value` as a tool to run: a bare name (`g++`) looked up by [`tool_on_path`], an absolute path
/// checked by [`super::trust`], a relative path refused. `var` names where it came from.
pub fn tool_named(var: &str, value: &OsStr) -> Result<PathBuf, String> {
    let p = PathBuf::from(value);
    if p.is_absolute() {
        super::trust::trusted(&p)
            .map(|_| p.clone())
            .map_err(|why| format!("{var}={}: {why}", p.display()))
    } else if p.components().count() == 1 && !value.as_bytes().contains(&b'/') {
        tool_on_path(&p.to_string_lossy()).map_err(|why| format!("{var}={}: {why}", p.display()))
    } else {
        Err(format!(
            "{var}={} is a relative path: racegate runs nothing relative to the current folder. \
             Give a name on PATH or an absolute path",
            p.display()
        ))
    }
}

/// The folders the dynamic loader would search for a library by name, as absolute paths: the
/// absolute entries of `LD_LIBRARY_PATH`, the folders `/etc/ld.so.conf` lists (with its
/// `include`s), then the system's own (`/lib64`, `/usr/lib64`, the multiarch folders, `/lib`,
/// `/usr/lib`). racegate looks for NVRTC in them by path, never by name.
pub fn system_library_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| {
            v.as_bytes()
                .split(|b| *b == b':' || *b == b';')
                .filter(|e| e.starts_with(b"/"))
                .map(|e| PathBuf::from(OsStr::from_bytes(e)))
                .collect()
        })
        .unwrap_or_default();
    ld_so_conf(Path::new("/etc/ld.so.conf"), 0, &mut dirs);
    let multiarch = format!("{}-linux-gnu", std::env::consts::ARCH);
    for d in ["/lib64", "/usr/lib64"] {
        dirs.push(PathBuf::from(d));
    }
    for d in ["/lib", "/usr/lib"] {
        dirs.push(Path::new(d).join(&multiarch));
    }
    for d in ["/lib", "/usr/lib"] {
        dirs.push(PathBuf::from(d));
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// Adds the absolute folders `conf` (an `ld.so.conf`) lists to `out`, following its `include`
/// lines (a `*` in a file name matches as in a shell); `depth` stops a loop of includes.
fn ld_so_conf(conf: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(text) = std::fs::read_to_string(conf) else {
        return;
    };
    if depth > 8 {
        return;
    }
    let here = conf.parent().unwrap_or(Path::new("/"));
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if let Some(patterns) = line.strip_prefix("include") {
            for pattern in patterns.split_whitespace() {
                for file in glob_files(&here.join(pattern)) {
                    ld_so_conf(&file, depth + 1, out);
                }
            }
            continue;
        }
        if line.starts_with("hwcap") {
            continue;
        }
        out.extend(
            line.split(|c: char| c.is_whitespace() || c == ':' || c == ',')
                .filter(|d| d.starts_with('/'))
                .map(PathBuf::from),
        );
    }
}

/// The files `pattern` names, sorted: its last component may hold `*`, nothing before it may.
fn glob_files(pattern: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
        return Vec::new();
    };
    let name = name.to_string_lossy();
    if !name.contains('*') {
        return vec![pattern.to_path_buf()];
    }
    let parts: Vec<&str> = name.split('*').collect();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .map(|f| matches_glob(&f.to_string_lossy(), &parts))
                .unwrap_or(false)
        })
        .collect();
    files.sort();
    files
}

/// Whether `name` matches the pieces of a pattern split at `*`.
fn matches_glob(name: &str, parts: &[&str]) -> bool {
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
        return false;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    parts.len() > 1 && rest.ends_with(last) || parts.len() == 1 && rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_the_current_folder_in_ld_library_path_is_named() {
        for (value, names) in [
            (":/usr/lib", "an empty entry"),
            ("/usr/lib:", "an empty entry"),
            ("/usr/lib::/lib", "an empty entry"),
            ("/usr/lib;", "an empty entry"),
            (".", "`.`"),
            ("lib:/usr/lib", "`lib`"),
        ] {
            let why = loader_path_problem(OsStr::new(value)).expect(value);
            assert!(
                why.contains(names) && why.contains("LD_LIBRARY_PATH"),
                "{why}"
            );
        }
        let why = loader_path_problem(OsStr::new(":/usr/lib::/lib")).expect("empty entries");
        assert!(why.ends_with("use LD_LIBRARY_PATH=/usr/lib:/lib"), "{why}");
        assert_eq!(loader_path_problem(OsStr::new("/usr/lib:/opt/x/lib")), None);
        // Set but empty, the loader ignores it.
        assert_eq!(loader_path_problem(OsStr::new("")), None);
    }

    #[test]
    fn ld_so_conf_includes_are_followed_and_relative_folders_left_out() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = tmp.path().join("ld.so.conf.d");
        std::fs::create_dir(&d).expect("mkdir");
        std::fs::write(d.join("a.conf"), "/opt/a # a comment\nrelative\n").expect("write");
        std::fs::write(d.join("b.conf"), "/opt/b:/opt/c\n").expect("write");
        std::fs::write(d.join("b.conf.bak"), "/opt/never\n").expect("write");
        let conf = tmp.path().join("ld.so.conf");
        std::fs::write(&conf, "include ld.so.conf.d/*.conf\nhwcap 0 x\n/opt/z\n").expect("write");
        let mut out = Vec::new();
        ld_so_conf(&conf, 0, &mut out);
        let want: Vec<PathBuf> = ["/opt/a", "/opt/b", "/opt/c", "/opt/z"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(out, want);
    }
}
