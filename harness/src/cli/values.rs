//! Flag values checked where clap parses them, one parser per kind of value, shared by every
//! command: deadlines in seconds (finite, positive, at most a week), counts of at least one,
//! memory sizes. A bad value is a usage error that names the flag (exit 2), never a panic
//! (`Duration::from_secs_f64` panics on a negative, infinite or huge number).

/// The longest deadline accepted, in seconds (a week).
const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;

/// A deadline in seconds: a finite number above 0 and at most a week.
pub fn seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 || v > MAX_SECONDS {
        return Err(format!(
            "`{s}`: a deadline must be more than 0 and at most {MAX_SECONDS} seconds"
        ));
    }
    Ok(v)
}

/// A count that must be at least 1 (trials, runs), and at most `u32::MAX`.
pub fn at_least_one(s: &str) -> Result<u32, String> {
    let t = s.trim();
    match t.parse::<u32>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        // A whole number too large to count with: say so, not that it is no number.
        Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("`{s}` is too large (at most {})", u32::MAX))
        }
        Err(_) => Err(format!("`{s}` is not a whole number of at least 1")),
    }
}

/// A number of processes at once (`--jobs`): at least 1. For `value_parser = values::jobs` on
/// each command's `--jobs` (until then `Settings::new` refuses 0).
pub fn jobs(s: &str) -> Result<usize, String> {
    at_least_one(s).map(|n| n as usize)
}

/// The most memory a limit may name, in MiB (1 PiB).
const MAX_MIB: u64 = 1 << 30;

/// A memory size in MiB: at least 256 (NVRTC alone maps about 150), at most [`MAX_MIB`].
pub fn mebibytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    match t.parse::<u64>() {
        Ok(n) if (256..=MAX_MIB).contains(&n) => Ok(n),
        Ok(n) if n < 256 => Err(format!("`{s}`: at least 256 MiB")),
        Ok(_) => Err(format!("`{s}`: at most {MAX_MIB} MiB")),
        Err(_) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
            Err(format!("`{s}`: at most {MAX_MIB} MiB"))
        }
        Err(_) => Err(format!("`{s}` is not a whole number of MiB")),
    }
}

/// A language of the explanations (`--lang`): en or ko.
pub fn lang(s: &str) -> Result<crate::report::explain::Lang, String> {
    crate::report::explain::Lang::parse(s)
        .ok_or_else(|| format!("`{s}` is not a language racegate speaks (en, ko)"))
}

/// The tools as clap knows them: [`Tool::ALL`] is the one list the parser, `--help` (each with
/// [`Tool::describe`]), the error for an unknown name and the README's table read.
impl clap::ValueEnum for crate::judge::sanitize::Tool {
    fn value_variants<'a>() -> &'a [Self] {
        &crate::judge::sanitize::Tool::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.describe()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_must_be_finite_and_positive() {
        assert_eq!(seconds("2.5"), Ok(2.5));
        for bad in ["-1", "0", "nan", "inf", "1e300", "x", ""] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts_start_at_one() {
        assert_eq!(at_least_one("3"), Ok(3));
        assert!(at_least_one("0").is_err());
        assert!(at_least_one("-2").is_err());
        assert_eq!(jobs("4"), Ok(4));
        assert!(jobs("0").is_err());
        assert!(mebibytes("100").is_err());
        assert_eq!(mebibytes("4096"), Ok(4096));
        // Too large is said as such, not as too small or as no number.
        for big in ["99999999999999", "99999999999999999999999"] {
            assert!(mebibytes(big).unwrap_err().contains("at most"), "{big}");
        }
        assert!(jobs("4294967296").unwrap_err().contains("too large"));
        assert!(jobs("x").unwrap_err().contains("not a whole number"));
    }
}
