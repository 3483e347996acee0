//! Program counter -> source line, from `nvdisasm --print-line-info -c` on a module's cubin
//! (built with `-lineinfo`). nvdisasm prints each function as `.text.NAME:` followed by its
//! instructions (`/*0040*/ ...`), each run of them preceded by
//! `//## File "PATH", line N` (and `inlined at "PATH", line M` for inlined code).

use std::collections::BTreeMap;

/// One source position, innermost first: `[(file, line), (file it was inlined into, line), ...]`.
pub type Position = Vec<(String, u32)>;

/// A module's line table: function -> (instruction offset -> position), and the offsets of the
/// strong (volatile or relaxed-atomic, device or system scope) loads and stores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineTable {
    pub functions: BTreeMap<String, BTreeMap<u64, Position>>,
    /// function -> offsets of `LD*/ST*.STRONG.GPU` and `.STRONG.SYS` instructions: `volatile`
    /// accesses and `cuda::atomic_ref` relaxed loads and stores compile to them. Two strong
    /// accesses do not make a data race (the PTX memory model calls them morally strong).
    pub strong: BTreeMap<String, std::collections::BTreeSet<u64>>,
    /// Functions with a strong load or store (`LD`/`LDG`/`ST`/`STG` with `.STRONG` at any scope,
    /// atomics left out): a volatile flag, a relaxed or acquire/release `cuda::atomic_ref`
    /// load or store. The device side sees those as plain accesses, so a handoff through them
    /// is invisible to it.
    pub strong_load_store: std::collections::BTreeSet<String>,
    /// function -> offsets of the plain shared loads that open a compare-and-swap loop: an
    /// `LDS` whose address an `ATOMS.CAS*` on the same operand uses within the next
    /// [`CAS_WINDOW`] instructions. A float or double `atomicAdd` (and any atomic the GPU has
    /// no instruction for) on shared memory compiles to such a loop on sm_90 (`LDS R2, [R8]`,
    /// `FADD`, `ATOMS.CAST.SPIN R3, [R8], R2, R3`, branch back): the load is the atomic's own
    /// read of the old value, and a stale one only makes the swap fail and retry. sharedcheck
    /// does not take it as a plain access racing the atomic.
    pub atomic_emulation: BTreeMap<String, std::collections::BTreeSet<u64>>,
    /// function -> offsets of exchanges whose old value is thrown away (`ATOMS.EXCH RZ, ...`,
    /// or a generic `ATOM.E.EXCH RZ, ...` that reached shared memory): such an `atomicExch` only
    /// stores, so sharedcheck does not take one on unwritten bytes as an uninitialized read. One
    /// whose old value goes to a register (`old = atomicExch(&head, x)`) reads it: not listed.
    pub exchanges: BTreeMap<String, std::collections::BTreeSet<u64>>,
}

/// How many instructions after an `LDS` an `ATOMS.CAS*` on its address still makes it the
/// loop's load (nvcc 13.0 puts one to three between them: the operation, a move).
pub const CAS_WINDOW: usize = 4;

impl LineTable {
    /// Reads nvdisasm's text.
    pub fn parse(text: &str) -> LineTable {
        let mut t = LineTable::default();
        let mut func: Option<String> = None;
        let mut pos: Option<Position> = None;
        // LDS instructions not yet matched: (offset, address operand, instructions left).
        let mut loads: Vec<(u64, String, usize)> = Vec::new();
        for raw in text.lines() {
            let l = raw.trim();
            if let Some(name) = l.strip_prefix(".text.").and_then(|s| s.strip_suffix(':')) {
                if !name.contains(char::is_whitespace) {
                    func = Some(name.to_string());
                    pos = None;
                    loads.clear();
                    continue;
                }
            }
            if let Some(rest) = l.strip_prefix("//## File ") {
                pos = Some(parse_position(rest));
                continue;
            }
            if let Some(f) = &func {
                if let Some(off) = instruction_offset(l) {
                    if let Some(p) = &pos {
                        t.functions
                            .entry(f.clone())
                            .or_default()
                            .insert(off, p.clone());
                    }
                    if l.contains(".STRONG.GPU") || l.contains(".STRONG.SYS") {
                        t.strong.entry(f.clone()).or_default().insert(off);
                    }
                    // Any scope here, block scope (`.STRONG.SM`) included: a handoff between
                    // warps through a block-scope atomic_ref is just as invisible.
                    if l.contains(".STRONG.") && is_load_or_store(l) {
                        t.strong_load_store.insert(f.clone());
                    }
                    let (op, addr) = opcode_and_address(l);
                    if is_discarded_exchange(l, op) {
                        t.exchanges.entry(f.clone()).or_default().insert(off);
                    }
                    if op.starts_with("ATOMS.CAS") {
                        for (at, _, _) in loads.iter().filter(|(_, a, _)| Some(a.as_str()) == addr)
                        {
                            t.atomic_emulation.entry(f.clone()).or_default().insert(*at);
                        }
                    }
                    loads.retain_mut(|(_, _, left)| {
                        *left -= 1;
                        *left > 0
                    });
                    if op == "LDS" || op.starts_with("LDS.") {
                        if let Some(a) = addr {
                            loads.push((off, a.to_string(), CAS_WINDOW));
                        }
                    }
                }
            }
        }
        t
    }

    /// Whether the instruction at `offset` in `function` is a strong load or store.
    pub fn is_strong(&self, function: &str, offset: u64) -> bool {
        self.strong
            .get(function)
            .is_some_and(|s| s.contains(&offset))
    }

    /// Whether the instruction at `offset` in `function` is a shared-memory exchange
    /// ([`LineTable::exchanges`]).
    pub fn is_exchange(&self, function: &str, offset: u64) -> bool {
        self.exchanges
            .get(function)
            .is_some_and(|s| s.contains(&offset))
    }

    /// Whether the instruction at `offset` in `function` is the plain load of a
    /// compare-and-swap loop ([`LineTable::atomic_emulation`]).
    pub fn is_atomic_emulation(&self, function: &str, offset: u64) -> bool {
        self.atomic_emulation
            .get(function)
            .is_some_and(|s| s.contains(&offset))
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

/// Whether the instruction on line `l` (`/*0090*/ [@P0] MNEMONIC.MODIFIERS ...;`) is a global or
/// generic load or store, not an atomic or a reduction.
fn is_load_or_store(l: &str) -> bool {
    let after = l.find("*/").map_or(l, |i| &l[i + 2..]);
    let op = after
        .split_whitespace()
        .find(|t| !t.starts_with('@'))
        .unwrap_or("");
    let name = op.split('.').next().unwrap_or("");
    matches!(name, "LD" | "LDG" | "ST" | "STG")
}

/// The mnemonic of the instruction on line `l` (predicate left out) and its first memory
/// operand (`[R8]`, `[R2+UR4]`), if any.
fn opcode_and_address(l: &str) -> (&str, Option<&str>) {
    let after = l.find("*/").map_or(l, |i| &l[i + 2..]);
    let op = after
        .split_whitespace()
        .find(|t| !t.starts_with('@'))
        .unwrap_or("");
    let addr = after
        .find('[')
        .and_then(|s| after[s..].find(']').map(|e| &after[s..s + e + 1]));
    (op, addr)
}

/// Whether the instruction on line `l`, of mnemonic `op`, is an exchange (shared or generic)
/// whose destination register is `RZ` (the old value discarded).
fn is_discarded_exchange(l: &str, op: &str) -> bool {
    let exchange = op.starts_with("ATOMS.") || op.starts_with("ATOM.");
    if !exchange || !op.split('.').any(|m| m == "EXCH") {
        return false;
    }
    let after = l.find("*/").map_or(l, |i| &l[i + 2..]);
    let mut words = after.split_whitespace().skip_while(|t| t.starts_with('@'));
    words.next(); // the mnemonic
    words.next().map(|d| d.trim_end_matches(',')) == Some("RZ")
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

    /// From `nvdisasm -c` of a kernel built here by nvcc 13.0 for sm_90: a plain store, a
    /// volatile store and load, a relaxed `cuda::atomic_ref` store and load, a plain load.
    const STRONG: &str = r#"
.text._Z1kPViPiS1_:
        /*0070*/                   STG.E desc[UR4][R2.64], R17 ;
        /*0080*/                   STG.E.STRONG.SYS desc[UR4][R4.64], R17 ;
        /*0090*/                   LDG.E.STRONG.SYS R13, desc[UR4][R4.64+0x4] ;
        /*00f0*/                   ST.E.STRONG.GPU desc[UR4][R8.64+0x14], R19 ;
        /*0100*/                   LD.E.STRONG.GPU R15, desc[UR4][R8.64+0x14] ;
        /*0120*/                   LDG.E R11, desc[UR4][R10.64+0x1c] ;
"#;

    #[test]
    fn volatile_and_relaxed_atomic_accesses_are_strong_plain_ones_are_not() {
        let t = LineTable::parse(STRONG);
        let f = "_Z1kPViPiS1_";
        let strong: Vec<u64> = [0x70, 0x80, 0x90, 0xf0, 0x100, 0x120]
            .into_iter()
            .filter(|o| t.is_strong(f, *o))
            .collect();
        assert_eq!(strong, vec![0x80, 0x90, 0xf0, 0x100]);
        assert!(t.strong_load_store.contains(f));
    }

    #[test]
    fn an_atomic_alone_is_no_strong_load_or_store() {
        let t = LineTable::parse(
            ".text._Z1kPi:\n        /*0070*/                   REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R5 ;\n        /*0080*/              @P0   ATOMG.E.EXCH.STRONG.GPU PT, R7, desc[UR4][R2.64], R5 ;\n        /*0090*/              @!P1  LDG.E R13, desc[UR4][R4.64] ;\n",
        );
        assert!(t.is_strong("_Z1kPi", 0x70));
        assert!(t.strong_load_store.is_empty());
        let v = LineTable::parse(
            ".text._Z1vPi:\n        /*0090*/              @!P1  LDG.E.STRONG.SYS R13, desc[UR4][R4.64] ;\n",
        );
        assert!(v.strong_load_store.contains("_Z1vPi"));
        let sm = LineTable::parse(
            ".text._Z1wPi:\n        /*0090*/                   ST.E.STRONG.SM desc[UR4][R4.64], R3 ;\n",
        );
        assert!(sm.strong_load_store.contains("_Z1wPi"));
        assert!(
            !sm.is_strong("_Z1wPi", 0x90),
            "block scope is no pair-filter strong access"
        );
    }

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

    /// From `nvdisasm -c` (13.2) of cubins built here by nvcc 13.0 for sm_90: the corpus's
    /// deposit_mass (a float atomicAdd into shared bins, then a plain read of them to flush) and
    /// a double atomicAdd beside a native integer atomicMax.
    const CAS_LOOPS: &str = r#"
.text.deposit_mass:
        /*0260*/                   IMAD R8, R2, 0x4, R9 ;
.L_x_6:
        /*0270*/                   LDS R2, [R8] ;
        /*0280*/                   FADD R3, R5, R2 ;
        /*0290*/                   ATOMS.CAST.SPIN R3, [R8], R2, R3 ;
        /*02a0*/                   ISETP.EQ.U32.AND P0, PT, R3, 0x1, PT ;
        /*02b0*/              @!P0 BRA `(.L_x_6) ;
        /*02c0*/                   BSYNC B1 ;
        /*03b0*/                   LDS R7, [R2] ;
        /*03c0*/                   FSETP.NEU.AND P0, PT, R7, RZ, PT ;
.text.k:
        /*0160*/                   LDS.64 R4, [R9] ;
        /*0170*/                   DADD R6, R4, 1 ;
        /*0180*/                   ATOMS.CAST.SPIN.64 R6, [R9], R4, R6 ;
        /*0240*/                   ATOMS.MAX.S32 RZ, [R6], R7 ;
        /*0280*/                   LDS R6, [R4] ;
        /*0290*/                   NOP ;
        /*0300*/                   NOP ;
        /*0310*/                   NOP ;
        /*0320*/                   NOP ;
        /*0330*/                   ATOMS.CAST.SPIN R7, [R4], R6, R7 ;
        /*0340*/                   LDS R3, [R3+UR5] ;
        /*0350*/                   ATOMS.CAST.SPIN R7, [R4], R6, R7 ;
"#;

    #[test]
    fn only_an_exchange_that_discards_the_old_value_is_a_plain_store() {
        let t = LineTable::parse(
            ".text.k:\n\
             \t/*00b0*/                   ATOMS.EXCH RZ, [UR4], RZ ;\n\
             \t/*00c0*/                   ATOMS.EXCH R5, [R2], R3 ;\n\
             \t/*00d0*/               @P0 ATOM.E.EXCH.STRONG.GPU RZ, [R4.64], R7 ;\n\
             \t/*00e0*/                   ATOMS.ADD RZ, [R2], R3 ;\n\
             \t/*00f0*/                   ATOMS.CAS R5, [R2], R3, R4 ;\n",
        );
        assert!(t.is_exchange("k", 0xb0));
        assert!(!t.is_exchange("k", 0xc0), "its old value is used");
        assert!(
            t.is_exchange("k", 0xd0),
            "a generic exchange into shared memory"
        );
        assert!(!t.is_exchange("k", 0xe0) && !t.is_exchange("k", 0xf0));
    }

    #[test]
    fn the_load_of_a_compare_and_swap_loop_is_told_from_a_plain_read() {
        let t = LineTable::parse(CAS_LOOPS);
        // The float and double atomicAdd loops' loads.
        assert!(t.is_atomic_emulation("deposit_mass", 0x270));
        assert!(t.is_atomic_emulation("k", 0x160));
        // The flush's plain read of a bin, a load on another address just before a swap, and a
        // load too far from the swap on its address stay plain accesses.
        assert!(!t.is_atomic_emulation("deposit_mass", 0x3b0));
        assert!(!t.is_atomic_emulation("k", 0x340));
        assert!(!t.is_atomic_emulation("k", 0x280));
        assert_eq!(
            t.atomic_emulation.values().map(|s| s.len()).sum::<usize>(),
            2
        );
    }
}
