//! Help in two lengths, as ripgrep and nextest give it: `-h` prints one short line per option
//! (its first sentence, cut to fit [`SHORT`] characters), grouped under headings ([`heading`]),
//! and `--help` the whole text of each. Applied to the parser once, before parsing
//! ([`shaped`]), so every command's options get it without a second definition of any.

use clap::Command;

/// The most characters of an option's short help (`-h`): with the widest option column
/// (`--sanitize-timeout <SECONDS>`) a line stays within 100 characters.
pub const SHORT: usize = 58;

/// The parser with short helps and headings on every option of every command.
pub fn shaped(cmd: Command) -> Command {
    // A command's `-h` opens with its first sentence; `--help` with the whole text.
    let cmd = match cmd.get_about().map(|h| h.to_string()) {
        Some(full) if cmd.get_long_about().is_none() && short_help(&full) != full => {
            let short = short_help(&full);
            cmd.about(short).long_about(full)
        }
        _ => cmd,
    };
    cmd.mut_args(|a| {
        let id = a.get_id().as_str().to_string();
        // Possible values with their descriptions in `--help` only (the list clap keeps, e.g.
        // [`crate::judge::sanitize::Tool::ALL`]); `-h` stays one line per option.
        let values: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| match v.get_help() {
                Some(h) => format!("  {}: {h}", v.get_name()),
                None => format!("  {}", v.get_name()),
            })
            .collect();
        let listed =
            !values.is_empty() && a.get_action().takes_values() && !a.is_hide_possible_values_set();
        let a = if listed {
            a.hide_possible_values(true)
        } else {
            a
        };
        // The default clap appends to the line comes out of the short help's room.
        let shown_default: usize = a
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().chars().count() + 2)
            .sum::<usize>()
            + if a.get_default_values().is_empty() {
                0
            } else {
                11
            };
        let room = SHORT.saturating_sub(shown_default).max(24);
        let short_help = |full: &str| short_help_within(full, room);
        let a = match a.get_help().map(|h| h.to_string()) {
            Some(full) if listed => {
                let long = a
                    .get_long_help()
                    .map_or_else(|| full.clone(), |l| l.to_string());
                a.help(short_help(&full))
                    .long_help(format!("{long}\n\nPossible values:\n{}", values.join("\n")))
            }
            Some(full) => {
                let short = short_help(&full);
                if short == full || a.get_long_help().is_some() {
                    a.help(short)
                } else {
                    a.help(short).long_help(full)
                }
            }
            None => a,
        };
        // A number's placeholder says what it counts (`--sanitize-timeout <SECONDS>`, not the
        // option's name again), which also keeps the option column narrow.
        let named_by_id = a
            .get_value_names()
            .is_none_or(|n| n.len() == 1 && n[0].as_str() == id.to_uppercase());
        let a = match placeholder(&id) {
            Some(p) if named_by_id && a.get_action().takes_values() => a.value_name(p),
            _ => a,
        };
        // Fine-tuning flags are in `--help` only.
        let hidden = a.is_hide_short_help_set() || TUNING.contains(&id.as_str());
        let a = a.hide_short_help(hidden);
        match (a.get_help_heading(), heading(&id)) {
            (None, Some(h)) => a.help_heading(h),
            _ => a,
        }
    })
    .mut_subcommands(shaped)
}

/// `text` wrapped at `width` columns, line by line, at spaces (a word longer than that stays
/// whole).
pub fn wrapped(text: &str, width: usize) -> String {
    text.lines()
        .map(|l| wrapped_line(l, width))
        .collect::<Vec<_>>()
        .join("\n")
}

fn wrapped_line(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut col = 0;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        if col > 0 && col + 1 + w > width {
            out.push('\n');
            col = 0;
        } else if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += w;
    }
    out
}

/// The placeholder of a numeric option whose definition names none.
fn placeholder(id: &str) -> Option<&'static str> {
    if id.ends_with("timeout") || id.ends_with("budget") || id == "gpu_wait" {
        Some("SECONDS")
    } else if id.ends_with("memory") {
        Some("MIB")
    } else if matches!(id, "trials" | "runs" | "jobs" | "seed") {
        Some("N")
    } else {
        None
    }
}

/// The first sentence of a help text, its whitespace made single, without the closing period
/// (a period after `e.g`, `i.e` or `etc` ends no sentence).
fn first_sentence(full: &str) -> String {
    let flat: String = full.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = flat.match_indices(". ").map(|(i, _)| i).find(|&i| {
        let before = &flat[..i];
        !["e.g", "i.e", "etc", "vs"]
            .iter()
            .any(|a| before.ends_with(a))
    });
    match end {
        Some(i) => flat[..i].to_string(),
        None => flat.trim_end_matches('.').to_string(),
    }
}

/// `s` without an unclosed `(` and what follows it, and without trailing blanks or commas.
fn balanced(s: &str) -> &str {
    let mut depth = 0i32;
    let mut open = None;
    for (i, c) in s.char_indices() {
        match c {
            '(' => {
                if depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            ')' => depth -= 1,
            _ => {}
        }
    }
    let s = match (depth > 0, open) {
        (true, Some(i)) => &s[..i],
        _ => s,
    };
    s.trim_end_matches([' ', ',', ';', ':'])
}

/// An option's `-h` line: its first sentence, without the closing period, cut before
/// [`SHORT`] characters at a clause (`; `, ` (`, `: `, `, `) or else a word, with `...`.
pub fn short_help(full: &str) -> String {
    short_help_within(full, SHORT)
}

/// [`short_help`] within `max` characters.
pub fn short_help_within(full: &str, max: usize) -> String {
    let max = max.max(8);
    let sentence = first_sentence(full);
    let first = sentence.as_str();
    if first.chars().count() <= max {
        return first.to_string();
    }
    let fits = |i: usize| first[..i].chars().count() <= max;
    for sep in ["; ", ": ", " (", " - ", ", "] {
        if let Some(i) = first
            .match_indices(sep)
            .map(|(i, _)| i)
            .filter(|&i| fits(i))
            .last()
        {
            let cut = balanced(&first[..i]);
            if cut.chars().count() >= 12 {
                return cut.to_string();
            }
        }
    }
    let mut cut = first
        .char_indices()
        .map(|(i, _)| i)
        .take_while(|&i| first[..i].chars().count() <= max - 3)
        .filter(|&i| first[i..].starts_with(' '))
        .last()
        .unwrap_or(0);
    if cut == 0 {
        cut = first
            .char_indices()
            .nth(max - 3)
            .map_or(first.len(), |(i, _)| i);
    }
    format!("{}...", balanced(&first[..cut]))
}

/// Options that tune a default rather than choose what runs: listed by `--help` only.
const TUNING: [&str; 4] = [
    "shrink_budget",
    "check_timeout",
    "compile_memory",
    "gpu_wait",
];

/// The heading an option is listed under, by its id (`None`: clap's own "Options"); one table
/// for every command, so a flag shared by several sits under the same heading in each.
pub fn heading(id: &str) -> Option<&'static str> {
    Some(match id {
        "root" | "manifest" | "exercise" | "entry" | "rubric" | "help" | "partition" => "Input",
        "baseline" | "update_baseline" => "Baseline",
        "trials" | "runs" | "seed" | "timeout" | "sanitize_timeout" | "stress_timeout" | "jobs"
        | "every_launch" | "no_jitter" | "no_shrink" | "shrink_budget" | "compile_timeout"
        | "compile_memory" | "gpu_wait" | "exclusive_gpu" | "budget" => "Runs and deadlines",
        "tools"
        | "tool"
        | "sanitizer_arg"
        | "keep_library_reports"
        | "operators"
        | "run"
        | "no_compile" => "Detectors",
        "mask" | "no_builtin_masks" | "expect" | "bless" | "check" | "check_timeout"
        | "pass_regex" | "fail_regex" | "will_fail" => "A program's oracle",
        "ctest" | "tests_regex" => "CTest",
        "sarif" | "junit" | "codequality" | "summary" | "html" | "lang" | "json" | "github"
        | "format" | "output" | "table" => "Reports",
        "secret_file" | "allow_unconfined" => "Grading",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_help_is_the_first_sentence_cut_at_a_clause() {
        assert_eq!(
            short_help("Stress trials per kernel."),
            "Stress trials per kernel"
        );
        assert_eq!(
            short_help("Accept every current finding: write the baseline from this run. More."),
            "Accept every current finding"
        );
        let long = "Check every kernel launch of a program under the tools. By default ...";
        assert_eq!(
            short_help(long),
            "Check every kernel launch of a program under the tools"
        );
        // A parenthesis is never left open, and `e.g.` ends no sentence.
        assert_eq!(
            short_help("The baseline file (default: racegate-baseline.json beside the manifest, e.g. `./x`)."),
            "The baseline file"
        );
        // No clause to cut at: a word, and `...`.
        let words = "alpha ".repeat(30);
        let s = short_help(&words);
        assert!(s.ends_with("...") && s.chars().count() <= SHORT, "{s}");
        // Every short help fits, whatever the text.
        for text in [
            "x".repeat(200),
            "日本語の説明".repeat(20),
            "a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t, u, v, w, x, y, z".into(),
        ] {
            assert!(short_help(&text).chars().count() <= SHORT, "{text}");
        }
    }
}
