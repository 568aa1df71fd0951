//! One call from a resolved scenario to a report: schedule → lowering →
//! costs → engine → metrics and memory. The Timeline is a view: metrics read
//! the engine's start and end arrays through [`timeline::metrics::Spans`],
//! and the records are built only when asked for
//! ([`SimulationReport::timeline`]: `--timeline`, `--plot`, `--trace`).

use crate::cost::{cost_works, ClosedFormNetwork, WorkCost};
use crate::lowered_run::LoweredRun;
use crate::lowering::lower;
use crate::memory::{memory_per_stage, MemoryBreakdown};
use crate::network::{Fabric, FabricError, LinkUtilization};
use crate::network::{FabricFlowPlanner, SharedFabric};
use crate::plan::Plan;
use crate::replicated_run::Replicated;
pub(crate) use crate::simulated_run::SimulatedRun;
use crate::slow_link::SlowLinkCosts;
use crate::straggler::Stragglers;
use crate::symmetry::{Expansion, SimulationMode};
use crate::timeline_view::{self, TimelineSelection};
use engine::{self, DeadlockError};
use scenario::Scenario;
use schedules::PipelineSchedule;
use std::sync::OnceLock;
use taskgraph::replica_map::Expanded;
use taskgraph::task_graph::TaskGraph;
use timeline::metrics::{self, Metrics};
use timeline::time::SimDuration;
use timeline::{
    Producer, TaskRecord, Timeline, TimelineHeader, TimelineLayout, TIMELINE_FORMAT_VERSION,
};

/// Everything one simulation produces.
#[derive(Debug, Clone)]
pub struct SimulationReport {
    pub metrics: Metrics,
    pub memory: Vec<MemoryBreakdown>,
    pub n_tasks: usize,
    pub n_edges: usize,
    pub n_events: u64,
    /// The most loaded links, with `--contention` (empty otherwise).
    pub busiest_links: Vec<LinkLoad>,
    /// Full expansion, or one representative replica ([`crate::symmetry`]);
    /// `n_tasks`, `n_edges` and `n_events` are full expansion's either way.
    pub mode: SimulationMode,
    /// Tasks the engine ran (`n_tasks` in full expansion).
    pub simulated_tasks: usize,
    /// What the engine computed, which the Timeline is a view of.
    pub(crate) run: SimulatedRun,
    /// Under symmetry: the scenario and its stragglers, expanded in full
    /// when the Timeline (every rank's records) is asked for and the
    /// replica map does not describe it.
    pub(crate) expand: Option<Box<(Scenario, Stragglers)>>,
    /// Full expansion run from the representative's graph
    /// ([`crate::replicated_run`]): full expansion's ids and groups, which
    /// the engine's arrays are indexed by.
    pub(crate) replicated: Option<Box<crate::replicated_run::ReplicatedRecords>>,
    /// The Timeline, built on first request.
    pub(crate) timeline: OnceLock<Timeline>,
    /// Under symmetry: full expansion's ids ([`taskgraph::replica_map`]), on
    /// first request; `None` inside if the layout is outside what the
    /// representative's loops describe.
    pub(crate) expanded: OnceLock<Option<Expanded>>,
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
    /// The Timeline (every task's record), built on first call; the same
    /// bytes the engine's Timeline always had.
    pub fn timeline(&self) -> &Timeline {
        self.timeline
            .get_or_init(|| self.timeline_of(&TimelineSelection::all()))
    }

    /// The records of the chosen ranks and window only, as full expansion
    /// would write them (ids, groups, header), built from the engine's
    /// arrays ([`crate::timeline_view`]); under symmetry from the
    /// representative's twins, without lowering other replicas.
    pub fn timeline_of(&self, selection: &TimelineSelection) -> Timeline {
        let run = &self.run;
        let span = |index: usize| (run.start[index].as_nanos(), run.end[index].as_nanos());
        if let Some(replicated) = &self.replicated {
            // The engine's starts are full expansion's: a twin's at its full id.
            return Timeline {
                header: run.header.clone(),
                tasks: timeline_view::expanded_records(
                    &run.graph,
                    &replicated.expanded,
                    &run.costs,
                    run.iterations,
                    selection,
                    |twin| replicated.span(&run.start, twin),
                ),
            };
        }
        let Some(expand) = &self.expand else {
            return Timeline {
                header: run.header.clone(),
                tasks: timeline_view::full_records(
                    &run.graph,
                    &run.costs,
                    run.iterations,
                    selection,
                    span,
                ),
            };
        };
        match self.expanded() {
            Some(expanded) => {
                let mut header = run.header.clone();
                header.groups = expanded
                    .groups
                    .iter()
                    .map(|ranks| ranks.iter().map(|r| r.0).collect())
                    .collect();
                Timeline {
                    header,
                    tasks: timeline_view::expanded_records(
                        &run.graph,
                        expanded,
                        &run.costs,
                        run.iterations,
                        selection,
                        |twin| span(twin.representative as usize),
                    ),
                }
            }
            // Outside what the replica map describes: full expansion
            // (exactly what the representative's times stand for).
            None => simulate_with_stragglers(&expand.0, Expansion::Full, &expand.1)
                .expect("the lowered replicas ran, so full expansion runs")
                .timeline_of(selection),
        }
    }

    /// Full expansion's task and group ids from the representative's: under
    /// symmetry (`None` where the replica map does not describe the
    /// layout) and in full expansion kept as its graph; `None` where every
    /// replica was built.
    pub fn expanded(&self) -> Option<&Expanded> {
        if let Some(replicated) = &self.replicated {
            return Some(&replicated.expanded);
        }
        let (scenario, _) = self.expand.as_deref()?;
        self.expanded
            .get_or_init(|| {
                let graph = &self.run.graph;
                graph.replica_map()?.expand(
                    graph.groups(),
                    |task| graph.group_of(taskgraph::ids::TaskId(task)),
                    graph.task_count() as u32,
                    crate::placement::representative(scenario),
                    self.n_tasks,
                )
            })
            .as_ref()
    }

    /// The Timeline, moved out (built if it was not yet).
    pub fn into_timeline(self) -> Timeline {
        self.timeline();
        self.timeline.into_inner().expect("just built")
    }

    /// The latest task end (the Timeline's makespan, without building it).
    pub fn makespan_ns(&self) -> u64 {
        if let Some(replicated) = &self.replicated {
            return replicated.makespan_ns;
        }
        self.run.makespan_ns()
    }

    /// The GPU time `rank` spends in each kernel class per iteration
    /// ([`crate::cost::class_time`]); under symmetry, a rank of the
    /// representative replica (rank 0's replica) or its twin's; in full
    /// expansion kept as the representative's graph, its twin's in replica
    /// 0 (which runs the same kernels).
    pub fn kernel_class_seconds(
        &self,
        scenario: &Scenario,
        rank: u32,
    ) -> crate::cost::class_time::KernelClassSeconds {
        let rank = match &self.replicated {
            Some(_) => {
                let representative = crate::placement::representative(scenario);
                representative
                    .twin_in_replica_0(taskgraph::ids::Rank(rank))
                    .1
                     .0
            }
            None => rank,
        };
        crate::cost::class_time::kernel_class_seconds(scenario, &self.run.graph, rank)
    }

    /// Whether full expansion ran from the representative's graph
    /// ([`crate::replicated_run`]) rather than every replica's built.
    pub fn replicated(&self) -> bool {
        self.replicated.is_some()
    }

    /// The peak over stages.
    pub fn peak_memory(&self) -> &MemoryBreakdown {
        crate::memory::peak_of(&self.memory)
    }
}

/// Builds the schedule and task graph of a scenario (no costs).
pub fn build_graph(scenario: &Scenario) -> (PipelineSchedule, TaskGraph) {
    let plan = Plan::of(scenario);
    let graph = lower(scenario, &plan);
    (plan.schedule, graph)
}

/// Runs a graph with given per-work costs and packages the timeline.
pub fn run_graph(
    scenario: &Scenario,
    graph: &TaskGraph,
    costs: &[WorkCost],
) -> Result<(Timeline, u64), DeadlockError> {
    run_graph_with_stragglers(scenario, graph, costs, &Stragglers::none())
}

/// [`run_graph`] with slow ranks' compute kernels stretched ([`crate::straggler`])
/// and, for tasks with a slow NIC among their members, the closed form's
/// durations at its rate in place of `costs`' ([`crate::slow_link`]).
pub fn run_graph_with_stragglers(
    scenario: &Scenario,
    graph: &TaskGraph,
    costs: &[WorkCost],
    stragglers: &Stragglers,
) -> Result<(Timeline, u64), DeadlockError> {
    let duration_of = perturbed_durations(scenario, graph, costs, stragglers);
    let outcome = engine::run(graph, duration_of)?;
    let timeline = timeline_from_spans(scenario, graph, costs, Producer::Sim, None, |index| {
        (
            outcome.start[index].as_nanos(),
            outcome.end[index].as_nanos(),
        )
    });
    Ok((timeline, outcome.events))
}

/// Each task's duration: its work's priced one, or with slow NICs among its
/// members' the closed form's at their rate ([`crate::slow_link`]), then
/// stretched when it is a compute kernel of a slow rank
/// ([`crate::straggler`]).
fn perturbed_durations<'a>(
    scenario: &Scenario,
    graph: &'a TaskGraph,
    costs: &'a [WorkCost],
    stragglers: &Stragglers,
) -> impl Fn(taskgraph::ids::TaskId) -> SimDuration + 'a {
    let factors = stragglers.group_factors(graph);
    let slow_links = (!stragglers.links().is_empty())
        .then(|| SlowLinkCosts::new(scenario, graph, stragglers.links()));
    move |id| {
        let priced = costs[graph.work_of(id).index()].duration;
        let priced = match &slow_links {
            Some(links) => links.duration(graph, id, priced),
            None => priced,
        };
        crate::straggler::stretched(graph, &factors, id, priced)
    }
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
    Timeline {
        header: timeline_header(scenario, graph, producer, executor_mode),
        tasks: records(graph, costs, scenario.iterations > 1, span),
    }
}

/// One record per task, in id order.
fn records(
    graph: &TaskGraph,
    costs: &[WorkCost],
    iterations: bool,
    span: impl Fn(usize) -> (u64, u64),
) -> Vec<TaskRecord> {
    graph
        .tasks()
        .enumerate()
        .map(|(index, task)| {
            let index = index as u32;
            timeline_view::record(
                graph,
                costs,
                iterations,
                index,
                index,
                task.group.0,
                span(index as usize),
            )
        })
        .collect()
}

/// The header every producer writes.
pub(crate) fn timeline_header(
    scenario: &Scenario,
    graph: &TaskGraph,
    producer: Producer,
    executor_mode: Option<String>,
) -> TimelineHeader {
    let layout = scenario.layout;
    TimelineHeader {
        format_version: TIMELINE_FORMAT_VERSION,
        producer,
        executor_mode,
        scenario: scenario.to_json(),
        profile_id: scenario.profile.id.clone(),
        seed: scenario.seed,
        n_gpus: layout.gpus(),
        layout: TimelineLayout {
            tensor_parallel: layout.tensor_parallel.get(),
            pipeline_parallel: layout.pipeline_parallel.get(),
            data_parallel: layout.data_parallel.get(),
            context_parallel: layout.context_parallel.get(),
            chunks: layout.chunks.get(),
            microbatches: layout.microbatches.get(),
            microbatch_size: layout.microbatch_size.get(),
            global_batch: layout.global_batch.get(),
            gpus_per_node: scenario.topology.node.gpus_per_node,
        },
        groups: graph
            .groups()
            .iter()
            .map(|ranks| ranks.iter().map(|r| r.0).collect())
            .collect(),
    }
}

/// How many of the busiest links a report lists.
const BUSIEST_LINKS: usize = 10;

/// Simulates one iteration of a scenario (or `scenario.iterations`
/// consecutive ones): one representative data-parallel replica where that
/// is exact ([`crate::symmetry`]), else every rank.
pub fn simulate(scenario: &Scenario) -> Result<SimulationReport, SimulationError> {
    simulate_with(scenario, Expansion::Auto)
}

/// [`simulate`], or with [`Expansion::Full`] every rank whatever the symmetry.
pub fn simulate_with(
    scenario: &Scenario,
    expansion: Expansion,
) -> Result<SimulationReport, SimulationError> {
    simulate_with_stragglers(scenario, expansion, &Stragglers::none())
}

/// [`simulate_with`] with slow ranks ([`crate::straggler`]) and slow NICs
/// and NVLinks ([`crate::slow_link`]): each makes its replicas differ.
/// Stragglers in a few replicas lower those beside the representative
/// ([`crate::symmetry_exceptions`]); otherwise every rank is simulated.
pub fn simulate_with_stragglers(
    scenario: &Scenario,
    expansion: Expansion,
    stragglers: &Stragglers,
) -> Result<SimulationReport, SimulationError> {
    let plan = Plan::of(scenario);
    if let Some(replicated) = Replicated::for_full_run(scenario, &plan, expansion, stragglers) {
        return crate::replicated_run::simulate(scenario, &plan, replicated, stragglers);
    }
    let lowered = LoweredRun::lower(scenario, &plan, expansion, stragglers);
    let original_stragglers = stragglers;
    let stragglers = lowered.stragglers(original_stragglers);
    let graph = &lowered.graph;
    let network = ClosedFormNetwork::for_scenario(scenario);
    let costs = priced_works(scenario, graph, &network, stragglers)?;
    let duration_of = perturbed_durations(scenario, graph, &costs, stragglers);
    let (outcome, busiest_links) = if scenario.options.network_contention {
        run_on_fabric(
            scenario,
            &plan,
            graph,
            &network,
            &costs,
            stragglers,
            duration_of,
            expansion,
        )?
    } else {
        (engine::run(graph, duration_of)?, Vec::new())
    };
    let simulated_tasks = graph.task_count();
    let weights = lowered.weights();
    let (n_tasks, n_edges) = lowered.full_counts(&plan, weights.as_deref());
    let mode = lowered.mode;
    // Each task starts and finishes once (no flows: symmetry excludes contention).
    let n_events = match mode {
        SimulationMode::Full => outcome.events,
        _ => 2 * n_tasks as u64,
    };
    let mut graph = lowered.graph;
    graph.release_edges();
    let run = SimulatedRun::of(scenario, graph, costs, outcome);
    let metrics =
        metrics::compute_spans_weighted(&run, scenario.peak_flops_per_s(), weights.as_deref());
    Ok(SimulationReport {
        metrics,
        memory: memory_per_stage(scenario, &plan),
        n_tasks,
        n_edges,
        n_events,
        busiest_links,
        mode,
        simulated_tasks,
        run,
        expand: match mode {
            SimulationMode::Full => None,
            _ => Some(Box::new((scenario.clone(), original_stragglers.clone()))),
        },
        replicated: None,
        timeline: OnceLock::new(),
        expanded: OnceLock::new(),
    })
}

/// Each work of `graph` priced, checked that no start or end can overflow
/// ([`check_total_ns`]).
pub(crate) fn priced_works(
    scenario: &Scenario,
    graph: &TaskGraph,
    network: &ClosedFormNetwork,
    stragglers: &Stragglers,
) -> Result<Vec<WorkCost>, SimulationError> {
    let costs = cost_works(scenario, graph.works(), network);
    let total_ns: u128 = graph
        .task_works()
        .iter()
        .map(|work| costs[work.index()].duration.0 as u128)
        .sum();
    check_total_ns(total_ns, stragglers)?;
    Ok(costs)
}

/// `OutOfRange` when every task's priced duration, `total_ns`, stretched by
/// the largest slow factor of `stragglers`, passes [`MAX_TOTAL_TASK_NS`]:
/// then some start or end could overflow.
pub(crate) fn check_total_ns(
    total_ns: u128,
    stragglers: &Stragglers,
) -> Result<(), SimulationError> {
    // Slow ranks stretch some of it: bounded by the largest factor.
    let total_ns = if stragglers.is_empty() {
        total_ns
    } else {
        (total_ns as f64 * stragglers.max_factor()).ceil() as u128
    };
    if total_ns > MAX_TOTAL_TASK_NS {
        return Err(SimulationError::OutOfRange {
            total_s: total_ns as f64 * 1e-9,
            limit_s: MAX_TOTAL_TASK_NS as f64 * 1e-9,
        });
    }
    Ok(())
}

/// The fabric of `scenario` (`--contention`), with the slow NICs, NVLinks,
/// PCIe links and leaf uplinks of `stragglers` slowing their links.
pub(crate) fn fabric_for(
    scenario: &Scenario,
    stragglers: &Stragglers,
) -> Result<Fabric, SimulationError> {
    let mut fabric = Fabric::new(&scenario.topology, &scenario.profile)?;
    for slow in stragglers.nics() {
        fabric.slow_nic(slow.nic, slow.factor);
    }
    for slow in stragglers.nvlinks() {
        fabric.slow_nvlink(slow.rank, slow.factor);
    }
    for slow in stragglers.pcies() {
        fabric.slow_pcie(slow.rank, slow.factor);
    }
    for slow in stragglers.uplinks() {
        fabric.slow_leaf_uplinks(slow.leaf, slow.factor);
    }
    Ok(fabric)
}

/// The busiest links of a run that lasted `elapsed`, described.
pub(crate) fn busiest_links(
    fabric: &Fabric,
    utilization: &LinkUtilization,
    elapsed: SimDuration,
) -> Vec<LinkLoad> {
    utilization
        .busiest(BUSIEST_LINKS, elapsed)
        .into_iter()
        .map(|busy| LinkLoad {
            link: fabric.describe(busy.link),
            carried_bytes: busy.carried_bytes,
            utilization: busy.utilization,
        })
        .collect()
}

/// Runs `graph` with its communication as flows over the fabric
/// (`--contention`), slow NICs, NVLinks, PCIe links and leaf uplinks slowing their links; the engine's
/// times and the busiest links. `Expansion::Built`, the reference, shares
/// every flow (`network::lone_rings`).
#[allow(clippy::too_many_arguments)]
fn run_on_fabric(
    scenario: &Scenario,
    plan: &Plan,
    graph: &TaskGraph,
    network: &ClosedFormNetwork,
    costs: &[WorkCost],
    stragglers: &Stragglers,
    duration_of: impl Fn(taskgraph::ids::TaskId) -> SimDuration,
    expansion: Expansion,
) -> Result<(engine::TaskTimes, Vec<LinkLoad>), SimulationError> {
    let fabric = fabric_for(scenario, stragglers)?;
    let mut planner = FabricFlowPlanner::new(scenario, &plan.placement, graph, network, costs);
    if expansion == Expansion::Built {
        planner = planner.sharing_every_flow();
    }
    let (outcome, utilization) = engine::run_with_fabric(
        graph,
        duration_of,
        Some(SharedFabric {
            fabric: &fabric,
            planner: &planner,
        }),
    )?;
    let elapsed = SimDuration(outcome.end.iter().map(|t| t.as_nanos()).max().unwrap_or(0));
    let busiest = utilization
        .map(|u| busiest_links(&fabric, &u, elapsed))
        .unwrap_or_default();
    Ok((outcome, busiest))
}

/// Durations for tests: every work of a kind gets the same duration.
pub fn uniform_costs(
    graph: &TaskGraph,
    duration_of: impl Fn(&taskgraph::task_graph::Work) -> SimDuration,
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
