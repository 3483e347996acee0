//! A C++ kernel's parameter types, read back from its lowered (Itanium-mangled) name: what
//! NVRTC compiled for a name expression such as `reduce<float, 256>`, so the types are those
//! of that instantiation (`T` already replaced by `float`), whatever the template's source
//! spells. Only what kernels' parameters use is read: builtin types, classes (namespaced or
//! templated), pointers, references, `const`/`volatile`/`__restrict__`, template parameters
//! (`T_`) and substitutions (`S_`). Anything else (arrays, function pointers, packs, vendor
//! types) makes the whole name unreadable (`None`): a caller then skips the check rather than
//! guess, because one misread substitution would shift every later parameter.
//!
//! ```
//! use racegate::source::cscan::mangled;
//! // reduce<float, 256>(const T*, T*, int)
//! let p = mangled::params("_Z6reduceIfLi256EEvPKT_PS0_i").unwrap();
//! let shown: Vec<String> = p.iter().map(mangled::show).collect();
//! assert_eq!(shown, ["const float*", "float*", "int"]);
//! ```

use super::decl::CType;

/// A type as the mangling spells it, substitutions and template parameters resolved.
#[derive(Clone, Debug, PartialEq)]
enum Ty {
    /// A builtin or class type: its canonical name as [`CType::base`] has it (`float`, `i32`,
    /// `__half`, `ns::S`).
    Base(String),
    Ptr(Box<Ty>),
    Ref(Box<Ty>),
    Qual {
        c: bool,
        v: bool,
        inner: Box<Ty>,
    },
    /// A non-type template argument (`Li256E`).
    Value,
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    /// Substitution candidates, in order: `S_` is the first, `S0_` the second, ...
    subs: Vec<Ty>,
    /// The function's template arguments (`T_`, `T0_`, ...).
    targs: Vec<Ty>,
}

/// The parameter types of the function `symbol` mangles, in order, or `None` when the name is
/// not a mangled function name this reader understands.
pub fn params(symbol: &str) -> Option<Vec<CType>> {
    let rest = symbol.strip_prefix("_Z")?;
    let mut p = Parser {
        s: rest.as_bytes(),
        at: 0,
        subs: Vec::new(),
        targs: Vec::new(),
    };
    let template = p.function_name()?;
    if template {
        p.ty()?; // the return type
    }
    let mut out = Vec::new();
    while p.at < p.s.len() {
        out.push(p.ty()?);
    }
    if out == [Ty::Base("void".into())] {
        out.clear();
    }
    out.iter().map(ctype).collect()
}

/// `const float*`, `ns::S&`, for messages.
pub fn show(t: &CType) -> String {
    let mut s = String::new();
    if t.base_const {
        s.push_str("const ");
    }
    if t.base_volatile {
        s.push_str("volatile ");
    }
    s.push_str(&c_name(&t.base));
    for (c, v) in &t.ptrs {
        s.push('*');
        if *c {
            s.push_str(" const");
        }
        if *v {
            s.push_str(" volatile");
        }
    }
    if t.reference {
        s.push('&');
    }
    s
}

/// The C spelling of a canonical base name.
fn c_name(base: &str) -> String {
    match base {
        "i8" => "signed char",
        "u8" => "unsigned char",
        "i16" => "short",
        "u16" => "unsigned short",
        "i32" => "int",
        "u32" => "unsigned int",
        "i64" => "long long",
        "u64" => "unsigned long long",
        other => other,
    }
    .to_string()
}

fn ctype(t: &Ty) -> Option<CType> {
    Some(match t {
        Ty::Base(b) => CType {
            base: b.clone(),
            base_const: false,
            base_volatile: false,
            ptrs: Vec::new(),
            reference: false,
        },
        Ty::Ptr(inner) => {
            let mut c = ctype(inner)?;
            if c.reference {
                return None;
            }
            c.ptrs.push((false, false));
            c
        }
        Ty::Ref(inner) => {
            let mut c = ctype(inner)?;
            c.reference = true;
            c
        }
        Ty::Qual { c: k, v, inner } => {
            let mut c = ctype(inner)?;
            match c.ptrs.last_mut() {
                Some(p) => {
                    p.0 |= k;
                    p.1 |= v;
                }
                None => {
                    c.base_const |= k;
                    c.base_volatile |= v;
                }
            }
            c
        }
        Ty::Value => return None,
    })
}

/// The canonical base of a builtin type's code (`f` -> `float`), as [`CType::base`] spells it.
fn builtin(code: u8) -> Option<&'static str> {
    Some(match code {
        b'v' => "void",
        b'b' => "bool",
        b'c' => "char",
        b'a' => "i8",
        b'h' => "u8",
        b's' => "i16",
        b't' => "u16",
        b'i' => "i32",
        b'j' => "u32",
        // `long` and `long long` are both 64 bits where CUDA runs.
        b'l' | b'x' => "i64",
        b'm' | b'y' => "u64",
        b'f' => "float",
        b'd' => "double",
        b'e' => "long double",
        b'n' => "__int128",
        b'o' => "unsigned __int128",
        b'w' => "wchar_t",
        _ => return None,
    })
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let yes = self.peek() == Some(b);
        if yes {
            self.at += 1;
        }
        yes
    }

    /// `<number><identifier>`.
    fn source_name(&mut self) -> Option<String> {
        let from = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        let n: usize = std::str::from_utf8(&self.s[from..self.at])
            .ok()?
            .parse()
            .ok()?;
        let name = self.s.get(self.at..self.at + n)?;
        self.at += n;
        String::from_utf8(name.to_vec()).ok()
    }

    /// `_` or `<base-36 number>_` after `S` or `T`: 0 for `_`, n + 1 for `n_`.
    fn seq_id(&mut self) -> Option<usize> {
        if self.eat(b'_') {
            return Some(0);
        }
        let mut n = 0usize;
        loop {
            let c = self.peek()?;
            self.at += 1;
            match c {
                b'0'..=b'9' => n = n.checked_mul(36)? + (c - b'0') as usize,
                b'A'..=b'Z' => n = n.checked_mul(36)? + (c - b'A') as usize + 10,
                b'_' => return Some(n + 1),
                _ => return None,
            }
        }
    }

    /// A substitution (`S_`, `S0_`, ...) that names a class or namespace: its name.
    fn named_sub(&mut self) -> Option<String> {
        let i = self.seq_id()?;
        match self.subs.get(i)? {
            Ty::Base(b) => Some(b.clone()),
            _ => None,
        }
    }

    /// The function's name; returns whether it has template arguments (then a return type
    /// follows). Records the substitution candidates the name makes (every prefix of a nested
    /// name, the name of a template) and the template arguments (`T_`, `T0_`, ...).
    fn function_name(&mut self) -> Option<bool> {
        self.eat(b'L'); // internal linkage
        if !self.eat(b'N') {
            let name = self.source_name()?;
            if self.peek() != Some(b'I') {
                return Some(false);
            }
            self.subs.push(Ty::Base(name));
            self.targs = self.template_args()?;
            return Some(true);
        }
        while matches!(self.peek(), Some(b'r' | b'V' | b'K')) {
            self.at += 1;
        }
        let (mut prefix, mut template) = (String::new(), false);
        loop {
            // One component; `known`: it is a candidate already (a substitution).
            let known = if prefix.is_empty() && self.eat(b'S') {
                prefix = if self.eat(b't') {
                    "std".into()
                } else {
                    self.named_sub()?
                };
                true
            } else if self.peek() == Some(b'I') {
                if prefix.is_empty() {
                    return None;
                }
                self.targs = self.template_args()?;
                template = true;
                true
            } else {
                let n = self.source_name()?;
                if !prefix.is_empty() {
                    prefix.push_str("::");
                }
                prefix.push_str(&n);
                false
            };
            if self.eat(b'E') {
                return Some(template);
            }
            if template {
                return None; // template arguments end a function's name
            }
            if !known {
                // A prefix is a candidate once something follows it.
                self.subs.push(Ty::Base(prefix.clone()));
            }
        }
    }

    /// `I <arg>+ E`: each argument's type (`Ty::Value` for a literal).
    fn template_args(&mut self) -> Option<Vec<Ty>> {
        if !self.eat(b'I') {
            return None;
        }
        let mut out = Vec::new();
        while !self.eat(b'E') {
            if self.eat(b'L') {
                // A literal: `L <type> <value> E`; `L_Z...E` (an address) is not read.
                if self.peek() == Some(b'_') {
                    return None;
                }
                self.ty()?;
                while self.peek().is_some_and(|c| c != b'E') {
                    self.at += 1;
                }
                if !self.eat(b'E') {
                    return None;
                }
                out.push(Ty::Value);
            } else if matches!(self.peek(), Some(b'X' | b'J')) {
                return None; // expressions and packs
            } else {
                out.push(self.ty()?);
            }
        }
        Some(out)
    }

    /// A class type: `<source-name>`, `St <source-name>` or `N ... E`, each component with
    /// optional template arguments. Every prefix is a candidate, and so is the whole.
    fn class(&mut self) -> Option<Ty> {
        let nested = self.eat(b'N');
        let mut name = String::new();
        loop {
            if name.is_empty() && self.eat(b'S') {
                if self.eat(b't') {
                    name = "std".into(); // `St` is std::, itself no candidate
                    continue;
                }
                if !nested {
                    return None;
                }
                name = self.named_sub()?;
            } else if self.peek() == Some(b'I') {
                if name.is_empty() {
                    return None;
                }
                self.template_args()?; // a class's own arguments bind no `T_`
                name.push_str("<...>");
                self.subs.push(Ty::Base(name.clone()));
            } else {
                let n = self.source_name()?;
                if !name.is_empty() {
                    name.push_str("::");
                }
                name.push_str(&n);
                self.subs.push(Ty::Base(name.clone()));
            }
            if nested {
                if self.eat(b'E') {
                    break;
                }
            } else if self.peek() != Some(b'I') || name.ends_with('>') {
                break;
            }
        }
        Some(Ty::Base(canonical_class(&name)))
    }

    fn ty(&mut self) -> Option<Ty> {
        let c = self.peek()?;
        if let Some(b) = builtin(c) {
            self.at += 1;
            return Some(Ty::Base(b.into()));
        }
        let t = match c {
            b'P' | b'R' | b'O' => {
                self.at += 1;
                let inner = Box::new(self.ty()?);
                if c == b'P' {
                    Ty::Ptr(inner)
                } else {
                    Ty::Ref(inner)
                }
            }
            b'r' | b'V' | b'K' => {
                let (mut k, mut v) = (false, false);
                while let Some(q) = self.peek().filter(|q| matches!(q, b'r' | b'V' | b'K')) {
                    self.at += 1;
                    k |= q == b'K';
                    v |= q == b'V';
                }
                let inner = self.ty()?;
                if !k && !v {
                    // `__restrict__` alone: a candidate all the same.
                    self.subs.push(inner.clone());
                    return Some(inner);
                }
                Ty::Qual {
                    c: k,
                    v,
                    inner: Box::new(inner),
                }
            }
            b'T' => {
                self.at += 1;
                let i = self.seq_id()?;
                self.targs.get(i)?.clone()
            }
            b'S' if self
                .s
                .get(self.at + 1)
                .is_some_and(|n| *n == b'_' || n.is_ascii_digit() || n.is_ascii_uppercase()) =>
            {
                self.at += 1;
                let i = self.seq_id()?;
                let t = self.subs.get(i)?.clone();
                if self.peek() == Some(b'I') {
                    // A template named by a substitution, with its arguments: a new candidate.
                    self.template_args()?;
                    let t = match t {
                        Ty::Base(b) => Ty::Base(format!("{b}<...>")),
                        _ => return None,
                    };
                    self.subs.push(t.clone());
                    return Some(t);
                }
                return Some(t);
            }
            b'D' => {
                let code = self.s.get(self.at + 1..self.at + 2)?;
                let name = match code {
                    b"h" => "__fp16",
                    b"s" => "char16_t",
                    b"i" => "char32_t",
                    b"n" => "decltype(nullptr)",
                    _ => return None,
                };
                self.at += 2;
                return Some(Ty::Base(name.into()));
            }
            b'0'..=b'9' | b'N' | b'S' => return self.class(),
            _ => return None,
        };
        self.subs.push(t.clone());
        Some(t)
    }
}

/// A class name as [`CType::base`] spells it: CUDA's half types by their canonical names.
fn canonical_class(name: &str) -> String {
    match name {
        "half" | "__half" => "__half".into(),
        "nv_bfloat16" | "__nv_bfloat16" => "__nv_bfloat16".into(),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lowered names NVRTC 13.0 gave for these name expressions (`nvrtcGetLoweredName`), one a
    /// line: expression, symbol, the parameters as declared (`;`-separated). The declarations:
    /// `template <typename T, int B> reduce(const T*, T*, int)`, `template <typename T> t(T*,
    /// int)`, `template <typename T, typename U> two(const T*, U*, const T*, U*, T, unsigned long
    /// long)`, `namespace ns { template <typename T> k(T* __restrict__, const T* __restrict__,
    /// size_t); plain(double*, const float*, long, unsigned char*, signed char*, char*, short*,
    /// unsigned short*, bool*); st(S*, S, const S*) }`, `halfk(__half*, const __nv_bfloat16*,
    /// __half, long long*, unsigned*, float2*)`, `template <typename T> vk(volatile T*, const
    /// volatile int*, T**, const T* const*)`.
    const LOWERED: &str = "\
reduce<float, 256>|_Z6reduceIfLi256EEvPKT_PS0_i|const float*;float*;int
reduce<float, -3>|_Z6reduceIfLin3EEvPKT_PS0_i|const float*;float*;int
reduce<const float, 4>|_Z6reduceIKfLi4EEvPKT_PS1_i|const float*;const float*;int
t<float>|_Z1tIfEvPT_i|float*;int
t<double>|_Z1tIdEvPT_i|double*;int
t<unsigned char>|_Z1tIhEvPT_i|unsigned char*;int
t<float*>|_Z1tIPfEvPT_i|float**;int
t<ns::S>|_Z1tIN2ns1SEEvPT_i|ns::S*;int
t<__nv_bfloat16>|_Z1tI13__nv_bfloat16EvPT_i|__nv_bfloat16*;int
two<float, int>|_Z3twoIfiEvPKT_PT0_S2_S4_S0_y|const float*;int*;const float*;int*;float;unsigned long long
two<double, __half>|_Z3twoId6__halfEvPKT_PT0_S3_S5_S1_y|const double*;__half*;const double*;__half*;double;unsigned long long
two<ns::S, ns::S>|_Z3twoIN2ns1SES1_EvPKT_PT0_S4_S6_S2_y|const ns::S*;ns::S*;const ns::S*;ns::S*;ns::S;unsigned long long
ns::k<float>|_ZN2ns1kIfEEvPT_PKS1_m|float*;const float*;unsigned long long
ns::plain|_ZN2ns5plainEPdPKflPhPaPcPsPtPb|double*;const float*;long long;unsigned char*;signed char*;char*;short*;unsigned short*;bool*
ns::st|_ZN2ns2stEPNS_1SES0_PKS0_|ns::S*;ns::S;const ns::S*
halfk|_Z5halfkP6__halfPK13__nv_bfloat16S_PxPjP6float2|__half*;const __nv_bfloat16*;__half;long long*;unsigned int*;float2*
vk<float>|_Z2vkIfEvPVT_PVKiPPS0_PKPKS0_|volatile float*;const volatile int*;float**;const float* const*";

    /// (expression, symbol, parameters) of [`LOWERED`].
    fn lowered() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
        LOWERED
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                (f[0], f[1], f[2].split(';').collect())
            })
            .collect()
    }

    #[test]
    fn nvrtc_lowered_names_read_back_as_their_declarations() {
        let all = lowered();
        assert_eq!(all.len(), 17);
        for (expr, symbol, want) in all {
            let got = params(symbol).unwrap_or_else(|| panic!("{expr}: {symbol} unreadable"));
            let got: Vec<String> = got.iter().map(show).collect();
            assert_eq!(got, want, "{expr}: {symbol}");
        }
    }

    #[test]
    fn what_it_cannot_read_is_none_never_a_guess() {
        for symbol in [
            "_Z2ntILi3EEvPfPA4_i", // a pointer to an array
            "_Z1fIJfiEEvDpT_",     // a pack
            "_Z1fPFviE",           // a function pointer
            "reduce",              // not mangled
            "_Z6reduceIf",         // cut short
            "_Z1tIfEvPT3_i",       // a template parameter that is not there
            "_Z1fPS4_",            // a substitution that is not there
        ] {
            assert_eq!(params(symbol), None, "{symbol}");
        }
    }

    #[test]
    fn every_cut_of_a_good_name_is_unreadable_or_a_prefix_of_its_parameters() {
        // A generator over truncations: a shorter name must never invent types.
        for (_, symbol, want) in lowered() {
            for end in 2..symbol.len() {
                if let Some(got) = params(&symbol[..end]) {
                    let got: Vec<String> = got.iter().map(show).collect();
                    assert!(
                        got.len() <= want.len() && got.iter().zip(&want).all(|(g, w)| g == w)
                            || got.is_empty(),
                        "{} read as {got:?}",
                        &symbol[..end]
                    );
                }
            }
        }
    }
}
