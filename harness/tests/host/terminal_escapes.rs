//! `terminal_escapes::<name>`: no control character reaches the terminal raw. Every one in a
//! kernel's file name (in `list`'s table and in an error) and every byte a gated program writes
//! is shown as a visible `\xNN`.

use crate::runner::racegate;

/// The bytes of `out` that are control characters other than newline and tab.
fn raw_controls(out: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(out)
        .chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .map(|c| c as u32 as u8)
        .collect()
}

/// Every control character (C0 but NUL, newline and tab; DEL; C1) in a kernel's file name reaches `list`'s table and a
/// not-found error as a visible `\xNN`, never raw.
#[test]
fn control_characters_of_file_names_are_escaped_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let controls: Vec<char> = (0u32..=0x9f)
        .filter_map(char::from_u32)
        .filter(|c| c.is_control() && !['\0', '\t', '\n'].contains(c))
        .collect();
    let mut text = String::new();
    for (i, c) in controls.iter().enumerate() {
        let file = format!("k{c}[31m{i}.cu");
        std::fs::write(dir.path().join(&file), crate::exit_codes::GOOD).unwrap();
        text.push_str(&format!(
            "[[kernel]]\nname = \"k{i}\"\nsource = \"k\\u{:04x}[31m{i}.cu\"\nentry = \"k\"\n\
             sizes = {{ n = [1, 9] }}\ngrid = [\"1\"]\nblock = [\"1\"]\noracle = \"determinism\"\n\
             args = [{{ name = \"y\", kind = \"out\", type = \"f32\", len = \"n\" }}, \
             {{ name = \"n\", kind = \"scalar\", type = \"i32\", value = \"n\" }}]\n",
            *c as u32
        ));
    }
    std::fs::write(dir.path().join("racegate.toml"), &text).unwrap();
    let out = racegate(["list"]).at(dir.path()).output();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        raw_controls(&out.stdout),
        b"",
        "raw control characters in the table"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("k\\x1b[31m"), "{stdout}");
    // Each one in an error's file name too (the file is gone).
    for (i, c) in controls.iter().enumerate() {
        std::fs::remove_file(dir.path().join(format!("k{c}[31m{i}.cu"))).unwrap();
        let out = racegate(["list"]).at(dir.path()).output();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            raw_controls(&out.stderr),
            b"",
            "U+{:04X} raw in the error",
            *c as u32
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("\\x{:02x}[31m", *c as u32)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(
            dir.path().join(format!("k{c}[31m{i}.cu")),
            crate::exit_codes::GOOD,
        )
        .unwrap();
    }
}

/// A program writing every byte 0..=255 (escape sequences included) on standard error: the
/// gate's report of it holds no raw control character.
#[test]
fn control_characters_of_a_programs_output_are_escaped_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let out = racegate([
        "gate",
        "--",
        "sh",
        "-c",
        "printf \"$(printf '\\\\%03o' $(seq 0 255) | tr -d '\\n')\" >&2; exit 3",
    ])
    .at(dir.path())
    .no_gpu()
    .output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\\x1b"),
        "the program's stderr is shown: {stdout}"
    );
    assert_eq!(raw_controls(&out.stdout), b"", "{stdout}");
    assert_eq!(
        raw_controls(&out.stderr),
        b"",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
