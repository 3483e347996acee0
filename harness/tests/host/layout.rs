//! The shape of the source tree, checked: no import circle between the files of `harness/src`,
//! `main.rs` under 150 lines and no file over 600. Run alone with
//! `cargo test --test host layout`.
//!
//! Each file is a module (`a/b.rs` is `a::b`, `a/mod.rs` is `a`); a path such as
//! `crate::a::b::Thing`, `super::b` or `racegate::a` names the longest module it reaches, and a
//! name that a `mod.rs` re-exports counts as the file that defines it, so re-exports never make
//! a circle by themselves. A `mod.rs` declaring its children is not an import.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One file-module: its path (`cli::app`, `catalog`), whether it is a `mod.rs`, its source.
struct Module {
    path: Vec<String>,
    is_mod_rs: bool,
    text: String,
}

fn modules(src: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap();
            let mut path: Vec<String> = rel
                .iter()
                .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            let is_mod_rs = path.last().is_some_and(|l| l == "mod");
            if is_mod_rs || path == ["lib"] || path == ["main"] {
                path.pop();
            }
            out.push(Module {
                path,
                is_mod_rs,
                text: strip_comments(&std::fs::read_to_string(&p).unwrap()),
            });
        }
    }
    out
}

/// Drops the bodies of string literals, so that a path written in a message is not an import.
/// Comments stay: a module a doc comment links to is one a reader has to go and read.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !in_str && c == '/' && chars.get(i + 1) == Some(&'/') {
                // A comment is kept: a path a doc link or a note names is one a newcomer follows.
                kept.extend(&chars[i..]);
                break;
            }
            if c == '"' && prev != '\\' && prev != '\'' {
                in_str = !in_str;
                kept.push('"');
            } else if !in_str {
                kept.push(c);
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Every path a module names, expanded from `use a::{b, c::d}` groups and inline `a::b` paths,
/// as segment lists starting with `crate`, `super`, `self` or `racegate`.
fn paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` statements, braces expanded.
    let mut rest = text;
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let tail = &rest[i + 4..];
        let Some(end) = tail.find(';') else { break };
        if before.is_none_or(|c| !c.is_alphanumeric() && c != '_') {
            expand(&tail[..end].replace(char::is_whitespace, ""), &mut out);
        }
        rest = &tail[end..];
    }
    // Inline paths.
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0
            || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_' || bytes[i - 1] == ':');
        if starts_word && (bytes[i].is_alphabetic() || bytes[i] == '_') {
            let mut j = i;
            while j < bytes.len()
                && (bytes[j].is_alphanumeric() || bytes[j] == '_' || bytes[j] == ':')
            {
                j += 1;
            }
            let word: String = bytes[i..j].iter().collect();
            let segs: Vec<String> = word
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            if segs.len() > 1 && ["crate", "super", "racegate"].contains(&segs[0].as_str()) {
                out.push(segs);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn expand(tree: &str, out: &mut Vec<Vec<String>>) {
    fn go(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim_start_matches("::");
        if let Some(open) = tree.find('{') {
            let head: Vec<String> = tree[..open]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            // A closing brace before the opening one (a comment that merely says "use"): to the end.
            let close = tree.rfind('}').filter(|&e| e > open).unwrap_or(tree.len());
            let inner = &tree[open + 1..close];
            let mut depth = 0;
            let mut start = 0;
            let mut parts = Vec::new();
            for (k, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        parts.push(&inner[start..k]);
                        start = k + 1;
                    }
                    _ => {}
                }
            }
            parts.push(&inner[start..]);
            let base: Vec<String> = prefix.iter().cloned().chain(head).collect();
            for p in parts.into_iter().filter(|p| !p.is_empty()) {
                go(&base, p, out);
            }
        } else {
            // `a::b as c` was flattened to `a::basc` by the whitespace removal: keep `a::b`.
            let name = tree;
            let segs: Vec<String> = prefix
                .iter()
                .cloned()
                .chain(
                    name.split("::")
                        .filter(|s| !s.is_empty() && *s != "self")
                        .map(String::from),
                )
                .collect();
            out.push(segs);
        }
    }
    go(&[], tree, out);
}

/// The module graph: for each module, the modules it imports (not counting itself, its own
/// children when it is a `mod.rs`, nor the crate roots).
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let known: BTreeSet<Vec<String>> = mods.iter().map(|m| m.path.clone()).collect();
    // Names each mod.rs re-exports: (module, name) -> the child that defines it.
    let mut reexports: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
    for m in mods.iter().filter(|m| m.is_mod_rs) {
        for p in paths(&m.text) {
            if p.len() >= 2 && p[0] != "crate" && p[0] != "super" && p[0] != "racegate" {
                let child: Vec<String> = m.path.iter().cloned().chain([p[0].clone()]).collect();
                reexports.insert((m.path.clone(), p.last().unwrap().clone()), child);
            }
        }
        // `pub use child::{A, B}` is a relative path: `paths` keeps only anchored ones, so
        // read those statements directly.
        for line in m
            .text
            .lines()
            .filter(|l| l.trim_start().starts_with("pub use "))
        {
            let mut out = Vec::new();
            expand(
                &line.trim_start()["pub use ".len()..]
                    .trim_end_matches(';')
                    .replace(char::is_whitespace, ""),
                &mut out,
            );
            for p in out.into_iter().filter(|p| p.len() >= 2) {
                let child: Vec<String> = m.path.iter().cloned().chain([p[0].clone()]).collect();
                reexports.insert((m.path.clone(), p.last().unwrap().clone()), child);
            }
        }
    }
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in &mods {
        let mut edges = BTreeSet::new();
        for p in paths(&m.text) {
            // Anchor the path to an absolute module path.
            let mut abs: Vec<String> = match p[0].as_str() {
                "crate" => p[1..].to_vec(),
                "racegate" => p[1..].to_vec(),
                "super" => {
                    let mut base = m.path.clone();
                    let mut k = 0;
                    while p.get(k).is_some_and(|s| s == "super") {
                        base.pop();
                        k += 1;
                    }
                    base.into_iter().chain(p[k..].iter().cloned()).collect()
                }
                _ => continue,
            };
            // The longest known module prefix, then through a mod.rs re-export.
            while !abs.is_empty() && !known.contains(&abs) {
                abs.pop();
            }
            let mut target = abs.clone();
            if let Some(name) = p.last() {
                if let Some(child) = reexports.get(&(abs.clone(), name.clone())) {
                    target = child.clone();
                }
            }
            if target.is_empty() || target == m.path {
                continue;
            }
            if m.is_mod_rs && target.starts_with(&m.path) {
                continue;
            }
            edges.insert(target.join("::"));
        }
        g.insert(m.path.join("::"), edges);
    }
    g
}

/// The circles in the graph (strongly connected groups of two or more modules).
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Two modules are in one circle when each reaches the other.
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for e in g.get(&n).into_iter().flatten() {
                if seen.insert(e.clone()) {
                    todo.push(e.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|k| (k, reach(k))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for a in g.keys() {
        if done.contains(a) {
            continue;
        }
        let group: Vec<String> = g
            .keys()
            .filter(|b| *b == a || (reaches[a].contains(*b) && reaches[*b].contains(a)))
            .cloned()
            .collect();
        if group.len() > 1 {
            done.extend(group.iter().cloned());
            out.push(group);
        }
    }
    out
}

fn src() -> std::path::PathBuf {
    super::package_dir().join("src")
}

#[test]
fn no_import_circle() {
    let g = graph(&src());
    assert!(
        g.len() > 30,
        "the checker found the modules: {:?}",
        g.keys()
    );
    let found = circles(&g);
    // Folders too: `gate/` as one module must not import `report/` while `report/` imports it.
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in &g {
        let head = |m: &str| m.split("::").next().unwrap_or("").to_string();
        let entry = top.entry(head(from)).or_default();
        entry.extend(to.iter().map(|t| head(t)).filter(|t| *t != head(from)));
    }
    let found: Vec<Vec<String>> = found.into_iter().chain(circles(&top)).collect();
    assert!(
        found.is_empty(),
        "files that import each other, directly or around a circle: {found:?}\n\
         move what both need into a file of its own (see entry.rs, case.rs, grade/config.rs)"
    );
}

/// The layers of `harness/src`, lowest first (the crate docs in `lib.rs` draw the same table). A
/// module may import modules of its own layer and of the layers below, never one above: the
/// pipeline reads bottom-up. `""` is `lib.rs`.
const LAYERS: &[&[&str]] = &[
    &["errors"],
    &["proc", "source"],
    &["build"],
    &["run"],
    &["judge"],
    &["gate", "grade", "mutate"],
    &["report"],
    &["cli"],
    &["api", "testing", ""],
];

fn layer_of(module: &str) -> Option<usize> {
    let head = module.split("::").next().unwrap_or("");
    LAYERS.iter().position(|l| l.contains(&head))
}

/// Imports that run from a lower layer to a higher one, as `from -> to`.
fn upward(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in g {
        for to in tos {
            if let (Some(a), Some(b)) = (layer_of(from), layer_of(to)) {
                if b > a {
                    out.push(format!("{from} -> {to}"));
                }
            }
        }
    }
    out
}

#[test]
fn every_module_has_a_layer_and_imports_point_down() {
    let g = graph(&src());
    let unplaced: Vec<&String> = g.keys().filter(|m| layer_of(m).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer of LAYERS (add their folder to it): {unplaced:?}"
    );
    let up = upward(&g);
    assert!(
        up.is_empty(),
        "imports from a lower layer to a higher one (LAYERS, lowest first): {up:?}\n\
         move what the lower module needs down, or the code that needs both up"
    );
}

#[test]
fn the_checker_sees_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("build")).unwrap();
    std::fs::create_dir(src.join("run")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod build;\npub mod run;\n").unwrap();
    std::fs::write(src.join("build/mod.rs"), "pub mod compile;\n").unwrap();
    std::fs::write(src.join("run/mod.rs"), "pub mod launch;\n").unwrap();
    std::fs::write(
        src.join("run/launch.rs"),
        "use crate::build::compile::Ptx;\n",
    )
    .unwrap();
    // Planted: the compile stage reaching up into the device stage.
    std::fs::write(
        src.join("build/compile.rs"),
        "pub struct Ptx;\nfn f() { crate::run::launch::go() }\n",
    )
    .unwrap();
    let g = graph(src);
    assert_eq!(
        upward(&g),
        vec!["build::compile -> run::launch".to_string()],
        "{g:?}"
    );
    std::fs::write(src.join("build/compile.rs"), "pub struct Ptx;\n").unwrap();
    assert!(upward(&graph(src)).is_empty());
}

#[test]
fn the_source_root_lists_stages_and_each_folder_says_what_it_holds() {
    // Folders holding no file are no part of the tree git has (a copy that only adds files
    // can leave the empty folders of a move behind: H200 run 21).
    fn holds_a_file(p: &std::path::Path) -> bool {
        !p.is_dir()
            || std::fs::read_dir(p)
                .map(|d| d.flatten().any(|e| holds_a_file(&e.path())))
                .unwrap_or(false)
    }
    let mut entries: Vec<String> = std::fs::read_dir(src())
        .unwrap()
        .flatten()
        .filter(|e| holds_a_file(&e.path()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert!(
        entries.len() <= 15,
        "harness/src should read as the pipeline, at most 15 entries: {entries:?}"
    );
    for e in &entries {
        let name = e.trim_end_matches(".rs");
        assert!(
            layer_of(name).is_some() || name == "lib" || name == "main",
            "{e} in harness/src is neither a stage, a product nor a crate-level file (LAYERS)"
        );
    }
    // Every folder's mod.rs opens with what it holds and, on its second line, what it may import.
    let mut stack = vec![src()];
    let mut bad = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() && holds_a_file(&p) {
                let m = std::fs::read_to_string(p.join("mod.rs")).unwrap_or_default();
                let lines: Vec<&str> = m.lines().take(2).collect();
                let ok = lines.len() == 2
                    && lines.iter().all(|l| l.starts_with("//!") && l.len() > 10)
                    && lines[1].contains("import");
                if !ok {
                    bad.push(p.display().to_string());
                }
                stack.push(p);
            }
        }
    }
    assert!(
        bad.is_empty(),
        "folders whose mod.rs does not open with two lines (what it holds; what it may import): {bad:?}"
    );
}

#[test]
fn the_checker_sees_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("fam")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod catalog;\npub mod fam;\n").unwrap();
    std::fs::write(
        src.join("catalog.rs"),
        "use crate::fam::{reduce::Reduce, self};\n",
    )
    .unwrap();
    std::fs::write(
        src.join("fam/mod.rs"),
        "mod reduce;\npub use reduce::Reduce;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("fam/reduce.rs"),
        "// crate::nothing\nfn f() -> super::super::catalog::Case { todo!() }\n",
    )
    .unwrap();
    let g = graph(src);
    assert_eq!(
        circles(&g),
        vec![vec!["catalog".to_string(), "fam::reduce".to_string()]],
        "{g:?}"
    );
    // Re-exports alone are no circle.
    std::fs::write(src.join("fam/reduce.rs"), "pub struct Reduce;\n").unwrap();
    assert!(circles(&graph(src)).is_empty());
}

#[test]
fn main_rs_is_short_and_no_file_is_long() {
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap();
    assert!(
        main.lines().count() < 150,
        "main.rs parses and dispatches only"
    );
    let mut stack = vec![src()];
    let mut long = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let n = std::fs::read_to_string(&p).unwrap().lines().count();
                if n > 600 {
                    long.push(format!("{} ({n} lines)", p.display()));
                }
            }
        }
    }
    assert!(long.is_empty(), "files over 600 lines: {long:?}");
}
