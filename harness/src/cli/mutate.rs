//! `racegate mutate`: mutants of a kernel (listed with their diffs), and with `--run` the battery
//! on each, scored per operator and per kernel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::errors::exit;
use crate::judge::sanitize::Tool;
use crate::mutate::{
    self, equivalents_path, Equivalents, MutantResult, MutateConfig, MutateEvent, MutationReport,
    Outcome, Unit,
};
use crate::source::catalog::{Case, Catalog};
use crate::source::files;
use crate::source::manifest::Check;
use crate::source::partition::Partition;
use crate::{build::toolchain, report, Error, Result};

use super::battery_args::BatteryArgs;
use super::flags::{default, PartitionArg};
use super::merge::Place;
use super::output::{outln, JsonArg};
use super::progress::{Progress, Status};
use super::settings::{self, Global, Settings};
use super::values;

pub const HELP: &str = concat!(
    "Operators: remove-barrier (a `__syncthreads();` deleted), barrier-into-branch (the barrier \
taken by every other thread only), atomic-to-plain (`atomicAdd(&x, v)` -> `x += v`, and Sub, And, \
Or, Xor, Max, Min, Exch, Inc, Dec, CAS), drop-syncwarp (a `__syncwarp(...)` deleted), \
shuffle-mask-narrow (0xffffffff -> 0x0000ffff in __shfl*_sync, __ballot_sync, ...), \
bounds-off-by-one (`<` -> `<=`, `>=` -> `>` in if/for/while conditions), drop-shared-init (a plain \
store into __shared__ memory before the first barrier deleted), padding-removal (a shared tile's \
[T][T + 1] -> [T][T]) and swizzle-removal (`(c ^ r)` in a shared tile's index -> `c`): these two \
change speed, not results, so `perf` judges them (the kernel under ncu against its `//@ perf:` \
bank-conflicts expectation; without ncu they are inconclusive). Comments, strings and preprocessor \
lines are never touched.\n",
    "Ids: OPERATOR:FILE:HASH, from the operator, the file's name, the function, the normalized text \
of the site's lines and its occurrence among same-looking sites (no line numbers): an edit elsewhere \
keeps them.\n",
    "Outcomes: killed (by the first detector that noticed: stress with jitter, then each tool of \
--tools in its order, by default every one but streamcheck in the order --help lists them; the \
rest are not run; perf for padding-removal and swizzle-removal), timed-out (a hang, killed at the \
deadline: a detection), survived, stillborn (NVRTC refuses it: not scored), equivalent (marked harmless: not \
run, not scored), inconclusive (a tool missing or failing, or --budget ran out: not scored). Kill \
rate = (killed + timed-out) / (mutants - stillborn - equivalent - inconclusive). The unmutated \
kernel runs the same battery beside its mutants (the control): it must be clean.\n",
    "Equivalents: KERNEL.cu.equivalent.toml beside the kernel, entries `[[equivalent]]` with `id` \
and `reason` (required); a stale id is a warning.\n",
    "Examples:\n",
    "  racegate mutate kernels/reduce_sequential.cu\n",
    "  racegate mutate kernels/transpose.cu --entry transpose_padded --operators remove-barrier,bounds-off-by-one\n",
    "  racegate mutate --run --trials 20 --json mutate.json\n",
    "  racegate mutate --manifest racegate.toml --run block_sum scan_pipeline\n",
    "Exit codes: 0 every mutant killed (or marked equivalent), or only listed; 1 a survivor not \
marked equivalent, or a control flagged; 2 bad input (an unknown operator, file or kernel, an \
equivalent without a reason); 3 inconclusive (NVRTC missing, a tool failing, the budget ran out); \
4 --run without a CUDA device. When several hold, the first of 2, 4, 3, 1 wins."
);

/// `--trials`' default here, fewer than `check`'s: every mutant of a kernel runs the battery of
/// each of its cases (with jitter only), and a kernel has tens of mutants.
const TRIALS: u32 = 20;
/// `--sanitize-timeout`'s default here, in seconds, as `check`'s: a mutant runs the tools on its
/// case's small sanitizer geometry, as the catalog's kernels do there.
const SANITIZE_TIMEOUT: f64 = 20.0;

#[derive(clap::Args)]
#[command(
    mut_arg("trials", default!(TRIALS)),
    mut_arg("seed", default!(1)),
    mut_arg("sanitize_timeout", default!(SANITIZE_TIMEOUT))
)]
pub struct MutateArgs {
    /// KERNEL.cu files (a catalog kernel under kernels/, or a manifest kernel's source), or with
    /// a manifest its kernels' names (globs work); default: every correct kernel of the catalog,
    /// or every kernel of the manifest.
    targets: Vec<String>,
    #[command(flatten)]
    shard: PartitionArg,
    /// Only these entry points of the files (repeatable).
    #[arg(long, value_name = "NAME")]
    entry: Vec<String>,
    /// The operators, comma-separated (default: all).
    #[arg(long, value_name = "OPS", value_delimiter = ',')]
    operators: Vec<String>,
    /// Run the battery on every mutant (needs a CUDA device); without it the mutants are listed.
    #[arg(long)]
    run: bool,
    #[command(flatten)]
    battery: BatteryArgs,
    /// The detectors to run, comma-separated, in the order they run. Default: every one but
    /// streamcheck (a mutant is a kernel racegate launches).
    #[arg(long, value_name = "TOOLS", value_delimiter = ',', value_enum)]
    tools: Vec<Tool>,
    /// Seconds after which no new run starts; the mutants left are inconclusive.
    #[arg(long, value_name = "SECONDS", value_parser = values::seconds)]
    budget: Option<f64>,
    /// With --run: write the scores and every mutant's outcome here as markdown (for docs/).
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    /// List without compiling each mutant (no stillborn check, no NVRTC needed).
    #[arg(long)]
    no_compile: bool,
    #[command(flatten)]
    out: JsonArg,
    #[command(flatten)]
    html: super::output::HtmlArg,
}

pub fn run(global: &Global, a: MutateArgs) -> Result<u8> {
    a.out.claim_stdout();
    a.battery.devices.select()?;
    let operators = mutate::parse_operators(&a.operators).map_err(Error::Usage)?;
    // As every command that reads kernels: without a manifest or a catalog, the message names
    // `racegate.toml` and `--manifest` first.
    let catalog = super::list::catalog(global)?;
    let mut units = units(&catalog, &a)?;
    // No report over what the run reads: the catalog's files, the kernels and their
    // equivalents files.
    let mut inputs = settings::inputs_of(&catalog);
    for u in &units {
        let path = catalog.root.join(&u.file);
        inputs.push(equivalents_path(&path));
        inputs.push(path);
    }
    let outputs = [
        ("--table", a.table.as_deref()),
        ("--json", a.out.json.as_deref()),
    ];
    settings::check_outputs(
        &outputs,
        &inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    )?;
    a.html.check(&outputs)?;
    for u in &mut units {
        u.mutants = mutate::mutants(&u.file, &u.source, &operators);
        // A reference kernel in the kernel's own file is built from the original: its mutants
        // could change nothing.
        let refs: Vec<&str> = u
            .cases
            .iter()
            .filter_map(|c| match c.kernel_spec().map(|k| (&k.check, &k.source)) {
                Some((Check::Reference { path, entry }, source)) if path == source => {
                    Some(mutate::entry_function(entry))
                }
                _ => None,
            })
            .collect();
        u.mutants.retain(|m| !refs.contains(&m.function.as_str()));
        // The entry point of a case of the same file that this unit does not run (another
        // manifest kernel, or one --entry left out) belongs to that case: a mutant there could
        // change nothing here, and would only come out "survived".
        let own: Vec<&str> = u
            .cases
            .iter()
            .map(|c| mutate::entry_function(&c.entry.name))
            .collect();
        let others: Vec<&str> = catalog
            .cases
            .iter()
            .filter(|c| c.path == u.file && !u.cases.iter().any(|x| x.name == c.name))
            .map(|c| mutate::entry_function(&c.entry.name))
            .collect();
        u.mutants.retain(|m| {
            let f = m.function.as_str();
            own.contains(&f) || !others.contains(&f)
        });
        // Nor any function no tested entry reaches (another `__global__` no case launches, a
        // device function none of them calls): listed in the report as not mutated.
        mutate::keep_reachable(u, &others);
    }
    // Where this shard's kernels and mutants stand in the whole run, for `racegate merge`.
    let mut places = Vec::new();
    if let Some(p) = a.shard.partition {
        (units, places) = shard(units, p);
        let count: usize = units.iter().map(|u| u.mutants.len()).sum();
        outln!("shard {p}: {count} mutant(s) of {} kernel(s)", units.len());
    }
    if a.run {
        if let Some(u) = units.iter().find(|u| u.cases.is_empty()) {
            return Err(Error::Usage(format!(
                "{} is in no catalog case and no manifest kernel, so it has no oracle to run \
                 mutants against; describe it in a racegate.toml and pass --manifest",
                u.file
            )));
        }
        return run_battery(&catalog, &units, operators, &a, &places);
    }
    let s = Settings::new(a.battery.jobs.jobs)?;
    let listed = crate::proc::pool::run_all(
        units.iter().collect(),
        s.jobs,
        |u| -> Result<Vec<MutantResult>> {
            u.mutants
                .iter()
                .map(|m| {
                    let outcome = match u.equivalents.reason(&m.id) {
                        Some(r) => Outcome::Equivalent { reason: r.into() },
                        None if a.no_compile => Outcome::NotRun,
                        None => match mutate::compiles(&catalog, u, m, &s.arch)? {
                            Some(log) => Outcome::Stillborn { log },
                            None => Outcome::NotRun,
                        },
                    };
                    Ok(MutantResult {
                        diff: m.diff(&u.source),
                        mutant: m.clone(),
                        outcome,
                        seconds: 0.0,
                    })
                })
                .collect()
        },
        |_| {},
    );
    let mut kernels = Vec::new();
    for (u, r) in units.iter().zip(listed) {
        kernels.push(mutate::run::kernel_result(u, r?));
    }
    let report = MutationReport::new(false, operators, kernels, 0.0);
    a.out.text(&report::mutate::listing(&report))?;
    write_json(&a, &catalog, &report, &places)?;
    a.html.write_value(&report, &catalog.root)?;
    Ok(report.exit_code())
}

/// This shard's part of `units`: each mutant by its stable id in its file, whatever else
/// changed; a kernel whose mutants all went to other shards is left out here (its control runs
/// with them), and one without any mutant goes to the shard its name hashes to, so that the
/// merged run lists it as one run does. With the places of what is kept in the whole run.
fn shard(units: Vec<Unit>, p: Partition) -> (Vec<Unit>, Vec<Place>) {
    let mut kept = Vec::new();
    let mut places = Vec::new();
    for (i, mut u) in units.into_iter().enumerate() {
        let at: Vec<usize> = (0..u.mutants.len())
            .filter(|&j| p.has(&shard_id(&u.file, &u.mutants[j].id)))
            .collect();
        let mine = match u.mutants.is_empty() {
            true => p.has(&shard_id(&u.file, &u.kernel)),
            false => !at.is_empty(),
        };
        if !mine {
            continue;
        }
        u.mutants = at.iter().map(|&j| u.mutants[j].clone()).collect();
        places.push(Place {
            kernel: i,
            mutants: at,
        });
        kept.push(u);
    }
    (kept, places)
}

fn run_battery(
    catalog: &Catalog,
    units: &[Unit],
    operators: Vec<mutate::Operator>,
    a: &MutateArgs,
    places: &[Place],
) -> Result<u8> {
    let count: usize = units.iter().map(|u| u.mutants.len()).sum();
    if let Err(why) = crate::run::device::probe() {
        outln!(
            "no CUDA device ({why}): {count} mutant(s) of {} kernel(s) listed (`racegate mutate` \
             without --run shows them), none run",
            units.len()
        );
        // Every artifact asked for is still written (a CI step that uploads them must not
        // break): the mutants as listed, none run, and the verdict.
        let kernels = units
            .iter()
            .map(|u| {
                let listed = u
                    .mutants
                    .iter()
                    .map(|m| MutantResult {
                        diff: m.diff(&u.source),
                        mutant: m.clone(),
                        outcome: match u.equivalents.reason(&m.id) {
                            Some(r) => Outcome::Equivalent { reason: r.into() },
                            None => Outcome::NotRun,
                        },
                        seconds: 0.0,
                    })
                    .collect();
                mutate::run::kernel_result(u, listed)
            })
            .collect();
        let report = MutationReport::new(false, operators, kernels, 0.0);
        let mut doc = serde_json::to_value(&report)
            .map_err(|e| Error::input("the report is not JSON (racegate's bug)", e))?;
        doc["verdict"] = "no_device".into();
        doc["exit_code"] = exit::NO_DEVICE.into();
        doc["reason"] = format!("no CUDA device ({why})").into();
        if let Some(p) = &a.table {
            settings::write_unmeasured(
                p,
                &format!(
                    "no CUDA device ({why}): nothing was run; the mutants as listed:\n\n{}",
                    report::mutate::markdown(&report)
                ),
            )?;
        }
        write_json(a, catalog, &doc, places)?;
        a.html.write_value(&doc, &catalog.root)?;
        return Ok(exit::NO_DEVICE);
    }
    let s = Settings::new(a.battery.jobs.jobs)?;
    let devices = a.battery.devices.select()?;
    let mut cfg = MutateConfig {
        battery: a.battery.battery(&s, SANITIZE_TIMEOUT),
        tools: match a.tools.is_empty() {
            true => Tool::KERNELS.to_vec(),
            false => a.tools.clone(),
        },
        budget: a.budget.map(Duration::from_secs_f64),
        perf: Some(mutate::speed::PerfJudge::new(&s.arch)),
    };
    if cfg.battery.sanitizer.is_none() {
        outln!("compute-sanitizer not found: mutants stress does not kill will be inconclusive");
    }
    let speed_only = units
        .iter()
        .flat_map(|u| &u.mutants)
        .filter(|m| m.operator.speed_only())
        .count();
    if let (Some(Err(u)), true) = (cfg.perf.as_ref().map(|p| &p.ncu), speed_only > 0) {
        outln!("{u}: the {speed_only} padding-removal and swizzle-removal mutant(s) will be inconclusive (only perf's counters can kill them)");
    }
    cfg.battery.jobs = devices.workers(cfg.battery.jobs, a.battery.jobs.jobs.is_some());
    outln!(
        "{count} mutant(s) of {} kernel(s), {} runs at a time, {} stress trials each{}",
        units.len(),
        cfg.battery.jobs,
        a.battery.trials.trials,
        devices.describe(cfg.battery.jobs)
    );
    let progress = Progress::new((count + units.len()) as u64, "mutants", a.out.on_stdout());
    let report = mutate::run(catalog, units, operators, &cfg, &s.worker, |ev| match ev {
        MutateEvent::Control { kernel, control } => {
            let status = match (control.flagged_by, control.inconclusive) {
                (Some(_), _) => Status::Fail,
                (None, true) => Status::Inconclusive,
                (None, false) => Status::Pass,
            };
            progress.item(
                status,
                &format!("{kernel}::control"),
                control.seconds,
                Some(&control.detail),
            );
        }
        MutateEvent::Mutant { result, .. } => {
            let status = match &result.outcome {
                Outcome::Survived => Status::Fail,
                Outcome::Inconclusive { .. } => Status::Inconclusive,
                _ => Status::Pass,
            };
            let detail = format!("       {}\n{}", result.outcome.name(), result.diff);
            progress.item(status, &result.mutant.id, result.seconds, Some(&detail));
        }
    })?;
    progress.finish();
    a.out.text(&report::mutate::summary(&report))?;
    if let Some(p) = &a.table {
        settings::write_file(p, &report::mutate::markdown(&report))?;
    }
    write_json(a, catalog, &report, places)?;
    a.html.write_value(&report, &catalog.root)?;
    Ok(report.exit_code())
}

/// A mutant's stable id for `--partition`: its file and its id in that file.
fn shard_id(file: &str, id: &str) -> String {
    format!("{file}#{id}")
}

/// Writes `value` where `--json` says, with the shard's stamp and `places` (those of its kernels
/// and mutants in the whole run) when `--partition` was given.
fn write_json(
    a: &MutateArgs,
    catalog: &Catalog,
    value: &impl serde::Serialize,
    places: &[Place],
) -> Result<()> {
    let Some(p) = a.shard.partition else {
        return a.out.write(value);
    };
    let args = super::merge::args_after("mutate");
    // The manifest's bytes, as gate's shards hash them (none for the catalog).
    let input = match &catalog.manifest {
        Some(m) => std::fs::read(&m.path).map_err(|e| Error::io("reading", m.path.clone(), e))?,
        None => Vec::new(),
    };
    let stamp = super::merge::stamp(p, &args, &catalog.root, &input, "mutate");
    a.out.write_text(&super::merge::stamped_mutate(
        &settings::json(value),
        &stamp,
        places,
    )?)
}

/// A file given on the command line, relative to the catalog's root.
fn file_target(catalog: &Catalog, t: &str) -> Result<String> {
    let abs = std::fs::canonicalize(t).map_err(|e| {
        // Name what there is to mutate, as the other not-found messages do.
        let mut files: Vec<&str> = catalog.cases.iter().map(|c| c.path.as_str()).collect();
        files.dedup();
        let shown = files.iter().take(6).copied().collect::<Vec<_>>().join(", ");
        let more = if files.len() > 6 { ", ..." } else { "" };
        Error::input(
            format!(
                "no kernel file {t} (the kernels here are in {shown}{more}; `racegate list` \
                 shows them; `--manifest FILE` picks a racegate.toml)"
            ),
            e,
        )
    })?;
    let root = std::fs::canonicalize(&catalog.root).unwrap_or_else(|_| catalog.root.clone());
    toolchain::relative_to(&root, &abs).ok_or_else(|| {
        Error::Usage(format!(
            "{t} is outside the project ({}); run racegate from the project or pass --root",
            root.display()
        ))
    })
}

/// The kernels to mutate, each with its cases, source and equivalents.
fn units<'c>(catalog: &'c Catalog, a: &MutateArgs) -> Result<Vec<Unit<'c>>> {
    let files: Vec<&String> = a.targets.iter().filter(|t| t.ends_with(".cu")).collect();
    let mut groups: BTreeMap<usize, (String, String, Vec<&Case>)> = BTreeMap::new();
    let mut add = |order: usize, kernel: String, file: String, case: Option<&'c Case>| {
        let g = groups.entry(order).or_insert((kernel, file, Vec::new()));
        g.2.extend(case);
    };
    let by_kernel = catalog.manifest.is_some();
    if !files.is_empty() {
        if files.len() != a.targets.len() {
            return Err(Error::Usage(
                "give either KERNEL.cu files or kernel names, not both".into(),
            ));
        }
        for (n, t) in files.iter().enumerate() {
            let file = file_target(catalog, t)?;
            let cases: Vec<&Case> = catalog.cases.iter().filter(|c| c.path == file).collect();
            if cases.is_empty() {
                add(n * 1000, file.clone(), file.clone(), None);
            }
            for (k, c) in cases.into_iter().enumerate() {
                match by_kernel {
                    true => add(n * 1000 + k, c.name.clone(), file.clone(), Some(c)),
                    false => add(n * 1000, file.clone(), file.clone(), Some(c)),
                }
            }
        }
    } else {
        let chosen: Vec<&Case> = match (a.targets.is_empty(), by_kernel) {
            (true, false) => catalog.cases.iter().filter(|c| !c.is_variant()).collect(),
            _ => catalog.select(&a.targets)?,
        };
        let mut files: Vec<&str> = Vec::new();
        for (k, c) in chosen.into_iter().enumerate() {
            if by_kernel {
                add(k, c.name.clone(), c.path.clone(), Some(c));
            } else {
                let n = files.iter().position(|f| *f == c.path).unwrap_or_else(|| {
                    files.push(&c.path);
                    files.len() - 1
                });
                add(n, c.path.clone(), c.path.clone(), Some(c));
            }
        }
    }
    for e in &a.entry {
        if !groups
            .values()
            .any(|g| g.2.iter().any(|c| c.entry.name == *e))
        {
            return Err(Error::Usage(format!(
                "no entry point `{e}` in the kernels chosen"
            )));
        }
    }
    let mut out = Vec::new();
    for (_, (kernel, file, mut cases)) in groups {
        if !a.entry.is_empty() {
            cases.retain(|c| a.entry.contains(&c.entry.name));
            if cases.is_empty() {
                continue;
            }
        }
        let path: PathBuf = catalog.root.join(&file);
        // Without a leading byte-order mark, as every other reader of a kernel takes it.
        let source = files::read_text(&path, "the kernel", files::TEXT_LIMIT)?;
        let eq_path = equivalents_path(&path);
        let shown = format!("{file}{}", mutate::EQUIVALENTS_SUFFIX);
        out.push(Unit {
            kernel,
            file,
            source,
            cases,
            mutants: Vec::new(),
            equivalents: Equivalents::load(Path::new(&eq_path), &shown)?,
            unreachable: Vec::new(),
        });
    }
    Ok(out)
}
