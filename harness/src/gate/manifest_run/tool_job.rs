//! What a manifest's sanitizer job reads besides its kernels and tools ([`ToolJob`]), and the
//! settings of one tool's run ([`tool_config`]).

use std::path::Path;

use super::super::finding::GateConfig;
use super::super::stress_state::StressState;
use crate::judge::sanitize::{SanitizeConfig, Tool};
use crate::source::catalog::Catalog;

/// The context of one sanitizer job of a manifest's kernels: the catalog, the gate's settings,
/// racegate's own executable (the sanitizers' target) and what the stress runs said so far.
pub(in crate::gate) struct ToolJob<'a> {
    pub(in crate::gate) catalog: &'a Catalog,
    pub(in crate::gate) cfg: &'a GateConfig,
    pub(in crate::gate) exe: &'a Path,
    pub(in crate::gate) st: &'a StressState,
}

impl ToolJob<'_> {
    /// `tool`'s settings in this job ([`tool_config`]).
    pub(in crate::gate) fn config(&self, tool: Tool) -> SanitizeConfig {
        tool_config(self.cfg, tool)
    }
}

/// The settings of a run of `tool` (or of a group of tools led by it): the battery's, with the
/// extra sanitizer arguments the gate was given.
pub(in crate::gate) fn tool_config(cfg: &GateConfig, tool: Tool) -> SanitizeConfig {
    let mut sc = cfg.battery.sanitize(tool);
    sc.extra_args = cfg.sanitizer_args.clone();
    sc
}
