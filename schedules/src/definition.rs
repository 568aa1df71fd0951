//! What a pipeline schedule is to the rest of the simulator: the trait each
//! schedule's file implements for a unit struct, which `lib.rs`'s
//! `schedules!` list registers as a [`crate::kind::ScheduleKind`] in one line.

use crate::action::Action;
use models::sharding::StageMap;

/// The pipeline a schedule's programs are generated for; the caller has
/// validated it (p, v, m and the interleaved group size N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipelineShape {
    /// Pipeline stages (ranks) p.
    pub stages: u32,
    /// Model chunks per stage v.
    pub chunks: u32,
    /// Microbatches per iteration m.
    pub microbatches: u32,
    /// Interleaved: microbatches per group N (p unless set).
    pub group_size: u32,
}

/// A pipeline schedule: its name, the properties lowering, memory and
/// validation ask of it, and each stage's program.
pub trait ScheduleDefinition {
    /// The one name of the schedule: parsing, serde, `--help` and
    /// `clustersim presets` read it.
    const NAME: &'static str;
    /// Whether the schedule runs more than one model chunk per rank (v).
    const USES_CHUNKS: bool;
    /// Which rank holds which virtual stage.
    const STAGE_MAP: StageMap;
    /// Whether each backward runs as an input-gradient and a
    /// weight-gradient pass (`I`, `W`) instead of one `B`.
    const SPLITS_BACKWARD: bool;
    /// Whether a stage's next pass waits for its own pipeline sends:
    /// Megatron's schedules send with blocking p2p calls
    /// (`send_forward_recv_backward`, …), which most schedules here follow.
    const SENDS_BLOCK: bool;

    /// Stage `stage`'s program, in order.
    fn stage_actions(shape: PipelineShape, stage: u32) -> Vec<Action>;
}
