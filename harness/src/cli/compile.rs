//! `racegate compile`: every selected file through NVRTC, and with `--load` onto the device.
//! `check` runs the same compile pass first ([`compile_all`]).

use crate::errors::exit;
use crate::run::launch::Gpu;
use crate::source::catalog::Catalog;
use crate::{build::compile, build::toolchain, run::device, Error, Result};

use super::output::outln;
use super::settings;
use super::settings::Global;

/// The end of `racegate compile --help`: the exit codes, then examples.
pub const HELP: &str = concat!(
    "Exit codes: 0 everything compiled, 1 a compile (or with --load, a load) failed, 2 bad input, 3 inconclusive (NVRTC missing: run `racegate setup`), 4 no CUDA device (--load only).\n",
    "Examples:\n",
    "  racegate compile\n",
    "  racegate compile scale --load --arch compute_90"
);

#[derive(clap::Args)]
#[command(after_long_help = HELP)]
pub struct CompileArgs {
    /// Cases to compile (default: all).
    cases: Vec<String>,
    /// Also load the modules on device 0 and look up every entry point.
    #[arg(long)]
    load: bool,
    /// NVRTC virtual architecture (default: the device's, else compute_90).
    #[arg(long)]
    arch: Option<String>,
}

pub fn run(global: &Global, a: CompileArgs) -> Result<u8> {
    let catalog = super::list::catalog(global)?;
    settings::validate(&catalog, false)?;
    Ok(if compile_all(&catalog, &a.cases, a.load, a.arch)? {
        exit::OK
    } else {
        exit::FOUND
    })
}

/// Compiles every selected file; with `load`, loads each module and looks up its entries.
/// Prints one line per file and returns whether all succeeded.
pub fn compile_all(
    catalog: &Catalog,
    cases: &[String],
    load: bool,
    arch: Option<String>,
) -> Result<bool> {
    let selected = catalog.select(cases)?;
    // No device (4) comes before a missing tool (3).
    let dev = if load {
        Some(device::probe().map_err(Error::NoDevice)?)
    } else {
        None
    };
    let nv = toolchain::nvrtc()?;
    let arch = arch.unwrap_or_else(|| {
        dev.as_ref()
            .map(|d| d.arch())
            .unwrap_or_else(|| compile::DEFAULT_ARCH.into())
    });
    outln!(
        "NVRTC {}.{} from {}; target {arch}",
        nv.version.0,
        nv.version.1,
        nv.source
    );
    if let Some(d) = &dev {
        outln!(
            "device: {} (sm_{}{}), driver API {}",
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.driver_api_version
        );
    }
    let gpu = if load { Some(Gpu::open()?) } else { None };
    let mut ok = true;
    let mut files: Vec<&str> = Vec::new();
    for c in &selected {
        if !files.contains(&c.path.as_str()) {
            files.push(&c.path);
        }
    }
    // Compiled side by side on every core (NVRTC takes 40-250 ms a file), reported in order.
    let built = crate::proc::pool::run_all(
        files.clone(),
        crate::judge::battery::default_jobs(),
        |file| {
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
            let r = compile::compile(&catalog.root, file, &opts);
            (r, t.elapsed())
        },
        |_| {},
    );
    for (file, (result, took)) in files.into_iter().zip(built) {
        match result {
            Err(e) => {
                ok = false;
                outln!("FAIL compile {file}\n{e}");
            }
            Ok(built) => {
                let mut line = format!(
                    "ok   compile {file} ({} bytes of PTX, {:.0} ms)",
                    built.ptx.len(),
                    took.as_secs_f64() * 1e3
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
                outln!("{line}");
            }
        }
    }
    Ok(ok)
}
