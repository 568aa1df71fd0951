//! The pipeline schedule a scenario runs: its kind over its layout's stages,
//! chunks, microbatches and microbatch groups, generated once and read by
//! lowering, memory and the sweeps.

use scenario::Scenario;
use schedules::PipelineSchedule;

/// The schedule of a resolved scenario (its layout's microbatch groups).
pub fn schedule_of(scenario: &Scenario) -> PipelineSchedule {
    let layout = &scenario.layout;
    PipelineSchedule::generate_grouped(
        scenario.schedule,
        layout.pipeline_parallel.get(),
        layout.chunks.get(),
        layout.microbatches.get(),
        layout.microbatch_group_size(),
    )
}
