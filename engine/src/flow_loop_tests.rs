//! Running tasks ahead ([`Timing::Ahead`]) against running every task in
//! order: the same random graphs, with many equal times and flows sharing
//! a fabric's links, must give every task the same start and end, the same
//! events and the same traffic on every link.

use super::*;
use crate::network::{Fabric, LinkUtilization};

/// A task of the test graph: a fixed duration, or flows and a tail.
#[derive(Debug, Clone)]
enum TestTask {
    Fixed(SimDuration),
    Flows(FlowPlan),
}

/// A random graph whose tasks run ahead (fixed and longer than zero) when
/// `ahead` is set, else all in order.
struct TestGraph {
    tasks: Vec<TestTask>,
    successors: Vec<Vec<u32>>,
    ahead: bool,
}

impl EventGraph for TestGraph {
    type Task = u32;

    fn key(&self, task: u32) -> u64 {
        u64::from(task) << 32
    }

    fn task(&self, key: u64) -> u32 {
        (key >> 32) as u32
    }

    fn slot(&self, task: u32) -> usize {
        task as usize
    }

    fn for_each_successor(&self, task: u32, mut visit: impl FnMut(u32, SimDuration)) {
        for &successor in &self.successors[task as usize] {
            visit(successor, SimDuration::ZERO);
        }
    }

    fn duration(&self, task: u32) -> SimDuration {
        match &self.tasks[task as usize] {
            TestTask::Fixed(duration) => *duration,
            TestTask::Flows(_) => unreachable!("a flow task is planned"),
        }
    }

    fn plan_into(&self, task: u32, plan: &mut FlowPlan) -> TaskPlan {
        match &self.tasks[task as usize] {
            TestTask::Fixed(_) => TaskPlan::Fixed,
            TestTask::Flows(planned) => {
                plan.clone_from(planned);
                TaskPlan::Flows
            }
        }
    }

    fn timing(&self, task: u32) -> Timing {
        match &self.tasks[task as usize] {
            TestTask::Fixed(duration) if self.ahead && *duration > SimDuration::ZERO => {
                Timing::Ahead {
                    duration: *duration,
                    flow_events: 0,
                }
            }
            _ => Timing::InOrder,
        }
    }
}

/// A linear congruential generator (Knuth's MMIX constants): the same
/// graphs on every machine.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

/// `count` tasks, each with up to three predecessors among the 40 before
/// it; a third run flows between GPUs of `gpus` (so they share NICs,
/// leaves and NVLink ports), the rest fixed durations on a 100 ns grid
/// (many finishes at equal times), a few of them zero.
fn random_graph(seed: u64, count: u32, gpus: u32) -> (Vec<TestTask>, Vec<Vec<u32>>) {
    let mut random = Lcg(seed);
    let mut successors = vec![Vec::new(); count as usize];
    let tasks = (0..count)
        .map(|task| {
            if task > 0 {
                for _ in 0..=random.below(3) {
                    let back = 1 + random.below(u64::from(task.min(40))) as u32;
                    let predecessor = (task - back) as usize;
                    if !successors[predecessor].contains(&task) {
                        successors[predecessor].push(task);
                    }
                }
            }
            if random.below(3) == 0 {
                let flows = (0..=random.below(3))
                    .map(|_| {
                        let source = random.below(u64::from(gpus)) as u32;
                        let destination = random.below(u64::from(gpus)) as u32;
                        let bytes = (1 + random.below(8)) << 20;
                        (FlowEnds::Gpus(source, destination), bytes)
                    })
                    .collect();
                TestTask::Flows(FlowPlan {
                    flows,
                    tail: SimDuration(100 * random.below(3)),
                    alone: false,
                })
            } else {
                TestTask::Fixed(SimDuration(100 * random.below(40)))
            }
        })
        .collect();
    (tasks, successors)
}

/// Every task's start and end, the events and the links' traffic.
fn run(graph: &TestGraph, fabric: &Fabric) -> (Vec<SimTime>, Vec<SimTime>, u64, LinkUtilization) {
    let count = graph.tasks.len();
    let mut remaining = vec![0u32; count];
    for successors in &graph.successors {
        for &successor in successors {
            remaining[successor as usize] += 1;
        }
    }
    let sources: Vec<u32> = (0..count as u32)
        .filter(|&task| remaining[task as usize] == 0)
        .collect();
    let mut start = vec![SimTime::ZERO; count];
    let mut end = vec![SimTime::ZERO; count];
    let mut flow_loop = FlowLoop::new(fabric);
    flow_loop.run(graph, sources, &mut start, &mut remaining, |task, time| {
        end[task as usize] = time;
    });
    assert_eq!(flow_loop.finished, count, "every task finishes");
    let events = flow_loop.events;
    (
        start,
        end,
        events,
        flow_loop.into_network().link_utilization(),
    )
}

#[test]
fn tasks_run_ahead_keep_every_time_event_and_links_traffic() {
    let topology = topologies::preset("selene").unwrap();
    let profile = profile::Profile::builtin("a100-80gb").unwrap();
    let fabric = Fabric::new(&topology, &profile).unwrap();
    let mut ran_ahead = 0usize;
    for seed in 0..24 {
        let (tasks, successors) = random_graph(seed, 600, 24);
        ran_ahead += tasks
            .iter()
            .filter(|task| matches!(task, TestTask::Fixed(d) if *d > SimDuration::ZERO))
            .count();
        let in_order = TestGraph {
            tasks: tasks.clone(),
            successors: successors.clone(),
            ahead: false,
        };
        let ahead = TestGraph {
            tasks,
            successors,
            ahead: true,
        };
        let expected = run(&in_order, &fabric);
        let got = run(&ahead, &fabric);
        assert_eq!(got.0, expected.0, "starts, seed {seed}");
        assert_eq!(got.1, expected.1, "ends, seed {seed}");
        assert_eq!(got.2, expected.2, "events, seed {seed}");
        assert_eq!(got.3, expected.3, "traffic, seed {seed}");
    }
    // Most fixed tasks ran ahead (the graphs test what they claim to).
    assert!(ran_ahead > 24 * 300, "{ran_ahead} tasks ran ahead");
}
