//! A program gate's tool runs as its launch counts make them: each compute-sanitizer tool in
//! the passes of [`super::sampling::plan`], judged as one run ([`super::sampling::merge`]);
//! racegate's own tools told to sample in the injected tool; the report's note of what was judged.

use super::sampling::{describe, merge, own_tools_checked, plan, LaunchCounts, Sampling};
use crate::judge::sanitize::SanitizerRun;

/// The sanitizer options by which a user chooses launches themselves (`--sanitizer-arg`): then
/// racegate does not sample.
const USER_FILTERS: [&str; 6] = [
    "--kernel-name",
    "--kernel-name-exclude",
    "--launch-count",
    "--launch-skip",
    "-c",
    "-s",
];

/// The program a group of tools runs on: the subject of its findings, the command that starts
/// it and the folder its findings' paths are relative to.
#[derive(Clone, Copy)]
pub struct ToolTarget<'a> {
    /// The subject of its findings (the program's name in the report).
    pub subject: &'a str,
    /// The command the tools launch: the program and its arguments, behind `/usr/bin/env` when
    /// it has its own working folder or variables.
    pub command: &'a [std::ffi::OsString],
    /// The folder finding paths are made relative to.
    pub root: &'a std::path::Path,
}

/// A program gate's sampling, decided once its launches are counted.
pub struct Sampled {
    sampling: Option<Sampling>,
    counts: Option<LaunchCounts>,
    /// The user chose launches with `--sanitizer-arg`.
    user_filter: bool,
}

impl Sampled {
    pub fn new(cfg: &super::GateConfig, counts: Option<&LaunchCounts>) -> Sampled {
        // `--launch-count 4`, `--launch-count=4`, and the short forms with the value attached
        // (`-c4`).
        let user_filter = cfg.sanitizer_args.iter().any(|a| {
            USER_FILTERS
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
                || ["-c", "-s"].iter().any(|f| {
                    a.strip_prefix(f)
                        .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                })
        });
        Sampled {
            sampling: cfg.sampling,
            counts: counts.cloned(),
            user_filter,
        }
    }

    fn on(&self) -> Option<Sampling> {
        self.sampling.filter(|_| !self.user_filter)
    }

    /// racegate's own tools' sampling (`RACEGATE_GC_SAMPLE`), when on.
    pub fn own_first(&self) -> Option<u64> {
        self.on().map(|s| s.first)
    }

    /// What the report says of the sampling, once per program.
    pub fn note(&self, subject: &str) -> Option<String> {
        self.sampling?;
        if self.user_filter {
            return Some(format!(
                "{subject}: launches not sampled: --sanitizer-arg chooses the kernels or \
                 launches compute-sanitizer checks"
            ));
        }
        let s = self.on()?;
        let Some(counts) = &self.counts else {
            return Some(format!(
                "{subject}: compute-sanitizer checked every launch (no run under jitter counted \
                 the program's launches); racegate's own tools checked each kernel's first {} \
                 launches and then each numbered by a power of two",
                s.first
            ));
        };
        let busy: Vec<String> = counts
            .0
            .iter()
            .filter(|(_, &n)| n > s.first + s.later)
            .map(|(k, &n)| {
                let own = own_tools_checked(n, s.first);
                format!(
                    "{k} ({n} launches: compute-sanitizer checks {}, racegate's own tools {own})",
                    s.first + s.later
                )
            })
            .collect();
        if busy.is_empty() {
            return Some(format!(
                "{subject}: every launch checked ({} kernel(s), none launched more than {} times)",
                counts.0.len(),
                s.first + s.later
            ));
        }
        Some(format!(
            "{subject}: launches sampled (--every-launch checks them all): {}; every other \
             kernel's launches checked",
            busy.join("; ")
        ))
    }

    /// Runs one group of tools ([`super::sanitizers::run_groups`]) on `program` holding the
    /// GPU lease shared: a compute-sanitizer tool in the passes of [`plan`] (their findings
    /// together, [`merge`]), the others in one run.
    pub fn run_group(
        &self,
        program: &ToolTarget,
        sc: &crate::judge::sanitize::SanitizeConfig,
        group: &[crate::judge::sanitize::Tool],
        lease: super::measure::Lease,
        part: &mut super::GateRun,
    ) -> crate::Result<Vec<SanitizerRun>> {
        let ToolTarget {
            subject,
            command,
            root,
        } = *program;
        let once =
            |sc: &crate::judge::sanitize::SanitizeConfig| -> crate::Result<Vec<SanitizerRun>> {
                let (runs, _) = lease.with(crate::run::lease::Access::Shared, || {
                    super::sanitizers::run_group_target(subject, command, sc, root, group)
                })?;
                runs
            };
        let passes = match (group, self.on(), &self.counts) {
            ([tool], Some(s), Some(c)) if !tool.is_own() => plan(c, s),
            _ => Vec::new(),
        };
        if passes.len() < 2 {
            return once(sc);
        }
        let mut done = Vec::new();
        for p in &passes {
            let mut one = sc.clone();
            one.extra_args.extend(p.args.iter().cloned());
            let run = once(&one)?;
            done.extend(run.into_iter().map(|r| (p.clone(), r)));
        }
        part.notes.push(describe(subject, group[0].name(), &passes));
        Ok(merge(done))
    }
}
