//! Reads `racegate.toml` into [`Manifest`]: the kernel-level keys, the launches (kernel-level
//! or `[[kernel.launch]]` tables), the oracle and its own launch, then hands each argument to
//! `args.rs` and the finished kernel to `validate.rs`. Every error is `Error::Toml`, naming the
//! manifest, the line and the key.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::args::{self, RawArg};
use super::sizes::{SizeSpec, Sizes};
use super::spec::{
    split_reference, ArgSpec, BufKind, Check, KernelLines, KernelSpec, LaunchSpec, Manifest,
};
use super::validate::{self, LaunchSites, Site, Sites};
use crate::errors::{Error, Result};
use crate::source::files;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    #[serde(default)]
    kernel: Vec<Spanned<RawKernel>>,
    #[serde(default)]
    program: Vec<Spanned<super::program::RawProgram>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernel {
    name: Spanned<String>,
    source: Spanned<String>,
    entry: Option<Spanned<String>>,
    #[serde(default)]
    options: Vec<String>,
    include: Option<Spanned<Vec<String>>>,
    sizes: Spanned<Sizes>,
    sanitize_sizes: Option<Spanned<BTreeMap<String, u32>>>,
    grid: Option<Spanned<Vec<String>>>,
    block: Option<Spanned<Vec<String>>>,
    shared: Option<Spanned<String>>,
    oracle: Spanned<RawCheck>,
    tolerance: Option<Spanned<f32>>,
    args: Vec<Spanned<RawArg>>,
    #[serde(default)]
    launch: Vec<Spanned<RawLaunch>>,
}

/// `"determinism"`, `"none"`, or a table read by [`RawReference`].
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawCheck {
    Named(String),
    Table(toml::Table),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    reference: String,
    grid: Option<Vec<String>>,
    block: Option<Vec<String>>,
    shared: Option<String>,
    args: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLaunch {
    entry: Spanned<String>,
    grid: Spanned<Vec<String>>,
    block: Spanned<Vec<String>>,
    shared: Option<Spanned<String>>,
    args: Spanned<Vec<String>>,
    /// Read as any value so that a wrong one gets racegate's message, not serde's.
    stream: Option<Spanned<toml::Value>>,
}

fn line_of(text: &str, span: Range<usize>) -> usize {
    text[..span.start.min(text.len())].matches('\n').count() + 1
}

/// Builds the errors of one manifest.
struct Errors {
    shown: String,
    /// Where each line but the first starts: a line number is a binary search here, not a
    /// count of the newlines before it (quadratic: `list` of 20,000 kernels took 6 minutes).
    starts: Vec<usize>,
}

impl Errors {
    fn new(path: &Path, text: &str) -> Errors {
        let starts = text.match_indices('\n').map(|(i, _)| i + 1).collect();
        Errors {
            shown: path.display().to_string(),
            starts,
        }
    }

    /// The 1-based line on which `span` starts.
    fn line(&self, span: Range<usize>) -> usize {
        self.starts.partition_point(|&s| s <= span.start) + 1
    }

    fn at(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> Error {
        Error::Toml {
            path: self.shown.clone(),
            line: self.line(span),
            message: format!("`{key}`: {}", message.into()),
        }
    }
}

impl Manifest {
    /// Reads and checks a manifest.
    pub fn load(path: &Path) -> Result<Manifest> {
        let text = files::read_text(path, "the manifest", files::TEXT_LIMIT)?;
        Manifest::parse(path, &text)
    }

    /// Parses manifest text; `path` is used in messages and to resolve relative files.
    pub fn parse(path: &Path, text: &str) -> Result<Manifest> {
        let errors = Errors::new(path, text);
        let raw: RawManifest = toml::from_str(text).map_err(|e| Error::Toml {
            path: errors.shown.clone(),
            line: e.span().map(|s| line_of(text, s)).unwrap_or(1),
            message: e.message().to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut kernels: Vec<KernelSpec> = Vec::new();
        let mut names = std::collections::HashSet::new();
        for k in raw.kernel {
            let span = k.span();
            let k = k.into_inner();
            if !names.insert(k.name.get_ref().clone()) {
                return Err(errors.at(
                    k.name.span(),
                    "name",
                    format!("kernel `{}` is declared twice", k.name.get_ref()),
                ));
            }
            kernels.push(kernel(&errors, &dir, span, k)?);
        }
        let programs = super::program::programs(&errors.shown, text, &dir, raw.program)?;
        if kernels.is_empty() && programs.is_empty() {
            return Err(Error::Toml {
                path: errors.shown,
                line: 1,
                message: "no [[kernel]] or [[program]] in the manifest".into(),
            });
        }
        Ok(Manifest {
            path: path.to_path_buf(),
            dir,
            kernels,
            programs,
        })
    }
}

fn dims(errors: &Errors, d: &Spanned<Vec<String>>, key: &str) -> Result<Vec<String>> {
    if d.get_ref().is_empty() || d.get_ref().len() > 3 {
        return Err(errors.at(d.span(), key, "give 1 to 3 expressions (x, y, z)"));
    }
    Ok(d.get_ref().clone())
}

fn kernel(errors: &Errors, dir: &Path, kspan: Range<usize>, k: RawKernel) -> Result<KernelSpec> {
    let name = k.name.get_ref().clone();
    if let Some(why) = crate::source::files::not_a_source(&dir.join(k.source.get_ref())) {
        return Err(errors.at(
            k.source.span(),
            "source",
            format!("{} {why}", dir.join(k.source.get_ref()).display()),
        ));
    }
    let mut include: Vec<PathBuf> = Vec::new();
    for folder in k.include.iter().flat_map(|i| i.get_ref()) {
        let p = dir.join(folder);
        if !p.is_dir() {
            let span = k.include.as_ref().map(|i| i.span()).unwrap_or_default();
            return Err(errors.at(span, "include", format!("{} is not a folder", p.display())));
        }
        // Absolute: NVRTC resolves -I against the process's folder, not the manifest's.
        include.push(std::fs::canonicalize(&p).unwrap_or(p));
    }

    let mut sizes = BTreeMap::new();
    for (s, spec) in &k.sizes.get_ref().0 {
        let (lo, hi) = match spec {
            SizeSpec::Fixed(n) => (*n, *n),
            SizeSpec::Range([lo, hi]) => (*lo, *hi),
        };
        if lo == 0 || lo > hi {
            return Err(errors.at(
                k.sizes.span(),
                "sizes",
                format!("`{s}`: need 1 <= lo <= hi, got [{lo}, {hi}]"),
            ));
        }
        sizes.insert(s.clone(), (lo, hi));
    }
    if sizes.is_empty() {
        return Err(errors.at(k.sizes.span(), "sizes", "name at least one size"));
    }
    let mut sanitize_sizes: BTreeMap<String, u32> =
        sizes.iter().map(|(n, (lo, _))| (n.clone(), *lo)).collect();
    if let Some(s) = &k.sanitize_sizes {
        for (key, v) in s.get_ref() {
            let Some((lo, hi)) = sizes.get(key) else {
                return Err(errors.at(
                    s.span(),
                    "sanitize_sizes",
                    format!("`{key}` is not one of `sizes`"),
                ));
            };
            if !(lo..=hi).contains(&v) {
                return Err(errors.at(
                    s.span(),
                    "sanitize_sizes",
                    format!("`{key} = {v}` is outside its range [{lo}, {hi}]"),
                ));
            }
            sanitize_sizes.insert(key.clone(), *v);
        }
    }

    let tolerance = match &k.tolerance {
        Some(t) if !(t.get_ref().is_finite() && *t.get_ref() >= 0.0) => {
            return Err(errors.at(t.span(), "tolerance", "need a finite number >= 0"))
        }
        Some(t) => *t.get_ref(),
        None => 0.0,
    };
    let mut args: Vec<ArgSpec> = Vec::new();
    let mut arg_sites: Vec<Site> = Vec::new();
    let mut declared = std::collections::HashSet::new();
    for a in &k.args {
        let key = format!("args.{}", a.get_ref().name);
        if !declared.insert(a.get_ref().name.clone()) {
            return Err(errors.at(
                a.span(),
                &format!("{key}.name"),
                format!("`{}` is declared twice", a.get_ref().name),
            ));
        }
        let spec = args::parse(a.get_ref(), tolerance)
            .map_err(|(sub, m)| errors.at(a.span(), &format!("{key}.{sub}"), m))?;
        args.push(spec);
        arg_sites.push(Site {
            span: a.span(),
            key,
        });
    }

    let (launches, launch_sites) = launches(errors, kspan.clone(), &k, &args)?;
    let (check, reference_launch, reference_sites) =
        oracle(errors, dir, &k.oracle, &launches, &args)?;

    let passed: std::collections::HashSet<&str> = launches
        .iter()
        .chain(&reference_launch)
        .flat_map(|l| l.args.iter().map(String::as_str))
        .collect();
    for (a, site) in args.iter().zip(&arg_sites) {
        if !passed.contains(a.name()) {
            return Err(errors.at(
                site.span.clone(),
                &site.key,
                format!(
                    "no launch passes `{}`; list it in a launch's `args`",
                    a.name()
                ),
            ));
        }
    }
    if !args.iter().any(|a| {
        matches!(
            a,
            ArgSpec::Buffer {
                kind: BufKind::Out | BufKind::InOut,
                ..
            }
        )
    }) {
        return Err(errors.at(
            kspan,
            "args",
            format!("kernel `{name}` has no out or inout buffer to check"),
        ));
    }

    let line = |span: Range<usize>| errors.line(span);
    let first_arg = k
        .args
        .first()
        .map_or(line(kspan.clone()), |a| line(a.span()));
    let lines = KernelLines {
        kernel: line(k.name.span()),
        args: k
            .args
            .iter()
            .map(|a| (a.get_ref().name.clone(), line(a.span())))
            .collect(),
        launches: if k.launch.is_empty() {
            let entry = k
                .entry
                .as_ref()
                .map_or(line(kspan.clone()), |e| line(e.span()));
            vec![(entry, first_arg)]
        } else {
            k.launch
                .iter()
                .map(|l| {
                    (
                        line(l.get_ref().entry.span()),
                        line(l.get_ref().args.span()),
                    )
                })
                .collect()
        },
        tables: !k.launch.is_empty(),
        oracle: line(k.oracle.span()),
    };
    let spec = KernelSpec {
        lines,
        name,
        source: k.source.into_inner(),
        entry: launches[0].entry.clone(),
        options: k.options,
        include,
        sizes,
        sanitize_sizes,
        launches,
        check,
        reference_launch,
        tolerance,
        args,
    };
    let sites = Sites {
        args: arg_sites,
        launches: launch_sites,
        reference: reference_sites,
    };
    validate::check(&spec, &sites).map_err(|(span, key, m)| errors.at(span, &key, m))?;
    Ok(spec)
}

/// The kernel's launches: its `[[kernel.launch]]` tables, or the one launch its kernel-level
/// `entry`, `grid`, `block` and `shared` describe (passing every argument in order).
fn launches(
    errors: &Errors,
    kspan: Range<usize>,
    k: &RawKernel,
    args: &[ArgSpec],
) -> Result<(Vec<LaunchSpec>, Vec<LaunchSites>)> {
    let site = |span: Range<usize>, key: &str| Site {
        span,
        key: key.to_string(),
    };
    if k.launch.is_empty() {
        let (Some(entry), Some(grid), Some(block)) = (&k.entry, &k.grid, &k.block) else {
            let key = [
                ("entry", k.entry.is_none()),
                ("grid", k.grid.is_none()),
                ("block", k.block.is_none()),
            ]
            .into_iter()
            .find_map(|(key, missing)| missing.then_some(key))
            .unwrap_or("entry");
            return Err(errors.at(
                kspan,
                key,
                "missing: give `entry`, `grid` and `block`, or [[kernel.launch]] tables",
            ));
        };
        let entry_name = entry.get_ref().trim();
        if entry_name.is_empty() {
            return Err(errors.at(entry.span(), "entry", "give the kernel's name"));
        }
        let launch = LaunchSpec {
            entry: entry_name.to_string(),
            grid: dims(errors, grid, "grid")?,
            block: dims(errors, block, "block")?,
            shared: k
                .shared
                .as_ref()
                .map(|s| s.get_ref().clone())
                .unwrap_or_else(|| "0".into()),
            args: args.iter().map(|a| a.name().to_string()).collect(),
            stream: 0,
        };
        let sites = LaunchSites {
            grid: site(grid.span(), "grid"),
            block: site(block.span(), "block"),
            shared: site(
                k.shared.as_ref().map(|s| s.span()).unwrap_or(kspan),
                "shared",
            ),
        };
        return Ok((vec![launch], vec![sites]));
    }
    // Launch tables replace the kernel-level launch; both at once would be ambiguous.
    for (given, key) in [
        (k.entry.as_ref().map(|s| s.span()), "entry"),
        (k.grid.as_ref().map(|s| s.span()), "grid"),
        (k.block.as_ref().map(|s| s.span()), "block"),
        (k.shared.as_ref().map(|s| s.span()), "shared"),
    ] {
        if let Some(span) = given {
            return Err(errors.at(
                span,
                key,
                "a kernel with [[kernel.launch]] tables gives `entry`, `grid`, `block` and \
                 `shared` in each launch",
            ));
        }
    }
    let mut out = Vec::new();
    let mut sites = Vec::new();
    for (i, l) in k.launch.iter().enumerate() {
        let l = l.get_ref();
        // Numbered from 1, as parameters are: the second `[[kernel.launch]]` is `launch #2`.
        let key = |part: &str| format!("launch #{}.{part}", i + 1);
        let entry = l.entry.get_ref().trim();
        if entry.is_empty() {
            return Err(errors.at(l.entry.span(), &key("entry"), "give the kernel's name"));
        }
        args::arg_names(l.args.get_ref(), args)
            .map_err(|m| errors.at(l.args.span(), &key("args"), m))?;
        out.push(LaunchSpec {
            entry: entry.to_string(),
            grid: dims(errors, &l.grid, &key("grid"))?,
            block: dims(errors, &l.block, &key("block"))?,
            shared: l
                .shared
                .as_ref()
                .map(|s| s.get_ref().clone())
                .unwrap_or_else(|| "0".into()),
            args: l.args.get_ref().clone(),
            stream: launch_stream(errors, l.stream.as_ref(), &key("stream"))?,
        });
        sites.push(LaunchSites {
            grid: site(l.grid.span(), &key("grid")),
            block: site(l.block.span(), &key("block")),
            shared: site(
                l.shared
                    .as_ref()
                    .map(|s| s.span())
                    .unwrap_or(l.entry.span()),
                &key("shared"),
            ),
        });
    }
    let streams: Vec<u32> = out.iter().map(|l| l.stream).collect();
    if let Err((i, m)) = validate::one_stream(&streams) {
        let span = k.launch[i].get_ref().stream.as_ref().map(|s| s.span());
        let at = span.unwrap_or(k.launch[i].span());
        return Err(errors.at(at, &format!("launch #{}.stream", i + 1), m));
    }
    Ok((out, sites))
}

/// A `[[kernel.launch]]`'s `stream` ([`validate::stream`]; 0 when not given).
fn launch_stream(errors: &Errors, v: Option<&Spanned<toml::Value>>, key: &str) -> Result<u32> {
    v.map_or(Ok(0), |v| {
        validate::stream(v.get_ref()).map_err(|m| errors.at(v.span(), key, m))
    })
}

type Oracle = (Check, Option<LaunchSpec>, Option<LaunchSites>);

/// The `oracle` key: what judges the results and, for a reference with launch keys of its
/// own, how the reference is launched.
fn oracle(
    errors: &Errors,
    dir: &Path,
    raw: &Spanned<RawCheck>,
    launches: &[LaunchSpec],
    args: &[ArgSpec],
) -> Result<Oracle> {
    let span = raw.span();
    let fail = |key: &str, m: String| errors.at(span.clone(), key, m);
    let table = match raw.get_ref() {
        RawCheck::Named(s) if s == "determinism" => return Ok((Check::Determinism, None, None)),
        RawCheck::Named(s) if s == "none" => return Ok((Check::None, None, None)),
        RawCheck::Named(s) => {
            return Err(fail(
                "oracle",
                format!(
                "`{s}`: expected \"determinism\", \"none\" or {{ reference = \"file.cu:kernel\" }}"
            ),
            ))
        }
        RawCheck::Table(t) => t,
    };
    let r: RawReference = toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| fail("oracle", e.message().trim_end().to_string()))?;
    let Some((path, entry)) = split_reference(&r.reference) else {
        return Err(fail(
            "oracle.reference",
            format!("`{}` is not `file.cu:kernel`", r.reference),
        ));
    };
    if let Some(why) = crate::source::files::not_a_source(&dir.join(path)) {
        return Err(fail(
            "oracle.reference",
            format!("reference file {} {why}", dir.join(path).display()),
        ));
    }
    let check = Check::Reference {
        path: path.to_string(),
        entry: entry.to_string(),
    };
    let own = r.grid.is_some() || r.block.is_some() || r.shared.is_some() || r.args.is_some();
    let single = (launches.len() == 1).then(|| &launches[0]);
    if !own {
        if single.is_none() {
            return Err(fail(
                "oracle",
                "a kernel with several launches needs the reference's own launch: give \
                 `oracle.grid`, `oracle.block` and `oracle.args`"
                    .into(),
            ));
        }
        return Ok((check, None, None));
    }
    // Each key defaults to the kernel's launch; several launches leave nothing to default to.
    let pick = |own: Option<Vec<String>>, theirs: Option<&Vec<String>>, key: &str| {
        own.or_else(|| theirs.cloned()).ok_or_else(|| {
            fail(
                &format!("oracle.{key}"),
                format!("missing: a kernel with several launches needs `oracle.{key}`"),
            )
        })
    };
    let grid = pick(r.grid, single.map(|l| &l.grid), "grid")?;
    let block = pick(r.block, single.map(|l| &l.block), "block")?;
    let names = pick(r.args, single.map(|l| &l.args), "args")?;
    for (key, d) in [("grid", &grid), ("block", &block)] {
        if d.is_empty() || d.len() > 3 {
            return Err(fail(
                &format!("oracle.{key}"),
                "give 1 to 3 expressions (x, y, z)".into(),
            ));
        }
    }
    args::arg_names(&names, args).map_err(|m| fail("oracle.args", m))?;
    let shared = r
        .shared
        .or_else(|| single.map(|l| l.shared.clone()))
        .unwrap_or_else(|| "0".into());
    let site = |key: &str| Site {
        span: span.clone(),
        key: format!("oracle.{key}"),
    };
    let sites = LaunchSites {
        grid: site("grid"),
        block: site("block"),
        shared: site("shared"),
    };
    Ok((
        check,
        Some(LaunchSpec {
            entry: entry.to_string(),
            grid,
            block,
            shared,
            args: names,
            stream: 0,
        }),
        Some(sites),
    ))
}
