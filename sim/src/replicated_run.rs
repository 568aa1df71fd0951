//! Full expansion kept as one replica's graph: every replica simulated, in
//! a fraction of the memory and time building them all would take.
//!
//! **When.** A run in full expansion (`--no-symmetry`, `--contention`, or
//! stragglers the exceptions of [`crate::symmetry_exceptions`] do not
//! cover, such as a spread of GPU speeds or a slow leaf uplink) whose
//! replicas are alike in structure and placement, which is what
//! [`crate::symmetry::replicas_alike_in`] checks: no ZeRO-Offload, HSDP or
//! hpZ, replicas on their nodes alike. Those, and a layout the
//! representative's replica map does not describe, build every replica.
//! Slow ranks and spreads stretch a twin by its own rank's factor; slow
//! NICs, NVLinks, PCIe links and uplinks price it by its own group's links
//! ([`crate::slow_link_twins`]) and, under `--contention`, slow the
//! fabric's links as they do for the built graph.
//!
//! **How.** Lowering builds the representative replica
//! ([`crate::lowering::lower_representative`]); its replica map gives full
//! expansion's ids as arithmetic ([`taskgraph::replica_ids`]); the engine
//! runs every replica's twins over the representative's edges
//! ([`engine::replicated`]) with each twin's own duration, or under
//! `--contention` in its event loop with each twin's own flows
//! ([`engine::replicated_flows`], [`crate::network::TwinPlanner`]); metrics
//! read each rank's tasks from its twin rank's in replica 0
//! ([`timeline::metrics::RankView`]). Times, metrics, counts and the
//! Timeline are full expansion's, which `tests/tests/it/replicated_run.rs`
//! checks task by task against full expansion built and run.
//!
//! **What it checks first** (else every replica is built): the
//! representative's loops hold exactly the tasks whose groups lie inside
//! replica 0 (the twins copies move), and every other group holds, with
//! each of its ranks in replica 0, that rank's twin in every replica and
//! nothing else (a collective joining all replicas alike).

use crate::cost::WorkCost;
use crate::cost::{cost_works, ClosedFormNetwork};
use crate::network::{FabricFlowPlanner, TwinPlanner};
use crate::plan::Plan;
use crate::replicated_view::ReplicatedView;
use crate::simulate::{SimulatedRun, SimulationError, SimulationReport};
use crate::straggler::Stragglers;
use crate::symmetry::{Expansion, FullCounts, Representative, SimulationMode};
pub(crate) use crate::twin_durations::TwinDurations;
use crate::twin_ends::TwinEnds;
use engine::replicated_flows::PlannedEnds;
use scenario::Scenario;
use std::sync::OnceLock;
use taskgraph::ids::{Rank, TaskId};
use taskgraph::replica_ids::ReplicaIds;
use taskgraph::replica_map::{Expanded, Twin};
use taskgraph::task_graph::TaskGraph;
use timeline::time::{SimDuration, SimTime};
use timeline::Producer;

/// The representative's graph with full expansion's ids and groups.
pub(crate) struct Replicated {
    pub graph: TaskGraph,
    pub expanded: Expanded,
    pub ids: ReplicaIds,
    pub representative: Representative,
    /// Full expansion's task and edge counts.
    pub full: FullCounts,
}

impl Replicated {
    /// The representative, where a run `expansion` asks for goes in full
    /// expansion and one replica's graph can stand for it.
    pub fn for_full_run(
        scenario: &Scenario,
        plan: &Plan,
        expansion: Expansion,
        stragglers: &Stragglers,
    ) -> Option<Replicated> {
        let symmetric = crate::symmetry::symmetric_replicas_in(scenario, plan);
        let alike = crate::symmetry::replicas_alike_in(scenario, plan).is_ok();
        applies(scenario, symmetric, alike, expansion, stragglers)
            .then(|| Replicated::lower(scenario, plan))
            .flatten()
    }

    /// The representative of a run of every replica, where one replica's
    /// graph can stand for full expansion (see the module header); `None`
    /// where every replica must be built.
    fn lower(scenario: &Scenario, plan: &Plan) -> Option<Replicated> {
        let representative = plan.representative;
        let graph = crate::lowering::lower_representative(scenario, plan);
        let full = FullCounts::of(&graph, representative, &[representative.replicas]);
        let expanded = graph.replica_map()?.expand(
            graph.groups(),
            |task| graph.group_of(TaskId(task)),
            graph.task_count() as u32,
            representative,
            full.tasks,
        )?;
        let ids = expanded.replica_ids()?;
        copies_are_twins(&graph, &ids, representative).then_some(Replicated {
            graph,
            expanded,
            ids,
            representative,
            full,
        })
    }

    /// Each twin's duration ([`TwinDurations`]).
    pub fn durations(
        &self,
        scenario: &Scenario,
        costs: &[WorkCost],
        stragglers: &Stragglers,
    ) -> TwinDurations {
        TwinDurations::new(
            scenario,
            &self.graph,
            &self.ids,
            self.representative,
            costs,
            stragglers,
        )
    }

    /// The sum of every full task's priced duration (each loop task once per copy).
    pub fn total_ns(&self, costs: &[WorkCost]) -> u128 {
        (0..self.graph.task_count() as u32)
            .map(|task| {
                costs[self.graph.work_of(TaskId(task)).index()].duration.0 as u128
                    * self.ids.twins_of(task) as u128
            })
            .sum()
    }
}

/// Whether a run `expansion` asks for goes in full expansion from the
/// representative's graph, given what [`crate::symmetry::symmetric_replicas`]
/// says of it (`symmetric`) and whether its replicas lower alike (`alike`,
/// [`crate::symmetry::replicas_alike_in`]): full expansion, replicas alike,
/// and not [`Expansion::Built`]. (Lowering may still find the replica map
/// does not describe the layout, and build every replica.)
pub(crate) fn applies(
    scenario: &Scenario,
    symmetric: Result<u32, &'static str>,
    alike: bool,
    expansion: Expansion,
    stragglers: &Stragglers,
) -> bool {
    expansion != Expansion::Built
        && alike
        && crate::symmetry::planned_mode(scenario, symmetric, expansion, stragglers).0
            == SimulationMode::Full
}

/// Simulates every replica of `scenario` from `replicated`: full
/// expansion's report, byte for byte.
pub(crate) fn simulate(
    scenario: &Scenario,
    plan: &Plan,
    replicated: Replicated,
    stragglers: &Stragglers,
) -> Result<SimulationReport, SimulationError> {
    let network = ClosedFormNetwork::for_scenario(scenario);
    let costs = cost_works(scenario, replicated.graph.works(), &network);
    crate::simulate::check_total_ns(replicated.total_ns(&costs), stragglers)?;
    let durations = replicated.durations(scenario, &costs, stragglers);
    let twins = Twins {
        replicated: &replicated,
        costs: &costs,
        durations: &durations,
    };
    let run = run_twins(scenario, plan, &network, twins, stragglers)?;
    let start = run.start;
    let mut header =
        crate::simulate::timeline_header(scenario, &replicated.graph, Producer::Sim, None);
    header.groups = replicated
        .expanded
        .groups
        .iter()
        .map(|ranks| ranks.iter().map(|r| r.0).collect())
        .collect();
    let iterations = scenario.iterations > 1;
    let ends = TwinEnds {
        durations,
        planned: run.planned,
    };
    let view = ReplicatedView::new(&header, &replicated, &costs, &ends, &start, iterations);
    let metrics = timeline::metrics::compute_rank_view(&view, scenario.peak_flops_per_s());
    let makespan_ns = view.makespan_ns();
    drop(view);
    let Replicated {
        mut graph,
        expanded,
        ids,
        full,
        ..
    } = replicated;
    graph.release_edges();
    let records = ReplicatedRecords {
        expanded,
        ids,
        ends,
        makespan_ns,
    };
    let busiest_links = match run.links {
        Some((fabric, utilization)) => {
            crate::simulate::busiest_links(&fabric, &utilization, SimDuration(makespan_ns))
        }
        None => Vec::new(),
    };
    Ok(SimulationReport {
        metrics,
        memory: crate::memory::memory_per_stage(scenario, plan),
        n_tasks: full.tasks,
        n_edges: full.edges,
        n_events: run.events,
        busiest_links,
        mode: SimulationMode::Full,
        simulated_tasks: full.tasks,
        run: SimulatedRun {
            header,
            graph,
            costs,
            start,
            end: Vec::new(),
            iterations,
        },
        expand: None,
        replicated: Some(Box::new(records)),
        timeline: OnceLock::new(),
        expanded: OnceLock::new(),
    })
}

/// The representative's graph with its works' costs and twins' durations.
#[derive(Clone, Copy)]
struct Twins<'a> {
    replicated: &'a Replicated,
    costs: &'a [WorkCost],
    durations: &'a TwinDurations,
}

/// What the engine gives of a replicated run.
struct TwinRun {
    /// Every full task's start, by full id.
    start: Vec<SimTime>,
    /// Under `--contention`: the flow tasks' ends.
    planned: Option<PlannedEnds>,
    /// Starts, finishes and flow completions.
    events: u64,
    /// Under `--contention`: the fabric and what its links carried.
    links: Option<(crate::network::Fabric, crate::network::LinkUtilization)>,
}

/// Runs every twin: fixed durations as longest paths
/// ([`engine::replicated`]), or under `--contention` with each twin's flows
/// on the fabric ([`engine::replicated_flows`]).
fn run_twins(
    scenario: &Scenario,
    plan: &Plan,
    network: &ClosedFormNetwork,
    twins: Twins<'_>,
    stragglers: &Stragglers,
) -> Result<TwinRun, SimulationError> {
    let Twins {
        replicated,
        costs,
        durations,
    } = twins;
    let ids = &replicated.ids;
    let duration_of = |task, copy| durations.of(ids, task, copy);
    if !scenario.options.network_contention {
        let start = engine::replicated::run_replicated(&replicated.graph, ids, duration_of)?;
        return Ok(TwinRun {
            start,
            planned: None,
            // Each task starts and finishes once (`engine::replicated`).
            events: 2 * replicated.full.tasks as u64,
            links: None,
        });
    }
    let fabric = crate::simulate::fabric_for(scenario, stragglers)?;
    let moved_by = replicated.representative.in_copy(Rank(0), 1).0;
    let planner = TwinPlanner::new(
        FabricFlowPlanner::new(scenario, &plan.placement, &replicated.graph, network, costs)
            .for_twins_moved_by(moved_by),
        &replicated.graph,
        ids,
        replicated.representative,
    );
    let times = engine::replicated_flows::run_replicated_with_fabric(
        &replicated.graph,
        ids,
        duration_of,
        durations.twins_alike(),
        &fabric,
        &planner,
    )?;
    Ok(TwinRun {
        start: times.start,
        planned: Some(times.planned),
        events: times.events,
        links: Some((fabric, times.utilization)),
    })
}

/// What a replicated run's report keeps to give full expansion's records:
/// its ids, groups and each twin's end (the engine keeps starts, and under
/// `--contention` the flow tasks' ends).
#[derive(Debug, Clone)]
pub(crate) struct ReplicatedRecords {
    pub expanded: Expanded,
    pub ids: ReplicaIds,
    pub ends: TwinEnds,
    /// The latest end of any full task.
    pub makespan_ns: u64,
}

impl ReplicatedRecords {
    /// Full task `twin.id`'s (start, end) in ns.
    pub fn span(&self, start: &[SimTime], twin: Twin) -> (u64, u64) {
        let copy = self.ids.copy_of(twin.representative, twin.id);
        let start = start[twin.id as usize];
        let end = self.ends.end(&self.ids, twin.representative, copy, start);
        (start.as_nanos(), end.as_nanos())
    }
}

/// Whether the loops hold exactly the tasks on replica 0's ranks alone, and
/// every shared task's group holds each of its replica-0 ranks' twins in
/// every replica and nothing else.
fn copies_are_twins(graph: &TaskGraph, ids: &ReplicaIds, representative: Representative) -> bool {
    let in_replica_0 = |rank: &Rank| representative.data_index(*rank) == 0;
    let mut checked = vec![false; graph.groups().len()];
    (0..graph.task_count() as u32).all(|task| {
        let group = graph.group_of(TaskId(task));
        let ranks = graph.group_ranks(group);
        let inside = ranks.iter().all(in_replica_0);
        if ids.is_shared(task) == inside {
            return false;
        }
        if inside || std::mem::replace(&mut checked[group.index()], true) {
            return true;
        }
        let mut firsts: Vec<u32> = ranks
            .iter()
            .filter(|r| in_replica_0(r))
            .map(|r| r.0)
            .collect();
        firsts.sort_unstable();
        ranks.len() == firsts.len() * ids.copies() as usize
            && ranks.iter().all(|rank| {
                let (_, twin) = representative.twin_in_replica_0(*rank);
                firsts.binary_search(&twin.0).is_ok()
            })
    })
}
