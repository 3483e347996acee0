//! The course racegate ships: the exercises of `grading/exercises/`, the default rubric and the
//! reference kernels they name, built into the binary, so that an installed racegate grades
//! them without a checkout. `racegate grade` reads an instructor's own course from `--root`;
//! without it, this one, written once into racegate's private cache folder
//! ([`crate::build::cache`]) and read from there like any course. Never from the current
//! folder or its parents: a grader runs in folders students control, and an exercise planted
//! there would change what is graded.

use std::path::PathBuf;

use crate::errors::{Error, Result};

/// Every file of the shipped course, by its path under a course root.
const FILES: &[(&str, &str)] = &[
    (
        "grading/rubric.toml",
        include_str!("../../../grading/rubric.toml"),
    ),
    (
        "grading/exercises/counter.toml",
        include_str!("../../../grading/exercises/counter.toml"),
    ),
    (
        "grading/exercises/handoff.toml",
        include_str!("../../../grading/exercises/handoff.toml"),
    ),
    (
        "grading/exercises/histogram.toml",
        include_str!("../../../grading/exercises/histogram.toml"),
    ),
    (
        "grading/exercises/matmul_tiled.toml",
        include_str!("../../../grading/exercises/matmul_tiled.toml"),
    ),
    (
        "grading/exercises/reduce.toml",
        include_str!("../../../grading/exercises/reduce.toml"),
    ),
    (
        "grading/exercises/transpose.toml",
        include_str!("../../../grading/exercises/transpose.toml"),
    ),
    (
        "kernels/atomic_counter.cu",
        include_str!("../../../kernels/atomic_counter.cu"),
    ),
    (
        "kernels/handoff.cu",
        include_str!("../../../kernels/handoff.cu"),
    ),
    (
        "kernels/histogram_shared.cu",
        include_str!("../../../kernels/histogram_shared.cu"),
    ),
    (
        "kernels/matmul_tiled.cu",
        include_str!("../../../kernels/matmul_tiled.cu"),
    ),
    (
        "kernels/reduce_shuffle.cu",
        include_str!("../../../kernels/reduce_shuffle.cu"),
    ),
    (
        "kernels/transpose.cu",
        include_str!("../../../kernels/transpose.cu"),
    ),
];

/// The shipped course's root: `course-<hash of its files>` in racegate's cache folder, written
/// there (privately, whole or not at all) the first time this build asks for it.
pub fn root() -> Result<PathBuf> {
    let mut all = String::new();
    for (path, text) in FILES {
        all.push_str(path);
        all.push('\0');
        all.push_str(text);
        all.push('\0');
    }
    let dir = crate::build::cache::dir()?.join(format!(
        "course-{:016x}",
        crate::build::compile::fingerprint(&all)
    ));
    for (path, text) in FILES {
        let p = dir.join(path);
        let same = std::fs::read_to_string(&p).is_ok_and(|t| t == *text);
        if same {
            continue;
        }
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("creating", parent, e))?;
        }
        crate::build::compile::write_atomically(&p, true, text.as_bytes())
            .map_err(|e| Error::io("writing", &p, e))?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every exercise in the checkout is shipped, with the reference kernel it names.
    #[test]
    fn the_shipped_course_is_the_checkouts() {
        let pkg = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo names the package");
        let checkout = std::path::Path::new(&pkg).join("..");
        let shipped: Vec<&str> = FILES.iter().map(|(p, _)| *p).collect();
        for e in std::fs::read_dir(checkout.join("grading/exercises")).expect("exercises") {
            let p = e.expect("entry").path();
            let rel = format!(
                "grading/exercises/{}",
                p.file_name().expect("name").to_string_lossy()
            );
            assert!(shipped.contains(&rel.as_str()), "{rel} is not shipped");
            let text = std::fs::read_to_string(&p).expect("read");
            let reference = text
                .lines()
                .find_map(|l| l.strip_prefix("reference = \""))
                .and_then(|r| r.split(':').next())
                .expect("a reference");
            assert!(
                shipped.contains(&reference),
                "{reference} ({rel}) is not shipped"
            );
        }
    }
}
