//! `racegate doctor`: what racegate found on this machine (driver, GPU, NVRTC,
//! compute-sanitizer, ncu, with versions) and, for whatever is missing, the fix.

use crate::{run::doctor, Result};

use super::output::JsonArg;
use super::settings::Global;

#[derive(clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    out: JsonArg,
}

pub const HELP: &str = "Examples:\n  racegate doctor\n  racegate doctor --json doctor.json\n\
Exit codes: 0 everything is there, 3 a tool is missing (NVRTC or \
compute-sanitizer; ncu is optional), 4 no CUDA device (driver or GPU missing; wins over 3).";

/// The global options change nothing here: racegate looks for its tools in the same places
/// whatever the root (never under it).
pub fn run(_global: &Global, a: DoctorArgs) -> Result<u8> {
    a.out.claim_stdout();
    let items = doctor::examine();
    let mut text = String::new();
    for i in &items {
        match (&i.found, &i.fix) {
            (Some(f), _) => text.push_str(&format!("ok       {:<18} {f}\n", i.name)),
            (None, Some(fix)) => {
                let tag = if i.optional { "optional" } else { "MISSING " };
                text.push_str(&format!("{tag} {:<18} {fix}\n", i.name));
            }
            (None, None) => {}
        }
    }
    a.out.text(&text)?;
    a.out.write(&items)?;
    Ok(doctor::exit_code(&items))
}
