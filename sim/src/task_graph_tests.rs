//! The task graph with the rest of the simulator: a cycle is reported with
//! the tasks on it and the engine refuses to run it; lowered graphs are
//! acyclic.

use taskgraph::ids::{Rank, TaskId};
use taskgraph::task::{StreamKind, Task, TaskKind};
use taskgraph::task_graph::{Dependency, TaskGraphBuilder, Work};

fn task(builder: &mut TaskGraphBuilder, microbatch: u32) -> TaskId {
    let group = builder.group(&[Rank(0)]);
    let work = builder.work(Work::OptimizerStep { params: 1 });
    builder.add_task(Task {
        kind: TaskKind::Forward,
        stream: StreamKind::Compute,
        chunk: 0,
        stage: 0,
        microbatch,
        iteration: 0,
        group,
        work,
    })
}

#[test]
fn a_cycle_is_reported_with_the_tasks_on_it_and_the_engine_refuses_to_run_it() {
    let mut builder = TaskGraphBuilder::default();
    let (a, b, c, d) = (
        task(&mut builder, 0),
        task(&mut builder, 1),
        task(&mut builder, 2),
        task(&mut builder, 3),
    );
    builder.add_edge(a, b, Dependency::Data);
    builder.add_edge(b, c, Dependency::Data);
    builder.add_edge(c, b, Dependency::ProgramOrder);
    builder.add_edge(c, d, Dependency::Data);
    let graph = builder.finish(1);
    let error = graph.check_acyclic().unwrap_err();
    assert_eq!(error.tasks.len(), 2, "{error}");
    assert!(
        error.to_string().contains("forward s0 mb1")
            && error.to_string().contains("forward s0 mb2"),
        "{error}"
    );
    let deadlock = engine::run(&graph, |_| timeline::time::SimDuration(1)).unwrap_err();
    assert_eq!(deadlock.stuck, 3, "{deadlock}");
}

#[test]
fn lowered_graphs_are_acyclic() {
    let scenario = scenario::ScenarioFile::tiny_example().resolve().unwrap();
    let (_, graph) = crate::build_graph(&scenario);
    graph.check_acyclic().unwrap();
}
