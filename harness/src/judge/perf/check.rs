//! `racegate check`'s perf section: every `//@ perf:` expectation of the checked cases, judged
//! against Nsight Compute's counters (`runner::measure`, as `racegate perf --check`) when ncu
//! works, and each listed as skipped with the reason when it does not (no ncu, the counters
//! refused, no device, a perf run that failed). A skipped expectation is never held.

use std::path::Path;

use crate::errors::Result;
use crate::source::catalog::{Case, Catalog};

use super::expect::{self, Judged, Outcome};
use super::ncu::Unavailable;
use super::runner::{self, PerfConfig};

/// The expectations of `cases`, each skipped for `reason` (nothing runs).
pub fn skipped(catalog: &Catalog, cases: &[&Case], reason: &str) -> Result<Vec<Judged>> {
    let mut out = Vec::new();
    for c in cases {
        let e = runner::expectations(catalog, c)?;
        out.extend(expect::judge(
            &c.name,
            &c.entry.name,
            &c.path,
            &e,
            Err(reason),
        ));
    }
    Ok(out)
}

/// Judges the expectations of `cases` with `ncu` (or lists them skipped with why there is
/// none); `exe` runs the perf worker. A case without expectations runs nothing.
pub fn run(
    catalog: &Catalog,
    cases: &[&Case],
    cfg: &PerfConfig,
    exe: &Path,
    ncu: std::result::Result<&Path, &Unavailable>,
) -> Result<Vec<Judged>> {
    let ncu = match ncu {
        Ok(n) => n,
        Err(u) => return skipped(catalog, cases, &u.to_string()),
    };
    let mut out = Vec::new();
    for c in cases {
        let e = runner::expectations(catalog, c)?;
        if e.is_empty() {
            continue;
        }
        match runner::measure(catalog, c, cfg, exe, Ok(ncu), false) {
            Ok(r) => out.extend(r.expectations),
            Err(err) => {
                let why = format!("perf failed: {err}");
                out.extend(expect::judge(
                    &c.name,
                    &c.entry.name,
                    &c.path,
                    &e,
                    Err(&why),
                ));
            }
        }
    }
    Ok(out)
}

/// How many of `judged` came out broken and skipped.
pub fn counts(judged: &[Judged]) -> (usize, usize) {
    let n = |f: fn(&Outcome) -> bool| judged.iter().filter(|j| f(&j.outcome)).count();
    (
        n(|o| matches!(o, Outcome::Broken { .. })),
        n(|o| matches!(o, Outcome::Skipped { .. })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> std::path::PathBuf {
        crate::build::toolchain::find_root(&crate::source::paths::package_dir()).unwrap()
    }

    #[test]
    fn without_ncu_every_expectation_is_skipped_with_why_and_none_held() {
        let catalog = Catalog::discover(&root()).unwrap();
        let cases = catalog
            .select(&["transpose_padded".into(), "reduce_sequential".into()])
            .unwrap();
        let why = Unavailable::Missing("$RACEGATE_NCU is /nonexistent".into());
        let cfg = PerfConfig::for_counters("sm_90");
        let j = run(&catalog, &cases, &cfg, Path::new("/nonexistent"), Err(&why)).unwrap();
        let names: Vec<&str> = j.iter().map(|j| j.expectation.as_str()).collect();
        assert_eq!(names, ["bank-conflicts=none", "coalesced=yes"]);
        for x in &j {
            assert_eq!(x.case, "transpose_padded");
            assert!(x.at.starts_with("kernels/transpose.cu:"), "{x:?}");
            assert_eq!(
                x.outcome,
                Outcome::Skipped {
                    reason: "ncu not found: $RACEGATE_NCU is /nonexistent".into()
                }
            );
        }
        assert_eq!(counts(&j), (0, 2));
    }
}
