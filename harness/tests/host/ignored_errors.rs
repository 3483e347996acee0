//! No swallowed errors in `harness/src` (outside `#[cfg(test)]` modules): each `let _ = ...`,
//! each `.ok();` that drops a `Result`, and each `.unwrap_or_default()` on a fallible call either
//! handles the error or carries a comment that says why ignoring it is right, with the marker
//!
//! ```text
//! // ignored: <why>
//! ```
//!
//! on the statement's own lines or on the line just above it. Writing into a `String`
//! (`let _ = writeln!(out, ...)` where `out` is a `String` the file builds) cannot fail and needs
//! no marker. Run alone with `cargo test --test host ignored_errors`.
//!
//! `.unwrap_or_default()` is flagged only where the statement calls something that returns a
//! `Result` ([`FALLIBLE`]): the same call on an `Option` (a missing value, not an error) is not
//! an error swallowed.

/// Places in files other engineers own that ignore an error wrongly and are being fixed there:
/// (file under `src/`, the statement's text). Listed so the check can be on for everything else;
/// an entry that no longer matches anything fails the check, so the list only shrinks.
const PENDING: &[(&str, &str)] = &[
    // `--save-xml`: the raw capture a user asked for, written without a word when it fails.
    (
        "judge/sanitize/injected/run.rs",
        "let _ = std::fs::write(keep, &text);",
    ),
    (
        "judge/sanitize/injected/run.rs",
        "let _ = std::fs::write(lines_path(keep, *m), t);",
    ),
];

/// The marker that justifies an ignored error.
const MARKER: &str = "// ignored:";

/// Calls whose `Result` a `.unwrap_or_default()` would swallow.
const FALLIBLE: &[&str] = &[
    "std::fs::",
    "fs::read",
    "files::read",
    "read_to_string(",
    "read_link(",
    "env::var(",
    "current_dir()",
    "File::open(",
    "from_str(",
    ".parse(",
    ".parse::<",
    ".output()",
    "list(root)",
];

/// One place that ignores an error without saying why: `file:line: text`.
fn unjustified(file: &str, text: &str) -> Vec<String> {
    // Tests may ignore what they like: the module from `#[cfg(test)]\nmod tests` on is cut.
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let lines: Vec<&str> = body.lines().collect();
    let string_buffers: Vec<&str> = ["out", "s"]
        .into_iter()
        .filter(|v| {
            body.contains(&format!("let mut {v} = String::"))
                || body.contains(&format!("{v}: &mut String"))
        })
        .collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        // The statement this line ends, back to the previous statement or block.
        let start = (0..i)
            .rev()
            .find(|&j| {
                let t = lines[j].split("//").next().unwrap_or("").trim_end();
                t.ends_with(';') || t.ends_with('{') || t.ends_with('}') || t.is_empty()
            })
            .map_or(0, |j| j + 1);
        let statement: String = lines[start..=i]
            .iter()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" ");
        let flagged = if let Some(at) = code.find("let _ =") {
            let rest = code[at + "let _ =".len()..].trim_start();
            !string_buffers.iter().any(|b| {
                rest.starts_with(&format!("writeln!({b},"))
                    || rest.starts_with(&format!("write!({b},"))
                    || rest == "writeln!(" && next_arg(&lines, i) == Some(b)
                    || rest == "write!(" && next_arg(&lines, i) == Some(b)
            })
        } else if code.trim_end().ends_with(".ok();") {
            // Dropped, not kept: `let x = f().ok();` and `x = f().ok();` use the value.
            let t = statement.trim_start();
            !t.starts_with("let ") && !t.contains(" = ")
        } else if code.contains(".unwrap_or_default()") {
            FALLIBLE.iter().any(|f| statement.contains(f))
        } else {
            false
        };
        if !flagged {
            continue;
        }
        // The marker in the comment just above the statement, or on any of its lines (a
        // `let _ = f(\n a,\n b); // ignored: ...`).
        let end = (i..lines.len())
            .find(|&j| lines[j].trim_end().ends_with(';'))
            .unwrap_or(i);
        let mut above = start;
        while above > 0 && lines[above - 1].trim_start().starts_with("//") {
            above -= 1;
        }
        let justified = (above..=end).any(|j| lines[j].contains(MARKER));
        if !justified {
            found.push(format!("{file}:{}: {}", i + 1, line.trim()));
        }
    }
    found
}

/// The first argument of a macro call opened at the end of line `i`: `out` in
/// `writeln!(\n    out,`.
fn next_arg<'a>(lines: &[&'a str], i: usize) -> Option<&'a str> {
    lines.get(i + 1)?.trim().strip_suffix(',')
}

#[test]
fn no_error_is_ignored_without_a_reason() {
    let src = super::package_dir().join("src");
    let mut stack = vec![src.clone()];
    let mut found = Vec::new();
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files += 1;
                let rel = p.strip_prefix(&src).unwrap().display().to_string();
                found.extend(unjustified(&rel, &std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    assert!(files > 50, "only {files} files under {}", src.display());
    for (file, text) in PENDING {
        let before = found.len();
        found.retain(|f| !(f.starts_with(&format!("{file}:")) && f.ends_with(text)));
        assert!(
            found.len() < before,
            "PENDING lists {file}: `{text}`, which is fixed or gone: remove it from the list"
        );
    }
    found.sort();
    assert!(
        found.is_empty(),
        "{} errors ignored without a reason: handle each, or say why ignoring it is right with \
         `{MARKER} <why>` on the line above:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The checker itself, on every spelling it must flag and every one it must let pass: each
/// pattern alone, split over lines, with the marker above, beside, below in the same statement,
/// and too far above; writes into a `String` buffer; the same code in a test module.
#[test]
fn the_checker_flags_each_spelling_and_only_those() {
    let flagged = [
        "fn f() {\n    let _ = std::fs::remove_file(p);\n}\n",
        "fn f() {\n    let _ = std::fs::remove_file(\n        p,\n    );\n}\n",
        "fn f() {\n    child.kill().ok();\n}\n",
        "fn f() {\n    let x = std::fs::read(p).unwrap_or_default();\n}\n",
        "fn f() {\n    let x = std::env::var(\"A\")\n        .unwrap_or_default();\n}\n",
        "fn f() {\n    let n = t.parse::<u32>().unwrap_or_default();\n}\n",
        // A file write named `out` in a file that has no `String` buffer called so.
        "fn f() {\n    let _ = writeln!(out, \"x\");\n}\n",
        "fn f() {\n    let _ = writeln!(std::io::stderr(), \"x\");\n}\n",
        // The marker two statements away does not count.
        "fn f() {\n    // ignored: not this one\n    a();\n    let _ = b();\n}\n",
        // A marker that is not the marker.
        "fn f() {\n    // ignored because\n    let _ = b();\n}\n",
    ];
    for (n, text) in flagged.iter().enumerate() {
        assert_eq!(
            unjustified("x.rs", text).len(),
            1,
            "case {n} not flagged:\n{text}"
        );
        // The same code in a test module is not checked.
        let in_tests = format!("fn g() {{}}\n#[cfg(test)]\nmod tests {{\n{text}}}\n");
        assert!(
            unjustified("x.rs", &in_tests).is_empty(),
            "case {n} in tests"
        );
    }
    let passing = [
        "fn f() {\n    // ignored: the file may be gone already\n    let _ = std::fs::remove_file(p);\n}\n",
        "fn f() {\n    // ignored: the file may be gone already,\n    // which is what we want\n    let _ = std::fs::remove_file(p);\n}\n",
        "fn f() {\n    let _ = std::fs::remove_file(p); // ignored: may be gone\n}\n",
        "fn f() {\n    let _ = std::fs::remove_file(\n        p, // ignored: may be gone\n    );\n}\n",
        "fn f() {\n    // ignored: a best-effort kill\n    child.kill().ok();\n}\n",
        // `unwrap_or_default` on an `Option`: not an error.
        "fn f() {\n    let x = o.first().cloned().unwrap_or_default();\n}\n",
        "fn f() {\n    let n = a.gen.as_deref()\n        .unwrap_or_default();\n}\n",
        // `.ok()` that is used, not dropped.
        "fn f() {\n    let x = g().ok();\n}\n",
        // Writes into a String.
        "fn f() {\n    let mut out = String::new();\n    let _ = writeln!(out, \"x\");\n    let _ = writeln!(\n        out,\n        \"y\"\n    );\n}\n",
        "fn f(s: &mut String) {\n    let _ = write!(s, \"x\");\n}\n",
        "fn f() {\n    let mut v = 1;\n}\n",
    ];
    for (n, text) in passing.iter().enumerate() {
        assert_eq!(
            unjustified("x.rs", text),
            Vec::<String>::new(),
            "case {n} flagged:\n{text}"
        );
    }
}
