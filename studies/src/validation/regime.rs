//! The kind of run a prediction is: what the validation runs of the same
//! kind say about how far to trust it (`residuals`). Two runs share a regime
//! when they share the GPU's architecture, the software stack, the number
//! format, dense or mixture-of-experts, and whether the model is pipelined
//! (one stage runs no pipeline bubble, sends or pipeline schedule).

use serde::{Deserialize, Serialize};
use sim::scenario::Scenario;

/// A run's regime.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Regime {
    /// The GPU's architecture from its datasheet ("Ampere", "Hopper", …),
    /// or "unknown" for a GPU the catalogue lacks.
    pub architecture: String,
    /// The software stack's name.
    pub stack: String,
    /// "fp16", "bf16" or "fp8".
    pub precision: String,
    /// A mixture of experts.
    pub experts: bool,
    /// More than one pipeline stage.
    pub pipelined: bool,
}

impl Regime {
    /// The regime of a resolved scenario.
    pub fn of(scenario: &Scenario) -> Regime {
        Regime {
            architecture: topologies::datasheet(&scenario.topology.gpu.name)
                .map_or("unknown".to_string(), |sheet| {
                    sheet.architecture.to_string()
                }),
            stack: scenario.stack.name.clone(),
            precision: scenario.options.precision.name().to_string(),
            experts: scenario.experts.is_some(),
            pipelined: scenario.layout.pipeline_parallel.get() > 1,
        }
    }

    /// "Hopper, megatron-core-2024, fp8, dense, one stage".
    pub fn label(&self) -> String {
        format!(
            "{}, {}, {}, {}, {}",
            self.architecture,
            self.stack,
            self.precision,
            if self.experts { "MoE" } else { "dense" },
            if self.pipelined {
                "pipelined"
            } else {
                "one stage"
            }
        )
    }
}
