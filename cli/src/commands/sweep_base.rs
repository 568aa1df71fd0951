//! `clustersim sweep SCENARIO.json`: a scenario file as the sweep's base.
//! The sweep takes its model, topology, profile, stack, global batch,
//! sequence length and training options (flags override each), and its GPU
//! count t·cp·p·d as the default `--gpus`. Its layout (t, cp, p, d, ep, etp,
//! v, b, schedule, recompute) is what the sweep searches, so those values are
//! not used, and standard error says so. Keys a sweep cannot vary layouts
//! around (a pipeline layout string, an expert-imbalance histogram, several
//! iterations) are refused by name.

use crate::exit::user_error;
use sim::scenario::ScenarioFile;
use std::path::Path;

/// A scenario file read as a sweep's base.
#[derive(Debug, Clone)]
pub struct SweepBase {
    pub file: ScenarioFile,
}

impl SweepBase {
    /// Reads the file; refuses the keys a sweep cannot honour (exit 2).
    pub fn read(path: &Path) -> anyhow::Result<SweepBase> {
        let file = ScenarioFile::from_file(path).map_err(user_error)?;
        let refused: Vec<&str> = [
            ("expert_imbalance", file.expert_imbalance.is_some()),
            (
                "microbatch_group_size",
                file.microbatch_group_size.is_some(),
            ),
            ("pipeline_split", file.pipeline_split.is_some()),
            ("pipeline_layout", file.pipeline_layout.is_some()),
            ("iterations", file.iterations.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
        .collect();
        if !refused.is_empty() {
            return Err(user_error(format!(
                "{}: a sweep cannot take the scenario's {} (each fixes what the sweep varies \
                 or runs one layout only); remove {} or simulate the layout with `clustersim simulate`",
                path.display(),
                refused.join(", "),
                if refused.len() == 1 { "it" } else { "them" }
            )));
        }
        let searched: Vec<&str> = [
            ("tp", file.tp.is_some()),
            ("cp", file.cp.is_some()),
            ("pp", file.pp.is_some()),
            ("dp", file.dp.is_some()),
            ("ep", file.ep.is_some()),
            ("etp", file.etp.is_some()),
            ("chunks", file.chunks.is_some()),
            ("microbatch_size", file.microbatch_size.is_some()),
            ("schedule", file.schedule.is_some()),
            ("recompute", file.recompute.is_some()),
            ("seed", file.seed.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
        .collect();
        if !searched.is_empty() {
            eprintln!(
                "sweep: {}'s {} not used: the sweep searches the layout \
                 (its GPU count is the default --gpus)",
                path.display(),
                searched.join(", ")
            );
        }
        Ok(SweepBase { file })
    }

    /// The scenario's GPU count t·cp·p·d (each degree 1 when unset), when it
    /// sets any of them; an overflow is refused.
    pub fn gpus(&self) -> anyhow::Result<Option<u32>> {
        let f = &self.file;
        let degrees = [f.tp, f.cp, f.pp, f.dp];
        if degrees.iter().all(Option::is_none) {
            return Ok(None);
        }
        degrees
            .iter()
            .try_fold(1u32, |product, degree| {
                product.checked_mul(degree.unwrap_or(1))
            })
            .map(Some)
            .ok_or_else(|| user_error("the scenario's t·cp·p·d overflows a GPU count"))
    }
}
