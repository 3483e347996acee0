//! `racegate -h` and `--help`: every command's short help fits a screen (one line per option,
//! at most 60 lines of at most 100 characters) and its long help keeps the whole text; the tool
//! list that `--help`, the README's table and lists and the parser's error show is one list,
//! `Tool::ALL` (a kernel's: `Tool::KERNELS`) with `Tool::describe`.

use racegate::judge::sanitize::tool::Tool;

use crate::runner::racegate;

const COMMANDS: [&str; 13] = [
    "list", "compile", "stress", "sanitize", "check", "bench", "perf", "gate", "grade", "mutate",
    "setup", "doctor", "report",
];

#[test]
fn every_short_help_fits_a_screen_and_the_long_help_keeps_the_text() {
    let top = racegate(["-h"]).run().text();
    for command in COMMANDS.iter().map(|c| vec![*c]).chain([vec![]]) {
        let mut short_args = command.clone();
        short_args.push("-h");
        let short = if command.is_empty() {
            top.clone()
        } else {
            racegate(&short_args).run().text()
        };
        let lines: Vec<&str> = short.lines().collect();
        assert!(
            lines.len() <= 60,
            "{command:?} -h: {} lines\n{short}",
            lines.len()
        );
        for l in &lines {
            assert!(
                l.chars().count() <= 100,
                "{command:?} -h: a line over 100: {l}"
            );
        }
        let mut long_args = command.clone();
        long_args.push("--help");
        let long = racegate(&long_args).run().text();
        assert!(
            long.len() > short.len(),
            "{command:?}: --help is no longer than -h"
        );
    }
    // The long text of an option is in --help only; -h has its first sentence.
    let (short, long) = (
        racegate(["gate", "-h"]).run().text(),
        racegate(["gate", "--help"]).run().text(),
    );
    let whole = "By default a kernel launched more than 6 times is sampled";
    assert!(long.contains(whole), "{long}");
    assert!(!short.contains(whole), "{short}");
    assert!(
        short.contains("--every-launch") && short.contains("Check every kernel launch"),
        "{short}"
    );
    // Options sit under headings.
    for heading in ["Runs and deadlines:", "Detectors:", "Reports:", "Baseline:"] {
        assert!(short.contains(heading), "{heading}\n{short}");
    }
}

#[test]
fn the_tool_list_of_help_readme_and_parser_is_one() {
    // --help: each tool with its description, for every command that takes tools.
    for args in [
        ["gate", "--help"],
        ["sanitize", "--help"],
        ["mutate", "--help"],
    ] {
        let help = racegate(args).run().text();
        for t in Tool::ALL {
            let line = format!("{}: {}", t.name(), t.describe());
            assert!(help.contains(&line), "{args:?} lacks `{line}`\n{help}");
        }
    }
    // The parser: every name accepted (a usage error would be exit 2 before any work), and an
    // unknown one refused naming exactly the list.
    let err = racegate(["gate", "--tools", "racechek", "--", "true"])
        .run()
        .text();
    let names: Vec<&str> = Tool::ALL.iter().map(|t| t.name()).collect();
    assert!(
        err.contains(&format!("[possible values: {}]", names.join(", "))),
        "{err}"
    );
    for t in Tool::ALL {
        assert_eq!(Tool::from_name(t.name()), Some(t));
    }
    // The README's table: the same tools, in the same order, with the same words.
    let readme = std::fs::read_to_string(super::package_dir().join("../README.md")).unwrap();
    let rows: Vec<String> = readme
        .lines()
        .skip_while(|l| *l != "| tool | finds |")
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .map(str::to_string)
        .collect();
    let want: Vec<String> = Tool::ALL
        .iter()
        .map(|t| format!("| `{}` | {} |", t.name(), t.describe()))
        .collect();
    assert_eq!(rows, want, "README's detector table");
    // The README's lists of tools in prose: `sanitize --tool` takes every tool; a crate's trials
    // and `mutate` run a kernel's (`Tool::KERNELS`), in the same order.
    let names =
        |tools: &[Tool], sep: &str| tools.iter().map(|t| t.name()).collect::<Vec<_>>().join(sep);
    for list in [
        format!("--tool {}", names(&Tool::ALL, "\\|")),
        format!("`KERNEL::{}`", names(&Tool::KERNELS, "|")),
        format!("{} (`--tools` picks)", names(&Tool::KERNELS, ", ")),
    ] {
        assert!(readme.contains(&list), "the README lacks `{list}`");
    }
    // No count of tools written in prose where the code says otherwise.
    for stale in ["all five", "four sanitizers and globalcheck", "all six"] {
        assert!(!readme.contains(stale), "README says `{stale}`");
    }
}
