//! `build_paths::<name>`: nothing finds files through the build machine's checkout path alone. A
//! nextest archive runs from another checkout, where the compile-time `env!("CARGO_MANIFEST_DIR")`
//! names a folder that is not there; the runtime variable (cargo and nextest set it, remapped
//! for an archive) must come first. Embedding a file at build time (`include_str!`) is fine.

use std::path::Path;

/// Each use of the compile-time manifest folder in `text` that is neither an embedding nor the
/// fallback after the runtime variable: (line, text).
fn path_uses(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.contains("env!(\"CARGO_MANIFEST_DIR\")") || l.trim_start().starts_with("//") {
            continue;
        }
        // The three lines before, for a call split by rustfmt.
        let before = lines[i.saturating_sub(3)..=i].join("\n");
        let embedded = before.contains("include_str!(") || before.contains("include_bytes!(");
        let fallback = before.contains("var_os(\"CARGO_MANIFEST_DIR\")")
            || l.contains("unwrap_or_else")
            || before.contains("let now = std::env::var_os(\"CARGO_MANIFEST_DIR\")");
        if !embedded && !fallback {
            out.push((i + 1, l.trim().to_string()));
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_checkout_is_found_at_run_time() {
    let pkg = crate::package_dir();
    let mut files = Vec::new();
    rust_files(&pkg.join("src"), &mut files);
    rust_files(&pkg.join("tests"), &mut files);
    let mut bad = Vec::new();
    let src = pkg.join("src");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, l) in path_uses(&text) {
            bad.push(format!("{}:{line}: {l}", f.display()));
        }
        // The library and the binary name no file through the build's folder at all: they
        // embed files by a path relative to the source (`include_str!("../../cuda/x.cuh")`)
        // and look for the checkout at run time only, not even as a last fallback.
        if f.starts_with(&src) {
            for (i, l) in text.lines().enumerate() {
                if l.contains(concat!("env!(\"CARGO_", "MANIFEST_DIR\")"))
                    && !l.trim_start().starts_with("//")
                {
                    bad.push(format!("{}:{}: {}", f.display(), i + 1, l.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "read the runtime CARGO_MANIFEST_DIR first: {bad:#?}"
    );
}

#[test]
fn the_checker_tells_the_forms_apart() {
    let m = "env!(\"CARGO_MANIFEST_DIR\")";
    for bad in [
        format!("let d = Path::new({m});"),
        format!("let d = PathBuf::from({m}).join(\"x\");"),
        format!("let d = Path::new(\n    {m},\n);"),
    ] {
        assert_eq!(path_uses(&bad).len(), 1, "{bad}");
    }
    for ok in [
        format!("const T: &str = include_str!(concat!({m}, \"/x\"));"),
        format!("const T: &str = include_str!(concat!(\n    {m},\n    \"/x\"\n));"),
        format!("std::env::var_os(\"CARGO_MANIFEST_DIR\")\n    .map(PathBuf::from)\n    .unwrap_or_else(|| PathBuf::from({m}))"),
        format!("// a comment naming {m}"),
    ] {
        assert!(path_uses(&ok).is_empty(), "{ok}");
    }
}

/// The mechanism behind the checker above, whatever the spelling (`env!`, `option_env!`, a
/// `concat!` of its parts, a build script's constant): the racegate binary holds no string that
/// names a file under the checkout it was built in (`<checkout>/...`). Debug information may
/// name the checkout itself, as the compile's folder; nothing under it. Under `cargo test` the
/// binary was built here; a nextest archive run elsewhere checks another folder and passes.
#[test]
fn the_binary_names_no_file_under_its_build_checkout() {
    let root = crate::package_dir().parent().unwrap().to_path_buf();
    let under = format!("{}/", root.display());
    let exe = crate::racegate_exe();
    let bytes = std::fs::read(&exe).unwrap();
    let found: Vec<String> = bytes
        .split(|b| !(0x20..0x7f).contains(b))
        .filter(|s| s.len() >= under.len())
        .map(String::from_utf8_lossy)
        .filter(|s| s.contains(&under))
        .map(|s| s.chars().take(200).collect())
        .collect();
    assert!(
        found.is_empty(),
        "{} names files under {under}: {found:#?}",
        exe.display()
    );
}
