//! The SASS of a module as `nvdisasm -c` prints it (with or without `--print-line-info`):
//! each function's instructions with their offsets, and the control-flow graph between them,
//! for fencecheck's question "does every path from here to there pass a fence?".
//!
//! nvdisasm prints a function as `.text.NAME:` followed by its instructions and labels:
//!
//! ```text
//! .text.sum_lastblock:
//!         /*0350*/              @P0 BRA `(.L_x_3) ;
//!         /*0360*/                   STG.E desc[UR4][R2.64], R9 ;
//!         /*0370*/                   MEMBAR.SC.GPU ;
//! .L_x_3:
//!         /*0380*/                   EXIT ;
//! ```
//!
//! What the graph cannot follow (an indirect branch, a call into another function, a branch to
//! a label it never saw) is kept as such: [`Flow`] says so, and the caller judges nothing
//! through it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The scope of a memory fence (`MEMBAR.<SEM>.<SCOPE>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// `.CTA` (`__threadfence_block()`): orders for the block only.
    Block,
    /// `.GPU` (`__threadfence()`, `fence.acq_rel.gpu`, the fence before a release atomic).
    Gpu,
    /// `.SYS` (`__threadfence_system()`).
    System,
    /// A spelling it does not know (`.VC`, a new one): nothing is concluded through it.
    Unknown,
}

/// What an instruction does to control flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// Jumps to the label; also falls through when `conditional`.
    Branch { target: String, conditional: bool },
    /// Ends the thread (`EXIT`, `RET`, a trap); falls through when `conditional`.
    End { conditional: bool },
    /// A call (`CALL`): the callee is code this graph does not see.
    Call,
    /// An indirect branch (`BRX`, `JMX`, `JMP` through a register): targets unknown.
    Indirect,
}

/// One instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    pub offset: u64,
    /// The guard predicate, e.g. `@P0` or `@!P1` (empty when none).
    pub guard: String,
    /// The mnemonic with its modifiers, e.g. `ATOMG.E.ADD.STRONG.GPU`.
    pub op: String,
    /// The operands as printed.
    pub operands: String,
    pub flow: Flow,
}

impl Instr {
    /// The mnemonic without modifiers (`ATOMG`).
    pub fn base(&self) -> &str {
        self.op.split('.').next().unwrap_or("")
    }

    fn has_modifier(&self, m: &str) -> bool {
        self.op.split('.').skip(1).any(|x| x == m)
    }

    /// The scope of a memory fence, `None` when the instruction is none. `MEMBAR` only:
    /// `FENCE.VIEW.ASYNC.*` orders the async proxy against the generic one, not threads.
    pub fn fence_scope(&self) -> Option<Scope> {
        if self.base() != "MEMBAR" {
            return None;
        }
        Some(if self.has_modifier("GPU") || self.has_modifier("GL") {
            Scope::Gpu
        } else if self.has_modifier("SYS") {
            Scope::System
        } else if self.has_modifier("CTA") {
            Scope::Block
        } else {
            Scope::Unknown
        })
    }

    /// The L1 invalidation that acquire operations (and `__threadfence()`) leave behind on
    /// sm_70 and later: loads after it cannot read a line cached before it.
    pub fn is_invalidate(&self) -> bool {
        self.op == "CCTL.IVALL"
    }

    /// A load or store with `.STRONG.GPU` or `.STRONG.SYS` (volatile, or a relaxed or
    /// acquire/release `cuda::atomic_ref` access at device or system scope).
    pub fn is_strong_device(&self) -> bool {
        self.has_modifier("STRONG") && (self.has_modifier("GPU") || self.has_modifier("SYS"))
    }

    /// A global or generic memory access that is atomic between blocks: a load, a store or an
    /// atomic with `.STRONG.GPU` or `.STRONG.SYS`. The spellings ptxas 13.0 gives for sm_90, read
    /// with nvdisasm (the relaxed and `volatile` loads and stores, the `atomicExch` and the
    /// `atomicAdd` poll are in `tests/fixtures/sass/coherent/`):
    ///
    /// - `cuda::atomic_ref<int, thread_scope_device>` and `cuda::atomic<int, thread_scope_device>`
    ///   `store`/`load`, relaxed or not: `ST.E.STRONG.GPU` / `LD.E.STRONG.GPU` (generic; 64-bit:
    ///   `ST.E.64.STRONG.GPU`); of system scope (`cuda::atomic_ref<int>`, `cuda::atomic<int>`):
    ///   `ST.E.STRONG.SYS` / `LD.E.STRONG.SYS`;
    /// - `volatile`: `STG.E.STRONG.SYS` / `LDG.E.STRONG.SYS`;
    /// - `atomicExch`, `atomicCAS`, `atomicAdd` and the rest: `ATOMG.E.EXCH.STRONG.GPU`,
    ///   `ATOM.E.ADD.STRONG.GPU` (generic), `REDG.E.ADD.STRONG.GPU` (result unused);
    ///   `atomicAdd_system`: `.STRONG.SYS`.
    ///
    /// Block scope (`atomicAdd_block`, `thread_scope_block`) is `.STRONG.SM`: atomic for one
    /// block only, so not this. The cache-hint intrinsics `__ldcg`/`__stcg` (`__ldcv`/`__stwt`)
    /// compile to the same `LDG.E.STRONG.GPU`/`STG.E.STRONG.GPU` (`.SYS`) and are taken alike:
    /// the SASS, the same instruction, does not tell them apart.
    pub fn is_coherent(&self) -> bool {
        matches!(
            self.base(),
            "LD" | "LDG" | "ST" | "STG" | "ATOM" | "ATOMG" | "RED" | "REDG"
        ) && self.is_strong_device()
    }
}

/// One function's instructions in offset order and where its labels point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Function {
    pub instrs: Vec<Instr>,
    /// label -> index into `instrs` of the instruction that follows it.
    pub labels: BTreeMap<String, usize>,
}

impl Function {
    /// The index of the instruction at `offset`.
    pub fn index_of(&self, offset: u64) -> Option<usize> {
        self.instrs.binary_search_by_key(&offset, |i| i.offset).ok()
    }

    /// The indices control may reach right after instruction `i`, or `Err` with why they
    /// cannot be known.
    pub fn successors(&self, i: usize) -> Result<Vec<usize>, String> {
        let ins = &self.instrs[i];
        let next = (i + 1 < self.instrs.len()).then_some(i + 1);
        Ok(match &ins.flow {
            Flow::Next => next.into_iter().collect(),
            Flow::End { conditional } => {
                if *conditional {
                    next.into_iter().collect()
                } else {
                    Vec::new()
                }
            }
            Flow::Branch {
                target,
                conditional,
            } => {
                let Some(&t) = self.labels.get(target) else {
                    return Err(format!(
                        "a branch at /*{:04x}*/ to `{target}`, a label it did not find",
                        ins.offset
                    ));
                };
                let mut v = vec![t];
                if *conditional {
                    v.extend(next);
                }
                v
            }
            Flow::Call => {
                return Err(format!(
                    "a call at /*{:04x}*/ into code it cannot see ({})",
                    ins.offset, ins.operands
                ))
            }
            Flow::Indirect => {
                return Err(format!(
                    "an indirect branch at /*{:04x}*/ ({})",
                    ins.offset, ins.op
                ))
            }
        })
    }
}

/// The answer to "does every path from `from` to `to` pass a fence?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Paths {
    /// Every path passes an instruction `stops` accepts (or `to` cannot be reached at all
    /// without one).
    Covered,
    /// A path reaches `to` without passing one: the offsets of what it passed that `stops`
    /// did not accept but `noted` did (e.g. fences of too small a scope), in order.
    Open { noted: Vec<u64> },
    /// `to` is not reachable from `from` at all.
    Unreachable,
    /// The graph cannot be followed on the way (a call, an indirect branch): why.
    Unknown(String),
}

/// Whether every path from the instruction at offset `from` to the one at offset `to` (both
/// excluded) passes an instruction for which `stops` holds. Paths through `from` again start
/// over (a later execution of it is the one that counts). `noted` collects, on the open paths,
/// the instructions worth naming (e.g. a fence of block scope).
pub fn every_path_passes(
    f: &Function,
    from: u64,
    to: u64,
    stops: impl Fn(&Instr) -> bool,
    noted: impl Fn(&Instr) -> bool,
) -> Paths {
    let (Some(a), Some(b)) = (f.index_of(from), f.index_of(to)) else {
        return Paths::Unknown("an offset is no instruction of the function".into());
    };
    // First: can `to` be reached at all (through anything)? Without a path there is nothing
    // to judge, and the pair did not come from this code the way it was recorded.
    let reach = |blocked: &dyn Fn(usize) -> bool| -> Result<(bool, BTreeSet<usize>), String> {
        let mut seen = BTreeSet::new();
        let mut queue = VecDeque::new();
        for s in f.successors(a)? {
            queue.push_back(s);
        }
        let mut hit = false;
        while let Some(i) = queue.pop_front() {
            if !seen.insert(i) {
                continue;
            }
            if i == b {
                hit = true;
                continue;
            }
            if i == a || blocked(i) {
                continue;
            }
            for s in f.successors(i)? {
                queue.push_back(s);
            }
        }
        Ok((hit, seen))
    };
    match reach(&|_| false) {
        Err(_) => {
            // The graph cannot be followed everywhere; it may still be followed on the paths
            // that matter: retry with fences as walls, and only a failure there is unknown
            // (with that retry's reason, which names the place that stopped it).
            if let Err(why) = reach(&|i| stops(&f.instrs[i])) {
                return Paths::Unknown(why);
            }
        }
        Ok((false, _)) => return Paths::Unreachable,
        Ok((true, _)) => {}
    }
    match reach(&|i| stops(&f.instrs[i])) {
        Err(why) => Paths::Unknown(why),
        Ok((false, _)) => Paths::Covered,
        Ok((true, seen)) => Paths::Open {
            noted: seen
                .into_iter()
                .filter(|&i| i != b && noted(&f.instrs[i]))
                .map(|i| f.instrs[i].offset)
                .collect(),
        },
    }
}

/// Every function of nvdisasm's text, by name.
pub fn parse(text: &str) -> BTreeMap<String, Function> {
    let mut out: BTreeMap<String, Function> = BTreeMap::new();
    let mut cur: Option<String> = None;
    for raw in text.lines() {
        let l = raw.trim();
        if let Some(name) = l.strip_prefix(".text.").and_then(|s| s.strip_suffix(':')) {
            if !name.contains(char::is_whitespace) {
                cur = Some(name.to_string());
                out.entry(name.to_string()).or_default();
                continue;
            }
        }
        let Some(name) = &cur else { continue };
        let f = out.get_mut(name).expect("inserted above");
        // A label: `.L_x_3:` (other directives start with a dot too, and end otherwise).
        if let Some(label) = l.strip_suffix(':') {
            if label.starts_with('.') && !label.contains(char::is_whitespace) {
                f.labels.insert(label.to_string(), f.instrs.len());
                continue;
            }
        }
        if let Some(i) = instruction(l) {
            f.instrs.push(i);
        }
    }
    out
}

/// `/*0090*/ [@P0] OP.MODS operands ;` -> the instruction, `None` for anything else.
fn instruction(l: &str) -> Option<Instr> {
    let inner = l.strip_prefix("/*")?;
    let end = inner.find("*/")?;
    let hex = &inner[..end];
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let offset = u64::from_str_radix(hex, 16).ok()?;
    // Only instructions end with `;` (a trailing `/* ... */` comment may follow it).
    let body = inner[end + 2..].trim();
    let body = match body.rfind(';') {
        Some(i) if body[i + 1..].trim().is_empty() || body[i + 1..].trim().starts_with("/*") => {
            &body[..i]
        }
        _ => return None,
    };
    let mut rest = body.trim();
    let mut guard = String::new();
    if rest.starts_with('@') {
        let g_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        guard = rest[..g_end].to_string();
        rest = rest[g_end..].trim_start();
    }
    let op_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let op = rest[..op_end].to_string();
    let operands = rest[op_end..].trim().to_string();
    if op.is_empty() {
        return None;
    }
    // `@PT` always holds; any other guard may not.
    let guarded = !guard.is_empty() && guard != "@PT";
    let flow = flow_of(&op, &operands, guarded);
    Some(Instr {
        offset,
        guard,
        op,
        operands,
        flow,
    })
}

fn flow_of(op: &str, operands: &str, guarded: bool) -> Flow {
    let base = op.split('.').next().unwrap_or("");
    let target = || {
        let start = operands.find("`(")?;
        let end = operands[start..].find(')')?;
        Some(operands[start + 2..start + end].to_string())
    };
    match base {
        "BRA" => match target() {
            // A predicate operand before the target (`BRA.U !UP0, `(.L_x_3)`), a guard, or a
            // divergence test (`BRA.DIV`) make it conditional.
            Some(t) => {
                let before = operands[..operands.find("`(").unwrap_or(0)].trim();
                Flow::Branch {
                    target: t,
                    conditional: guarded || !before.is_empty() || op.contains(".DIV"),
                }
            }
            None => Flow::Indirect,
        },
        "BRX" | "JMX" | "JMP" | "BRXU" => Flow::Indirect,
        "EXIT" | "RET" | "KILL" => Flow::End {
            conditional: guarded,
        },
        "BPT" if op.contains("TRAP") => Flow::End {
            conditional: guarded,
        },
        "CALL" => Flow::Call,
        _ => Flow::Next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOP: &str = r#"
.text._Z4pollPiS_S_:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   STG.E desc[UR4][R2.64], R5 ;
        /*0020*/              @P0  BRA `(.L_x_1) ;
        /*0030*/                   MEMBAR.SC.GPU ;
.L_x_1:
        /*0040*/                   ATOMG.E.EXCH.STRONG.GPU PT, RZ, desc[UR4][R6.64], R7 ;
.L_x_2:
        /*0050*/                   BRA.U !UP0, `(.L_x_2) ;
        /*0060*/                   EXIT ;
        /*0070*/                   BRA `(.L_x_3);
.L_x_3:
"#;

    #[test]
    fn instructions_guards_and_branches_are_read() {
        let fs = parse(LOOP);
        let f = &fs["_Z4pollPiS_S_"];
        assert_eq!(f.instrs.len(), 8);
        let bra = &f.instrs[2];
        assert_eq!((bra.guard.as_str(), bra.op.as_str()), ("@P0", "BRA"));
        assert_eq!(
            bra.flow,
            Flow::Branch {
                target: ".L_x_1".into(),
                conditional: true
            }
        );
        assert_eq!(f.instrs[3].fence_scope(), Some(Scope::Gpu));
        assert_eq!(f.labels[".L_x_1"], 4);
        assert!(matches!(
            f.instrs[5].flow,
            Flow::Branch {
                conditional: true,
                ..
            }
        ));
        assert!(matches!(
            f.instrs[7].flow,
            Flow::Branch {
                conditional: false,
                ..
            }
        ));
        assert_eq!(
            f.labels[".L_x_3"], 8,
            "a label at the end points past the last"
        );
        assert_eq!(f.instrs[4].base(), "ATOMG");
        assert!(f.instrs[4].is_strong_device());
    }

    #[test]
    fn a_branch_around_the_fence_leaves_a_path_open() {
        let fs = parse(LOOP);
        let f = &fs["_Z4pollPiS_S_"];
        let fence = |i: &Instr| i.fence_scope().is_some();
        assert_eq!(
            every_path_passes(f, 0x10, 0x40, fence, |_| false),
            Paths::Open { noted: vec![] }
        );
        // Without the branch (the guard taken away) the fence is on every path.
        let text = LOOP.replace("@P0  BRA", "@!PT BRA");
        let fs = parse(&text);
        // `@!PT` never holds, but the graph keeps it conditional: still open.
        assert!(matches!(
            every_path_passes(&fs["_Z4pollPiS_S_"], 0x10, 0x40, fence, |_| false),
            Paths::Open { .. }
        ));
        let text = LOOP.replace("@P0  BRA `(.L_x_1) ;", "NOP ;");
        let fs = parse(&text);
        assert_eq!(
            every_path_passes(&fs["_Z4pollPiS_S_"], 0x10, 0x40, fence, |_| false),
            Paths::Covered
        );
        // Backwards, from the atomic to the store: no path.
        assert_eq!(
            every_path_passes(f, 0x40, 0x10, fence, |_| false),
            Paths::Unreachable
        );
    }

    #[test]
    fn calls_and_indirect_branches_on_the_way_are_unknown_elsewhere_they_do_not_matter() {
        let call = ".text.k:\n        /*0000*/                   STG.E desc[UR4][R2.64], R5 ;\n        /*0010*/                   CALL.REL.NOINC `($k$helper) ;\n        /*0020*/                   ATOMG.E.ADD.STRONG.GPU PT, R0, desc[UR4][R6.64], R7 ;\n";
        let fs = parse(call);
        let fence = |i: &Instr| i.fence_scope().is_some();
        assert!(matches!(
            every_path_passes(&fs["k"], 0x0, 0x20, fence, |_| false),
            Paths::Unknown(w) if w.contains("call")
        ));
        let fenced = call.replace(
            "        /*0010*/                   CALL.REL.NOINC `($k$helper) ;\n",
            "        /*0008*/                   MEMBAR.SC.GPU ;\n        /*0010*/                   CALL.REL.NOINC `($k$helper) ;\n",
        );
        let fs = parse(&fenced);
        assert_eq!(
            every_path_passes(&fs["k"], 0x0, 0x20, fence, |_| false),
            Paths::Covered,
            "the call lies behind the fence"
        );
        let brx = ".text.k:\n        /*0000*/                   STG.E desc[UR4][R2.64], R5 ;\n        /*0010*/                   BRX R4 -0x20 ;\n        /*0020*/                   ATOMG.E.ADD.STRONG.GPU PT, R0, desc[UR4][R6.64], R7 ;\n";
        assert!(matches!(
            every_path_passes(&parse(brx)["k"], 0x0, 0x20, fence, |_| false),
            Paths::Unknown(w) if w.contains("indirect")
        ));
    }

    #[test]
    fn fence_spellings_have_their_scopes() {
        let one = |op: &str| {
            let t = format!(".text.k:\n        /*0000*/                   {op} ;\n");
            parse(&t)["k"].instrs[0].fence_scope()
        };
        assert_eq!(one("MEMBAR.SC.GPU"), Some(Scope::Gpu));
        assert_eq!(one("MEMBAR.ALL.GPU"), Some(Scope::Gpu));
        assert_eq!(one("MEMBAR.SC.SYS"), Some(Scope::System));
        assert_eq!(one("MEMBAR.ALL.SYS"), Some(Scope::System));
        assert_eq!(one("MEMBAR.SC.CTA"), Some(Scope::Block));
        assert_eq!(one("MEMBAR.ALL.CTA"), Some(Scope::Block));
        assert_eq!(one("MEMBAR.SC.VC"), Some(Scope::Unknown));
        assert_eq!(one("FENCE.VIEW.ASYNC.S"), None);
        assert_eq!(one("ERRBAR"), None);
    }

    #[test]
    fn coherent_accesses_are_strong_of_device_or_system_scope() {
        let one = |op: &str| {
            let t = format!(
                ".text.k:\n        /*0000*/                   {op} R0, desc[UR4][R2.64] ;\n"
            );
            parse(&t)["k"].instrs[0].is_coherent()
        };
        for op in [
            "ST.E.STRONG.GPU",
            "LD.E.STRONG.GPU",
            "ST.E.64.STRONG.GPU",
            "ST.E.STRONG.SYS",
            "LD.E.STRONG.SYS",
            "STG.E.STRONG.SYS",
            "LDG.E.STRONG.SYS",
            "LDG.E.64.STRONG.GPU",
            "ATOMG.E.EXCH.STRONG.GPU",
            "ATOMG.E.CAS.STRONG.GPU",
            "ATOM.E.ADD.STRONG.GPU",
            "REDG.E.ADD.STRONG.GPU",
            "REDG.E.ADD.STRONG.SYS",
        ] {
            assert!(one(op), "{op}");
        }
        for op in [
            "STG.E",
            "LDG.E",
            "LDG.E.64",
            "LDG.E.CONSTANT",
            "ST.E.STRONG.SM",
            "LD.E.STRONG.SM",
            "ATOMG.E.EXCH.STRONG.SM",
            "REDG.E.ADD.STRONG.SM",
            "ATOMS.ADD",
            "LDS",
            "MEMBAR.SC.GPU",
        ] {
            assert!(!one(op), "{op}");
        }
    }
}
