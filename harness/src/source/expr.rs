//! Expressions over named sizes, as a manifest writes them: `ceil_div(n, 256)`, `rows * cols`,
//! `min(n, 4096)`, and for a compared prefix an element of another buffer, `count[0]`. The
//! manifest evaluates them for lengths, geometry and scalars; the oracle for a prefix after a
//! run, which is why they belong to neither.
//!
//! ```
//! use std::collections::BTreeMap;
//! use racegate::source::expr;
//!
//! let sizes = BTreeMap::from([("n".to_string(), 1000)]);
//! assert_eq!(expr::eval("ceil_div(n, 256) * 2", &sizes), Ok(8));
//! assert_eq!(expr::eval_float("n * 0.5", &sizes), Ok(500.0));
//! let count = |name: &str, i: i64| if name == "count" && i == 0 { Ok(7) } else { Err("no".into()) };
//! assert_eq!(expr::eval_indexed("min(count[0], n)", &sizes, &mut { count }), Ok(7));
//! assert!(expr::eval("n * n * n * n * n * n * n", &sizes).unwrap_err().contains("overflow"));
//! ```
//!
//! Integer arithmetic is checked (evalexpr's `+ - * / %` and the functions here): an overflow
//! or a division by zero is an error message, never a wrapped value or a panic, so a manifest
//! can be checked over its whole size range before anything is launched.

use std::collections::BTreeMap;

use evalexpr::{
    Context, ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes,
    EvalexprError, Function, HashMapContext, Value,
};

/// Named sizes and their values.
pub type Env = BTreeMap<String, i64>;

/// The functions an expression may call.
pub const FUNCTIONS: [&str; 3] = ["ceil_div", "min", "max"];

type V = Value<DefaultNumericTypes>;

/// The smallest integer >= a / b; `None` when b is 0 or the quotient overflows (i64::MIN / -1).
/// Written without `a + b - 1`, which overflows near i64::MAX.
pub fn ceil_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    // Truncation rounded toward zero; step up when the exact quotient is positive.
    Some(if r != 0 && ((r > 0) == (b > 0)) {
        q + 1
    } else {
        q
    })
}

fn context(env: &Env) -> Result<HashMapContext<DefaultNumericTypes>, String> {
    let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
    // Only our three functions: evalexpr's built-ins include float and string functions that
    // have no meaning for a length and no overflow check.
    ctx.set_builtin_functions_disabled(true)
        .map_err(|e| e.to_string())?;
    for (k, v) in env {
        ctx.set_value(k.clone(), Value::Int(*v))
            .map_err(|e| e.to_string())?;
    }
    let pair = |a: &V| -> evalexpr::EvalexprResult<(V, V), DefaultNumericTypes> {
        let t = a.as_fixed_len_tuple(2)?;
        Ok((t[0].clone(), t[1].clone()))
    };
    ctx.set_function(
        "ceil_div".into(),
        Function::new(move |a: &V| {
            let (x, y) = pair(a)?;
            let (x, y) = (x.as_int()?, y.as_int()?);
            ceil_div(x, y).map(Value::Int).ok_or_else(|| {
                EvalexprError::CustomMessage(format!(
                    "ceil_div({x}, {y}) divides by zero or overflows"
                ))
            })
        }),
    )
    .map_err(|e| e.to_string())?;
    for (name, pick_first) in [("min", true), ("max", false)] {
        ctx.set_function(
            name.into(),
            Function::new(move |a: &V| {
                let (x, y) = pair(a)?;
                // Integers stay integers (no rounding through f64); a float makes both floats.
                if let (Ok(x), Ok(y)) = (x.as_int(), y.as_int()) {
                    return Ok(Value::Int(if pick_first { x.min(y) } else { x.max(y) }));
                }
                let (x, y) = (x.as_number()?, y.as_number()?);
                Ok(Value::Float(if pick_first { x.min(y) } else { x.max(y) }))
            }),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(ctx)
}

/// Says what went wrong in our words: names the unknown size or function, calls an integer
/// overflow one, and keeps messages lowercase.
fn explain(expr: &str, env: &Env, e: EvalexprError<DefaultNumericTypes>) -> String {
    use EvalexprError as E;
    let what = match e {
        E::VariableIdentifierNotFound(name) => {
            let known: Vec<&str> = env.keys().map(String::as_str).collect();
            format!(
                "`{name}` is not a size (sizes: {})",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        }
        E::FunctionIdentifierNotFound(name) => {
            format!(
                "`{name}` is not a function (functions: {})",
                FUNCTIONS.join(", ")
            )
        }
        E::AdditionError { augend, addend } => format!("integer overflow in {augend} + {addend}"),
        E::SubtractionError {
            minuend,
            subtrahend,
        } => format!("integer overflow in {minuend} - {subtrahend}"),
        E::NegationError { argument } => format!("integer overflow in -{argument}"),
        E::MultiplicationError {
            multiplicand,
            multiplier,
        } => format!("integer overflow in {multiplicand} * {multiplier}"),
        E::DivisionError { dividend, divisor } => {
            format!("division by zero or overflow in {dividend} / {divisor}")
        }
        E::ModulationError { dividend, divisor } => {
            format!("division by zero or overflow in {dividend} % {divisor}")
        }
        E::ExpectedInt { actual } => format!("the value is {actual}, not an integer"),
        E::CustomMessage(m) => m,
        other => lowercase_first(&other.to_string()),
    };
    format!("`{expr}`: {what}")
}

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// How deep parentheses may nest, how many signs may stand in a row and how long an expression
/// may be. The parser recurses once per level and per sign (40,000 `(` overflowed its stack;
/// 100,000 `-` took over a minute), and no size expression needs more.
pub const MAX_DEPTH: usize = 64;
pub const MAX_SIGNS: usize = 16;
pub const MAX_LEN: usize = 4096;

/// Refuses an expression the parser could not take in bounded time and stack, saying which
/// bound it passes, before any parsing. The manifest's generators (`sorted(...)`) recurse the
/// same way and use the same bounds.
pub(crate) fn check_shape(expr: &str) -> Result<(), String> {
    if expr.len() > MAX_LEN {
        return Err(format!(
            "an expression of {} characters: at most {MAX_LEN}",
            expr.len()
        ));
    }
    let (mut depth, mut deepest, mut signs, mut most_signs) = (0usize, 0usize, 0usize, 0usize);
    for c in expr.chars() {
        match c {
            '(' | '[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        match c {
            '-' | '+' | '!' => {
                signs += 1;
                most_signs = most_signs.max(signs);
            }
            c if c.is_whitespace() || c == '(' || c == '[' => {}
            _ => signs = 0,
        }
    }
    let short = |s: &str| s.chars().take(40).collect::<String>();
    if deepest > MAX_DEPTH {
        return Err(format!(
            "`{}...`: parentheses nested {deepest} deep: at most {MAX_DEPTH}",
            short(expr)
        ));
    }
    if most_signs > MAX_SIGNS {
        return Err(format!(
            "`{}...`: {most_signs} signs in a row: at most {MAX_SIGNS}",
            short(expr)
        ));
    }
    Ok(())
}

/// Evaluates an integer expression over `env`: `+ - * / %` (integer division truncates),
/// parentheses, `ceil_div(a, b)`, `min(a, b)`, `max(a, b)`.
pub fn eval(expr: &str, env: &Env) -> Result<i64, String> {
    check_shape(expr)?;
    let ctx = context(env)?;
    evalexpr::eval_int_with_context(expr, &ctx).map_err(|e| explain(expr, env, e))
}

/// Evaluates an expression that may hold float literals (`2.5`, `-0.5`, `n * 0.5`); integer
/// parts are still checked integer arithmetic.
pub fn eval_float(expr: &str, env: &Env) -> Result<f64, String> {
    check_shape(expr)?;
    let ctx = context(env)?;
    let v = evalexpr::eval_number_with_context(expr, &ctx).map_err(|e| explain(expr, env, e))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("`{expr}`: the value is {v}, not a finite number"))
    }
}

/// Evaluates an integer expression in which `name[index]` stands for element `index` of the
/// buffer `name`, as `element(name, index)` returns it; the index is itself an expression.
pub fn eval_indexed(
    expr: &str,
    env: &Env,
    element: &mut dyn FnMut(&str, i64) -> Result<i64, String>,
) -> Result<i64, String> {
    check_shape(expr)?;
    eval(&substitute(expr, env, element)?, env).map_err(|e| {
        // Name the expression as written, not the one with elements filled in.
        match e.split_once("`: ") {
            Some((_, why)) => format!("`{expr}`: {why}"),
            None => e,
        }
    })
}

/// `expr` with every `name[index]` replaced by the element's value in parentheses.
fn substitute(
    expr: &str,
    env: &Env,
    element: &mut dyn FnMut(&str, i64) -> Result<i64, String>,
) -> Result<String, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts_name = (c.is_alphabetic() || c == '_')
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if !starts_name {
            if c == '[' || c == ']' {
                return Err(format!(
                    "`{expr}`: `{c}` belongs after a buffer's name, as in `count[0]`"
                ));
            }
            out.push(c);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
            j += 1;
        }
        let name: String = chars[i..j].iter().collect();
        let mut k = j;
        while k < chars.len() && chars[k].is_whitespace() {
            k += 1;
        }
        if chars.get(k) != Some(&'[') {
            out.push_str(&name);
            i = j;
            continue;
        }
        let mut depth = 0;
        let mut end = None;
        for (m, ch) in chars.iter().enumerate().skip(k) {
            match ch {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(m);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            return Err(format!("`{expr}`: `[` without its `]`"));
        };
        let inner: String = chars[k + 1..end].iter().collect();
        if inner.trim().is_empty() {
            return Err(format!("`{expr}`: `{name}[]` needs an index"));
        }
        let index = eval_indexed(&inner, env, element)?;
        let value = element(&name, index).map_err(|e| format!("`{expr}`: {e}"))?;
        out.push_str(&format!("({value})"));
        i = end + 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, i64)]) -> Env {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn deep_or_long_expressions_are_refused_quickly_with_the_bound_named() {
        let env = env(&[("n", 4)]);
        let start = std::time::Instant::now();
        let deep = format!("{}n{}", "(".repeat(40_000), ")".repeat(40_000));
        let e = eval(&deep, &env).unwrap_err();
        assert!(e.contains("characters: at most"), "{e}");
        let e = eval(&format!("{}n{}", "(".repeat(100), ")".repeat(100)), &env).unwrap_err();
        assert!(e.contains("nested 100 deep: at most 64"), "{e}");
        let e = eval(&format!("{}n", "-".repeat(100_000)), &env).unwrap_err();
        assert!(e.contains("at most"), "{e}");
        let e = eval(&format!("{}n", "- ".repeat(20)), &env).unwrap_err();
        assert!(e.contains("20 signs in a row"), "{e}");
        let e = eval_float(&format!("{}1.5", "(".repeat(65)), &env).unwrap_err();
        assert!(e.contains("nested"), "{e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        // Ordinary expressions still evaluate, signs and nesting within the bounds.
        assert_eq!(eval("-(-(n))", &env), Ok(4));
        assert_eq!(eval("ceil_div(n, 3) * ((n + 1) - 1)", &env), Ok(8));
    }

    #[test]
    fn expressions_evaluate_over_sizes() {
        let e = env(&[("n", 1000), ("m", 7)]);
        assert_eq!(eval("ceil_div(n, 256)", &e), Ok(4));
        assert_eq!(eval("n * m + 1", &e), Ok(7001));
        assert_eq!(eval("(n + m) % 10", &e), Ok(7));
        assert_eq!(eval("min(n, m) + max(n, m)", &e), Ok(1007));
        assert_eq!(eval("-n / 3", &e), Ok(-333), "integer division truncates");
        assert!(eval("ceil_div(n, 0)", &e)
            .unwrap_err()
            .contains("divides by zero"));
        assert!(eval("n / 0", &e).unwrap_err().contains("division by zero"));
        assert!(eval("n % 0", &e).unwrap_err().contains("division by zero"));
    }

    #[test]
    fn unknown_names_are_named() {
        let e = env(&[("n", 1)]);
        let err = eval("k + 1", &e).unwrap_err();
        assert!(err.contains("`k` is not a size (sizes: n)"), "{err}");
        let err = eval("floor(n)", &e).unwrap_err();
        assert!(err.contains("`floor` is not a function"), "{err}");
        assert!(eval("n / 2.0", &e).unwrap_err().contains("not an integer"));
    }

    #[test]
    fn arithmetic_overflow_is_an_error_not_a_panic() {
        let e = env(&[("big", i64::MAX), ("small", i64::MIN)]);
        for (expr, want) in [
            ("big + 1", "overflow"),
            ("small - 1", "overflow"),
            ("-small", "overflow"),
            ("big * 2", "overflow"),
            ("small / -1", "overflow"),
            ("small % -1", "overflow"),
            ("ceil_div(small, -1)", "overflows"),
        ] {
            let err = eval(expr, &e).unwrap_err();
            assert!(err.contains(want), "{expr}: {err}");
            assert!(err.starts_with(&format!("`{expr}`: ")), "{err}");
        }
        assert_eq!(eval("min(big, small)", &e), Ok(i64::MIN));
        assert_eq!(eval("max(big, small)", &e), Ok(i64::MAX));
    }

    #[test]
    fn ceil_div_is_exact_at_the_extremes() {
        // `(a + b - 1) / b` would overflow here.
        assert_eq!(ceil_div(i64::MAX, 2), Some(i64::MAX / 2 + 1));
        assert_eq!(ceil_div(i64::MAX, i64::MAX), Some(1));
        assert_eq!(ceil_div(i64::MAX, 1), Some(i64::MAX));
        assert_eq!(ceil_div(i64::MIN, 2), Some(i64::MIN / 2));
        assert_eq!(ceil_div(i64::MIN, i64::MAX), Some(-1));
        assert_eq!(ceil_div(i64::MIN, -1), None);
        assert_eq!(ceil_div(1, 0), None);
        for a in -20i64..=20 {
            for b in (-7i64..=7).filter(|b| *b != 0) {
                // bounded: |a / b| <= 20, exact in f64.
                #[allow(clippy::cast_possible_truncation)]
                let want = (a as f64 / b as f64).ceil() as i64;
                assert_eq!(ceil_div(a, b), Some(want), "ceil_div({a}, {b})");
            }
        }
    }

    #[test]
    fn floats_mix_with_sizes() {
        let e = env(&[("n", 4)]);
        assert_eq!(eval_float("2.5", &e), Ok(2.5));
        assert_eq!(eval_float("-0.5", &e), Ok(-0.5));
        assert_eq!(eval_float("n * 0.25", &e), Ok(1.0));
        assert_eq!(eval_float("3", &e), Ok(3.0));
        assert_eq!(eval_float("min(n, 0.5)", &e), Ok(0.5));
        assert!(eval_float("1.0 / 0.0", &e).unwrap_err().contains("finite"));
    }

    #[test]
    fn elements_of_buffers_are_substituted() {
        let e = env(&[("n", 10)]);
        let mut look = |name: &str, i: i64| match (name, i) {
            ("count", 0) => Ok(3),
            ("count", 9) => Ok(-2),
            _ => Err(format!("no element {name}[{i}]")),
        };
        assert_eq!(eval_indexed("count[0]", &e, &mut look), Ok(3));
        assert_eq!(eval_indexed("count[n - 1] * 2", &e, &mut look), Ok(-4));
        assert_eq!(
            eval_indexed("count[count[0] - 3] + n", &e, &mut look),
            Ok(13)
        );
        assert_eq!(eval_indexed("n", &e, &mut look), Ok(10));
        assert!(eval_indexed("count[1]", &e, &mut look)
            .unwrap_err()
            .contains("no element count[1]"));
        assert!(eval_indexed("count[0", &e, &mut look)
            .unwrap_err()
            .contains("without"));
        assert!(eval_indexed("count[]", &e, &mut look)
            .unwrap_err()
            .contains("needs an index"));
        assert!(eval_indexed("[0]", &e, &mut look).is_err());
        let err = eval_indexed("count[0] + k", &e, &mut look).unwrap_err();
        assert!(
            err.starts_with("`count[0] + k`: `k` is not a size"),
            "{err}"
        );
    }
}
