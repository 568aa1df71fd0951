//! From event timings to a Timeline: the executor's measurements packaged
//! exactly as the simulator packages its own (same header fields, same task
//! records, bytes and FLOPs from the same cost model), with
//! `producer = executor`, `executor_mode`, and a description of how the run
//! was done under `header.scenario["executor"]`.
//!
//! Event timings arrive as milliseconds since a common reference event (CUDA
//! reports `f32` milliseconds); they become integer nanoseconds relative to
//! the earliest task start.

use crate::mode::ExecutionMode;
use sim::cost::WorkCost;
use sim::scenario::Scenario;
use sim::task_graph::TaskGraph;
use timeline::{Producer, Timeline};

/// A task's measured start and end, nanoseconds from the first start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Converts (start, end) milliseconds since a reference event into spans
/// relative to the earliest start; an end before its start (timer
/// resolution) is clamped to the start.
pub fn spans_from_ms(elapsed_ms: &[(f32, f32)]) -> Vec<Span> {
    let to_ns = |ms: f32| (ms as f64 * 1e6).round() as i64;
    let origin = elapsed_ms
        .iter()
        .map(|&(start, _)| to_ns(start))
        .min()
        .unwrap_or(0);
    elapsed_ms
        .iter()
        .map(|&(start, end)| {
            let start_ns = (to_ns(start) - origin).max(0) as u64;
            let end_ns = ((to_ns(end) - origin).max(0) as u64).max(start_ns);
            Span { start_ns, end_ns }
        })
        .collect()
}

/// The measured Timeline: one record per task (indexed by task id in
/// `spans`), header as the simulator writes it plus the executor fields.
pub fn measured_timeline(
    scenario: &Scenario,
    graph: &TaskGraph,
    costs: &[WorkCost],
    mode: ExecutionMode,
    spans: &[Span],
    executor: serde_json::Value,
) -> Timeline {
    let mut timeline = sim::timeline_from_spans(
        scenario,
        graph,
        costs,
        Producer::Executor,
        Some(mode.name().into()),
        |index| (spans[index].start_ns, spans[index].end_ns),
    );
    if let Some(object) = timeline.header.scenario.as_object_mut() {
        object.insert("executor".into(), executor);
    }
    timeline
}
