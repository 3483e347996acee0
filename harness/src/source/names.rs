//! Case names as people type them: globs that select several (`reduce*`, `*::no_*sync*`), and
//! suggestions for a name that is not there (`reduce_sequentail` -> `reduce_sequential`).
//!
//! ```
//! use racegate::source::names::{glob_match, suggest};
//! assert!(glob_match("reduce*", "reduce_sequential::no_loop_sync"));
//! assert_eq!(suggest("reduce_sequentail", ["reduce_sequential", "matmul_naive"]), ["reduce_sequential"]);
//! ```

/// Whether `pattern` is a glob (holds `*`, `?` or `[`).
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Shell-style matching of a whole name: `*` any run of characters (`::` included), `?` one
/// character, `[abc]`, `[a-z]` and `[!abc]` one character of (or not of) a set.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point for the last `*`.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') => class(&p, pi, n[ni]),
            Some(&c) if c == n[ni] => Some(pi + 1),
            _ => None,
        };
        match (step, star) {
            (Some(next), _) => {
                pi = next;
                ni += 1;
            }
            (None, Some((sp, sn))) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Matches `c` against the class opening at `p[at]`; the index after the class when it matches.
fn class(p: &[char], at: usize, c: char) -> Option<usize> {
    let mut i = at + 1;
    let negate = matches!(p.get(i), Some('!') | Some('^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < p.len() && (p[i] != ']' || first) {
        first = false;
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|e| *e != ']') {
            hit |= p[i] <= c && c <= p[i + 2];
            i += 3;
        } else {
            hit |= p[i] == c;
            i += 1;
        }
    }
    // An unclosed `[` is a literal.
    if i >= p.len() {
        return (c == '[').then_some(at + 1);
    }
    (hit != negate).then_some(i + 1)
}

/// Up to five names close to `name`, closest first: Jaro-Winkler similarity of at least 0.85
/// (or one name contains the other), and within 0.03 of the closest.
pub fn suggest<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = names
        .into_iter()
        .filter_map(|n| {
            let score = strsim::jaro_winkler(name, n);
            let contains = !name.is_empty() && (n.contains(name) || name.contains(n));
            (score >= 0.85 || contains)
                .then_some((if contains { score.max(0.85) } else { score }, n))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    // Only the names about as close as the closest one.
    let best = scored.first().map_or(0.0, |s| s.0);
    scored
        .into_iter()
        .filter(|(s, _)| *s >= best - 0.03)
        .take(5)
        .map(|(_, n)| n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_names() {
        assert!(glob_match("reduce*", "reduce_sequential::no_loop_sync"));
        assert!(glob_match("*::no_*", "matmul_tiled16::no_bounds_check"));
        assert!(!glob_match("*::no_*", "matmul_tiled16"));
        assert!(glob_match("matmul_tiled??", "matmul_tiled16"));
        assert!(glob_match("matmul_tiled[13]*", "matmul_tiled32"));
        assert!(!glob_match("matmul_tiled[!13]*", "matmul_tiled32"));
        assert!(glob_match("matmul_tiled[0-9][0-9]", "matmul_tiled16"));
        assert!(!glob_match("reduce", "reduce_sequential"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
        assert!(glob_match("[", "["));
        assert!(is_glob("reduce*") && !is_glob("reduce"));
    }

    #[test]
    fn suggestions_catch_typos_and_parts() {
        let names = [
            "reduce_sequential",
            "reduce_interleaved",
            "matmul_tiled16",
            "matmul_tiled32",
        ];
        assert_eq!(suggest("reduce_sequentail", names), ["reduce_sequential"]);
        assert_eq!(
            suggest("matmul_tiled", names),
            ["matmul_tiled16", "matmul_tiled32"]
        );
        assert!(suggest("histogram", names).is_empty());
    }
}
