//! Source stage: discovers the kernels and buggy variants and parses their `//@` headers.
//!
//! Every `.cu` file under `kernels/` and `buggy_variants/` starts with a comment block. Lines of
//! that block that start with `//@ ` carry metadata, one `key: value` each:
//!
//! ```text
//! //@ exercise: matmul                      (required) the exercise family (see `exercises`)
//! //@ entry: matmul_tiled16 tile=16         (required, repeatable) a kernel entry point and its
//!                                           family parameters; each entry is one case
//! //@ breaks: kernels/matmul_tiled.cu       (variants only) the correct kernel this one breaks
//! //@ bug: missing barrier, RAW on shared   (variants only) the bug class
//! //@ expect: stress=flag racecheck=flag    (variants only) what each detector must do
//! //@ escapes: why nothing catches it        (variants only) required when no detector must flag
//! //@ perf: ENTRY bank-conflicts=none        (optional, repeatable) performance facts `racegate perf
//!                                           --check` checks with Nsight Compute ([`PerfExpect`])
//! ```
//!
//! A buggy variant also marks its wrong line with a comment containing `BUG`, exactly once.
//! Unknown keys, missing keys and inconsistencies are errors naming the file and line, and a
//! discovery that finds no kernel at all fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

// The case types live in their own files so that manifests and families need not import the
// catalog; they stay reachable here, where every stage has always found them.
use crate::errors::{Error, Result};
pub use crate::source::case::{Bug, Case, Detector, Expect, Origin, PerfExpect};
pub use crate::source::entry::Entry;
use crate::source::exercises;
use crate::source::files;
use crate::source::manifest::Manifest;

/// The exercise name of cases that come from a manifest.
pub const MANIFEST_EXERCISE: &str = "manifest";

/// The folders that hold correct kernels and their broken twins, relative to the root.
pub const KERNEL_DIR: &str = "kernels";
pub const VARIANT_DIR: &str = "buggy_variants";

/// Everything discovery found, with the root it was found under.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub root: PathBuf,
    pub cases: Vec<Case>,
    /// Set when the cases come from a `racegate.toml` instead of the course folders.
    pub manifest: Option<Arc<Manifest>>,
}

impl Catalog {
    /// Discovers every `.cu` under `root/kernels` and `root/buggy_variants`.
    pub fn discover(root: &Path) -> Result<Catalog> {
        let mut files = Vec::new();
        for dir in [KERNEL_DIR, VARIANT_DIR] {
            collect_cu(&root.join(dir), &mut files)?;
        }
        files.sort();
        let mut parsed = Vec::new();
        for file in &files {
            let text = files::read_text(file, "the kernel", files::TEXT_LIMIT)?;
            let rel = rel_path(root, file);
            parsed.push(parse_file(&rel, &text)?);
        }
        let cases = link(parsed)?;
        if cases.is_empty() {
            return Err(Error::NoKernels(root.join(KERNEL_DIR)));
        }
        Ok(Catalog {
            root: root.to_path_buf(),
            cases,
            manifest: None,
        })
    }

    /// The cases of a manifest: one per `[[kernel]]`, rooted at the manifest's folder.
    pub fn from_manifest(m: Manifest) -> Catalog {
        // Reports name every file relative to one root (the git work tree's top, else the
        // manifest's folder, widened if a source lies above it), so a finding's path is the same
        // in text, JSON, JUnit and SARIF whichever folder the manifest is in.
        let dir = std::fs::canonicalize(&m.dir).unwrap_or_else(|_| m.dir.clone());
        let mut root = crate::source::paths::report_root(&dir);
        for k in &m.kernels {
            let file = crate::source::paths::normalize(&dir.join(&k.source));
            while crate::source::paths::relative_to(&root, &file).is_none() {
                match root.parent() {
                    Some(p) => root = p.to_path_buf(),
                    None => break,
                }
            }
        }
        let rel = |f: &str| {
            crate::source::paths::relative_to(&root, &dir.join(f)).unwrap_or_else(|| f.to_string())
        };
        let cases = m
            .kernels
            .iter()
            .map(|k| Case {
                name: k.name.clone(),
                path: rel(&k.source),
                exercise: MANIFEST_EXERCISE.to_string(),
                entry: Entry {
                    name: k.entry.clone(),
                    params: BTreeMap::new(),
                },
                bug: None,
                expect: BTreeMap::new(),
                title: format!("{} in {}", k.launch_entries().join(", "), k.source),
                origin: Origin::Manifest(Arc::new(k.clone())),
            })
            .collect();
        Catalog {
            root,
            cases,
            manifest: Some(Arc::new(m)),
        }
    }

    /// A file a manifest names (relative to the manifest's folder), as a path relative to the
    /// root; unchanged for the built-in catalog.
    pub fn manifest_file(&self, rel: &str) -> String {
        match &self.manifest {
            Some(m) => {
                let dir = std::fs::canonicalize(&m.dir).unwrap_or_else(|_| m.dir.clone());
                crate::source::paths::relative_to(&self.root, &dir.join(rel))
                    .unwrap_or_else(|| rel.to_string())
            }
            None => rel.to_string(),
        }
    }

    /// The folder a manifest's baseline sits in (the manifest's own); the root otherwise.
    pub fn manifest_dir(&self) -> PathBuf {
        self.manifest
            .as_ref()
            .map_or_else(|| self.root.clone(), |m| m.dir.clone())
    }

    /// The global arguments that make a child racegate load this same catalog.
    pub fn child_args(&self) -> Vec<std::ffi::OsString> {
        match &self.manifest {
            Some(m) => vec!["--manifest".into(), m.path.clone().into()],
            None => vec!["--root".into(), self.root.clone().into()],
        }
    }

    /// Finds a case by exact name; an unknown name gets the closest names as suggestions.
    pub fn get(&self, name: &str) -> Result<&Case> {
        self.cases.iter().find(|c| c.name == name).ok_or_else(|| {
            let close =
                crate::source::names::suggest(name, self.cases.iter().map(|c| c.name.as_str()));
            Error::UnknownCase {
                name: name.to_string(),
                hint: if close.is_empty() {
                    String::new()
                } else {
                    format!("; did you mean: {}", close.join(", "))
                },
            }
        })
    }

    /// The cases selected by names or globs (`reduce*`; all when empty), in catalog order,
    /// each once; an unknown name, or a glob that matches nothing, is an error.
    pub fn select(&self, names: &[String]) -> Result<Vec<&Case>> {
        if names.is_empty() {
            return Ok(self.cases.iter().collect());
        }
        let mut chosen = std::collections::BTreeSet::new();
        for n in names {
            if crate::source::names::is_glob(n) {
                let hits: Vec<usize> = (0..self.cases.len())
                    .filter(|&i| crate::source::names::glob_match(n, &self.cases[i].name))
                    .collect();
                if hits.is_empty() {
                    return Err(Error::UnknownCase {
                        name: n.clone(),
                        hint: " (the pattern matches no case)".into(),
                    });
                }
                chosen.extend(hits);
            } else {
                let c = self.get(n)?;
                chosen.extend(self.cases.iter().position(|x| std::ptr::eq(x, c)));
            }
        }
        Ok(chosen.into_iter().map(|i| &self.cases[i]).collect())
    }

    /// The distinct source files, in catalog order.
    pub fn files(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in &self.cases {
            if !out.contains(&c.path.as_str()) {
                out.push(&c.path);
            }
        }
        out
    }
}

fn collect_cu(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io("listing", dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::io("listing", dir, e))?.path();
        if path.is_dir() {
            collect_cu(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "cu") {
            out.push(path);
        }
    }
    Ok(())
}

fn rel_path(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The header of one file, before cross-file checks.
#[derive(Debug)]
pub struct ParsedFile {
    pub path: String,
    pub title: String,
    pub exercise: (String, usize),
    pub entries: Vec<(Entry, usize)>,
    pub breaks: Option<(String, usize)>,
    pub bug: Option<(String, usize)>,
    pub expect: Option<(BTreeMap<Detector, Expect>, usize)>,
    pub escapes: Option<(String, usize)>,
    pub bug_marker: Option<usize>,
}

const KEYS: [&str; 7] = [
    "exercise", "entry", "breaks", "bug", "expect", "escapes", "perf",
];

/// Parses the header of one file. `path` is used in messages and decides whether the file is a
/// variant (it lives under `buggy_variants/`).
pub fn parse_file(path: &str, text: &str) -> Result<ParsedFile> {
    let err = |line: usize, message: String| Error::Header {
        path: path.to_string(),
        line,
        message,
    };
    let mut title = String::new();
    let mut exercise = None;
    let mut entries = Vec::new();
    let mut breaks = None;
    let mut bug = None;
    let mut expect = None;
    let mut escapes = None;
    let mut markers = Vec::new();
    let mut perf: Vec<PerfExpect> = Vec::new();
    let mut in_header = true;

    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let line = raw.trim_end();
        if in_header && !line.starts_with("//") {
            in_header = false;
        }
        // The marker is a comment on the wrong line (or where a removed line was), below the header.
        if !in_header && line.contains("BUG") {
            markers.push(line_no);
        }
        let Some(meta) = line.strip_prefix("//@") else {
            if in_header && title.is_empty() {
                if let Some(t) = line.strip_prefix("//") {
                    let t = t.trim();
                    title = t
                        .strip_prefix("racegate buggy variant:")
                        .unwrap_or(t)
                        .to_string();
                    title = title
                        .strip_prefix("racegate:")
                        .unwrap_or(&title)
                        .trim()
                        .to_string();
                }
            }
            continue;
        };
        if !in_header {
            return Err(err(
                line_no,
                "`//@` metadata must be in the leading comment block".into(),
            ));
        }
        let meta = meta.trim();
        let Some((key, value)) = meta.split_once(':') else {
            return Err(err(
                line_no,
                format!("expected `//@ key: value`, found `{line}`"),
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        if value.is_empty() {
            return Err(err(line_no, format!("`{key}` has no value")));
        }
        let once = |slot: &Option<(String, usize)>| -> Result<()> {
            match slot {
                Some((_, first)) => Err(err(
                    line_no,
                    format!("`{key}` given twice (first on line {first})"),
                )),
                None => Ok(()),
            }
        };
        match key {
            "exercise" => {
                once(&exercise)?;
                exercise = Some((value.to_string(), line_no));
            }
            "entry" => entries.push((parse_entry(value).map_err(|m| err(line_no, m))?, line_no)),
            "breaks" => {
                once(&breaks)?;
                breaks = Some((value.to_string(), line_no));
            }
            "bug" => {
                once(&bug)?;
                bug = Some((value.to_string(), line_no));
            }
            "escapes" => {
                once(&escapes)?;
                escapes = Some((value.to_string(), line_no));
            }
            "expect" => {
                if let Some((_, first)) = &expect {
                    return Err(err(
                        line_no,
                        format!("`expect` given twice (first on line {first})"),
                    ));
                }
                expect = Some((parse_expect(value).map_err(|m| err(line_no, m))?, line_no));
            }
            "perf" => perf.push(
                crate::source::case::parse_perf(value, line_no).map_err(|m| err(line_no, m))?,
            ),
            other => {
                return Err(err(
                    line_no,
                    format!("unknown key `{other}`; known keys: {}", KEYS.join(", ")),
                ))
            }
        }
    }

    let Some(exercise) = exercise else {
        return Err(err(1, "missing required key `//@ exercise:`".into()));
    };
    if entries.is_empty() {
        return Err(err(1, "missing required key `//@ entry:`".into()));
    }
    // Checked here, read where they are judged (`source::case::perf_lines`).
    for p in &perf {
        if let Some(e) = p.entry.as_deref() {
            if !entries.iter().any(|(x, _)| x.name == e) {
                return Err(err(
                    p.line,
                    format!("`perf` names `{e}`, which no `entry` declares"),
                ));
            }
        }
    }
    let is_variant = path.starts_with(&format!("{VARIANT_DIR}/"));
    let bug_marker = if is_variant {
        for (key, present) in [
            ("breaks", breaks.is_some()),
            ("bug", bug.is_some()),
            ("expect", expect.is_some()),
        ] {
            if !present {
                return Err(err(
                    1,
                    format!("missing required key `//@ {key}:` (required in buggy variants)"),
                ));
            }
        }
        let (map, expect_line) = expect.as_ref().expect("checked above");
        if !map.values().any(|e| *e == Expect::Flag) && escapes.is_none() {
            return Err(err(
                *expect_line,
                "no detector must flag this variant: name one, or say why nothing catches it with `//@ escapes:`".into(),
            ));
        }
        if entries.len() != 1 {
            return Err(err(
                entries[1].1,
                "a buggy variant declares exactly one `entry`".into(),
            ));
        }
        match markers.as_slice() {
            [one] => Some(*one),
            [] => {
                return Err(err(
                    1,
                    "no `BUG` marker: mark the wrong line with a comment containing BUG".into(),
                ))
            }
            [_, second, ..] => {
                return Err(err(*second, "more than one `BUG` marker".into()));
            }
        }
    } else {
        for (key, slot) in [("breaks", &breaks), ("bug", &bug), ("escapes", &escapes)] {
            if let Some((_, line)) = slot {
                return Err(err(
                    *line,
                    format!("`{key}` is only for files under {VARIANT_DIR}/"),
                ));
            }
        }
        if let Some((_, line)) = &expect {
            return Err(err(
                *line,
                format!("`expect` is only for files under {VARIANT_DIR}/: correct kernels must be clean under every detector"),
            ));
        }
        if let Some(line) = markers.first() {
            return Err(err(
                *line,
                "a correct kernel must not contain a `BUG` marker".into(),
            ));
        }
        None
    };
    Ok(ParsedFile {
        path: path.to_string(),
        title,
        exercise,
        entries,
        breaks,
        bug,
        expect,
        escapes,
        bug_marker,
    })
}

fn parse_entry(value: &str) -> std::result::Result<Entry, String> {
    let mut words = value.split_whitespace();
    let name = words.next().ok_or("`entry` needs a kernel name")?;
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("`{name}` is not a C identifier"));
    }
    let mut params = BTreeMap::new();
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| format!("entry parameter `{w}` is not `key=value`"))?;
        let v: i64 = v
            .parse()
            .map_err(|_| format!("entry parameter `{k}` must be an integer, found `{v}`"))?;
        if params.insert(k.to_string(), v).is_some() {
            return Err(format!("entry parameter `{k}` given twice"));
        }
    }
    Ok(Entry {
        name: name.to_string(),
        params,
    })
}

fn parse_expect(value: &str) -> std::result::Result<BTreeMap<Detector, Expect>, String> {
    let mut out = BTreeMap::new();
    for w in value.split_whitespace() {
        let (d, e) = w
            .split_once('=')
            .ok_or_else(|| format!("`{w}` is not `detector=flag|clean|may`"))?;
        let det = Detector::from_name(d).ok_or_else(|| {
            let names: Vec<_> = Detector::ALL.iter().map(|d| d.name()).collect();
            format!("unknown detector `{d}`; known: {}", names.join(", "))
        })?;
        let exp = Expect::from_name(e)
            .ok_or_else(|| format!("`{d}={e}`: expected flag, clean or may"))?;
        if out.insert(det, exp).is_some() {
            return Err(format!("detector `{d}` given twice"));
        }
    }
    Ok(out)
}

/// Cross-file checks: families exist, parameters fit, variants name a real kernel and entry.
fn link(files: Vec<ParsedFile>) -> Result<Vec<Case>> {
    let mut cases: Vec<Case> = Vec::new();
    let header_err = |path: &str, line: usize, message: String| Error::Header {
        path: path.to_string(),
        line,
        message,
    };
    for f in &files {
        let (ex_name, ex_line) = &f.exercise;
        let Some(ex) = exercises::by_name(ex_name) else {
            return Err(header_err(
                &f.path,
                *ex_line,
                format!(
                    "unknown exercise `{ex_name}`; known: {}",
                    exercises::names().join(", ")
                ),
            ));
        };
        for (entry, line) in &f.entries {
            ex.check_params(&entry.params)
                .map_err(|m| header_err(&f.path, *line, m))?;
        }
    }
    let family =
        |f: &ParsedFile| Origin::Family(exercises::by_name(&f.exercise.0).expect("checked above"));
    for f in files.iter().filter(|f| f.bug_marker.is_none()) {
        for (entry, line) in &f.entries {
            if let Some(other) = cases.iter().find(|c| c.name == entry.name) {
                return Err(header_err(
                    &f.path,
                    *line,
                    format!(
                        "entry `{}` is already declared by {}",
                        entry.name, other.path
                    ),
                ));
            }
            cases.push(Case {
                name: entry.name.clone(),
                path: f.path.clone(),
                exercise: f.exercise.0.clone(),
                entry: entry.clone(),
                bug: None,
                expect: BTreeMap::new(),
                title: f.title.clone(),
                origin: family(f),
            });
        }
    }
    for f in files.iter().filter(|f| f.bug_marker.is_some()) {
        let (breaks, breaks_line) = f.breaks.clone().expect("checked by parse_file");
        let (entry, entry_line) = &f.entries[0];
        let Some(twin) = cases
            .iter()
            .find(|c| c.path == breaks && !c.is_variant() && c.entry.name == entry.name)
        else {
            return Err(header_err(
                &f.path,
                *entry_line,
                format!("`{breaks}` declares no entry `{}` to break", entry.name),
            ));
        };
        let stem = Path::new(&breaks)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !f.path.starts_with(&format!("{VARIANT_DIR}/{stem}/")) {
            return Err(header_err(
                &f.path,
                breaks_line,
                format!("a variant of {breaks} belongs under {VARIANT_DIR}/{stem}/"),
            ));
        }
        if twin.exercise != f.exercise.0 || twin.entry.params != entry.params {
            return Err(header_err(
                &f.path,
                *entry_line,
                format!("exercise and entry parameters must match {breaks}"),
            ));
        }
        let variant = Path::new(&f.path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        cases.push(Case {
            name: format!("{}::{variant}", entry.name),
            path: f.path.clone(),
            exercise: f.exercise.0.clone(),
            entry: entry.clone(),
            bug: Some(Bug {
                breaks,
                class: f.bug.clone().expect("checked").0,
                escapes: f.escapes.clone().map(|e| e.0),
                wrong_line: f.bug_marker.expect("variant"),
            }),
            expect: f.expect.clone().expect("checked").0,
            title: f.title.clone(),
            origin: family(f),
        });
    }
    Ok(cases)
}
