//! `racegate report RESULT.json --html DIR`: a saved result (`check --json`, `gate --json`,
//! `grade --json`) rendered as the HTML report, in English or Korean.

use std::path::PathBuf;

use crate::errors::{exit, Error};
use crate::report::html;
use crate::Result;

use super::settings::{self, Global};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A result racegate wrote with `--json` (check, gate or grade); `-` reads standard input.
    result: PathBuf,
    /// Write the report here: `index.html` and one page per finding (or submission). Nothing
    /// outside the folder is referenced (no CDN, no script).
    #[arg(long, value_name = "DIR")]
    html: PathBuf,
    #[command(flatten)]
    lang: super::flags::LangArg,
    /// A course section to read, shown beside every fix hint (e.g. "2.8 동기화 I").
    #[arg(long, value_name = "SECTION")]
    see: Option<String>,
}

pub const HELP: &str = "Examples:
  racegate check --json check.json && racegate report check.json --html report/
  racegate gate --json gate.json; racegate report gate.json --html gate-report/ --lang ko
  racegate grade --json grades.json submissions/ && racegate report grades.json --html feedback/ --see '2.8 동기화 I'

Exit codes: 0 the report was written, 2 bad input (a file that is no result racegate wrote, a folder \
that cannot be written).";

pub fn run(global: &Global, a: ReportArgs) -> Result<u8> {
    let text = if a.result.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|source| {
            Error::Io {
                action: "reading",
                path: "standard input".into(),
                source,
            }
        })?;
        s
    } else {
        std::fs::read_to_string(&a.result).map_err(|source| Error::Io {
            action: "reading",
            path: a.result.clone(),
            source,
        })?
    };
    let doc: serde_json::Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| Error::input(format!("{}: not JSON", a.result.display()), e))?;
    let root = settings::root_or_cwd(global);
    let lang = a.lang.get();
    let pages = html::render(&doc, &root, lang, a.see.as_deref())
        .map_err(|e| Error::Usage(format!("{}: {e}", a.result.display())))?;
    html::write(&a.html, &pages).map_err(|source| Error::Io {
        action: "writing the report into",
        path: a.html.clone(),
        source,
    })?;
    eprintln!(
        "wrote {} page(s) into {} ({})",
        pages.len(),
        crate::report::visible::visible_path(&a.html),
        crate::report::visible::visible_path(&a.html.join("index.html"))
    );
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result file that is not JSON is bad input (exit 2); the parser's line and column are
    /// the error's cause and printed once.
    #[test]
    fn a_result_that_is_not_json_keeps_the_parsers_reason() {
        let d = tempfile::tempdir().unwrap();
        let result = d.path().join("result.json");
        std::fs::write(&result, "{\n  \"verdict\": ,\n}\n").unwrap();
        let global = Global {
            root: Some(d.path().to_path_buf()),
            manifest: None,
        };
        let a = ReportArgs {
            result: result.clone(),
            html: d.path().join("out"),
            lang: super::super::flags::LangArg { lang: None },
            see: None,
        };
        let e = run(&global, a).unwrap_err();
        let cause = std::error::Error::source(&e);
        assert!(
            cause.is_some_and(|c| c.downcast_ref::<serde_json::Error>().is_some()),
            "{e:?}"
        );
        let shown = e.chain().to_string();
        assert_eq!(
            shown,
            format!(
                "{}: not JSON: expected value at line 2 column 14",
                result.display()
            )
        );
        assert_eq!(e.exit_code(), crate::errors::exit::USAGE);
    }
}
