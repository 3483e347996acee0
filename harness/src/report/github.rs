//! GitHub Actions workflow commands for a gate run: `::error` for new findings, `::notice` for
//! accepted ones, each at its file and line.

use crate::gate::Diff;

/// One annotation per finding, new ones first, at most 20: GitHub shows only 10 of each kind
/// per step, and the summary lists them all.
pub fn annotations(d: &Diff) -> String {
    let mut out = String::new();
    for (f, kind) in d
        .new
        .iter()
        .map(|f| (f, "error"))
        .chain(d.accepted.iter().map(|f| (f, "notice")))
        .take(20)
    {
        let mut props = format!("file={}", escape_property(&f.file));
        if let Some(l) = f.line {
            props.push_str(&format!(",line={l}"));
        }
        props.push_str(&format!(
            ",title={}",
            escape_property(&format!("racegate {} ({})", f.detector(), f.subject()))
        ));
        out.push_str(&format!("::{kind} {props}::{}\n", escape_data(&f.message)));
    }
    out
}

/// The runner reads a command up to the line's end, so newlines (and `%`, the escape itself)
/// must be escaped to keep a multi-line message in one annotation.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Properties are split on `,` and `:`, so a file or title holding either must escape it too.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{diff, Baseline, GateRun};
    use crate::report::fixtures;

    #[test]
    fn annotations_escape_data_and_properties() {
        let mut f = fixtures::finding("a,b", "racecheck", "k", Some(7));
        f.message = "50% of trials\nfailed: x".into();
        f.file = "dir:x/k.cu".into();
        let r = GateRun {
            findings: vec![f],
            ..Default::default()
        };
        let d = diff(&r, &Baseline::default(), true);
        assert_eq!(
            annotations(&d),
            "::error file=dir%3Ax/k.cu,line=7,title=racegate racecheck (a%2Cb)::50%25 of trials%0Afailed: x\n"
        );
    }

    #[test]
    fn accepted_findings_are_notices_after_the_errors() {
        let r = fixtures::gate_run();
        let d = diff(&r, &fixtures::baseline(), true);
        let out = annotations(&d);
        let kinds: Vec<&str> = out.lines().map(|l| l.split(' ').next().unwrap()).collect();
        assert_eq!(kinds, ["::error", "::notice"]);
    }
}
