//! The transport of a mixture of experts' dispatch and combine
//! ([`MoeDispatcher`]); what it requires of a scenario is `moe_comm.rs`'s.

use serde::{Deserialize, Serialize};

/// The transport of a MoE layer's dispatch and combine.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum MoeDispatcher {
    /// NCCL's all-to-all (grouped send/recv to every EP peer): Megatron-Core's
    /// all-to-all token dispatcher.
    #[default]
    Nccl,
    /// DeepEP's normal (high-throughput) kernels with node-limited routing
    /// (IB once per remote node, then NVLink).
    Deepep,
}

impl MoeDispatcher {
    pub fn name(self) -> &'static str {
        match self {
            MoeDispatcher::Nccl => "nccl",
            MoeDispatcher::Deepep => "deepep",
        }
    }

    pub fn is_default(&self) -> bool {
        *self == MoeDispatcher::default()
    }
}
