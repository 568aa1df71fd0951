//! How the data-parallel group shards the model states ([`ZeroStage`],
//! written as its ZeRO stage); the options' checks are `sharding.rs`'s.

use serde::{Serialize, Serializer};

/// How the data-parallel group shards the model states (Rajbhandari et al.
/// 2020, ZeRO, Sec. 5: stages P_os, P_os+g, P_os+g+p).
/// Written as its ZeRO stage, `zero_stage` 0 to 3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum ZeroStage {
    /// Every data-parallel rank holds all model states (all-reduce of gradients).
    #[default]
    None,
    /// ZeRO-1, Megatron's distributed optimizer: optimizer states 1/d
    /// (the same as distributed_optimizer).
    Optimizer,
    /// ZeRO-2: optimizer states and gradients 1/d; every backward's gradient
    /// buckets reduce-scattered as they are produced.
    Gradients,
    /// ZeRO-3 / PyTorch FSDP: parameters too; each layer's parameters are
    /// all-gathered before its forward and its backward, its gradients
    /// reduce-scattered after its backward.
    Full,
}

impl Serialize for ZeroStage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(self.stage())
    }
}

impl ZeroStage {
    /// The mode of ZeRO stage `stage` (None past 3).
    pub fn from_stage(stage: u8) -> Option<ZeroStage> {
        [
            ZeroStage::None,
            ZeroStage::Optimizer,
            ZeroStage::Gradients,
            ZeroStage::Full,
        ]
        .get(stage as usize)
        .copied()
    }

    /// Its ZeRO stage.
    pub fn stage(self) -> u8 {
        self as u8
    }

    /// What it shards, in words.
    pub fn name(self) -> &'static str {
        match self {
            ZeroStage::None => "nothing sharded",
            ZeroStage::Optimizer => "optimizer states sharded",
            ZeroStage::Gradients => "optimizer states and gradients sharded",
            ZeroStage::Full => "optimizer states, gradients and parameters sharded: FSDP",
        }
    }

    /// Serialized only where `distributed_optimizer` does not already say it
    /// (outputs of earlier options stay byte-identical).
    pub(crate) fn below_gradients(&self) -> bool {
        *self < ZeroStage::Gradients
    }
}
