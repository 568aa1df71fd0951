//! `compare` on simulated timelines: equal runs agree, a slowed task is found.

#[test]
fn identical_timelines_compare_equal_and_a_slowed_task_is_found() {
    let scenario = sim::scenario::ScenarioFile::tiny_example()
        .resolve()
        .unwrap();
    let timeline = sim::simulate(&scenario).unwrap().into_timeline();
    let same = timeline::compare::compare(&timeline, &timeline, 5).unwrap();
    assert_eq!(same.iteration_error_percent, 0.0);
    assert!(same.worst_tasks.is_empty());

    // Stretch the last task by 10% of the makespan: iteration error and worst task show it.
    let mut slower = timeline.clone();
    let makespan = slower.makespan_ns();
    let last = slower
        .tasks
        .iter_mut()
        .max_by_key(|t| (t.end_ns, t.id))
        .unwrap();
    last.end_ns += makespan / 10;
    let id = last.id;
    let result = timeline::compare::compare(&timeline, &slower, 3).unwrap();
    assert!(
        (result.iteration_error_percent - 10.0).abs() < 0.01,
        "{}",
        result.iteration_error_percent
    );
    assert_eq!(result.worst_tasks[0].id, id);

    let mut fewer = timeline.clone();
    fewer.tasks.pop();
    assert!(timeline::compare::compare(&timeline, &fewer, 3)
        .unwrap()
        .unmatched
        .is_some());
}
