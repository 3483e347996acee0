//! What a manifest's sanitizer job reads besides its kernels and tools ([`ToolJob`]), and the
//! settings of one tool's run ([`tool_config`]).

use std::path::Path;

use super::super::finding::GateConfig;
use super::super::stress_state::{after_hang, StressState};
use crate::judge::sanitize::{SanitizeConfig, Tool};
use crate::source::catalog::Catalog;

/// The context of one sanitizer job of a manifest's kernels: the catalog, the gate's settings,
/// racegate's own executable (the sanitizers' target) and what the stress runs had said when
/// it started.
pub(in crate::gate) struct ToolJob<'a> {
    pub(in crate::gate) catalog: &'a Catalog,
    pub(in crate::gate) cfg: &'a GateConfig,
    pub(in crate::gate) exe: &'a Path,
    pub(in crate::gate) st: StressState,
}

/// A tool's settings in one job: as the gate gives them ([`tool_config`]), and with the cut
/// deadline of a kernel whose stress run finished none of its trials ([`after_hang`]).
pub(in crate::gate) struct ToolConfigs {
    pub(in crate::gate) plain: SanitizeConfig,
    hung: SanitizeConfig,
}

impl ToolJob<'_> {
    /// `tool`'s settings in this job (`tool` leads the group when several run together).
    pub(in crate::gate) fn configs(&self, tool: Tool) -> ToolConfigs {
        let plain = tool_config(self.cfg, tool);
        let hung = after_hang(&plain, self.cfg);
        ToolConfigs { plain, hung }
    }

    /// The settings of `configs` for a run of `case` alone: the cut ones when its stress run
    /// finished none of its trials.
    pub(in crate::gate) fn for_case<'c>(
        &self,
        configs: &'c ToolConfigs,
        case: &str,
    ) -> &'c SanitizeConfig {
        match self.st.finished_none.contains(case) {
            true => &configs.hung,
            false => &configs.plain,
        }
    }
}

/// The settings of a run of `tool` (or of a group of tools led by it): the battery's, with the
/// extra sanitizer arguments the gate was given.
pub(in crate::gate) fn tool_config(cfg: &GateConfig, tool: Tool) -> SanitizeConfig {
    let mut sc = cfg.battery.sanitize(tool);
    sc.extra_args = cfg.sanitizer_args.clone();
    sc
}
