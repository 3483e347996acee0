//! The one C/C++ token scanner: comments, strings, digraphs, splices; accesses for mutation.
//! Part of `source/`: may import `errors` and the rest of `source/`.
//!
//! It reads comments, string and character literals (with their `L`, `u8`,
//! `u`, `U` prefixes), raw strings, numbers, identifiers, punctuators and digraphs, after line
//! splices are joined, with each token's line in the original file. It serves every reader of
//! source text that must not be fooled by what a comment or a string holds: the refusal of
//! file-system access in graded submissions ([`file_access`]), the declared signature of a kernel
//! ([`decl`]; a C++ kernel's lowered name read back into parameter types: [`mangled`]),
//! fingerprints of normalized source lines ([`normalized_lines`]) and mutation operators (each
//! token's byte span in the original text).
//!
//! It is a scanner, not a preprocessor: it does not expand macros or evaluate `#if`, so whoever
//! uses it for a security decision must decide on what is written (a `#include` inside `#if 0`
//! counts). An unterminated string or character literal ends at the end of its line, as a
//! compiler's does, so no literal can hide a following line from the scan.
//!
//! ```
//! use racegate::source::cscan::{tokens, Kind};
//! let src = "int x = 1; // a comment\n%:define S \"/* not a comment\"\n";
//! let code: Vec<String> = tokens(src)
//!     .filter(|t| t.kind != Kind::Comment)
//!     .map(|t| t.canonical().to_string())
//!     .collect();
//! assert_eq!(code, ["int", "x", "=", "1", ";", "#", "define", "S", "\"/* not a comment\""]);
//! ```

pub mod access;
pub mod decl;
pub mod mangled;
pub mod tokens;

pub use access::{file_access, literal_includes, FileAccess};
pub use tokens::{normalized_lines, tokens, Kind, Token};
