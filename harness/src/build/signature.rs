//! A manifest's kernels checked against their compiled code before anything is launched: every
//! launch entry and the reference entry exist in the PTX, and each launch's arguments match the
//! kernel's parameters in number and width (a buffer is an 8-byte pointer, a scalar its type's
//! size, a float scalar a `.f32`/`.f64` parameter). PTX does not know `const` or pointee types,
//! so this catches a wrong count, order or width, not a `float*` passed as `int*`.

use crate::build::compile::{self, BuildOptions};
use crate::build::ptx;
use crate::errors::{Error, Result};
use crate::source::catalog::Catalog;
use crate::source::files;
use crate::source::manifest::{ArgSpec, Check, KernelSpec, LaunchSpec};
use crate::source::values::Elem;

/// Compiles every file a manifest names and checks each kernel's launches against the PTX.
/// Errors name the manifest, the kernel's line and the key; a compile error is returned as is.
pub fn check(catalog: &Catalog, arch: &str) -> Result<()> {
    let Some(m) = &catalog.manifest else {
        return Ok(());
    };
    let text = files::read_text(&m.path, "the manifest", files::TEXT_LIMIT).unwrap_or_default();
    for k in &m.kernels {
        let err = |key: &str, message: String| Error::Toml {
            path: m.path.display().to_string(),
            line: kernel_line(&text, &k.name),
            message: format!("kernel `{}`: `{key}`: {message}", k.name),
        };
        let build = |path: &str| -> Result<String> {
            let opts = BuildOptions {
                arch: arch.to_string(),
                jitter: false,
                extra: k.build_options(path),
            };
            Ok(compile::compile(&catalog.root, &catalog.manifest_file(path), &opts)?.ptx)
        };
        let ptx_text = build(&k.source)?;
        for l in &k.launches {
            check_launch(k, l, &ptx_text).map_err(|m| err("entry", m))?;
        }
        if let Check::Reference { path, entry } = &k.check {
            let ref_ptx = if *path == k.source {
                ptx_text.clone()
            } else {
                build(path)?
            };
            let launch = match &k.reference_launch {
                Some(l) => l.clone(),
                None => LaunchSpec {
                    entry: entry.clone(),
                    ..k.launches[0].clone()
                },
            };
            check_launch(k, &launch, &ref_ptx).map_err(|m| err("oracle", m))?;
        }
    }
    Ok(())
}

/// The line of `name = "NAME"` in the manifest (1 when it cannot be found).
fn kernel_line(text: &str, name: &str) -> usize {
    let want = format!("\"{name}\"");
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with("name") && l.contains(&want)
        })
        .map_or(1, |i| i + 1)
}

fn check_launch(k: &KernelSpec, l: &LaunchSpec, ptx_text: &str) -> std::result::Result<(), String> {
    let entries = ptx::entries(ptx_text);
    let names = ptx::names(ptx_text);
    let Some(e) = ptx::find(&entries, &names, &l.entry) else {
        let have: Vec<&str> = entries
            .iter()
            .map(|e| e.name.as_str())
            .filter(|n| !n.starts_with("racegate_"))
            .collect();
        return Err(format!(
            "no kernel `{}` in the compiled code (it has: {}); is it `extern \"C\"`, or a \
             template named by its instantiation such as `f<float, 256>`?",
            l.entry,
            if have.is_empty() {
                "none".into()
            } else {
                have.join(", ")
            }
        ));
    };
    if e.params.len() != l.args.len() {
        return Err(format!(
            "`{}` takes {} parameter(s), the launch passes {} ({})",
            l.entry,
            e.params.len(),
            l.args.len(),
            l.args.join(", ")
        ));
    }
    for (i, (p, name)) in e.params.iter().zip(&l.args).enumerate() {
        let (width, float, what) = match k.arg(name) {
            Some(ArgSpec::Buffer { .. }) => (8, false, "a buffer (a pointer)".to_string()),
            Some(ArgSpec::Scalar { elem, .. }) => (
                elem.size(),
                matches!(elem, Elem::F32 | Elem::F64),
                format!("a {} scalar", elem.name()),
            ),
            None => {
                return Err(format!(
                    "the launch passes `{name}`, which is not an argument"
                ))
            }
        };
        if p.width != width || p.float != float {
            return Err(format!(
                "parameter {i} of `{}` is {} byte(s){}, but `{name}` is {what}",
                l.entry,
                p.width,
                if p.float { " (a float)" } else { "" },
            ));
        }
    }
    Ok(())
}
