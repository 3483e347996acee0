//! streamcheck's trace as the recorder (`harness/globalcheck/streams.cpp`) writes it, one
//! [`Op`] per line, what a kernel's mangled name says about its pointer parameters, which
//! launches the recorder was blind to ([`blind`]), and what judging a trace yields ([`Judged`]).

use serde::Deserialize;

/// What an access was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The trace line (0-based) of the operation.
    pub line: usize,
    /// e.g. `kernel scale`, `memcpy device-to-host (async)`, `host read`.
    pub what: String,
    pub write: bool,
    /// A kernel's conservative "may touch".
    pub may: bool,
    pub stream: String,
    pub site: Vec<u64>,
    pub thread: u64,
}

/// Where an operation of the trace comes from, as each of its accesses records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The trace line (0-based) of the operation.
    pub line: usize,
    /// The program's call site.
    pub site: Vec<u64>,
    /// The host thread that issued it.
    pub thread: u64,
}

/// Two accesses that no ordering separates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Race {
    pub earlier: Access,
    pub later: Access,
    /// Host memory raced by a host access (`stream-host-race`), else between device operations.
    pub host: bool,
    /// The later access touches memory a stream-ordered free (`cudaFreeAsync`) released: ordered
    /// after the free (a use after free) or not (a race with the free).
    pub after_free: bool,
    /// Error (near certain) or Warning (may touch, or host threads).
    pub certain: bool,
    /// The overlap's first byte.
    pub addr: u64,
}

/// What the model concluded from a trace.
#[derive(Clone, Debug, Default)]
pub struct Judged {
    pub races: Vec<Race>,
    /// Reasons nothing found may not mean clean.
    pub unjudged: Vec<String>,
    /// Lines that did not parse.
    pub errors: Vec<String>,
    /// Launches whose arguments were not read but that every other operation is ordered with
    /// (so whatever they touched cannot race): for the log.
    pub blind: Vec<String>,
    pub started: bool,
    pub exe: String,
    pub operations: usize,
    /// Launches judged on what they were measured to touch (a confirm run's footprints).
    pub measured: usize,
}

/// One line of the trace.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// The recorder started in process `pid` of program `exe`.
    Start {
        pid: u64,
        exe: String,
    },
    /// A stream was created (`flags` from `cuStreamGetFlags`; 1 is non-blocking).
    Stream {
        s: u64,
        cu: u64,
        flags: u32,
    },
    /// An allocation: `kind` is device, pinned, managed, mapped, module or async.
    Alloc {
        base: u64,
        size: u64,
        kind: String,
    },
    /// A free: `cudaFree`/`cudaFreeHost` (they synchronize the device first), or with `async` a
    /// stream-ordered `cudaFreeAsync` on stream `s` (`api` as passed) at call site `site`.
    Free {
        base: u64,
        #[serde(default)]
        t: u64,
        #[serde(default)]
        s: u64,
        #[serde(default)]
        api: u64,
        #[serde(default, rename = "async")]
        is_async: bool,
        #[serde(default)]
        site: Vec<u64>,
    },
    /// A kernel launch; `args` holds `[parameter index, pointer word]` for each word of its
    /// arguments that points into a known allocation; `args_known` is false when the arguments
    /// could not be read (`args_why` then says why); `params`, the number of parameters the
    /// driver's layout (`cuFuncGetParamInfo`) gave, is absent when the layout was not had.
    Kernel {
        t: u64,
        s: u64,
        api: u64,
        name: String,
        args: Vec<(u32, u64)>,
        args_known: bool,
        #[serde(default)]
        params: Option<u32>,
        #[serde(default)]
        args_why: String,
        site: Vec<u64>,
    },
    /// What the launch just before it touched, measured (streamcheck's confirm run: the tool's
    /// footprint mode, `RACEGATE_GC_MODE=streams,footprint`): per allocation the tool tracked,
    /// the bounds `[lo, hi)` of the bytes read and of the bytes written (an atomic is both);
    /// `untracked` when some access fell outside every allocation it tracked (pinned or mapped
    /// host memory, say), so an allocation with no bounds here may still have been touched.
    Footprint {
        name: String,
        s: u64,
        untracked: bool,
        reads: Vec<(u64, u64)>,
        writes: Vec<(u64, u64)>,
    },
    /// `dir`: 1 host to host, 2 host to device, 3 device to host, 4 device to device, 0 unknown.
    /// `pitched`: a 2D/3D copy whose ranges are a bound (from the first to the last byte).
    Memcpy {
        t: u64,
        s: u64,
        api: u64,
        src: u64,
        dst: u64,
        size: u64,
        dir: u32,
        #[serde(rename = "async")]
        is_async: bool,
        pitched: bool,
        site: Vec<u64>,
    },
    Memset {
        t: u64,
        s: u64,
        api: u64,
        addr: u64,
        size: u64,
        #[serde(rename = "async")]
        is_async: bool,
        pitched: bool,
        site: Vec<u64>,
    },
    Record {
        t: u64,
        s: u64,
        api: u64,
        ev: u64,
        site: Vec<u64>,
    },
    Wait {
        t: u64,
        s: u64,
        api: u64,
        ev: u64,
        site: Vec<u64>,
    },
    EventSync {
        t: u64,
        ev: u64,
    },
    StreamSync {
        t: u64,
        s: u64,
        api: u64,
    },
    CtxSync {
        t: u64,
    },
    /// A host access to a guarded page (`in_api`: made inside a CUDA call, not by the program).
    Host {
        t: u64,
        addr: u64,
        write: bool,
        in_api: bool,
        site: Vec<u64>,
    },
    /// A guard on host memory was set (`ok`) or could not be.
    Guard {
        base: u64,
        size: u64,
        ok: bool,
    },
    /// A guard on the `size` bytes at `base` was lifted by thread `t`'s access at `addr`, on one of
    /// its pages but outside those bytes: host accesses to them are not seen from here on (until
    /// they are guarded again).
    Unguard {
        t: u64,
        base: u64,
        size: u64,
        addr: u64,
    },
    /// Something the callbacks cannot judge (CUDA graphs, IPC, several contexts, ...).
    Unjudged {
        why: String,
    },
}

/// Why what a launch touched is unknown (`None`: its pointer arguments were read), whatever the
/// recorder claims: arguments not read; none recorded though its mangled name says it takes
/// pointers; or none recorded with neither the driver's layout (`params`) nor a name that shows
/// it takes none (a struct by value can hold pointers).
pub fn blind(
    name: &str,
    args: &[(u32, u64)],
    args_known: bool,
    params: Option<u32>,
    args_why: &str,
) -> Option<String> {
    let takes_none = no_pointer_params(name);
    if !args_known {
        if takes_none {
            return None;
        }
        return Some(if args_why.is_empty() {
            "its arguments could not be read".into()
        } else {
            format!("its arguments could not be read ({args_why})")
        });
    }
    if !args.is_empty() || takes_none {
        return None;
    }
    if param_consts(name).iter().any(Option::is_some) {
        return Some(
            "no pointer argument was recorded though its name says it takes pointers".into(),
        );
    }
    if params.is_none() {
        return Some("no pointer argument was recorded and its parameter layout is unknown".into());
    }
    None
}

/// An Itanium-mangled kernel name read to its end with parameters that are all builtin scalars
/// (or `v`, none): nothing it was given can point anywhere.
pub fn no_pointer_params(mangled: &str) -> bool {
    let b = mangled.as_bytes();
    let Some(rest) = mangled.strip_prefix("_Z") else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(n) = rest[..digits].parse::<usize>() else {
        return false;
    };
    let mut i = 2 + digits + n;
    if i >= b.len() {
        return false;
    }
    while i < b.len() {
        match skip_type(b, i) {
            Some(j) if j == i + 1 || (b[i] == b'D' && j == i + 2) => i = j,
            _ => return false,
        }
    }
    true
}

/// For each parameter of a kernel whose name is an Itanium-mangled `_Z<len><name><params>` of
/// plain types: `Some(true)` a pointer to const, `Some(false)` a pointer to non-const, `None`
/// not a pointer or not understood. Anything past what this reads leaves the rest unknown.
pub fn param_consts(mangled: &str) -> Vec<Option<bool>> {
    param_types(mangled)
        .into_iter()
        .map(|t| match t {
            Ty::Ptr { konst, .. } => Some(konst),
            _ => None,
        })
        .collect()
}

/// What a kernel parameter's type is, as far as its mangled name says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// A builtin arithmetic type: it points nowhere.
    Scalar,
    /// A pointer (`konst`: to const) to `to`.
    Ptr { konst: bool, to: Box<Ty> },
    /// `void`: only as what a pointer points to.
    Void,
    /// A class, struct or union by name (CUDA's vector types are [`Ty::Scalar`]).
    Class(String),
    /// Not understood (templates, nested names, references, ...).
    Unknown,
}

/// The parameter types of an Itanium-mangled kernel name `_Z<len><name><params>`, substitutions
/// (`S_`, `S0_`, ...) resolved; the first type not understood ends the list with
/// [`Ty::Unknown`]. Empty for a name that is not mangled (an `extern "C"` kernel).
pub fn param_types(mangled: &str) -> Vec<Ty> {
    let Some(rest) = mangled.strip_prefix("_Z") else {
        return Vec::new();
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(n) = rest[..digits].parse::<usize>() else {
        return Vec::new();
    };
    let b = mangled.as_bytes();
    let mut i = 2 + digits + n;
    if i > b.len() {
        return Vec::new();
    }
    let mut subs: Vec<(Ty, bool)> = Vec::new();
    let mut out = Vec::new();
    while i < b.len() {
        match parse_ty(b, i, &mut subs) {
            // f(void): no parameters.
            Some((Ty::Void, _, j)) if out.is_empty() && j == b.len() => break,
            Some((t, _, j)) if t != Ty::Unknown && t != Ty::Void => {
                out.push(t);
                i = j;
            }
            _ => {
                out.push(Ty::Unknown);
                break;
            }
        }
    }
    out
}

/// One type at `i`: the type, whether it is const-qualified, and the index after it; adds the
/// substitution candidates it makes (every type but a builtin one, inner ones first).
fn parse_ty(b: &[u8], i: usize, subs: &mut Vec<(Ty, bool)>) -> Option<(Ty, bool, usize)> {
    let c = *b.get(i)?;
    match c {
        b'K' | b'V' | b'r' => {
            let (t, konst, j) = parse_ty(b, i + 1, subs)?;
            let konst = konst || c == b'K';
            // A qualified type is a candidate of its own (`Kf` is `S_` in `PKfS_`).
            subs.push((t.clone(), konst));
            Some((t, konst, j))
        }
        b'P' => {
            let (t, konst, j) = parse_ty(b, i + 1, subs)?;
            let p = Ty::Ptr {
                konst,
                to: Box::new(t),
            };
            subs.push((p.clone(), false));
            Some((p, false, j))
        }
        b'v' => Some((Ty::Void, false, i + 1)),
        b'b' | b'c' | b'a' | b'h' | b's' | b't' | b'i' | b'j' | b'l' | b'm' | b'x' | b'y'
        | b'f' | b'd' | b'e' | b'n' | b'o' | b'g' | b'w' => Some((Ty::Scalar, false, i + 1)),
        b'D' if matches!(b.get(i + 1), Some(b'h' | b'i' | b's' | b'n')) => {
            Some((Ty::Scalar, false, i + 2))
        }
        b'S' => {
            let j = i
                + 1
                + b[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
                    .count();
            if b.get(j) != Some(&b'_') {
                return None;
            }
            let k = if j == i + 1 {
                0
            } else {
                base36(&b[i + 1..j])? + 1
            };
            let (t, konst) = subs.get(k)?.clone();
            Some((t, konst, j + 1))
        }
        b'0'..=b'9' => {
            let d = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let n: usize = std::str::from_utf8(&b[i..i + d]).ok()?.parse().ok()?;
            let j = i + d + n;
            if j > b.len() || b.get(j) == Some(&b'I') {
                return None;
            }
            let name = std::str::from_utf8(&b[i + d..j]).ok()?.to_string();
            let t = if vector_type(&name) {
                Ty::Scalar
            } else {
                Ty::Class(name)
            };
            subs.push((t.clone(), false));
            Some((t, false, j))
        }
        _ => None,
    }
}

/// A substitution's number: `S_` is 0, `S0_` 1, `SA_` 11 (base 36, digits then capitals).
fn base36(d: &[u8]) -> Option<usize> {
    d.iter().try_fold(0usize, |n, c| {
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'A'..=b'Z' => c - b'A' + 10,
            _ => return None,
        };
        n.checked_mul(36)?.checked_add(v as usize)
    })
}

/// CUDA's vector and half types: plain numbers, no pointers inside.
fn vector_type(name: &str) -> bool {
    let base = name.trim_end_matches(['1', '2', '3', '4']);
    (base.len() < name.len()
        && matches!(
            base,
            "char"
                | "uchar"
                | "short"
                | "ushort"
                | "int"
                | "uint"
                | "long"
                | "ulong"
                | "longlong"
                | "ulonglong"
                | "float"
                | "double"
        ))
        || matches!(
            name,
            "__half" | "__half2" | "__nv_bfloat16" | "__nv_bfloat162" | "half" | "half2"
        )
}

/// Why a launch may reach memory that no pointer word of its arguments names, by its kernel's
/// parameter types (`None`: it reaches only what its pointer arguments point into): a pointer to
/// a pointer, to `void` or to a class (a struct may hold pointers), a class by value that holds a
/// pointer word (`args` names it: what it points to may hold pointers), a parameter whose type is
/// not understood, and any pointer argument of a kernel whose name is not mangled (its types are
/// unknown). What reinterpret casts and integer addresses reach is beyond any of this.
pub fn reach(name: &str, args: &[(u32, u64)]) -> Option<String> {
    if args.is_empty() {
        return None;
    }
    let types = param_types(name);
    if types.is_empty() {
        return Some(
            "its name is not a C++-mangled one, so its parameter types are unknown: the memory \
             its pointer arguments name may hold pointers to other memory"
                .into(),
        );
    }
    let given = |i: usize| args.iter().any(|(p, _)| *p as usize == i);
    for (i, t) in types.iter().enumerate() {
        let why = match t {
            Ty::Ptr { to, .. } => match &**to {
                Ty::Ptr { .. } => "a pointer to pointers",
                Ty::Void => "a pointer to void (it may be cast to anything)",
                Ty::Class(_) => "a pointer to a struct or class, which may hold pointers",
                Ty::Unknown => "a pointer to a type not understood",
                _ => continue,
            },
            Ty::Class(_) if given(i) => {
                "a struct or class by value holding a pointer to memory that may hold pointers"
            }
            Ty::Unknown if args.iter().any(|(p, _)| *p as usize >= i) => {
                "of a type not understood from its name"
            }
            _ => continue,
        };
        return Some(format!(
            "its parameter {} is {why}: it may reach memory no argument names",
            i + 1
        ));
    }
    None
}

/// The index after the type at `i` (builtins, qualifiers, pointers, named types, S_ and S<n>_).
fn skip_type(b: &[u8], i: usize) -> Option<usize> {
    let c = *b.get(i)?;
    match c {
        b'K' | b'V' | b'P' | b'R' => skip_type(b, i + 1),
        b'v' | b'b' | b'c' | b'a' | b'h' | b's' | b't' | b'i' | b'j' | b'l' | b'm' | b'x'
        | b'y' | b'f' | b'd' | b'e' | b'n' | b'o' | b'g' | b'w' => Some(i + 1),
        b'D' if matches!(b.get(i + 1), Some(b'h' | b'i' | b's' | b'n')) => Some(i + 2),
        b'S' => {
            let j = i
                + 1
                + b[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() && **c != b'_')
                    .count();
            (b.get(j) == Some(&b'_')).then_some(j + 1)
        }
        b'0'..=b'9' => {
            let d = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let n: usize = std::str::from_utf8(&b[i..i + d]).ok()?.parse().ok()?;
            let j = i + d + n;
            (j <= b.len() && b.get(j) != Some(&b'I')).then_some(j)
        }
        _ => None,
    }
}
