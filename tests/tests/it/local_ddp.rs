//! Megatron-LM's local DDP kernels around the data-parallel all-reduce
//! (`kernels.local_ddp_gradient_kernels` of a stack): the 2021 code flattens
//! the fp16 gradients into one buffer, divides it by d, all-reduces it and
//! copies every gradient back; the 2022 code divides its contiguous buffer in
//! place. Both run on every rank after the last backward, also at d = 1;
//! PyTorch's and Megatron-Core's DDP, the distributed optimizer and an
//! overlapped reduction run none.

use sim::scenario::{LocalDdpKernels, ScenarioFile};
use timeline::{TaskKind, TaskRecord};

fn simulate(stack: &str, dp: u32, edit: impl FnOnce(&mut ScenarioFile)) -> sim::SimulationReport {
    let mut file = ScenarioFile {
        model: Some("gpt2-1b".into()),
        topology: Some("selene".into()),
        stack: Some(stack.into()),
        tp: Some(2),
        pp: Some(2),
        dp: Some(dp),
        global_batch: Some(8 * dp),
        ..ScenarioFile::tiny_example()
    };
    edit(&mut file);
    let scenario = file.resolve().expect("valid scenario");
    sim::simulate(&scenario).expect("simulates")
}

fn of_kind(report: &sim::SimulationReport, kind: TaskKind) -> Vec<TaskRecord> {
    report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind)
        .cloned()
        .collect()
}

/// fp16 main gradients (unfused accumulation) of one rank of `stage`.
fn gradient_bytes(stage: u32) -> u64 {
    let scenario = ScenarioFile {
        model: Some("gpt2-1b".into()),
        topology: Some("selene".into()),
        tp: Some(2),
        pp: Some(2),
        dp: Some(2),
        global_batch: Some(16),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap();
    models::sharding::parameters_on_rank(&scenario.model, scenario.layout.sharding(), stage) * 2
}

#[test]
fn the_2021_stack_flattens_divides_and_copies_back_around_the_all_reduce() {
    let report = simulate("megatron-2021", 2, |_| {});
    let copies = of_kind(&report, TaskKind::GradientCopy);
    // Per rank (t·p·d = 8): the flatten and divide before, the copy back after.
    assert_eq!(copies.len(), 16);
    let all_reduces = of_kind(&report, TaskKind::DataParallelAllReduce);
    assert_eq!(all_reduces.len(), 4, "one per (stage, tensor index)");
    for stage in 0..2 {
        let bytes = gradient_bytes(stage);
        let (before, after): (Vec<&TaskRecord>, Vec<&TaskRecord>) = copies
            .iter()
            .filter(|t| t.stage == stage)
            .partition(|t| t.bytes == 2 * 2 * bytes);
        // Two kernels each reading and writing the gradients; one after.
        assert_eq!(before.len(), 4, "stage {stage}");
        assert_eq!(after.len(), 4, "stage {stage}");
        assert!(after.iter().all(|t| t.bytes == 2 * bytes));
        let reduce_start = all_reduces
            .iter()
            .filter(|t| t.stage == stage)
            .map(|t| t.start_ns)
            .min()
            .unwrap();
        let reduce_end = all_reduces
            .iter()
            .filter(|t| t.stage == stage)
            .map(|t| t.end_ns)
            .max()
            .unwrap();
        assert!(before.iter().all(|t| t.end_ns <= reduce_start));
        assert!(after.iter().all(|t| t.start_ns >= reduce_end));
        // Twice the kernels over the same bytes: twice the time, to the
        // nanosecond each rounds up.
        let (b, a) = (before[0].duration_ns(), after[0].duration_ns());
        assert!(a > 0 && (b == 2 * a || b + 1 == 2 * a), "{b} vs {a}");
    }
    // The optimizer steps and the embedding all-reduce wait for the copy back.
    let last_copy_end = copies.iter().map(|t| t.end_ns).max().unwrap();
    let first_optimizer = of_kind(&report, TaskKind::OptimizerStep)
        .iter()
        .map(|t| t.start_ns)
        .min()
        .unwrap();
    let first_after_end = copies
        .iter()
        .filter(|t| t.bytes == 2 * gradient_bytes(t.stage))
        .map(|t| t.end_ns)
        .min()
        .unwrap();
    assert!(first_optimizer >= first_after_end);
    for embedding in of_kind(&report, TaskKind::EmbeddingAllReduce) {
        assert!(embedding.start_ns >= first_after_end);
    }
    assert!(last_copy_end <= report.timeline().makespan_ns());
}

#[test]
fn the_2022_stack_divides_its_contiguous_buffer_and_both_run_at_one_replica() {
    let report = simulate("megatron-2022", 2, |_| {});
    let copies = of_kind(&report, TaskKind::GradientCopy);
    assert_eq!(copies.len(), 8, "one divide per rank");
    assert!(copies
        .iter()
        .all(|t| t.bytes == 2 * gradient_bytes(t.stage)));
    // d = 1: no all-reduce, the kernels still run (train_step calls
    // allreduce_gradients under --DDP-impl local whatever d is).
    let single = simulate("megatron-2021", 1, |_| {});
    assert!(of_kind(&single, TaskKind::DataParallelAllReduce).is_empty());
    assert_eq!(of_kind(&single, TaskKind::GradientCopy).len(), 8);
    assert_eq!(
        of_kind(
            &simulate("megatron-2022", 1, |_| {}),
            TaskKind::GradientCopy
        )
        .len(),
        4
    );
}

#[test]
fn the_distributed_optimizer_divides_its_contiguous_buffer_before_the_reduce_scatter() {
    // megatron/optimizer/distrib_optimizer.py at 3f4e71d, reduce_model_grads.
    let report = simulate("megatron-2021", 2, |f| {
        f.options.distributed_optimizer = Some(true)
    });
    let copies = of_kind(&report, TaskKind::GradientCopy);
    assert_eq!(copies.len(), 8, "one divide per rank");
    assert!(copies
        .iter()
        .all(|t| t.bytes == 2 * gradient_bytes(t.stage)));
    let first_scatter = of_kind(&report, TaskKind::DataParallelReduceScatter)
        .iter()
        .map(|t| t.start_ns)
        .min()
        .unwrap();
    let first_divide_end = copies.iter().map(|t| t.end_ns).min().unwrap();
    assert!(first_scatter >= first_divide_end);
}

#[test]
fn other_data_parallel_implementations_run_none() {
    let none = |report: &sim::SimulationReport| of_kind(report, TaskKind::GradientCopy).is_empty();
    assert!(none(&simulate("megatron-core-2024", 2, |_| {})));
    assert!(none(&simulate("deepspeed-pipeline", 2, |_| {})));
    assert!(none(&simulate("megatron-2021", 2, |f| {
        f.options.overlap_grad_reduce = Some(true)
    })));
}

#[test]
fn the_stacks_say_which_kernels_and_a_bad_value_is_refused() {
    use sim::scenario::Stack;
    let kernels = |name: &str| Stack::builtin(name).unwrap().local_ddp;
    assert_eq!(
        kernels("megatron-2021"),
        Some(LocalDdpKernels::FlattenDivideCopyBack)
    );
    assert_eq!(kernels("megatron-2022"), Some(LocalDdpKernels::Divide));
    assert_eq!(kernels("megatron-core-2024"), None);
    let text = include_str!("../../../scenario/stacks/megatron-2022.json")
        .replace("\"value\": \"divide\"", "\"value\": \"contiguous\"");
    let error = Stack::from_json_str(&text, "test").unwrap_err().to_string();
    assert!(
        error.contains("kernels.local_ddp_gradient_kernels"),
        "{error}"
    );
}
