//! `readme::<name>`: the README, the `--help` texts and the `[[program]]` example say what the
//! binary does: the README's command table names every subcommand the binary has and nothing
//! else; its wheel list and count are what `racegate setup` installs; every subcommand's `--help`
//! has an example and ends with the exit codes; `examples/program/racegate.toml` parses and uses
//! exactly the keys a `[[program]]` table accepts, which the README's table lists too.

use std::collections::BTreeSet;

use racegate::build::setup::NVRTC_WHEELS;

use crate::runner::racegate;

fn repo() -> std::path::PathBuf {
    crate::package_dir().parent().unwrap().to_path_buf()
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// The subcommands `racegate --help` lists (hidden ones and `help` left out).
fn subcommands() -> BTreeSet<String> {
    let help = racegate(["--help"]).run().success().stdout;
    let list: BTreeSet<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect();
    assert!(list.len() >= 10, "no command list in:\n{help}");
    list
}

/// The lines of the README section that opens with `heading`, up to the next heading.
fn section(text: &str, heading: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| l.trim() != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .map(String::from)
        .collect()
}

/// The first column of a markdown table's rows in `lines` (header and rule left out), without
/// its backticks.
fn first_column(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split(" | ").next())
        .map(|c| c.trim_start_matches("| ").replace('`', ""))
        .collect()
}

#[test]
fn the_command_table_names_every_subcommand_and_nothing_else() {
    let rows = first_column(&section(&readme(), "## Commands"));
    let documented: BTreeSet<String> = rows
        .iter()
        .map(|r| {
            let mut w = r.split_whitespace();
            assert_eq!(w.next(), Some("racegate"), "a row that is no command: {r}");
            w.next().unwrap_or_default().to_string()
        })
        .collect();
    let binary = subcommands();
    assert_eq!(
        documented, binary,
        "README's command table (left) vs `racegate --help` (right)"
    );
}

#[test]
fn the_wheels_are_those_setup_installs() {
    let text = readme();
    let pins: BTreeSet<String> = text
        .split(|c: char| c == '`' || c.is_whitespace())
        .filter(|w| w.starts_with("nvidia-") && w.contains("=="))
        .map(|w| w.trim_end_matches([',', '.', ')']).to_string())
        .collect();
    let installed: BTreeSet<String> = NVRTC_WHEELS.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        pins, installed,
        "wheels the README names vs `setup::NVRTC_WHEELS`"
    );
    let count = format!("for {} wheels", NVRTC_WHEELS.len());
    assert!(text.contains(&count), "the README must say `{count}`");
    let setup_row = format!("install the {} pinned", NVRTC_WHEELS.len());
    assert!(
        text.contains(&setup_row),
        "the command table must say `{setup_row}`"
    );
    let help = racegate(["setup", "--help"]).run().success().stdout;
    for w in NVRTC_WHEELS {
        assert!(
            help.contains(w),
            "`racegate setup --help` does not name {w}"
        );
    }
    assert!(
        help.contains(&format!("the {} wheels", NVRTC_WHEELS.len())),
        "{help}"
    );
}

#[test]
fn every_help_has_an_example_and_ends_with_the_exit_codes() {
    for c in subcommands() {
        let help = racegate([&c, "--help"]).run().success().stdout;
        let lines: Vec<&str> = help.lines().filter(|l| !l.trim().is_empty()).collect();
        // The last paragraph, wrapped at 100 columns, is the exit codes.
        let last = help.trim_end().rsplit("\n\n").next().unwrap_or_default();
        assert!(
            last.starts_with("Exit codes: 0 "),
            "`racegate {c} --help` ends with `{last}`, not the exit codes"
        );
        // `-h` (the short help) ends with the same paragraph: the command's own codes, not the
        // table of every command (`list` never exits 1 or 4).
        let short = racegate([&c, "-h"]).run().success().stdout;
        let short_last = short.trim_end().rsplit("\n\n").next().unwrap_or_default();
        assert_eq!(
            short_last, last,
            "`racegate {c} -h` and `--help` end differently"
        );
        let example = lines
            .iter()
            .skip_while(|l| !l.starts_with("Example"))
            .skip(1)
            .any(|l| l.trim_start().starts_with("racegate ") && l.contains(&format!(" {c}")));
        assert!(
            example,
            "`racegate {c} --help` has no example of `racegate {c}`:\n{help}"
        );
    }
}

/// The fields of `RawProgram` in `source/manifest/program.rs`: the keys a `[[program]]` table
/// accepts (`deny_unknown_fields` refuses any other).
fn program_keys() -> BTreeSet<String> {
    let src = std::fs::read_to_string(crate::package_dir().join("src/source/manifest/program.rs"))
        .unwrap();
    let body = src
        .split("pub struct RawProgram {")
        .nth(1)
        .and_then(|b| b.split("\n}").next())
        .expect("RawProgram in program.rs");
    let keys: BTreeSet<String> = body
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with("#["))
        .filter_map(|l| l.split_once(':').map(|(k, _)| k.trim().to_string()))
        .collect();
    assert!(keys.contains("command") && keys.len() > 10, "{keys:?}");
    keys
}

#[test]
fn the_program_example_uses_exactly_the_accepted_keys() {
    let path = repo().join("examples/program/racegate.toml");
    let m = racegate::source::manifest::Manifest::load(&path)
        .unwrap_or_else(|e| panic!("examples/program/racegate.toml: {e}"));
    assert_eq!(
        m.programs
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["counter", "racy_program"]
    );
    let doc: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    let tables = doc["program"].as_array().unwrap();
    let mut used: BTreeSet<String> = tables
        .iter()
        .flat_map(|t| t.as_table().unwrap().keys().cloned())
        .collect();
    // `vary = "ok"` is shown commented out: a second program whose output varies is no example.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\n# vary = \"ok\""),
        "the example must show `vary`"
    );
    used.insert("vary".into());
    assert_eq!(
        used,
        program_keys(),
        "keys of the example (left) vs RawProgram (right)"
    );

    // The README's `[[program]]` table lists the same keys.
    let rows = first_column(&section(
        &readme(),
        "### Programs in the manifest: `[[program]]`",
    ));
    let listed: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| r.split(", ").map(String::from).collect::<Vec<_>>())
        .collect();
    assert_eq!(
        listed,
        program_keys(),
        "README's [[program]] keys (left) vs RawProgram (right)"
    );
}

#[test]
fn a_program_table_takes_every_tool_the_gate_has_and_no_other() {
    use racegate::judge::sanitize::tool::Tool;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("racegate.toml");
    let parse = |tool: &str| {
        let text =
            format!("[[program]]\nname = \"p\"\ncommand = \"true\"\nsanitizers = [\"{tool}\"]\n");
        racegate::source::manifest::Manifest::parse(&path, &text)
    };
    // Every tool `--tools` takes, the opt-in ones included.
    let tools: Vec<Tool> = Tool::ALL.into_iter().collect();
    for t in &tools {
        if let Err(e) = parse(t.name()) {
            panic!("`sanitizers = [\"{}\"]` refused: {e}", t.name());
        }
    }
    for wrong in ["racechek", "stress", "Racecheck", ""] {
        assert!(parse(wrong).is_err(), "`{wrong}` accepted");
    }
    for name in racegate::source::manifest::program::TOOLS {
        assert!(
            Tool::from_name(name).is_some(),
            "the manifest accepts `{name}`, which the gate does not have"
        );
    }
    assert_eq!(
        racegate::source::manifest::program::TOOLS.len(),
        tools.len()
    );
}

/// Every `--flag` the README shows for a subcommand (in its command table and in every
/// `racegate SUBCOMMAND ...` line of a code block) is one that subcommand's `--help` lists: a
/// renamed or removed flag cannot stay documented.
#[test]
fn every_flag_the_readme_shows_is_one_the_command_takes() {
    let subs = subcommands();
    let text = readme();
    // Each command the README shows, as the words after `racegate`.
    let mut shown: Vec<String> = Vec::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("| `racegate ") {
            shown.push(rest.split('`').next().unwrap_or("").into());
        }
    }
    let mut in_code = false;
    for l in text.lines() {
        if l.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if let (true, Some(rest)) = (in_code, l.trim_start().strip_prefix("racegate ")) {
            shown.push(rest.split('#').next().unwrap_or("").into());
        }
    }
    assert!(
        shown.len() >= 15,
        "the README's commands were not found: {shown:?}"
    );
    // A flag counts as listed only on an option line of the help (`  -t, --trials <N>`), not
    // in its examples or prose.
    let options = |help: &str| -> BTreeSet<String> {
        help.lines()
            .map(str::trim_start)
            .filter(|h| h.starts_with('-'))
            .flat_map(|h| {
                h.split(|c: char| c == ',' || c.is_whitespace() || c == '=' || c == '<' || c == '[')
                    .filter(|w| w.starts_with("--"))
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let global = options(&racegate(["--help"]).run().success().stdout);
    let mut helps = std::collections::BTreeMap::new();
    let mut bad = Vec::new();
    let mut checked = 0;
    for cmd in &shown {
        // Only what comes before a `--` separator is racegate's (after it: the program's).
        let own = cmd.split(" -- ").next().unwrap_or("");
        let words: Vec<&str> = own.split_whitespace().collect();
        // Global options (`--manifest F`, `--root DIR`) may come before the subcommand.
        let mut i = 0;
        while i < words.len() && words[i].starts_with("--") {
            let flag = words[i].split('=').next().unwrap_or("");
            checked += 1;
            if !global.contains(flag) {
                bad.push(format!("`racegate`: {flag} (README: {cmd})"));
            }
            i += if words[i].contains('=') { 1 } else { 2 };
        }
        let Some(sub) = words.get(i).copied().filter(|w| subs.contains(*w)) else {
            continue; // `racegate --help`, or prose
        };
        let listed = helps
            .entry(sub.to_string())
            .or_insert_with(|| {
                let mut o = options(&racegate([sub, "--help"]).run().success().stdout);
                o.extend(global.iter().cloned());
                o
            })
            .clone();
        for flag in words[i + 1..]
            .iter()
            .flat_map(|w| w.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
            .filter(|w| w.starts_with("--") && w.len() > 2)
        {
            checked += 1;
            if !listed.contains(flag) {
                bad.push(format!("`racegate {sub}`: {flag} (README: {cmd})"));
            }
        }
    }
    assert!(
        checked >= 40,
        "too few flags seen ({checked}): the parse is broken"
    );
    assert!(
        bad.is_empty(),
        "flags the README shows and --help does not list:\n{}",
        bad.join("\n")
    );
}

/// Nothing in the repository points at files outside it (the team's decision records and
/// reference notes live beside the checkout, not in it): a reader of the repository alone must
/// be able to follow every reference.
#[test]
fn nothing_cites_files_outside_the_repository() {
    let root = repo();
    let files = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .ok()
        .filter(|o| o.status.success() && !o.stdout.is_empty());
    let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    let Some(files) = files else {
        // An unpacked archive has no file list: checked in CI's clone, which must have one.
        assert!(!in_ci, "CI's checkout must be a git clone with git on PATH");
        eprintln!("not a git checkout: nothing to check");
        return;
    };
    // Spelled in pieces so that this file does not cite them itself.
    let outside = [
        ["DECISIONS", ".md"].concat(),
        ["../", "shared/"].concat(),
        ["shared/", "reference"].concat(),
        ["shared/", "design"].concat(),
        ["STYLE", ".md"].concat(),
    ];
    let mut bad = Vec::new();
    for f in files.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let path = root.join(String::from_utf8_lossy(f).as_ref());
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        for (n, l) in text.lines().enumerate() {
            for o in &outside {
                if l.contains(o.as_str()) {
                    bad.push(format!("{}:{}: {o}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "references outside the repository:\n{}",
        bad.join("\n")
    );
}
