//! The `racegate` command line. A thin layer: parse arguments, call the library, render,
//! and map the outcome to a documented exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use racegate::catalog::Catalog;
use racegate::check::{self, CheckConfig, Judgement};
use racegate::exercises::SizeChoice;
use racegate::sanitize::{Outcome, SanitizeConfig};
use racegate::stress::{self, StressConfig};
use racegate::{compile, device, report, toolchain, Error};

/// Exit codes, also documented in the README.
mod code {
    /// Everything ran and every expectation held.
    pub const OK: u8 = 0;
    /// A broken promise: a bug missed, a correct kernel flagged, a kernel that does not compile.
    pub const FAILED: u8 = 1;
    /// Bad input: usage, a malformed header, an unknown case.
    pub const USAGE: u8 = 2;
    /// Something could not be decided (a sanitizer missing or refusing the device).
    pub const INCONCLUSIVE: u8 = 3;
    /// No CUDA device: host-side work ran, GPU work did not.
    pub const NO_DEVICE: u8 = 4;
}

#[derive(Parser)]
#[command(
    name = "racegate",
    version,
    about = "Proves CUDA kernels correct or catches them racing.",
    long_about = "racegate builds the kernels under kernels/ and their deliberately broken twins under \
buggy_variants/ with NVRTC, runs them many times on random sizes and inputs with schedule jitter \
(stress), runs NVIDIA compute-sanitizer on them, and checks that every bug is caught by the \
detectors its header names and that every correct kernel is clean.",
    after_help = "Exit codes: 0 ok, 1 a check failed, 2 bad input, 3 inconclusive, 4 no CUDA device.\n\
Start with `racegate list`, then `racegate stress CASE`."
)]
struct Cli {
    /// Project root (holds kernels/ and buggy_variants/); default: the nearest ancestor of
    /// the current directory that has a kernels/ folder.
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Use the kernels of a racegate.toml manifest instead of kernels/ and buggy_variants/
    /// (`gate` looks for ./racegate.toml by itself).
    #[arg(long, global = true, value_name = "FILE")]
    manifest: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the catalog: every correct kernel and buggy variant, the detectors that must
    /// flag each variant, and the line its bug is on.
    List {
        /// Machine-readable output (one JSON array of cases).
        #[arg(long)]
        json: bool,
    },
    /// Compile every kernel and variant with NVRTC (-lineinfo), and with --load also load each
    /// module on the device and look up its kernels. Needs no GPU without --load.
    Compile {
        /// Cases to compile (default: all).
        cases: Vec<String>,
        /// Also load the modules on device 0 and look up every entry point.
        #[arg(long)]
        load: bool,
        /// NVRTC virtual architecture (default: the device's, else compute_90).
        #[arg(long)]
        arch: Option<String>,
    },
    /// Run a case many times on random sizes, geometry and inputs; every output element is
    /// checked against an exact oracle. Each trial runs in a worker process with a deadline.
    Stress {
        /// The case, as `racegate list` names it (e.g. matmul_tiled16::no_sync_after_compute).
        case: String,
        /// Number of trials.
        #[arg(long, default_value_t = 200)]
        trials: u32,
        /// Seed of the first trial (trial t uses seed + t); random when omitted.
        #[arg(long)]
        seed: Option<u64>,
        /// Problem size: N (every dimension N), LO..HI (each dimension drawn from the range),
        /// or `sanitize` (the small geometry sanitizers use). Default: the family's range.
        #[arg(long, value_parser = stress::parse_size)]
        size: Option<SizeChoice>,
        /// Turn off schedule jitter (per-warp sleeps after every __syncthreads()).
        #[arg(long)]
        no_jitter: bool,
        /// Consecutive trials that reuse one input set (sizes, inputs, reference), each under
        /// its own jitter seed. 1 draws new sizes and inputs for every trial.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
        per_set: u32,
        /// Deadline for one trial, in seconds; a trial past it is a Hang.
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run one compute-sanitizer tool on a case, on the family's small sanitizer geometry
    /// (every loop and branch runs), and print the normalized findings. Exit 0 clean,
    /// 1 findings or hang, 3 inconclusive (no sanitizer, device refused, no XML, ...).
    Sanitize {
        /// The case, as `racegate list` names it.
        case: String,
        /// racecheck, synccheck, memcheck or initcheck.
        #[arg(long, value_parser = parse_tool)]
        tool: racegate::sanitize::Tool,
        /// Keep compute-sanitizer's raw XML here.
        #[arg(long, value_name = "FILE")]
        save_xml: Option<PathBuf>,
        /// Keep compute-sanitizer's text output (and the target's) here.
        #[arg(long, value_name = "FILE")]
        save_log: Option<PathBuf>,
        /// Deadline in seconds; past it the sanitizer and its target are killed (Hang).
        #[arg(long, default_value_t = 120.0)]
        timeout: f64,
        /// Seed for the problem's inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run the detection matrix: every case under stress (with and without jitter), the
    /// watchdog and the four compute-sanitizer tools, judged against each header's `expect`.
    /// Without a GPU it compiles every kernel, says what it could not run, and exits 4.
    Check {
        /// Cases to check (default: all).
        cases: Vec<String>,
        /// Stress trials per case and jitter setting.
        #[arg(long, default_value_t = 50)]
        trials: u32,
        /// Seed of the first stress trial.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Processes at once (stress workers and sanitizers); default: the number of cores.
        #[arg(long)]
        jobs: Option<usize>,
        /// Deadline of one stress trial, in seconds.
        #[arg(long, default_value_t = 5.0)]
        stress_timeout: f64,
        /// Deadline of one sanitizer run, in seconds (the slowest normal run on the H200 took
        /// under 10 s; a deadlocked one is killed at the deadline).
        #[arg(long, default_value_t = 20.0)]
        sanitize_timeout: f64,
        /// Write the course table (markdown: rows are cases, columns detectors) here.
        #[arg(long, value_name = "FILE")]
        table: Option<PathBuf>,
        /// Write a JUnit report here (testcases carry file and line).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Write the matrix as JSON here.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Measure, side by side in one run, the full stress path (upload, poison, launch, read
    /// back, check every element) against a bare cudarc launch loop, per kernel. Prints ratios.
    Bench {
        /// Cases (default: every correct kernel).
        cases: Vec<String>,
        /// Problem size (the same meaning as `stress --size N`); default: a size per family
        /// where one launch takes tens of microseconds or more.
        #[arg(long)]
        size: Option<u32>,
        /// Iterations per round.
        #[arg(long, default_value_t = 50)]
        iters: u32,
        /// Alternating rounds; the median counts.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Gate a merge on your own kernels or CUDA program. With a manifest (./racegate.toml or
    /// --manifest FILE): every kernel under stress (its oracle: a reference kernel or
    /// determinism) and the four sanitizers. With `-- PROGRAM ARGS`: the program under each
    /// sanitizer and run several times plainly. New findings (not in the baseline) fail.
    #[command(
        after_help = "Exit codes: 0 no new finding, 1 new findings, 2 bad input, 3 inconclusive.\n\
Examples:\n  racegate gate                          # ./racegate.toml against ./racegate-baseline.json\n  \
racegate gate --update-baseline        # accept what is found now\n  \
racegate gate --github --sarif r.sarif # in GitHub Actions: annotations, step summary, code scanning\n  \
racegate gate -- ./build/tests --gtest_filter=Reduce.*"
    )]
    Gate(GateArgs),
    /// Grade course exercise submissions: compile (device code only), check the kernel's name
    /// and signature, then score correctness on randomized sizes with jitter and the four
    /// sanitizers against a rubric. One file prints its grade; several files or a folder give
    /// a summary (CSV or JSON).
    #[command(
        after_help = "Exercises are grading/exercises/*.toml (name, signature, launch shape, sizes).\n\
The rubric (grading/rubric.toml) gives the points per item. The secret seed comes from\n\
RACEGATE_GRADE_SECRET (random when unset), mixed with --seed: set it for the same inputs on\n\
every regrade. Submissions run on the GPU one at a time (a lock file), so --jobs overlaps\n\
compilation, not kernels.\n\
Exit codes: 0 graded, 2 bad input, 4 no CUDA device (only compilation was graded).\n\
Examples:\n  racegate grade --exercise reduce alice.cu\n  \
racegate grade --exercise reduce --format gradescope --output /autograder/results/results.json submission/reduce.cu\n  \
racegate grade --exercise reduce submissions/ --output grades.csv"
    )]
    Grade {
        /// The exercise, as grading/exercises/NAME.toml names it.
        #[arg(long)]
        exercise: String,
        /// Submitted .cu files, or folders of them (FOLDER/*.cu, and FOLDER/*/*.cu for one
        /// folder per student).
        #[arg(required = true)]
        submissions: Vec<PathBuf>,
        /// The rubric (default: grading/rubric.toml).
        #[arg(long, value_name = "FILE")]
        rubric: Option<PathBuf>,
        /// Output format for one submission; several give a summary (csv or json).
        #[arg(long, value_enum, default_value_t = GradeFormat::Human)]
        format: GradeFormat,
        /// Write the output here instead of standard output.
        #[arg(long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Randomized correctness trials.
        #[arg(long, default_value_t = 8)]
        trials: u32,
        /// The public seed (mixed with the secret).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Deadline per trial, in seconds.
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
        /// Deadline per sanitizer run, in seconds.
        #[arg(long, default_value_t = 60.0)]
        sanitize_timeout: f64,
        /// Submissions graded at once in a batch.
        #[arg(long, default_value_t = 2)]
        jobs: usize,
    },
    /// (internal) Runs a submission on problems from a request file.
    #[command(name = "__grade-worker", hide = true)]
    GradeWorker {
        #[arg(long)]
        ptx: PathBuf,
        #[arg(long)]
        request: PathBuf,
        #[arg(long)]
        response: Option<PathBuf>,
        #[arg(long)]
        time: bool,
    },
    /// (internal) The target compute-sanitizer runs: one launch on the sanitizer geometry.
    #[command(name = "__sanitize-target", hide = true)]
    SanitizeTarget {
        #[arg(long)]
        case: String,
        #[arg(long)]
        ptx: PathBuf,
        #[arg(long)]
        seed: u64,
    },
    /// (internal) Run trials on the device and print one JSON line per trial.
    #[command(name = "__worker", hide = true)]
    Worker {
        #[arg(long)]
        case: String,
        #[arg(long)]
        ptx: PathBuf,
        #[arg(long)]
        ref_ptx: Option<PathBuf>,
        #[arg(long)]
        trials: u32,
        #[arg(long)]
        seed: u64,
        #[arg(long)]
        per_set: u32,
        #[arg(long, value_parser = stress::parse_size)]
        size: Option<SizeChoice>,
        #[arg(long)]
        jitter: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum GradeFormat {
    Human,
    Json,
    Gradescope,
    Prairielearn,
    Junit,
    Csv,
}

#[derive(clap::Args)]
struct GateArgs {
    /// Write the baseline from this run (accept every current finding) and exit 0.
    #[arg(long)]
    update_baseline: bool,
    /// The baseline file (default: racegate-baseline.json next to the manifest, or in the
    /// current directory for a program).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Stress trials per kernel.
    #[arg(long, default_value_t = 100)]
    trials: u32,
    /// Plain runs of a program (output compared across them).
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Processes at once; default: the number of cores.
    #[arg(long)]
    jobs: Option<usize>,
    /// Deadline of a stress trial or a plain program run, in seconds.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Deadline of one sanitizer run, in seconds.
    #[arg(long, default_value_t = 120.0)]
    sanitize_timeout: f64,
    /// Write SARIF 2.1.0 here (for GitHub code scanning).
    #[arg(long, value_name = "FILE")]
    sarif: Option<PathBuf>,
    /// Write JUnit here.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the markdown summary here.
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// Print GitHub annotations and append the summary to $GITHUB_STEP_SUMMARY.
    #[arg(long)]
    github: bool,
    /// A CUDA program and its arguments, after `--`.
    #[arg(last = true, value_name = "PROGRAM")]
    program: Vec<std::ffi::OsString>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(match e {
                Error::Header { .. }
                | Error::UnknownCase { .. }
                | Error::Usage(_)
                | Error::NoKernels(_) => code::USAGE,
                Error::NoDevice(_) => code::NO_DEVICE,
                _ => code::FAILED,
            })
        }
    }
}

fn root(cli_root: Option<PathBuf>) -> Result<PathBuf, Error> {
    if let Some(r) = cli_root {
        return Ok(r);
    }
    let cwd =
        std::env::current_dir().map_err(|e| Error::Usage(format!("no current directory: {e}")))?;
    toolchain::find_root(&cwd).ok_or_else(|| {
        Error::Usage(format!(
            "no kernels/ folder in {} or any parent; run racegate from a project, or pass --root DIR",
            cwd.display()
        ))
    })
}

fn run(cli: Cli) -> Result<u8, Error> {
    let manifest = match (&cli.manifest, &cli.command) {
        (Some(m), _) => Some(m.clone()),
        (None, Command::Gate(g)) if g.program.is_empty() => {
            Some(PathBuf::from(racegate::manifest::FILE))
        }
        _ => None,
    };
    if let Command::Gate(g) = &cli.command {
        if !g.program.is_empty() {
            return gate_program_cmd(cli);
        }
    }
    match cli.command {
        Command::Grade { .. } => return grade_cmd(cli),
        Command::GradeWorker {
            ptx,
            request,
            response,
            time,
        } => {
            racegate::grade::run::worker(&ptx, &request, response.as_deref(), time)?;
            return Ok(code::OK);
        }
        _ => {}
    }
    let catalog = match manifest {
        Some(m) => {
            if !m.is_file() {
                return Err(Error::Usage(format!(
                    "no manifest at {}; write one (see examples/gate/racegate.toml) or pass --manifest FILE",
                    m.display()
                )));
            }
            let m = std::fs::canonicalize(&m).unwrap_or(m);
            Catalog::from_manifest(racegate::manifest::Manifest::load(&m)?)
        }
        None => Catalog::discover(&root(cli.root)?)?,
    };
    match cli.command {
        Command::List { json } => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&catalog.cases).expect("serializable")
                );
            } else {
                print!("{}", report::catalog_table(&catalog));
            }
            Ok(code::OK)
        }
        Command::Compile { cases, load, arch } => compile_cmd(&catalog, &cases, load, arch),
        Command::Stress {
            case,
            trials,
            seed,
            size,
            no_jitter,
            per_set,
            timeout,
            json,
        } => {
            let case = catalog.get(&case)?;
            if let Err(why) = device::probe() {
                return Err(Error::NoDevice(why));
            }
            if trials == 0 {
                return Err(Error::Usage("--trials must be at least 1".into()));
            }
            let cfg = StressConfig {
                trials,
                seed: seed.unwrap_or_else(random_seed),
                jitter: !no_jitter,
                size,
                timeout: Duration::from_secs_f64(timeout),
                per_set,
                arch: device::arch_or_default(),
            };
            let exe = std::env::current_exe()
                .map_err(|e| Error::Child(format!("cannot find racegate itself: {e}")))?;
            let bar = progress(trials as u64, json);
            let r = stress::run(
                &catalog,
                case,
                &cfg,
                &exe,
                |stress::StressEvent::Trial(t)| {
                    bar.inc(1);
                    if t.result != racegate::trial::TrialResult::Pass {
                        bar.set_message("failing");
                    }
                },
            )?;
            bar.finish_and_clear();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r).expect("serializable")
                );
            } else {
                print!("{}", report::stress(&r));
            }
            Ok(if r.flagged() { code::FAILED } else { code::OK })
        }
        Command::Check {
            cases,
            trials,
            seed,
            jobs,
            stress_timeout,
            sanitize_timeout,
            table,
            junit,
            json,
        } => {
            let cfg = CheckConfig {
                trials,
                seed,
                stress_timeout: Duration::from_secs_f64(stress_timeout),
                per_set: 4,
                sanitize_timeout: Duration::from_secs_f64(sanitize_timeout),
                jobs: jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism()
                        .map(|n| n.get())
                        .unwrap_or(2)
                }),
                arch: device::arch_or_default(),
                sanitizer: toolchain::compute_sanitizer(),
            };
            check_cmd(&catalog, &cases, &cfg, CheckOutputs { table, junit, json })
        }
        Command::Sanitize {
            case,
            tool,
            save_xml,
            save_log,
            timeout,
            seed,
            json,
        } => {
            let case = catalog.get(&case)?;
            let cfg = SanitizeConfig {
                tool,
                sanitizer: toolchain::compute_sanitizer(),
                timeout: Duration::from_secs_f64(timeout),
                arch: device::arch_or_default(),
                keep_xml: save_xml,
                seed,
            };
            let exe = std::env::current_exe()
                .map_err(|e| Error::Child(format!("cannot find racegate itself: {e}")))?;
            let r = racegate::sanitize::runner::run(&catalog, case, &cfg, &exe)?;
            if let Some(p) = save_log {
                std::fs::write(&p, format!("$ {}\n{}", r.command, r.log))
                    .map_err(|e| Error::Child(format!("writing {}: {e}", p.display())))?;
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r).expect("serializable")
                );
            } else {
                print!("{}", report::sanitizer(&r));
            }
            Ok(match r.outcome {
                Outcome::Clean => code::OK,
                Outcome::Findings(_) | Outcome::Hang { .. } => code::FAILED,
                Outcome::Inconclusive(_) => code::INCONCLUSIVE,
            })
        }
        Command::Bench {
            cases,
            size,
            iters,
            rounds,
            json,
        } => {
            let selected: Vec<_> = if cases.is_empty() {
                catalog.cases.iter().filter(|c| !c.is_variant()).collect()
            } else {
                catalog.select(&cases)?
            };
            let gpu = racegate::launch::Gpu::open()?;
            let arch = device::arch_or_default();
            let mut rows = Vec::new();
            for c in selected {
                let n = size.unwrap_or(match c.exercise.as_str() {
                    "matmul" => 1024,
                    "transpose" => 4096,
                    "handoff" => 1 << 20,
                    _ => 1 << 22,
                });
                let row = racegate::bench::measure(&catalog, &gpu, c, n, iters, rounds, &arch)?;
                if !json {
                    eprintln!(
                        "{}: {:.2}x ({:.1} us bare, {:.1} us stress)",
                        row.case, row.ratio, row.bare_us, row.stress_us
                    );
                }
                rows.push(row);
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&rows).expect("serializable")
                );
            } else {
                print!("{}", racegate::bench::table(&rows));
            }
            Ok(code::OK)
        }
        Command::Gate(g) => gate_manifest_cmd(&catalog, &g),
        Command::Grade { .. } | Command::GradeWorker { .. } => unreachable!("handled above"),
        Command::SanitizeTarget { case, ptx, seed } => {
            println!(
                "{}",
                racegate::sanitize::runner::target(&catalog, &case, &ptx, seed)?
            );
            Ok(code::OK)
        }
        Command::Worker {
            case,
            ptx,
            ref_ptx,
            trials,
            seed,
            per_set,
            size,
            jitter,
        } => {
            let w = stress::WorkerArgs {
                case,
                ptx,
                ref_ptx,
                trials,
                seed,
                per_set,
                size,
                jitter,
            };
            stress::worker(&catalog, &w)?;
            Ok(code::OK)
        }
    }
}

fn parse_tool(s: &str) -> Result<racegate::sanitize::Tool, String> {
    racegate::sanitize::Tool::from_name(s).ok_or_else(|| {
        format!("unknown tool `{s}`; expected racecheck, synccheck, memcheck or initcheck")
    })
}

fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now()) >> 16
}

fn progress(len: u64, hidden: bool) -> indicatif::ProgressBar {
    if hidden {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} trials [{elapsed}] {msg}")
            .expect("valid template"),
    );
    bar
}

/// Compiles every selected file; with `load`, loads each module and looks up its entries.
/// Prints one line per file and returns whether all succeeded.
fn compile_all(
    catalog: &Catalog,
    cases: &[String],
    load: bool,
    arch: Option<String>,
) -> Result<bool, Error> {
    let selected = catalog.select(cases)?;
    let nv = toolchain::nvrtc(&catalog.root)?;
    let dev = if load {
        Some(device::probe().map_err(Error::NoDevice)?)
    } else {
        None
    };
    let arch = arch.unwrap_or_else(|| {
        dev.as_ref()
            .map(|d| d.arch())
            .unwrap_or_else(|| compile::DEFAULT_ARCH.into())
    });
    println!(
        "NVRTC {}.{} from {}; target {arch}",
        nv.version.0, nv.version.1, nv.source
    );
    if let Some(d) = &dev {
        println!(
            "device: {} (sm_{}{}), driver API {}",
            d.name, d.compute_capability.0, d.compute_capability.1, d.driver_api_version
        );
    }
    let gpu = if load {
        Some(racegate::launch::Gpu::open()?)
    } else {
        None
    };
    let mut ok = true;
    let mut files: Vec<&str> = Vec::new();
    for c in &selected {
        if !files.contains(&c.path.as_str()) {
            files.push(&c.path);
        }
    }
    for file in files {
        let opts = compile::BuildOptions {
            arch: arch.clone(),
            jitter: false,
            extra: selected
                .iter()
                .find(|c| c.path == file)
                .map(|c| c.compile_options())
                .unwrap_or_default(),
        };
        let t = std::time::Instant::now();
        match compile::compile(&catalog.root, file, &opts) {
            Err(e) => {
                ok = false;
                println!("FAIL compile {file}\n{e}");
            }
            Ok(built) => {
                let mut line = format!(
                    "ok   compile {file} ({} bytes of PTX, {:.0} ms)",
                    built.ptx.len(),
                    t.elapsed().as_secs_f64() * 1e3
                );
                if let Some(gpu) = &gpu {
                    let entries: Vec<&str> = selected
                        .iter()
                        .filter(|c| c.path == file)
                        .map(|c| c.entry.name.as_str())
                        .collect();
                    match gpu.load(&built.ptx).and_then(|m| {
                        for e in &entries {
                            gpu.function(&m, e)?;
                        }
                        Ok(())
                    }) {
                        Ok(()) => line.push_str(&format!("; loaded, found {}", entries.join(", "))),
                        Err(e) => {
                            ok = false;
                            line = format!("FAIL load {file}: {e}");
                        }
                    }
                }
                println!("{line}");
            }
        }
    }
    Ok(ok)
}

fn compile_cmd(
    catalog: &Catalog,
    cases: &[String],
    load: bool,
    arch: Option<String>,
) -> Result<u8, Error> {
    Ok(if compile_all(catalog, cases, load, arch)? {
        code::OK
    } else {
        code::FAILED
    })
}

struct CheckOutputs {
    table: Option<PathBuf>,
    junit: Option<PathBuf>,
    json: Option<PathBuf>,
}

fn write_file(path: &std::path::Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::Child(format!("writing {}: {e}", path.display())))
}

fn check_cmd(
    catalog: &Catalog,
    cases: &[String],
    cfg: &CheckConfig,
    outputs: CheckOutputs,
) -> Result<u8, Error> {
    let selected = catalog.select(cases)?;
    let dev = device::probe();
    let ok = compile_all(catalog, cases, false, None)?;
    if !ok {
        return Ok(code::FAILED);
    }
    let dev = match dev {
        Err(why) => {
            println!(
                "\nno CUDA device ({why}): compiled every kernel, but could not run stress, the \
                 watchdog or compute-sanitizer. Nothing was proven about runtime behaviour."
            );
            return Ok(code::NO_DEVICE);
        }
        Ok(d) => d,
    };
    if cfg.sanitizer.is_none() {
        println!("compute-sanitizer not found: the four sanitizer columns will be inconclusive");
    }
    println!(
        "device: {}; {} cases, {} processes at a time",
        dev.name,
        selected.len(),
        cfg.jobs
    );
    let exe = std::env::current_exe()
        .map_err(|e| Error::Child(format!("cannot find racegate itself: {e}")))?;
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} {pos}/{len} runs [{elapsed}] {msg}")
            .expect("valid template"),
    );
    let m = check::run(catalog, &selected, cfg, &exe, |ev| match ev {
        check::CheckEvent::Started { tasks } => bar.set_length(tasks as u64),
        check::CheckEvent::Done(cells) => {
            bar.inc(1);
            for c in cells
                .iter()
                .filter(|c| matches!(c.judgement, Judgement::Missed | Judgement::Unexpected))
            {
                bar.println(format!(
                    "BROKEN {}::{}: {:?}",
                    c.case, c.detector, c.observed
                ));
            }
        }
    })?;
    bar.finish_and_clear();
    for c in m.cells.iter().filter(|c| c.judgement != Judgement::Ok) {
        println!(
            "{:?}: {}::{} (expected {:?})\n{}",
            c.judgement, c.case, c.detector, c.expect, c.report
        );
    }
    println!(
        "\n{} cells: {} ok, {} missed, {} unexpected, {} inconclusive; wall {:.1} s",
        m.cells.len(),
        m.count(Judgement::Ok),
        m.count(Judgement::Missed),
        m.count(Judgement::Unexpected),
        m.count(Judgement::Inconclusive),
        m.wall_seconds
    );
    println!(
        "process time per detector: {}",
        m.seconds_per_detector
            .iter()
            .map(|(d, s)| format!("{d} {s:.1} s"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(p) = &outputs.table {
        write_file(p, &check::table(&m, catalog))?;
    }
    if let Some(p) = &outputs.junit {
        write_file(p, &check::junit(&m))?;
    }
    if let Some(p) = &outputs.json {
        write_file(p, &serde_json::to_string_pretty(&m).expect("serializable"))?;
    }
    Ok(
        if m.count(Judgement::Missed) + m.count(Judgement::Unexpected) > 0 {
            code::FAILED
        } else if m.count(Judgement::Inconclusive) > 0 {
            code::INCONCLUSIVE
        } else {
            code::OK
        },
    )
}

fn gate_config(g: &GateArgs) -> racegate::gate::GateConfig {
    racegate::gate::GateConfig {
        trials: g.trials,
        seed: 1,
        per_set: 4,
        stress_timeout: Duration::from_secs_f64(g.timeout),
        sanitize_timeout: Duration::from_secs_f64(g.sanitize_timeout),
        jobs: g.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
        }),
        arch: device::arch_or_default(),
        sanitizer: toolchain::compute_sanitizer(),
        runs: g.runs,
    }
}

fn gate_manifest_cmd(catalog: &Catalog, g: &GateArgs) -> Result<u8, Error> {
    if let Err(why) = device::probe() {
        return Err(Error::NoDevice(why));
    }
    let cfg = gate_config(g);
    let exe = std::env::current_exe()
        .map_err(|e| Error::Child(format!("cannot find racegate itself: {e}")))?;
    let baseline = g
        .baseline
        .clone()
        .unwrap_or_else(|| catalog.root.join(racegate::gate::BASELINE));
    println!(
        "racegate gate: {} kernel(s) from {}",
        catalog.cases.len(),
        catalog
            .manifest
            .as_ref()
            .map(|m| m.path.display().to_string())
            .unwrap_or_default()
    );
    let bar = indicatif::ProgressBar::new((catalog.cases.len() * 5) as u64);
    let run = racegate::gate::run_manifest(catalog, &cfg, &exe, |_| bar.inc(1))?;
    bar.finish_and_clear();
    // SARIF paths are relative to the repository: prefix the manifest's folder as seen from
    // the repository's top.
    let cwd = std::env::current_dir().unwrap_or_default();
    let uri_prefix = std::fs::canonicalize(&catalog.root)
        .ok()
        .and_then(|r| r.strip_prefix(repo_top(&cwd)).ok().map(|p| p.to_path_buf()))
        .map(|p| {
            if p.as_os_str().is_empty() {
                String::new()
            } else {
                format!("{}/", p.display())
            }
        })
        .unwrap_or_default();
    finish_gate(&run, &baseline, g, &uri_prefix)
}

/// The repository top (the nearest ancestor with .git), else the directory itself.
fn repo_top(dir: &std::path::Path) -> PathBuf {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(|d| d.to_path_buf())
        .unwrap_or(dir)
}

fn gate_program_cmd(cli: Cli) -> Result<u8, Error> {
    let Command::Gate(g) = cli.command else {
        unreachable!("called for gate only");
    };
    let program = &g.program;
    let cwd =
        std::env::current_dir().map_err(|e| Error::Usage(format!("no current directory: {e}")))?;
    let root = cli.root.unwrap_or(cwd.clone());
    let cfg = gate_config(&g);
    let exe = std::path::Path::new(&program[0]);
    if !exe.exists() && !program[0].to_string_lossy().contains('/') && which(&program[0]).is_none()
    {
        return Err(Error::Usage(format!(
            "program `{}` not found",
            program[0].to_string_lossy()
        )));
    }
    let baseline = g
        .baseline
        .clone()
        .unwrap_or_else(|| cwd.join(racegate::gate::BASELINE));
    println!(
        "racegate gate: {} under 4 sanitizers and {} plain run(s)",
        program
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        g.runs
    );
    let run = racegate::gate::run_program(program, &root, &cfg)?;
    finish_gate(&run, &baseline, &g, "")
}

fn which(name: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

fn finish_gate(
    run: &racegate::gate::GateRun,
    baseline_path: &std::path::Path,
    out: &GateArgs,
    uri_prefix: &str,
) -> Result<u8, Error> {
    use racegate::gate;
    if out.update_baseline {
        let b = gate::Baseline::from_run(run);
        b.save(baseline_path)?;
        println!(
            "baseline written: {} ({} accepted finding(s))",
            baseline_path.display(),
            b.accepted.len()
        );
        for f in &run.findings {
            println!(
                "  accepted: {} {} at {}{}: {}",
                f.subject,
                f.detector,
                f.file,
                f.line.map(|l| format!(":{l}")).unwrap_or_default(),
                f.key
            );
        }
        return Ok(if run.inconclusive.is_empty() {
            code::OK
        } else {
            code::INCONCLUSIVE
        });
    }
    let base = gate::Baseline::load(baseline_path)?;
    let d = gate::diff(run, &base);
    let loc = |f: &gate::GateFinding| {
        format!(
            "{}{}",
            f.file,
            f.line.map(|l| format!(":{l}")).unwrap_or_default()
        )
    };
    for f in &d.new {
        println!(
            "NEW      {} [{}] {}: {}",
            f.subject,
            f.detector,
            loc(f),
            f.message
        );
    }
    for f in &d.accepted {
        println!(
            "accepted {} [{}] {}: {}",
            f.subject,
            f.detector,
            loc(f),
            f.key
        );
    }
    for a in &d.fixed {
        println!(
            "fixed    {} [{}]: {} (no longer found; shrink the baseline with --update-baseline)",
            a.subject, a.detector, a.key
        );
    }
    for (s, t, why) in &run.inconclusive {
        println!("INCONCLUSIVE {s} [{t}]: {why}");
    }
    println!(
        "\n{} new, {} accepted, {} fixed, {} inconclusive (baseline {}; {:.0} s)",
        d.new.len(),
        d.accepted.len(),
        d.fixed.len(),
        run.inconclusive.len(),
        baseline_path.display(),
        run.seconds
    );
    let md = gate::summary(run, &d);
    if let Some(p) = &out.sarif {
        write_file(
            p,
            &serde_json::to_string_pretty(&gate::sarif(&d, env!("CARGO_PKG_VERSION"), uri_prefix))
                .expect("serializable"),
        )?;
    }
    if let Some(p) = &out.junit {
        write_file(p, &gate::junit(run, &d))?;
    }
    if let Some(p) = &out.summary {
        write_file(p, &md)?;
    }
    if out.github {
        print!("{}", gate::annotations(&d));
        if let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY") {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&p)
                .map_err(|e| Error::Child(format!("opening $GITHUB_STEP_SUMMARY: {e}")))?;
            let _ = f.write_all(md.as_bytes());
        }
    }
    Ok(if !d.new.is_empty() {
        code::FAILED
    } else if !run.inconclusive.is_empty() {
        code::INCONCLUSIVE
    } else {
        code::OK
    })
}

fn grade_cmd(cli: Cli) -> Result<u8, Error> {
    use racegate::grade::{output, run, spec};
    let Command::Grade {
        exercise,
        submissions,
        rubric,
        format,
        output: out_path,
        trials,
        seed,
        timeout,
        sanitize_timeout,
        jobs,
    } = cli.command
    else {
        unreachable!("called for grade only");
    };
    let root = root(cli.root)?;
    let spec = spec::Spec::find(&root, &exercise)?;
    let rubric = spec::Rubric::load(&rubric.unwrap_or_else(|| root.join(spec::RUBRIC)))?;
    let mut files = Vec::new();
    for p in &submissions {
        if p.is_dir() {
            let found = submissions_in(p)?;
            if found.is_empty() {
                return Err(Error::Usage(format!(
                    "no .cu submissions in {} (looked at {0}/*.cu and {0}/*/*.cu)",
                    p.display()
                )));
            }
            files.extend(found);
        } else {
            // A missing or unreadable file is graded (as zero, with the reason), not an error.
            files.push(p.clone());
        }
    }
    if files.is_empty() {
        return Err(Error::Usage("no .cu submissions found".into()));
    }
    let device = device::probe();
    let secret = match std::env::var("RACEGATE_GRADE_SECRET") {
        Ok(s) if !s.is_empty() => racegate::compile::fingerprint(&s),
        _ => rand_secret(),
    };
    let cfg = run::GradeConfig {
        trials,
        seed,
        secret,
        timeout: Duration::from_secs_f64(timeout),
        sanitize_timeout: Duration::from_secs_f64(sanitize_timeout),
        arch: device::arch_or_default(),
        sanitizer: toolchain::compute_sanitizer(),
        device: device.is_ok(),
    };
    let exe = std::env::current_exe()
        .map_err(|e| Error::Child(format!("cannot find racegate itself: {e}")))?;
    let batch = files.len() > 1 || submissions.iter().any(|p| p.is_dir());
    let bar = if batch {
        indicatif::ProgressBar::new(files.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let grades = racegate::pool::run_all(
        files,
        if batch { jobs } else { 1 },
        |f| run::grade(&root, &spec, &rubric, &f, &cfg, &exe),
        |_| bar.inc(1),
    );
    bar.finish_and_clear();
    let grades: Vec<run::Grade> = grades.into_iter().collect::<Result<_, _>>()?;
    let text = if batch {
        match format {
            GradeFormat::Json => serde_json::to_string_pretty(&grades).expect("serializable"),
            _ => {
                let items: Vec<&str> = grades[0].items.iter().map(|i| i.item.name()).collect();
                let mut csv = format!("submission,score,max_score,{}\n", items.join(","));
                for g in &grades {
                    let cells: Vec<String> = g.items.iter().map(|i| i.score.to_string()).collect();
                    csv.push_str(&format!(
                        "\"{}\",{},{},{}\n",
                        g.submission.replace('"', "\"\""),
                        g.score,
                        g.max_score,
                        cells.join(",")
                    ));
                }
                csv
            }
        }
    } else {
        let g = &grades[0];
        match format {
            GradeFormat::Human | GradeFormat::Csv => output::human(g),
            GradeFormat::Json => serde_json::to_string_pretty(g).expect("serializable"),
            GradeFormat::Gradescope => {
                serde_json::to_string_pretty(&output::gradescope(g)).expect("serializable")
            }
            GradeFormat::Prairielearn => {
                serde_json::to_string_pretty(&output::prairielearn(g)).expect("serializable")
            }
            GradeFormat::Junit => output::junit(g),
        }
    };
    match &out_path {
        Some(p) => write_file(p, &text)?,
        None => print!("{text}"),
    }
    if let Err(why) = device {
        eprintln!("note: no CUDA device ({why}): only the file checks and compilation were graded");
        return Ok(code::NO_DEVICE);
    }
    Ok(code::OK)
}

/// The submissions in a folder: its `.cu` files, and those of each folder inside it (one
/// folder per student, as course platforms export them). Hidden entries are skipped.
fn submissions_in(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let list = |d: &Path| -> Result<Vec<PathBuf>, Error> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|e| Error::Usage(format!("{}: {e}", d.display())))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        v.sort();
        Ok(v)
    };
    let is_cu = |p: &PathBuf| p.is_file() && p.extension().is_some_and(|x| x == "cu");
    let mut out = Vec::new();
    for entry in list(dir)? {
        if entry.is_dir() {
            out.extend(list(&entry)?.into_iter().filter(is_cu));
        } else if is_cu(&entry) {
            out.push(entry);
        }
    }
    Ok(out)
}

fn rand_secret() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::process::id())
}
