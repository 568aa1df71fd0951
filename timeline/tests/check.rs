//! `Timeline::check` refuses what consumers cannot measure, and
//! `iteration_ends_ns` never allocates by an input number.

use timeline::Timeline;

fn valid() -> Timeline {
    serde_json::from_str(include_str!("../../cli/tests/reliability/t.json")).unwrap()
}

fn problem(timeline: &Timeline) -> String {
    timeline.check("x.json").unwrap_err().to_string()
}

#[test]
fn the_valid_timeline_passes() {
    valid().check("t.json").unwrap();
}

#[test]
fn iterations_out_of_order_are_refused() {
    let mut timeline = valid();
    // Iterations 0 and 1 with iteration 1 ending before iteration 0.
    timeline.tasks[0].iteration = Some(1);
    assert!(
        problem(&timeline).contains("iteration 1 ends at 633974 ns, not after iteration 0"),
        "{}",
        problem(&timeline)
    );
    // A huge iteration number costs one entry, not 2^32.
    timeline.tasks[0].iteration = Some(u32::MAX);
    assert_eq!(timeline.iteration_ends_ns().len(), 2);
    assert!(problem(&timeline).contains("no iteration 1"));
}

#[test]
fn layouts_groups_and_tasks_are_checked() {
    let mut timeline = valid();
    timeline.header.layout.data_parallel = 0;
    assert!(problem(&timeline).contains("header.layout.data_parallel is 0"));
    let mut timeline = valid();
    timeline.header.groups.push(Vec::new());
    assert!(problem(&timeline).contains("header.groups[1] is empty"));
    let mut timeline = valid();
    timeline.tasks[1].group = 7;
    assert!(problem(&timeline).contains("task 1 refers to group 7 of 1"));
    let mut timeline = valid();
    timeline.tasks[2].end_ns = 0;
    assert!(problem(&timeline).contains("task 2 ends before it starts"));
    let mut timeline = valid();
    timeline.header.layout.tensor_parallel = u32::MAX;
    timeline.header.layout.pipeline_parallel = u32::MAX;
    timeline.header.layout.data_parallel = u32::MAX;
    assert!(problem(&timeline).contains("= 79228162458924105385300197375"));
}

#[test]
fn the_context_parallel_degree_defaults_to_one_and_counts_in_the_gpus() {
    let timeline = valid();
    assert_eq!(timeline.header.layout.context_parallel, 1);
    // Written only when above 1, so older readers' files stay as they were.
    let text = serde_json::to_string(&timeline.header.layout).unwrap();
    assert!(!text.contains("context_parallel"), "{text}");
    let mut timeline = valid();
    timeline.header.layout.context_parallel = 0;
    assert!(problem(&timeline).contains("header.layout.context_parallel is 0"));
    let mut timeline = valid();
    timeline.header.layout.context_parallel = 2;
    assert!(
        problem(&timeline).contains("tensor × context × pipeline × data parallel degrees"),
        "{}",
        problem(&timeline)
    );
    timeline.header.n_gpus *= 2;
    timeline.check("x.json").unwrap();
    assert_eq!(
        timeline.header.layout.ranks_per_stage(),
        2 * timeline.header.layout.tensor_parallel * timeline.header.layout.data_parallel
    );
}

#[test]
fn compare_refuses_an_unchecked_timeline() {
    let mut empty = valid();
    empty.tasks.clear();
    let error = timeline::compare::compare(&valid(), &empty, 3).unwrap_err();
    assert!(
        error.to_string().contains("other timeline: no tasks"),
        "{error}"
    );
    assert!(timeline::metrics::checked(&empty, "e.json", 1.0).is_err());
}
