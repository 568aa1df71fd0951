//! Every kernel's role agrees with where it runs: the forward's kernels are
//! `Forward`, no backward kernel is, and the weight-gradient GEMMs are
//! exactly the kernels whose role says so, for every model preset under the
//! stacks that build different kernels (unfused fp16 accumulation and
//! attention in 2021, fused in 2024, FP8 on an H100). Every kernel of every
//! pass the simulator costs carries the memory-bound class its name lists
//! (`MemoryKernelClass::of_kernel`), under the same stacks.

use crate::cost::pass_steps;
use models::memory_class::MemoryKernelClass;
use models::ops::{KernelRole, Step};
use scenario::{Precision, ScenarioFile, ScheduleKind, TrainingOptionsFile};
use taskgraph::task_graph::ComputePass;

/// Each preset resolved on one rank under `stack` in `precision` on
/// `topology`, but those the simulator refuses as not built (FP8 with latent
/// attention).
pub(crate) fn every_preset(
    stack: &str,
    topology: &str,
    precision: Precision,
) -> Vec<(String, scenario::Scenario)> {
    models::preset_names()
        .into_iter()
        .filter_map(|name| {
            let scenario = ScenarioFile {
                model: Some(name.clone().into()),
                topology: Some(topology.into()),
                stack: Some(stack.into()),
                tp: Some(1),
                pp: Some(1),
                dp: Some(1),
                microbatch_size: Some(1),
                global_batch: Some(1),
                recompute: Some(scenario::Recompute::None),
                options: TrainingOptionsFile {
                    precision: Some(precision),
                    ..Default::default()
                },
                ..ScenarioFile::embedded_default()
            }
            .resolve();
            match scenario {
                Ok(scenario) => Some((name, scenario)),
                Err(e) if e.to_string().contains("is not simulated yet") => None,
                Err(e) => panic!("{name} under {stack}: {e}"),
            }
        })
        .collect()
}

fn kernels(steps: &[Step]) -> impl Iterator<Item = &models::ops::Kernel> {
    steps.iter().filter_map(|step| match step {
        Step::Kernel(kernel) => Some(kernel),
        _ => None,
    })
}

#[test]
fn roles_agree_with_the_pass_each_kernel_runs_in() {
    let cases = [
        ("megatron-2021", "selene", Precision::Fp16),
        ("megatron-core-2024", "selene", Precision::Bf16),
        ("megatron-core-2024", "dgx-h100-superpod", Precision::Fp8),
    ];
    for (stack, topology, precision) in cases {
        let presets = every_preset(stack, topology, precision);
        // Only DeepSeek-V3 under FP8 is left out.
        assert!(presets.len() + 1 >= models::preset_names().len(), "{stack}");
        for (name, scenario) in presets {
            let of = |pass| pass_steps(&scenario, pass, 1, true, true);
            for kernel in kernels(&of(ComputePass::Forward)) {
                assert_eq!(
                    kernel.role,
                    KernelRole::Forward,
                    "{name} {stack}: {}",
                    kernel.name
                );
            }
            let backward = of(ComputePass::Backward);
            assert!(kernels(&backward).count() > 0);
            for kernel in kernels(&backward) {
                assert_ne!(
                    kernel.role,
                    KernelRole::Forward,
                    "{name} {stack}: {}",
                    kernel.name
                );
                assert_eq!(
                    kernel.role == KernelRole::WeightGradientGemm,
                    kernel.name.ends_with(".wgrad"),
                    "{name} {stack}: {}",
                    kernel.name
                );
                if kernel.name.ends_with(".grad_accumulate") {
                    assert!(
                        matches!(
                            kernel.role,
                            KernelRole::WeightGradientAccumulation
                                | KernelRole::GradientAccumulation
                        ),
                        "{name} {stack}: {}",
                        kernel.name
                    );
                }
            }
        }
    }
}

/// Under every stack of [`roles_agree_with_the_pass_each_kernel_runs_in`],
/// with and without sequence parallelism, every kernel of every pass (with
/// the embedding and the head; the recompute passes, selective and full) is
/// marked with the class [`MemoryKernelClass::of_kernel`] lists for its
/// name: the marks `models` sets survive the simulator's assembly of a pass.
#[test]
fn every_costed_kernel_carries_the_memory_class_its_name_lists() {
    let cases = [
        ("megatron-2021", "selene", Precision::Fp16),
        ("megatron-core-2024", "selene", Precision::Bf16),
        ("megatron-core-2024", "dgx-h100-superpod", Precision::Fp8),
    ];
    let passes = [
        ComputePass::Forward,
        ComputePass::Backward,
        ComputePass::Recompute,
        ComputePass::InputGradient,
        ComputePass::WeightGradient,
    ];
    let mut marked = 0;
    for (stack, topology, precision) in cases {
        for (name, mut scenario) in every_preset(stack, topology, precision) {
            for sequence_parallel in [false, true] {
                for recompute in [scenario::Recompute::Selective, scenario::Recompute::Full] {
                    scenario.options.sequence_parallel = sequence_parallel;
                    scenario.recompute = recompute;
                    for pass in passes {
                        for kernel in kernels(&pass_steps(&scenario, pass, 1, true, true)) {
                            assert_eq!(
                                kernel.memory_class,
                                MemoryKernelClass::of_kernel(kernel.name),
                                "{name} {stack} {pass:?}: {}",
                                kernel.name
                            );
                            marked += usize::from(kernel.memory_class.is_some());
                        }
                    }
                }
            }
        }
    }
    assert!(marked > 1000, "{marked}");
}

/// The weight-gradient GEMM that produces `weight`'s gradient, by the
/// layers' naming (`qkv.weight` by `qkv_gemm.wgrad`, the untied output layer
/// by the logits GEMM), or `None` for a parameter no GEMM produces.
fn weight_gradient_gemm_of(weight: &str, backward: &[Step]) -> Option<&'static str> {
    let layer = weight.strip_suffix(".weight")?;
    let gemm = match layer {
        "qkv" => "qkv_gemm",
        "output_layer" => "logits_gemm",
        other => other,
    };
    kernels(backward)
        .map(|kernel| kernel.name)
        .find(|name| name.strip_suffix(".wgrad") == Some(gemm))
}

#[test]
fn each_accumulation_runs_in_the_pass_of_the_gemm_that_produced_its_gradient() {
    // The split (`split_backward::split`) reads only the backward's kernels,
    // so it is the same for every split schedule: checked below on the
    // GPT-3 175B under every split schedule, then for every
    // preset once. Unfused accumulation needs the 2021 stack.
    let split_schedules: Vec<ScheduleKind> = ScheduleKind::ALL
        .into_iter()
        .filter(|s| s.splits_backward())
        .collect();
    assert_eq!(split_schedules.len(), 5);
    for schedule in &split_schedules {
        let scenario = ScenarioFile {
            model: Some("gpt3-175b".into()),
            tp: Some(1),
            pp: Some(2),
            dp: Some(1),
            chunks: Some(if schedule.uses_chunks() { 2 } else { 1 }),
            microbatch_size: Some(1),
            global_batch: Some(8),
            schedule: Some(*schedule),
            stack: Some("megatron-2021".into()),
            recompute: Some(scenario::Recompute::None),
            ..ScenarioFile::embedded_default()
        }
        .resolve()
        .unwrap_or_else(|e| panic!("{schedule:?}: {e}"));
        let reference = every_preset("megatron-2021", "selene", Precision::Fp16)
            .into_iter()
            .find(|(name, _)| name == "gpt3-175b")
            .unwrap()
            .1;
        for pass in [ComputePass::InputGradient, ComputePass::WeightGradient] {
            assert_eq!(
                pass_steps(&scenario, pass, 2, true, true),
                pass_steps(&reference, pass, 2, true, true),
                "{schedule:?} {pass:?}"
            );
        }
    }
    let mut checked = 0;
    for (name, scenario) in every_preset("megatron-2021", "selene", Precision::Fp16) {
        let backward = pass_steps(&scenario, ComputePass::Backward, 1, true, true);
        let weight = pass_steps(&scenario, ComputePass::WeightGradient, 1, true, true);
        let in_weight_pass = |kernel: &str| kernels(&weight).any(|k| k.name == kernel);
        for accumulation in kernels(&backward).filter(|k| k.name.ends_with(".grad_accumulate")) {
            let parameter = accumulation.name.strip_suffix(".grad_accumulate").unwrap();
            let expected = match weight_gradient_gemm_of(parameter, &backward) {
                Some(gemm) => in_weight_pass(gemm),
                None => false,
            };
            assert_eq!(
                in_weight_pass(accumulation.name),
                expected,
                "{name}: {} (its GEMM in W: {expected})",
                accumulation.name
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}
