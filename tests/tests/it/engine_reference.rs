//! The compact engine against references kept here, on a grid of layouts
//! (schedules, tensor/pipeline/data degrees, ZeRO, the host lane) with and
//! without `--contention`:
//!
//! - the engine it replaced, in its logic: a `BinaryHeap` keyed by (time,
//!   task), the successors a finish makes ready started lowest id first,
//!   flows driven through the same fair-share network; every task's start
//!   and end must be identical (the tie-break among equal times decides
//!   flow order, so this checks the radix queue's tie-break too);
//! - without a fabric, an order-free definition: each task starts at the
//!   latest end of its predecessors (0 with none) and lasts its duration;
//! - metrics read through the engine's view equal metrics of the
//!   materialised Timeline, and that Timeline's records carry the engine's times.

use sim::cost::{cost_works, ClosedFormNetwork};
use sim::ids::TaskId;
use sim::network::{
    Fabric, FabricFlowPlanner, FairShareNetwork, FlowEnds, FlowPlanner, SharedFabric,
};
use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind};
use sim::task_graph::TaskGraph;
use sim::time::{SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// The engine before the compact one (a binary heap), with its tie-break
/// among equal times: lowest task first.
fn reference_run(
    graph: &TaskGraph,
    duration_of: impl Fn(TaskId) -> SimDuration,
    fabric: Option<SharedFabric<'_>>,
) -> (Vec<SimTime>, Vec<SimTime>, u64) {
    let n = graph.task_count();
    let mut remaining = vec![0u32; n];
    for (_, to, _) in graph.edges() {
        remaining[to.index()] += 1;
    }
    let mut heap: BinaryHeap<Reverse<(SimTime, u32)>> = BinaryHeap::new();
    let mut network = fabric
        .as_ref()
        .map(|f| FairShareNetwork::new(f.fabric.capacities_bytes_per_s()));
    let mut flow_owner: Vec<u32> = Vec::new();
    let mut flows_left: BTreeMap<u32, (u32, SimDuration)> = BTreeMap::new();
    let mut start = vec![SimTime::ZERO; n];
    let mut end = vec![SimTime::ZERO; n];
    let mut events = 0u64;
    // Starts `task` at `now`: its flows join the fabric (`None`), or its finish time.
    let mut start_task = |task: u32,
                          now: SimTime,
                          network: &mut Option<FairShareNetwork>,
                          flow_owner: &mut Vec<u32>,
                          flows_left: &mut BTreeMap<u32, (u32, SimDuration)>|
     -> Option<SimTime> {
        start[task as usize] = now;
        let plan = fabric.as_ref().and_then(|f| f.planner.plan(TaskId(task)));
        match (plan, network.as_mut(), fabric.as_ref()) {
            (Some(plan), Some(network), Some(shared)) if !plan.flows.is_empty() => {
                flows_left.insert(task, (plan.flows.len() as u32, plan.tail));
                for &(ends, bytes) in &plan.flows {
                    let route = match ends {
                        FlowEnds::Gpus(a, b) => shared.fabric.route(a, b),
                        FlowEnds::ToHost(gpu) => shared.fabric.route_to_host(gpu),
                        FlowEnds::FromHost(gpu) => shared.fabric.route_from_host(gpu),
                    };
                    network.start_flow(now, &route.links, bytes);
                    flow_owner.push(task);
                }
                None
            }
            (Some(plan), _, _) => Some(now + plan.tail),
            (None, _, _) => Some(now + duration_of(TaskId(task))),
        }
    };
    let push = |heap: &mut BinaryHeap<Reverse<(SimTime, u32)>>, time, task| {
        heap.push(Reverse((time, task)));
    };
    for (index, &left) in remaining.iter().enumerate() {
        if left == 0 {
            if let Some(time) = start_task(
                index as u32,
                SimTime::ZERO,
                &mut network,
                &mut flow_owner,
                &mut flows_left,
            ) {
                push(&mut heap, time, index as u32);
            }
            events += 1;
        }
    }
    loop {
        if let Some(net) = network.as_mut() {
            if let Some((due, flow)) = net.next_completion() {
                if heap.peek().is_none_or(|Reverse((next, ..))| due <= *next) {
                    net.complete(due, flow);
                    events += 1;
                    let task = flow_owner[flow.index()];
                    let entry = flows_left.get_mut(&task).unwrap();
                    entry.0 -= 1;
                    if entry.0 == 0 {
                        let tail = entry.1;
                        flows_left.remove(&task);
                        push(&mut heap, due + tail, task);
                    }
                    continue;
                }
            }
        }
        let Some(Reverse((time, task))) = heap.pop() else {
            break;
        };
        events += 1;
        end[task as usize] = time;
        let mut ready: Vec<TaskId> = graph
            .successors(TaskId(task))
            .filter(|successor| {
                remaining[successor.index()] -= 1;
                remaining[successor.index()] == 0
            })
            .collect();
        ready.sort();
        for successor in ready {
            {
                if let Some(finish) = start_task(
                    successor.0,
                    time,
                    &mut network,
                    &mut flow_owner,
                    &mut flows_left,
                ) {
                    push(&mut heap, finish, successor.0);
                }
                events += 1;
            }
        }
    }
    assert!(
        remaining.iter().all(|&r| r == 0),
        "the reference deadlocked"
    );
    (start, end, events)
}

/// 4 nodes × 4 GPUs with 2 NICs each: flows share NICs and NVSwitch ports.
fn small_cluster() -> serde_json::Value {
    let mut topology = serde_json::to_value(topologies::preset("selene").unwrap()).unwrap();
    topology["name"] = "four-small-nodes".into();
    topology["nodes"] = 4.into();
    topology["node"]["gpus_per_node"] = 4.into();
    topology["fabric"]["nics_per_node"] = 2.into();
    topology
}

/// The grid: every schedule on several (t, p, d), some with ZeRO-2 or
/// overlapped gradient reduction, half with a host lane (megatron-2021's).
fn grid(contention: bool) -> Vec<Scenario> {
    let mut scenarios = Vec::new();
    let layouts = [
        (1, 2, 2),
        (2, 2, 2),
        (1, 4, 4),
        (2, 4, 1),
        (4, 1, 4),
        (1, 8, 2),
    ];
    let schedules = [
        (ScheduleKind::OneFOneB, 1),
        (ScheduleKind::Gpipe, 1),
        (ScheduleKind::Interleaved, 2),
        (ScheduleKind::ZbH1, 1),
        (ScheduleKind::ZbH2, 1),
    ];
    for (index, &(t, p, d)) in layouts.iter().enumerate() {
        for &(schedule, chunks) in &schedules {
            let mut options = sim::scenario::TrainingOptionsFile {
                network_contention: Some(contention),
                ..Default::default()
            };
            let split = matches!(schedule, ScheduleKind::ZbH1 | ScheduleKind::ZbH2);
            match index % 3 {
                1 if !split => options.zero_stage = Some(2),
                2 => options.overlap_grad_reduce = Some(true),
                _ => {}
            }
            let file = ScenarioFile {
                model: Some(serde_json::json!({
                    "name": "sixteen-layers", "layers": 16, "hidden": 256, "heads": 4,
                    "seq_len": 128, "vocab": 1024
                })),
                topology: Some(small_cluster()),
                stack: Some(
                    if index % 2 == 0 {
                        "megatron-2021"
                    } else {
                        "megatron-core-2024"
                    }
                    .into(),
                ),
                tp: Some(t),
                pp: Some(p),
                dp: Some(d),
                chunks: Some(chunks),
                global_batch: Some(d * 2 * p),
                schedule: Some(schedule),
                recompute: Some(Recompute::None),
                options,
                ..ScenarioFile::default()
            };
            match file.resolve() {
                Ok(scenario) => scenarios.push(scenario),
                Err(error) => eprintln!("{t} {p} {d} {schedule:?}: {error}"),
            }
        }
    }
    scenarios
}

fn check(scenario: &Scenario) {
    let (_, graph) = sim::build_graph(scenario);
    let network = ClosedFormNetwork::for_scenario(scenario);
    let costs = cost_works(scenario, graph.works(), &network);
    let duration_of = |id: TaskId| costs[graph.task(id).work.index()].duration;
    let title = scenario.title();
    let (start, end, events) = if scenario.options.network_contention {
        let fabric = Fabric::new(&scenario.topology, &scenario.profile).unwrap();
        let placement = sim::placement::Placement::of(scenario);
        let planner = FabricFlowPlanner::new(scenario, &placement, &graph, &network, &costs);
        let planner: &dyn FlowPlanner = &planner;
        let shared = || SharedFabric {
            fabric: &fabric,
            planner,
        };
        let (schedule, _) =
            sim::engine::run_with_fabric(&graph, duration_of, Some(shared())).unwrap();
        let (start, end, events) = reference_run(&graph, duration_of, Some(shared()));
        assert_eq!(schedule.events, events, "{title}");
        assert_eq!(schedule.start, start, "{title}");
        assert_eq!(schedule.end, end, "{title}");
        (start, end, events)
    } else {
        let schedule = sim::engine::run(&graph, duration_of).unwrap();
        let (_, _, events) = reference_run(&graph, duration_of, None);
        assert_eq!(schedule.events, events, "{title}");
        assert_eq!(events, 2 * graph.task_count() as u64, "{title}");
        // Order-free: latest predecessor end, plus the duration.
        for index in 0..graph.task_count() {
            let id = TaskId(index as u32);
            let ready = graph
                .predecessors(id)
                .map(|p| schedule.end[p.index()])
                .max()
                .unwrap_or(SimTime::ZERO);
            assert_eq!(
                schedule.start[index],
                ready,
                "{title}: {}",
                graph.describe(id)
            );
            assert_eq!(schedule.end[index], ready + duration_of(id), "{title}");
        }
        (schedule.start, schedule.end, events)
    };
    let (reference_start, reference_end, _) = reference_run(&graph, duration_of, None);
    if !scenario.options.network_contention {
        assert_eq!(start, reference_start, "{title}");
        assert_eq!(end, reference_end, "{title}");
    }
    let _ = events;
    // The report's view and its Timeline agree with the engine and each other.
    let report = sim::simulate(scenario).unwrap();
    let timeline = report.timeline();
    assert_eq!(timeline.tasks.len(), start.len(), "{title}");
    for (index, record) in timeline.tasks.iter().enumerate() {
        assert_eq!(record.id as usize, index);
        assert_eq!(
            (record.start_ns, record.end_ns),
            (start[index].as_nanos(), end[index].as_nanos()),
            "{title}: {}",
            graph.describe(TaskId(index as u32))
        );
    }
    let peak = scenario
        .options
        .precision
        .peak_flops_per_s(&scenario.topology.gpu.peak);
    assert_eq!(
        report.metrics,
        timeline::metrics::compute(timeline, peak),
        "{title}"
    );
    assert_eq!(report.makespan_ns(), timeline.makespan_ns(), "{title}");
}

#[test]
fn the_compact_engine_starts_every_task_when_the_reference_engine_did() {
    let scenarios = grid(false);
    assert!(
        scenarios.len() >= 28,
        "only {} layouts resolved",
        scenarios.len()
    );
    for scenario in &scenarios {
        check(scenario);
    }
}

#[test]
fn under_contention_too_flow_order_and_all() {
    let scenarios = grid(true);
    assert!(
        scenarios.len() >= 28,
        "only {} layouts resolved",
        scenarios.len()
    );
    let mut with_flows = 0;
    for scenario in &scenarios {
        check(scenario);
        with_flows += usize::from(scenario.options.network_contention);
    }
    assert_eq!(with_flows, scenarios.len());
}
