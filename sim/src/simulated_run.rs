//! What a simulation keeps of its engine run: the graph's task columns
//! (edges freed), the works' costs and every task's start and end, which
//! the metrics read as [`timeline::metrics::Spans`] and the Timeline is a
//! view of ([`crate::simulate::SimulationReport::timeline`]).

use crate::cost::WorkCost;
use taskgraph::task_graph::TaskGraph;
use timeline::metrics::{Span, Spans};
use timeline::time::SimTime;
use timeline::TimelineHeader;

/// The engine's result with what it takes to describe every task: the
/// graph's task columns (its edges freed), the costs, start and end times.
#[derive(Debug, Clone)]
pub(crate) struct SimulatedRun {
    pub header: TimelineHeader,
    pub graph: TaskGraph,
    pub costs: Vec<WorkCost>,
    pub start: Vec<SimTime>,
    pub end: Vec<SimTime>,
    /// Records carry their iteration (several iterations were simulated).
    pub iterations: bool,
}

impl SimulatedRun {
    /// What `scenario`'s run of `graph` (its works' `costs`) keeps of
    /// the engine's `outcome`.
    pub fn of(
        scenario: &scenario::Scenario,
        graph: TaskGraph,
        costs: Vec<WorkCost>,
        outcome: engine::TaskTimes,
    ) -> SimulatedRun {
        SimulatedRun {
            header: crate::simulate::timeline_header(
                scenario,
                &graph,
                timeline::Producer::Sim,
                None,
            ),
            graph,
            costs,
            start: outcome.start,
            end: outcome.end,
            iterations: scenario.iterations > 1,
        }
    }

    /// The last task's end.
    pub fn makespan_ns(&self) -> u64 {
        self.end.iter().map(|t| t.as_nanos()).max().unwrap_or(0)
    }
}

impl Spans for SimulatedRun {
    fn header(&self) -> &TimelineHeader {
        &self.header
    }

    fn len(&self) -> usize {
        self.start.len()
    }

    #[inline]
    fn span(&self, index: usize) -> Span {
        let task = self.graph.task(taskgraph::ids::TaskId(index as u32));
        Span {
            kind: task.kind,
            stream: task.stream,
            group: task.group.0,
            start_ns: self.start[index].as_nanos(),
            end_ns: self.end[index].as_nanos(),
            flops: self.costs[task.work.index()].flops,
            iteration: if self.iterations {
                task.iteration as u32
            } else {
                0
            },
        }
    }

    #[inline]
    fn group(&self, index: usize) -> u32 {
        self.graph.group_of(taskgraph::ids::TaskId(index as u32)).0
    }

    #[inline]
    fn flops(&self, index: usize) -> (timeline::TaskKind, u32, f64) {
        let id = taskgraph::ids::TaskId(index as u32);
        (
            self.graph.kind_of(id),
            self.graph.group_of(id).0,
            self.costs[self.graph.work_of(id).index()].flops,
        )
    }

    #[inline]
    fn iteration_end(&self, index: usize) -> (u32, u64) {
        let iteration = if self.iterations {
            self.graph
                .iteration_of(taskgraph::ids::TaskId(index as u32)) as u32
        } else {
            0
        };
        (iteration, self.end[index].as_nanos())
    }

    #[inline]
    fn interval(&self, index: usize) -> (timeline::TaskKind, timeline::StreamKind, u64, u64) {
        let id = taskgraph::ids::TaskId(index as u32);
        (
            self.graph.kind_of(id),
            self.graph.stream_of(id),
            self.start[index].as_nanos(),
            self.end[index].as_nanos(),
        )
    }
}
