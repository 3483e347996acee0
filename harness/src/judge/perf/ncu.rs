//! Nsight Compute (`ncu`) as a child with a deadline, and its `--csv` output parsed into
//! per-launch metrics and the per-request ratios the course talks about.
//!
//! `ncu --csv --metrics M1,M2,...` prints a header row (`"ID","Process ID",...,"Kernel Name",
//! ...,"Metric Name","Metric Unit","Metric Value"`) and then one row per (kernel launch,
//! metric). Values carry thousands separators (`"16,381,996"`) and units that ncu scales
//! (`nsecond`, `usecond`, `Kbyte`, `Mbyte`, `%`). ncu's own messages (`==PROF==`,
//! `==WARNING==`, `==ERROR==`) and the profiled program's output may be interleaved with the
//! rows; only rows with as many fields as the header count.
//!
//! ```
//! use racegate::judge::perf::ncu::{parse_csv, Counters};
//! let csv = "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
//!            \"0\",\"k\",\"smsp__sass_inst_executed_op_shared_ld.sum\",\"inst\",\"1,024\"\n\
//!            \"0\",\"k\",\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\",\"\",\"31,744\"\n";
//! let launches = parse_csv(csv).unwrap();
//! let c = Counters::of(&launches.iter().collect::<Vec<_>>());
//! assert_eq!(c.shared_ld_conflicts_per_request, Some(31.0));
//! ```

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::errors::Result;
use crate::proc::watchdog;

/// The metrics racegate asks for, the same list `ci/h200_run.py` captures fixtures with.
pub const METRICS: [&str; 14] = [
    "gpu__time_duration.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "dram__bytes.sum",
];

/// The environment variable that names the ncu to run (else `ncu` on `PATH` or in the CUDA
/// install folders).
pub const NCU_ENV: &str = "RACEGATE_NCU";

/// The text ncu prints when the driver does not let this user read the performance counters.
pub const NOT_PERMITTED: &str = "ERR_NVGPUCTRPERM";

/// One profiled kernel launch: its identity and every metric, normalized (times in
/// nanoseconds, sizes in bytes, percentages as printed, counts as counts).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Launch {
    pub id: String,
    /// As ncu prints it (`transpose_padded`, `void reduce<float, 256>(const float *, ...)`).
    pub kernel: String,
    pub block: String,
    pub grid: String,
    pub metrics: BTreeMap<String, f64>,
}

impl Launch {
    /// The kernel's name without its return type and parameters: `reduce<float, 256>`.
    pub fn base_name(&self) -> &str {
        base_name(&self.kernel)
    }
}

/// `void f<int>(int *)` -> `f<int>`; `transpose_padded` -> itself.
pub fn base_name(kernel: &str) -> &str {
    let head = kernel.split('(').next().unwrap_or(kernel).trim();
    head.strip_prefix("void ").unwrap_or(head).trim()
}

/// Splits one CSV line into its fields (`"a","b ""c""",d`); `None` for an unterminated quote.
pub fn split_csv(line: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return None;
    }
    out.push(field);
    Some(out)
}

/// A metric value in racegate's units: thousands separators dropped, a scaled unit brought
/// back to its base (`usecond` -> nanoseconds, `Kbyte` -> bytes; ncu's prefixes are powers of
/// 1000). `None` for what is not a number (`n/a`).
pub fn parse_value(value: &str, unit: &str) -> Option<f64> {
    let v: f64 = value.trim().replace(',', "").parse().ok()?;
    if !v.is_finite() {
        return None;
    }
    let time = match unit {
        "nsecond" => Some(1.0),
        "usecond" => Some(1e3),
        "msecond" => Some(1e6),
        "second" => Some(1e9),
        _ => None,
    };
    if let Some(f) = time {
        return Some(v * f);
    }
    let prefix = |u: &str| -> f64 {
        match u.chars().next() {
            Some('K') => 1e3,
            Some('M') => 1e6,
            Some('G') => 1e9,
            Some('T') => 1e12,
            _ => 1.0,
        }
    };
    let scaled = [
        "byte",
        "sector",
        "request",
        "inst",
        "warp",
        "cycle",
        "wavefront",
    ]
    .iter()
    .any(|base| unit.len() == base.len() + 1 && unit.ends_with(base));
    Some(if scaled { v * prefix(unit) } else { v })
}

/// Every launch in ncu's `--csv` output, in the order printed. Lines that are not rows of the
/// table (ncu's messages, the program's output) are skipped; a row whose value does not parse
/// is an error naming it, and so is output with no header at all.
pub fn parse_csv(text: &str) -> std::result::Result<Vec<Launch>, String> {
    let mut header: Option<Vec<String>> = None;
    let mut launches: Vec<Launch> = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if !line.starts_with('"') {
            continue; // `==PROF==`, `==WARNING==`, the program's own lines
        }
        let Some(fields) = split_csv(line) else {
            continue;
        };
        if fields.first().is_some_and(|f| f == "ID") && fields.iter().any(|f| f == "Metric Name") {
            header = Some(fields);
            continue;
        }
        let Some(h) = &header else { continue };
        if fields.len() != h.len() {
            continue;
        }
        let col = |name: &str| -> std::result::Result<&str, String> {
            h.iter()
                .position(|x| x == name)
                .map(|i| fields[i].as_str())
                .ok_or_else(|| format!("ncu's header has no `{name}` column"))
        };
        let (id, kernel, name) = (col("ID")?, col("Kernel Name")?, col("Metric Name")?);
        let (unit, value) = (col("Metric Unit")?, col("Metric Value")?);
        let v = parse_value(value, unit).ok_or_else(|| {
            format!(
                "line {}: `{name}` of `{kernel}` is `{value}` `{unit}`, not a number",
                no + 1
            )
        })?;
        let at = match launches.last() {
            Some(l) if l.id == id => launches.len() - 1,
            _ => {
                launches.push(Launch {
                    id: id.to_string(),
                    kernel: kernel.to_string(),
                    block: col("Block Size").unwrap_or("").to_string(),
                    grid: col("Grid Size").unwrap_or("").to_string(),
                    metrics: BTreeMap::new(),
                });
                launches.len() - 1
            }
        };
        launches[at].metrics.insert(name.to_string(), v);
    }
    if header.is_none() {
        return Err("no ncu CSV table (no `\"ID\",...,\"Metric Name\"` header line)".into());
    }
    Ok(launches)
}

/// What the course reads off the counters, over one or more launches of one kernel: sums are
/// added over launches before dividing, percentages and times averaged.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    pub launches: usize,
    /// ncu's `gpu__time_duration.sum`, mean per launch, in microseconds.
    pub duration_us: Option<f64>,
    /// Bank conflicts per shared-memory load (store) instruction: 0 conflict-free, 31 for a
    /// 32-way conflict. `None`: the kernel has no shared loads (stores).
    pub shared_ld_conflicts_per_request: Option<f64>,
    pub shared_st_conflicts_per_request: Option<f64>,
    /// Wavefronts per shared load (store) instruction: 1 is ideal.
    pub shared_ld_wavefronts_per_request: Option<f64>,
    pub shared_st_wavefronts_per_request: Option<f64>,
    /// 32-byte sectors per global load (store) request: 4 when 32 threads read 32 consecutive
    /// 4-byte words, 32 when each thread touches a sector of its own.
    pub global_ld_sectors_per_request: Option<f64>,
    pub global_st_sectors_per_request: Option<f64>,
    /// Achieved occupancy: active warps over the SM's maximum, in percent.
    pub occupancy_pct: Option<f64>,
    /// Branch efficiency: branches whose threads all went one way, in percent.
    pub branch_uniform_pct: Option<f64>,
    /// Bytes read from and written to DRAM, mean per launch.
    pub dram_bytes: Option<f64>,
}

impl Counters {
    /// The counters over `launches` (of one kernel).
    pub fn of(launches: &[&Launch]) -> Counters {
        let n = launches.len();
        let sum = |m: &str| -> Option<f64> {
            let v: Vec<f64> = launches
                .iter()
                .filter_map(|l| l.metrics.get(m).copied())
                .collect();
            (!v.is_empty()).then(|| v.iter().sum())
        };
        let mean = |m: &str| -> Option<f64> {
            let v: Vec<f64> = launches
                .iter()
                .filter_map(|l| l.metrics.get(m).copied())
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let per = |num: &str, den: &str| match (sum(num), sum(den)) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        Counters {
            launches: n,
            duration_us: mean("gpu__time_duration.sum").map(|ns| ns / 1e3),
            shared_ld_conflicts_per_request: per(METRICS[1], METRICS[5]),
            shared_st_conflicts_per_request: per(METRICS[2], METRICS[6]),
            shared_ld_wavefronts_per_request: per(METRICS[3], METRICS[5]),
            shared_st_wavefronts_per_request: per(METRICS[4], METRICS[6]),
            global_ld_sectors_per_request: per(METRICS[7], METRICS[8]),
            global_st_sectors_per_request: per(METRICS[9], METRICS[10]),
            occupancy_pct: mean(METRICS[11]),
            branch_uniform_pct: mean(METRICS[12]),
            dram_bytes: mean(METRICS[13]),
        }
    }

    /// The worse of the load and store conflicts per request (`None`: no shared access).
    pub fn conflicts_per_request(&self) -> Option<f64> {
        worse(
            self.shared_ld_conflicts_per_request,
            self.shared_st_conflicts_per_request,
        )
    }

    /// The worse of the load and store sectors per request (`None`: no global access).
    pub fn sectors_per_request(&self) -> Option<f64> {
        worse(
            self.global_ld_sectors_per_request,
            self.global_st_sectors_per_request,
        )
    }
}

fn worse(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The launches of kernel `entry` (by base name; a C++ entry may carry template arguments).
pub fn of_kernel<'a>(launches: &'a [Launch], entry: &str) -> Vec<&'a Launch> {
    let ident = entry.split('<').next().unwrap_or(entry);
    launches
        .iter()
        .filter(|l| {
            let b = l.base_name();
            b == entry || b.split('<').next() == Some(ident)
        })
        .collect()
}

/// Why there are no counters.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", content = "reason", rename_all = "kebab-case")]
pub enum Unavailable {
    /// No ncu found.
    Missing(String),
    /// ncu ran but the driver refused the counters (`ERR_NVGPUCTRPERM`).
    NotPermitted(String),
    /// ncu failed, hung or printed nothing racegate can read.
    Failed(String),
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unavailable::Missing(w) => write!(f, "ncu not found: {w}"),
            Unavailable::NotPermitted(w) => write!(f, "ncu may not read the counters: {w}"),
            Unavailable::Failed(w) => write!(f, "ncu failed: {w}"),
        }
    }
}

/// The ncu to run: `$RACEGATE_NCU` (which must exist), else `ncu` on `PATH` or in the CUDA
/// install folders.
pub fn find() -> std::result::Result<PathBuf, Unavailable> {
    if let Some(p) = std::env::var_os(NCU_ENV).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(Unavailable::Missing(format!(
                "${NCU_ENV} is {}, which is not a file",
                p.display()
            )))
        };
    }
    crate::run::doctor::find_on_path("ncu").ok_or_else(|| {
        Unavailable::Missing(format!(
            "not on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin, and ${NCU_ENV} is not set; \
             install Nsight Compute with the CUDA toolkit"
        ))
    })
}

/// The line of ncu's output that says the counters were refused, if any.
pub fn refusal(text: &str) -> Option<String> {
    text.lines()
        .find(|l| l.contains(NOT_PERMITTED))
        .map(|l| l.trim().to_string())
}

/// ncu's arguments to profile the first launch of `entry` in `program args`.
pub fn arguments(entry: &str, program: &Path, args: &[OsString]) -> Vec<OsString> {
    let ident = entry.split('<').next().unwrap_or(entry);
    let mut escaped = String::new();
    for c in ident.chars() {
        if !(c.is_ascii_alphanumeric() || c == '_') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    let mut out: Vec<OsString> = [
        "--target-processes",
        "all",
        "--clock-control",
        "none",
        "--csv",
        "--launch-count",
        "1",
        "--metrics",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    out.push(METRICS.join(",").into());
    out.push("-k".into());
    out.push(format!("regex:^{escaped}(<|$)").into());
    out.push(program.into());
    out.extend(args.iter().cloned());
    out
}

/// The locale ncu runs in (its CSV numbers then use a decimal point whatever the user's is).
fn c_locale() -> [(String, String); 2] {
    [("LC_ALL".into(), "C".into()), ("LANG".into(), "C".into())]
}

/// ncu's raw output of one run, and what it came to.
pub struct Profiled {
    /// Standard output (the CSV) then standard error.
    pub raw: String,
    pub launches: std::result::Result<Vec<Launch>, Unavailable>,
}

/// Runs `ncu` on `program args` under `timeout`, profiling `entry`'s first launch.
pub fn profile(
    ncu: &Path,
    entry: &str,
    program: &Path,
    args: &[OsString],
    timeout: Duration,
) -> Result<Profiled> {
    // The C locale: ncu prints numbers as the locale writes them, and a decimal comma would
    // split the CSV's fields wrongly.
    let (done, stdout) = watchdog::collect(
        ncu,
        &arguments(entry, program, args),
        &watchdog::Spawn::with_env(&c_locale()),
        watchdog::Deadline::within(timeout),
        watchdog::Output::bounded(),
    )?;
    let stdout = stdout.text();
    let raw = format!("{stdout}{}", done.stderr);
    let launches = if let Some(line) = refusal(&raw) {
        Err(Unavailable::NotPermitted(line))
    } else if done.exit != watchdog::Exit::Code(0) {
        Err(Unavailable::Failed(format!(
            "{} ({})",
            done.exit.describe(timeout),
            tail(&raw)
        )))
    } else {
        match parse_csv(&stdout) {
            Ok(l) if of_kernel(&l, entry).is_empty() => Err(Unavailable::Failed(format!(
                "no launch of `{entry}` in its output ({})",
                tail(&raw)
            ))),
            Ok(l) => Ok(l),
            Err(e) => Err(Unavailable::Failed(format!("{e} ({})", tail(&raw)))),
        }
    };
    Ok(Profiled { raw, launches })
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}
