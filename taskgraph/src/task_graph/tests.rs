//! Task graph tests: two-pass edges, the filling pass's count (a cycle's
//! report with the engine's refusal, and lowered graphs being acyclic:
//! `sim/src/task_graph_tests.rs`).
use super::*;
use crate::task::{StreamKind, TaskKind};

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
fn edges_written_in_two_passes_make_the_rows_an_edge_list_makes() {
    let edges = [(0, 3), (1, 2), (0, 1), (2, 3), (0, 3), (1, 3), (0, 2)];
    let build = |two_passes: bool| {
        let mut builder = TaskGraphBuilder::default();
        for microbatch in 0..4 {
            task(&mut builder, microbatch);
        }
        let add = |builder: &mut TaskGraphBuilder| {
            for (index, &(from, to)) in edges.iter().enumerate() {
                let why = if index % 2 == 0 {
                    Dependency::Data
                } else {
                    Dependency::ProgramOrder
                };
                builder.add_edge(TaskId(from), TaskId(to), why);
            }
        };
        if two_passes {
            builder.count_edges();
            add(&mut builder);
            builder.fill_edges();
        }
        add(&mut builder);
        builder.finish(1)
    };
    let (listed, filled) = (build(false), build(true));
    let all = |graph: &TaskGraph| graph.edges().collect::<Vec<_>>();
    assert_eq!(all(&listed), all(&filled));
    // Most recently added first: task 0's edges were added to 3, 1, 3, 2.
    let row: Vec<u32> = filled.successors(TaskId(0)).map(|t| t.0).collect();
    assert_eq!(row, [2, 3, 1, 3]);
    assert_eq!(filled.edge_count(), edges.len());
}

#[test]
fn a_filling_pass_that_adds_other_edges_than_it_counted_panics() {
    // (extra edge's source, whether the counting pass sees it)
    for (source, counted_only) in [(0, false), (2, false), (2, true)] {
        let outcome = std::panic::catch_unwind(|| {
            let mut builder = TaskGraphBuilder::default();
            for microbatch in 0..4 {
                task(&mut builder, microbatch);
            }
            builder.count_edges();
            builder.add_edge(TaskId(1), TaskId(3), Dependency::Data);
            if counted_only {
                builder.add_edge(TaskId(source), TaskId(3), Dependency::Data);
            }
            builder.fill_edges();
            builder.add_edge(TaskId(1), TaskId(3), Dependency::Data);
            if !counted_only {
                builder.add_edge(TaskId(source), TaskId(3), Dependency::Data);
            }
            builder.finish(1)
        });
        assert!(
            outcome.is_err(),
            "source {source}, counted only {counted_only}"
        );
    }
}
