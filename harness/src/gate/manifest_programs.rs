//! The `[[program]]` tables of a manifest, gated after its kernels into the same run (one
//! baseline, one report): each table's settings laid over the gate's (runs, deadline, tools,
//! masks, oracles), then the program mode of [`super::program`].

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::finding::{GateConfig, GateRun};
use super::program;
use super::target::Target;
use crate::errors::{Error, Result};
use crate::judge::sanitize::Tool;
use crate::source::manifest::ProgramSpec;

/// The gate's settings with one program's own laid over them.
fn config(p: &ProgramSpec, cfg: &GateConfig) -> Result<GateConfig> {
    let mut c = cfg.clone();
    if let Some(r) = p.runs {
        c.runs = r;
    }
    if let Some(t) = &p.sanitizers {
        c.tools = t.iter().filter_map(|n| Tool::from_name(n)).collect();
        c.tools.sort();
    } else if !cfg.tools_chosen {
        // A program has streams of its own: every tool, streamcheck included.
        c.tools = Tool::ALL.to_vec();
    }
    c.masks = cfg.masks.extended(&p.masks)?;
    let o = &cfg.oracles;
    let mut oracles = o.clone();
    oracles.expect = p.expect.clone().or(o.expect.clone());
    oracles.check = p.check.clone().or(o.check.clone());
    if let Some(t) = p.check_timeout {
        oracles.check_timeout = Duration::from_secs_f64(t);
    }
    oracles.vary_ok = p.vary_ok || o.vary_ok;
    let mut pass: Vec<String> = o.pass.iter().map(|r| r.as_str().to_string()).collect();
    let mut fail: Vec<String> = o.fail.iter().map(|r| r.as_str().to_string()).collect();
    pass.extend(p.pass_regex.iter().cloned());
    fail.extend(p.fail_regex.iter().cloned());
    c.oracles = oracles
        .with_regexes(&pass, &fail, o.will_fail || p.will_fail)
        .map_err(|e| Error::Usage(format!("program {}: {e}", p.name)))?;
    Ok(c)
}

/// Gates each program in turn (each one's sanitizer runs already use the pool).
pub fn run_programs(programs: &[ProgramSpec], root: &Path, cfg: &GateConfig) -> Result<GateRun> {
    let mut all = GateRun::default();
    for p in programs {
        let c = config(p, cfg)?;
        let mut argv: Vec<OsString> = vec![p.command.clone().into()];
        argv.extend(p.args.iter().map(OsString::from));
        let t = Target {
            subject: p.name.clone(),
            argv,
            cwd: Some(p.cwd.clone()),
            env: p.env.clone(),
            timeout: p.timeout.map(Duration::from_secs_f64),
        };
        all.absorb(program::run_target(&t, root, &c)?);
    }
    Ok(all)
}
