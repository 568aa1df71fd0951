//! A resolved, validated scenario ([`Scenario`]) and why a scenario is not
//! one ([`ScenarioError`]: every problem together).

use crate::era::EraDefaults;
use crate::experts;
use crate::kinds::Recompute;
use crate::layout::Layout;
use crate::options::TrainingOptions;
use crate::problem::Problem;
use crate::stack::Stack;
use models::ModelSpec;
use profile::Profile;
use schedules::ScheduleKind;
use topologies::TopologySpec;

/// A resolved, validated scenario: everything the simulator needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub model: ModelSpec,
    pub topology: TopologySpec,
    pub profile: Profile,
    pub layout: Layout,
    /// A mixture-of-experts model's routing over its expert-parallel ranks
    /// (None for dense models).
    pub experts: Option<experts::ExpertRouting>,
    pub schedule: ScheduleKind,
    pub recompute: Recompute,
    pub seed: u64,
    /// The software stack whose defaults the options took.
    pub stack: Stack,
    /// Whether the stack is the default one (the scenario named none).
    pub stack_is_default: bool,
    /// The era whose defaults the scenario took, and which ([`crate::era`]).
    pub defaults: EraDefaults,
    /// Training options, validated.
    pub options: TrainingOptions,
    /// Consecutive iterations simulated (1 unless offload asks for more).
    pub iterations: u32,
}

impl Scenario {
    /// One GPU's dense peak at the scenario's number format (FLOP/s), what
    /// the metrics' percent of peak and MFU are measured against.
    pub fn peak_flops_per_s(&self) -> f64 {
        self.options
            .precision
            .peak_flops_per_s(&self.topology.gpu.peak)
    }
}

/// Problems with a scenario, all reported together.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("scenario file {path} is not a valid scenario: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("invalid scenario:\n  - {}", problems.iter().map(Problem::to_string).collect::<Vec<_>>().join("\n  - "))]
    Invalid { problems: Vec<Problem> },
}
