//! Text made safe to show: control characters and characters that reorder or hide text become
//! visible `\xNN`, for the terminal (`cli/output.rs`) and HTML (`html/`) alike.

use std::fmt::Write as _;
use std::path::Path;

/// Text safe to show on a terminal or in a page: every control character but newline and tab
/// (`char::is_control`: C0, DEL, C1, so every escape sequence's ESC) becomes a visible `\xNN`,
/// so a compile log's, a program's or a file name's colours and cursor moves never reach a
/// reader raw. One function for the terminal (`cli/output.rs`) and HTML (`html/`).
pub fn visible(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_visible(&mut out, s);
    out
}

/// [`visible`] for bytes that may not be UTF-8: each invalid byte is shown as `\xNN` too.
pub fn visible_bytes(b: &[u8]) -> String {
    visible(&crate::gate::masks::bytes_as_text(b))
}

/// [`visible_bytes`] of a path's bytes, as a file name reaches the terminal.
pub fn visible_path(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    visible_bytes(p.as_os_str().as_bytes())
}

/// Characters that change how the rest of a line displays without showing themselves: bidi
/// overrides and isolates, zero-width spaces and joiners, marks, the BOM (a name written with
/// them can read as another name).
fn invisible_format(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}' | '\u{061c}')
}

fn push_visible(out: &mut String, s: &str) {
    for c in s.chars() {
        if (c.is_control() && c != '\n' && c != '\t') || invisible_format(c) {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{visible, visible_bytes};

    /// Every character of the Unicode format class that can make a name read as another (bidi
    /// overrides and isolates, zero-width spaces and joiners, marks, the BOM) is shown as its
    /// code, never passed through; letters around it stay.
    #[test]
    fn characters_that_reorder_or_hide_text_are_shown() {
        let class = ('\u{200b}'..='\u{200f}')
            .chain('\u{202a}'..='\u{202e}')
            .chain('\u{2060}'..='\u{2069}')
            .chain(['\u{feff}', '\u{061c}']);
        for c in class {
            let out = visible(&format!("a{c}b"));
            assert!(!out.contains(c), "U+{:04X} passed: {out:?}", u32::from(c));
            assert_eq!(out, format!("a\\x{:02x}b", u32::from(c)));
        }
        assert_eq!(visible("공유 메모리 é"), "공유 메모리 é");
    }

    /// Every byte alone, and after valid text: controls but newline and tab, and every byte
    /// that is not UTF-8, come out as `\xNN`; nothing raw but newline and tab is left.
    #[test]
    fn every_byte_is_shown_safely() {
        for b in 0u8..=255 {
            for prefix in [&b""[..], b"ok ", "\u{e9}".as_bytes()] {
                let mut input = prefix.to_vec();
                input.push(b);
                let out = visible_bytes(&input);
                assert!(
                    out.chars()
                        .all(|c| !c.is_control() || c == '\n' || c == '\t'),
                    "{b:#04x}: {out:?}"
                );
                let raw = (b as char).is_control() && b != b'\n' && b != b'\t';
                if raw || b >= 0x80 {
                    assert!(out.ends_with(&format!("\\x{b:02x}")), "{b:#04x}: {out:?}");
                } else {
                    assert!(out.ends_with(b as char), "{b:#04x}: {out:?}");
                }
            }
        }
        assert_eq!(
            visible("a\u{1b}[31mred\u{9b}\n\t"),
            "a\\x1b[31mred\\x9b\n\t"
        );
        assert_eq!(
            visible(&visible("\u{7f}")),
            "\\x7f",
            "escaping twice changes nothing"
        );
    }
}
