//! The course tables `racegate perf --table FILE` writes, from one run's rows: the transpose
//! family (time, GB/s, bank conflicts per request), the reduction ladder (time and speed-up over
//! the first rung), matmul naive against tiled 16/32, and any other family as time and rate.

use super::runner::KernelPerf;

fn num(v: Option<f64>, digits: usize) -> String {
    v.filter(|v| v.is_finite())
        .map_or("n/a".into(), |v| format!("{v:.digits$}"))
}

fn speedup(r: &KernelPerf) -> String {
    num(r.speedup, 2) + if r.speedup.is_some() { "x" } else { "" }
}

/// The tables, one section per family in the order the rows came, under `title`.
pub fn markdown(rows: &[KernelPerf], title: &str) -> String {
    let mut out = format!("{title}\n");
    let mut families: Vec<&str> = Vec::new();
    for r in rows {
        if !families.contains(&r.exercise.as_str()) {
            families.push(&r.exercise);
        }
    }
    for fam in families {
        let of: Vec<&KernelPerf> = rows.iter().filter(|r| r.exercise == fam).collect();
        let reference = of.iter().find_map(|r| r.reference.clone());
        out.push_str(&format!("\n## {fam}\n\n"));
        if let Some(p) = of.first() {
            out.push_str(&format!("Problem: {}.", p.problem));
        }
        if let Some(r) = &reference {
            out.push_str(&format!(" Speed-up over `{r}`."));
        }
        out.push_str("\n\n");
        match fam {
            "transpose" => {
                out.push_str(
                    "| kernel | time (µs) | GB/s | shared-load conflicts / request | shared-store conflicts / request | speed-up |\n|---|---|---|---|---|---|\n",
                );
                for r in &of {
                    let c = r.counters.as_ref();
                    out.push_str(&format!(
                        "| `{}` | {:.1} | {} | {} | {} | {} |\n",
                        r.case,
                        r.median_us,
                        num(r.gbps, 0),
                        num(c.and_then(|c| c.shared_ld_conflicts_per_request), 2),
                        num(c.and_then(|c| c.shared_st_conflicts_per_request), 2),
                        speedup(r)
                    ));
                }
            }
            "matmul" => {
                out.push_str("| kernel | time (µs) | GFLOP/s | speed-up |\n|---|---|---|---|\n");
                for r in &of {
                    out.push_str(&format!(
                        "| `{}` | {:.1} | {} | {} |\n",
                        r.case,
                        r.median_us,
                        num(r.gflops, 0),
                        speedup(r)
                    ));
                }
            }
            _ => {
                out.push_str("| kernel | time (µs) | GB/s | speed-up |\n|---|---|---|---|\n");
                for r in &of {
                    out.push_str(&format!(
                        "| `{}` | {:.1} | {} | {} |\n",
                        r.case,
                        r.median_us,
                        num(r.gbps.or(r.gflops), 0),
                        speedup(r)
                    ));
                }
            }
        }
    }
    out
}
