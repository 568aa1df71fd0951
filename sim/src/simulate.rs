//! One call from a resolved scenario to a report: schedule → lowering →
//! costs → engine → timeline → metrics and memory.

use crate::cost::{cost_works, ClosedFormNetwork, WorkCost};
use crate::engine::{self, DeadlockError};
use crate::lowering::lower;
use crate::memory::{memory_per_stage, MemoryBreakdown};
use crate::network::{Fabric, FabricError};
use crate::network::{FabricFlowPlanner, SharedFabric};
use crate::scenario::Scenario;
use crate::schedule::PipelineSchedule;
use crate::task::NO_MICROBATCH;
use crate::task_graph::TaskGraph;
use crate::time::SimDuration;
use timeline::metrics::{self, Metrics};
use timeline::{
    Producer, TaskRecord, Timeline, TimelineHeader, TimelineLayout, TIMELINE_FORMAT_VERSION,
};

/// Everything one simulation produces.
#[derive(Debug, Clone)]
pub struct SimulationReport {
    pub metrics: Metrics,
    pub memory: Vec<MemoryBreakdown>,
    pub timeline: Timeline,
    pub n_tasks: usize,
    pub n_edges: usize,
    pub n_events: u64,
    /// The most loaded links, with `--contention` (empty otherwise).
    pub busiest_links: Vec<LinkLoad>,
}

/// How much one link carried over the iteration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LinkLoad {
    pub link: String,
    pub carried_bytes: u64,
    /// carried ÷ (capacity × iteration time).
    pub utilization: f64,
}

/// Why a simulation could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimulationError {
    #[error(transparent)]
    Deadlock(#[from] DeadlockError),
    #[error("cannot build the network fabric for contention: {0}")]
    Fabric(#[from] FabricError),
    /// The work of one iteration adds up to more than integer nanoseconds can
    /// hold safely: a model size or profile value out of any physical range.
    #[error("the tasks of this scenario add up to {total_s:.3e} s, beyond the {limit_s:.3e} s a simulation can hold in integer nanoseconds: a size or profile value is out of range")]
    OutOfRange { total_s: f64, limit_s: f64 },
}

/// The most time all tasks of one simulation may add up to (2^62 ns, about
/// 146 years): no start or end time can then overflow u64 nanoseconds.
pub const MAX_TOTAL_TASK_NS: u128 = 1 << 62;

impl SimulationReport {
    /// The peak over stages.
    pub fn peak_memory(&self) -> &MemoryBreakdown {
        self.memory
            .iter()
            .max_by_key(|m| (m.total_bytes, std::cmp::Reverse(m.stage)))
            .expect("at least one stage")
    }
}

/// Builds the schedule and task graph of a scenario (no costs).
pub fn build_graph(scenario: &Scenario) -> (PipelineSchedule, TaskGraph) {
    let schedule = PipelineSchedule::of(scenario);
    let graph = lower(scenario, &schedule);
    (schedule, graph)
}

/// Runs a graph with given per-work costs and packages the timeline.
pub fn run_graph(
    scenario: &Scenario,
    graph: &TaskGraph,
    costs: &[WorkCost],
) -> Result<(Timeline, u64), DeadlockError> {
    let outcome = engine::run(graph, |id| costs[graph.task(id).work.index()].duration)?;
    Ok(package(scenario, graph, costs, &outcome))
}

fn package(
    scenario: &Scenario,
    graph: &TaskGraph,
    costs: &[WorkCost],
    outcome: &engine::Schedule,
) -> (Timeline, u64) {
    let timeline = timeline_from_spans(scenario, graph, costs, Producer::Sim, None, |index| {
        (
            outcome.start[index].as_nanos(),
            outcome.end[index].as_nanos(),
        )
    });
    (timeline, outcome.events)
}

/// The Timeline of a graph whose task `index` ran over `span(index)` = (start_ns, end_ns):
/// one record per task in id order and the header every producer writes
/// (the engine here, the GPU executor in the `executor` crate).
pub fn timeline_from_spans(
    scenario: &Scenario,
    graph: &TaskGraph,
    costs: &[WorkCost],
    producer: Producer,
    executor_mode: Option<String>,
    span: impl Fn(usize) -> (u64, u64),
) -> Timeline {
    let tasks = graph
        .tasks()
        .enumerate()
        .map(|(index, task)| {
            let cost = &costs[task.work.index()];
            let (start_ns, end_ns) = span(index);
            TaskRecord {
                id: index as u32,
                kind: task.kind,
                stream: task.stream,
                group: task.group.0,
                stage: task.stage,
                chunk: task.chunk,
                microbatch: (task.microbatch != NO_MICROBATCH).then_some(task.microbatch),
                start_ns,
                end_ns,
                bytes: cost.bytes,
                flops: cost.flops,
                iteration: (scenario.iterations > 1).then_some(task.iteration as u32),
            }
        })
        .collect();
    let layout = scenario.layout;
    let header = TimelineHeader {
        format_version: TIMELINE_FORMAT_VERSION,
        producer,
        executor_mode,
        scenario: scenario.to_json(),
        profile_id: scenario.profile.id.clone(),
        seed: scenario.seed,
        n_gpus: layout.gpus(),
        layout: TimelineLayout {
            tensor_parallel: layout.tensor_parallel,
            pipeline_parallel: layout.pipeline_parallel,
            data_parallel: layout.data_parallel,
            context_parallel: layout.context_parallel,
            chunks: layout.chunks,
            microbatches: layout.microbatches,
            microbatch_size: layout.microbatch_size,
            global_batch: layout.global_batch,
            gpus_per_node: scenario.topology.node.gpus_per_node,
        },
        groups: graph
            .groups()
            .iter()
            .map(|ranks| ranks.iter().map(|r| r.0).collect())
            .collect(),
    };
    Timeline { header, tasks }
}

/// How many of the busiest links a report lists.
const BUSIEST_LINKS: usize = 10;

/// Simulates one iteration of a scenario (or `scenario.iterations` consecutive ones).
pub fn simulate(scenario: &Scenario) -> Result<SimulationReport, SimulationError> {
    let (schedule, graph) = build_graph(scenario);
    let network = ClosedFormNetwork::for_scenario(scenario);
    let costs = cost_works(scenario, graph.works(), &network);
    let total_ns: u128 = graph
        .tasks()
        .map(|task| costs[task.work.index()].duration.0 as u128)
        .sum();
    if total_ns > MAX_TOTAL_TASK_NS {
        return Err(SimulationError::OutOfRange {
            total_s: total_ns as f64 * 1e-9,
            limit_s: MAX_TOTAL_TASK_NS as f64 * 1e-9,
        });
    }
    let duration_of = |id: crate::ids::TaskId| costs[graph.task(id).work.index()].duration;
    let (timeline, n_events, busiest_links) = if scenario.options.network_contention {
        let fabric = Fabric::new(&scenario.topology, &scenario.profile)?;
        let planner = FabricFlowPlanner::new(scenario, &graph, &network, &costs);
        let (outcome, utilization) = engine::run_with_fabric(
            &graph,
            duration_of,
            Some(SharedFabric {
                fabric: &fabric,
                planner: &planner,
            }),
        )?;
        let (timeline, events) = package(scenario, &graph, &costs, &outcome);
        let elapsed = SimDuration(timeline.makespan_ns());
        let busiest = utilization
            .map(|u| u.busiest(BUSIEST_LINKS, elapsed))
            .unwrap_or_default()
            .into_iter()
            .map(|busy| LinkLoad {
                link: fabric.describe(busy.link),
                carried_bytes: busy.carried_bytes,
                utilization: busy.utilization,
            })
            .collect();
        (timeline, events, busiest)
    } else {
        let (timeline, events) = run_graph(scenario, &graph, &costs)?;
        (timeline, events, Vec::new())
    };
    let metrics = metrics::compute(
        &timeline,
        scenario
            .options
            .precision
            .peak_flops_per_s(&scenario.topology.gpu.peak),
    );
    Ok(SimulationReport {
        metrics,
        memory: memory_per_stage(scenario, &schedule),
        n_tasks: graph.task_count(),
        n_edges: graph.edge_count(),
        n_events,
        timeline,
        busiest_links,
    })
}

/// Durations for tests: every work of a kind gets the same duration.
pub fn uniform_costs(
    graph: &TaskGraph,
    duration_of: impl Fn(&crate::task_graph::Work) -> SimDuration,
) -> Vec<WorkCost> {
    graph
        .works()
        .iter()
        .map(|work| WorkCost {
            duration: duration_of(work),
            bytes: 0,
            flops: 0.0,
        })
        .collect()
}
