//! Every kernel's role agrees with where it runs: the forward's kernels are
//! `Forward`, no backward kernel is, and the weight-gradient GEMMs are
//! exactly the kernels whose role says so, for every model preset under the
//! stacks that build different kernels (unfused fp16 accumulation and
//! attention in 2021, fused in 2024, FP8 on an H100).

use crate::cost::pass_steps;
use crate::scenario::{Precision, ScenarioFile, TrainingOptionsFile};
use crate::task_graph::ComputePass;
use models::ops::{KernelRole, Step};

/// Each preset resolved on one rank under `stack` in `precision` on
/// `topology`, but those the simulator refuses as not built (FP8 with latent
/// attention).
pub(crate) fn every_preset(
    stack: &str,
    topology: &str,
    precision: Precision,
) -> Vec<(String, crate::scenario::Scenario)> {
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
                recompute: Some(crate::scenario::Recompute::None),
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
