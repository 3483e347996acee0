//! Headers a course allows in submissions (an exercise's `headers = ["cuda_fp16.h"]`), served
//! to NVRTC from memory: racegate reads each allowed header, and every header it includes by a
//! literal name, from the CUDA toolkit's include folders ([`crate::build::toolchain::cuda_include_dirs`])
//! and hands the texts to the compile with the names they are included by. The submission's
//! own `#include`s may name only the allowed headers (`compile_child::forbidden_access`); NVRTC
//! gets no include path.
//!
//! ```no_run
//! let dirs = racegate::build::toolchain::cuda_include_dirs();
//! let served = racegate::build::headers::serve(&["cuda_fp16.h".to_string()], &dirs)?;
//! assert!(served.iter().any(|(name, _)| name == "cuda_fp16.h"));
//! # Ok::<(), racegate::Error>(())
//! ```

use std::collections::{BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::errors::{Error, Result};
use crate::source::cscan;
use crate::source::files;

/// The most headers, and bytes of them, one compile is served.
const MAX_HEADERS: usize = 2000;
const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// `(include name, text)` of each header in `names` and of every header they include by a
/// literal name that one of `dirs` (or the including header's own folder) holds. A header
/// included but found nowhere is left to NVRTC (its built-ins); an allowed one found nowhere
/// is an error.
pub fn serve(names: &[String], dirs: &[PathBuf]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut total = 0u64;
    let mut queue: VecDeque<(String, Option<PathBuf>)> =
        names.iter().map(|n| (n.clone(), None)).collect();
    while let Some((name, from)) = queue.pop_front() {
        if !seen.insert(name.clone()) || out.len() >= MAX_HEADERS {
            continue;
        }
        let found = from
            .iter()
            .chain(dirs)
            .map(|d| d.join(&name))
            .find(|p| p.is_file());
        let Some(file) = found else {
            if from.is_none() {
                return Err(Error::Usage(format!(
                    "the exercise allows the header `{name}`, but none of the CUDA include \
                     folders holds it (looked in {}); install the toolkit headers with `racegate setup`",
                    show(dirs)
                )));
            }
            continue;
        };
        let len = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        total += len;
        if total > MAX_BYTES {
            return Err(Error::Usage(format!(
                "the headers `{}` allows come to more than {MAX_BYTES} bytes",
                names.join(", ")
            )));
        }
        let text = files::read_text(&file, "the header", MAX_BYTES)?;
        let dir = file.parent().map(Path::to_path_buf);
        for inc in cscan::literal_includes(&text) {
            queue.push_back((inc, dir.clone()));
        }
        out.push((name, text));
    }
    Ok(out)
}

fn show(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "none found".into();
    }
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_and_what_it_includes_are_served_by_name() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(
            d.path().join("a.h"),
            "#include \"sub/b.h\"\n#include <nowhere.h>\n",
        )
        .unwrap();
        std::fs::write(d.path().join("sub/b.h"), "#include \"c.h\"\n").unwrap();
        std::fs::write(d.path().join("sub/c.h"), "int c;\n").unwrap();
        let served = serve(&["a.h".into()], &[d.path().to_path_buf()]).unwrap();
        let names: Vec<&str> = served.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a.h", "sub/b.h", "c.h"]);
        let e = serve(&["missing.h".into()], &[d.path().to_path_buf()]).unwrap_err();
        assert!(
            e.to_string().contains("allows the header `missing.h`"),
            "{e}"
        );
    }
}
