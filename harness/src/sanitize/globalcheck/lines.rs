//! Program counter -> source line, from `nvdisasm --print-line-info -c` on a module's cubin
//! (built with `-lineinfo`). nvdisasm prints each function as `.text.NAME:` followed by its
//! instructions (`/*0040*/ ...`), each run of them preceded by
//! `//## File "PATH", line N` (and `inlined at "PATH", line M` for inlined code).

use std::collections::BTreeMap;

/// One source position, innermost first: `[(file, line), (file it was inlined into, line), ...]`.
pub type Position = Vec<(String, u32)>;

/// A module's line table: function -> (instruction offset -> position).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineTable {
    pub functions: BTreeMap<String, BTreeMap<u64, Position>>,
}

impl LineTable {
    /// Reads nvdisasm's text.
    pub fn parse(text: &str) -> LineTable {
        let mut t = LineTable::default();
        let mut func: Option<String> = None;
        let mut pos: Option<Position> = None;
        for raw in text.lines() {
            let l = raw.trim();
            if let Some(name) = l.strip_prefix(".text.").and_then(|s| s.strip_suffix(':')) {
                if !name.contains(char::is_whitespace) {
                    func = Some(name.to_string());
                    pos = None;
                    continue;
                }
            }
            if let Some(rest) = l.strip_prefix("//## File ") {
                pos = Some(parse_position(rest));
                continue;
            }
            if let (Some(f), Some(p)) = (&func, &pos) {
                if let Some(off) = instruction_offset(l) {
                    t.functions
                        .entry(f.clone())
                        .or_default()
                        .insert(off, p.clone());
                }
            }
        }
        t
    }

    /// The position of the instruction at `offset` in `function` (or of the nearest one
    /// before it).
    pub fn locate(&self, function: &str, offset: u64) -> Option<&Position> {
        self.functions
            .get(function)?
            .range(..=offset)
            .next_back()
            .map(|(_, p)| p)
    }
}

/// `"PATH", line N inlined at "PATH2", line M ...` -> [(PATH, N), (PATH2, M)].
fn parse_position(s: &str) -> Position {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find('"') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('"') else { break };
        let file = after[..end].to_string();
        let tail = &after[end + 1..];
        let line = tail
            .trim_start_matches([',', ' '])
            .strip_prefix("line ")
            .map(|x| {
                x.chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect::<String>()
            })
            .and_then(|d| d.parse().ok());
        if let Some(line) = line {
            out.push((file, line));
        }
        rest = tail;
    }
    out
}

/// `/*0040*/ ...` -> 0x40.
fn instruction_offset(l: &str) -> Option<u64> {
    let inner = l.strip_prefix("/*")?;
    let end = inner.find("*/")?;
    let hex = &inner[..end];
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    // Data sections print offsets the same way; only instructions end with ';'.
    if !l.trim_end().ends_with(';') {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
.text._Z13counter_plaini:
	//## File "/w/examples/globalcheck/global_races.cu", line 14
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File "/w/examples/globalcheck/global_races.cu", line 18
        /*00a0*/                   LDG.E R0, desc[UR4][R2.64] ;
        /*00b0*/                   IADD3 R5, R0, 0x1, RZ ;
	//## File "/usr/local/cuda/include/device_atomic_functions.hpp", line 90 inlined at "/w/k.cu", line 27
        /*00c0*/                   STG.E desc[UR4][R2.64], R5 ;
.L_x_25:
        /*00e0*/                   BRA `(.L_x_25);
"#;

    #[test]
    fn offsets_map_to_the_line_above_them_and_inlining_keeps_every_level() {
        let t = LineTable::parse(SAMPLE);
        let f = "_Z13counter_plaini";
        assert_eq!(t.locate(f, 0xa0).unwrap()[0].1, 18);
        assert_eq!(t.locate(f, 0xb0).unwrap()[0].1, 18);
        let inl = t.locate(f, 0xc0).unwrap();
        assert_eq!(inl.len(), 2);
        assert_eq!(inl[1], ("/w/k.cu".to_string(), 27));
        assert!(t.locate("other", 0).is_none());
    }
}
