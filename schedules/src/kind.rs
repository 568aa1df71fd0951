//! Which pipeline schedule runs, with its name (the one table of schedule
//! names: parsing, serde, `--help` and `clustersim presets` read it) and the
//! properties lowering, memory and validation ask of it.

use serde::{Deserialize, Serialize};

/// Pipeline schedule. Its name ([`ScheduleKind::name`]) is the one table
/// of schedule names: parsing, serde, `--help` and `clustersim presets` read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScheduleKind {
    /// All forwards, then all backwards (Huang et al. 2019).
    Gpipe,
    /// PipeDream-Flush: warm-up forwards, steady one-forward-one-backward, cool-down.
    OneFOneB,
    /// Megatron's interleaved 1F1B over `chunks` model chunks per stage.
    Interleaved,
    /// Zero-bubble ZB-H1 (Qi et al., ICLR 2024): 1F1B with the backward split
    /// into input- and weight-gradient passes, the weight gradients deferred
    /// into the cool-down; 1F1B's activation memory.
    ZbH1,
    /// Zero-bubble ZB-H2: twice ZB-H1's warm-up and weight-gradient lag;
    /// about 2p microbatches of activations, no bubble inside a stage's span
    /// when F + I ≤ 2W.
    ZbH2,
    /// PyTorch's `ScheduleLoopedBFS`: the interleaved stage map (rank r holds
    /// stages r + k·p), every forward of each local stage in turn, then the
    /// backwards in reverse; m·v microbatch-chunks of activations.
    LoopedBfs,
    /// Zero-bubble ZB-V (Qi et al. 2024, Sec. 6; PyTorch
    /// `ScheduleZBVZeroBubble`): two chunks per rank on the V map, split
    /// backwards; no bubble inside a rank's span when F = I = W.
    ZbV,
    /// DualPipeV (deepseek-ai/DualPipe `dualpipev.py`; PyTorch
    /// `ScheduleDualPipeV`): DualPipe cut in half onto the V map, with
    /// forward/backward pairs of the two chunks (costed back to back).
    DualPipeV,
    /// DualPipe (DeepSeek-V3 report; deepseek-ai/DualPipe `dualpipe.py`):
    /// two parameter copies (rank r holds stage r of one and stage p−1−r of
    /// the other), half the microbatches fed from each end, F&B pairs
    /// (costed back to back).
    DualPipe,
}

impl ScheduleKind {
    /// Whether a stage's next pass waits for its own pipeline sends.
    /// Megatron's schedules send with blocking p2p calls
    /// (`send_forward_recv_backward`, …). The zero-bubble runtime that runs
    /// ZB-H1, ZB-H2 and ZB-V (sail-sg/zero-bubble-pipeline-parallelism at
    /// 39f2c18, `megatron/core/pipeline_parallel/zerobubble/runtime.py`:
    /// `flush` posts the batched isend/irecv and "send handles (send_reqs)
    /// can simply be dropped"; `schedule_f_impl` and `schedule_b_impl` wait
    /// only for the receives they consume; no `torch.cuda.synchronize` after
    /// its p2p calls, unlike Megatron's 2021 `_communicate`) never waits for a
    /// send, as PyTorch's `ScheduleZBVZeroBubble` waits for its sends only at
    /// the end of the step.
    pub fn sends_block(self) -> bool {
        !matches!(
            self,
            ScheduleKind::ZbH1 | ScheduleKind::ZbH2 | ScheduleKind::ZbV
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            ScheduleKind::Gpipe => "gpipe",
            ScheduleKind::OneFOneB => "1f1b",
            ScheduleKind::Interleaved => "interleaved",
            ScheduleKind::ZbH1 => "zb-h1",
            ScheduleKind::ZbH2 => "zb-h2",
            ScheduleKind::LoopedBfs => "looped-bfs",
            ScheduleKind::ZbV => "zb-v",
            ScheduleKind::DualPipeV => "dualpipev",
            ScheduleKind::DualPipe => "dualpipe",
        }
    }

    /// Every schedule the simulator builds, in declaration order.
    pub const ALL: [ScheduleKind; 9] = [
        ScheduleKind::Gpipe,
        ScheduleKind::OneFOneB,
        ScheduleKind::Interleaved,
        ScheduleKind::ZbH1,
        ScheduleKind::ZbH2,
        ScheduleKind::LoopedBfs,
        ScheduleKind::ZbV,
        ScheduleKind::DualPipeV,
        ScheduleKind::DualPipe,
    ];

    /// Whether the schedule runs more than one model chunk per rank (v):
    /// interleaved and looped BFS on the interleaved map (virtual stage
    /// k·p + r on rank r), ZB-V and DualPipeV two on the V map, DualPipe
    /// one of each model copy.
    pub fn uses_chunks(self) -> bool {
        matches!(
            self,
            ScheduleKind::Interleaved
                | ScheduleKind::LoopedBfs
                | ScheduleKind::ZbV
                | ScheduleKind::DualPipeV
                | ScheduleKind::DualPipe
        )
    }

    /// Which rank holds which virtual stage: the V map for the V-shaped
    /// schedules (two chunks per rank, rank r holding stages r and
    /// 2p−1−r), DualPipe's two copies, Megatron's interleaved k·p + r for
    /// the others.
    pub fn stage_map(self) -> models::sharding::StageMap {
        match self {
            ScheduleKind::ZbV | ScheduleKind::DualPipeV => models::sharding::StageMap::V,
            ScheduleKind::DualPipe => models::sharding::StageMap::DualPipe,
            ScheduleKind::Gpipe
            | ScheduleKind::OneFOneB
            | ScheduleKind::Interleaved
            | ScheduleKind::ZbH1
            | ScheduleKind::ZbH2
            | ScheduleKind::LoopedBfs => models::sharding::StageMap::Interleaved,
        }
    }

    /// Whether the schedule runs each backward as an input-gradient and a
    /// weight-gradient pass (`I`, `W`) instead of one `B`.
    pub fn splits_backward(self) -> bool {
        match self {
            ScheduleKind::Gpipe
            | ScheduleKind::OneFOneB
            | ScheduleKind::Interleaved
            | ScheduleKind::LoopedBfs => false,
            ScheduleKind::ZbH1
            | ScheduleKind::ZbH2
            | ScheduleKind::ZbV
            | ScheduleKind::DualPipeV
            | ScheduleKind::DualPipe => true,
        }
    }

    /// The schedule named `text` ([`ScheduleKind::name`]).
    pub fn parse(text: &str) -> Option<ScheduleKind> {
        ScheduleKind::ALL
            .into_iter()
            .find(|kind| kind.name() == text)
    }

    /// Every schedule's name, in [`ScheduleKind::ALL`]'s order.
    pub fn names() -> Vec<&'static str> {
        ScheduleKind::ALL
            .into_iter()
            .map(ScheduleKind::name)
            .collect()
    }
}

impl Serialize for ScheduleKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for ScheduleKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ScheduleKind::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown schedule {text:?}; expected one of {}",
                ScheduleKind::names().join(", ")
            ))
        })
    }
}
