//! FP8 training (`--precision fp8`, Transformer Engine's delayed-scaling
//! recipe, `models::fp8`): FLOPs unchanged, the linear layers' GEMMs at the
//! FP8 rate on 1-byte inputs, the cast kernels' bytes, the per-iteration
//! weight casts, memory per GPU against bf16 by hand-computed formulas, and
//! the refusals. Every expected number below is a closed form.

use models::fp8::{AMAX_HISTORY_LEN, FP8_LINEAR_LAYERS};
use models::ops::{KernelClass, PassSteps, Step};
use sim::cost::{cost_works, pass_steps, ClosedFormNetwork, KernelCostModel};
use sim::scenario::{Precision, Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::task_graph::{ComputePass, Work};

/// gpt-22b (h = 6144, 48 heads, s = 2048, ffn = 4h) on one DGX H100 node.
fn file(precision: Precision, recompute: Recompute, sequence_parallel: bool) -> ScenarioFile {
    ScenarioFile {
        model: Some("gpt-22b".into()),
        topology: Some("dgx-h100-superpod".into()),
        // The 2021 stack's unfused attention kernels, which these tests read.
        stack: Some("megatron-2021".into()),
        tp: Some(4),
        pp: Some(2),
        dp: Some(1),
        chunks: Some(1),
        microbatch_size: Some(2),
        global_batch: Some(8),
        recompute: Some(recompute),
        options: TrainingOptionsFile {
            precision: Some(precision),
            sequence_parallel: Some(sequence_parallel),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::tiny_example()
    }
}

fn scenario(precision: Precision) -> Scenario {
    file(precision, Recompute::None, false).resolve().unwrap()
}

fn kernel<'a>(steps: &'a [Step], name: &str) -> &'a models::ops::Kernel {
    steps
        .iter()
        .find_map(|step| match step {
            Step::Kernel(k) if k.name == name => Some(k),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no kernel {name}"))
}

const H: u64 = 6144;
const S: u64 = 2048;
const B: u64 = 2;
const T: u64 = 4;
const FFN: u64 = 4 * H;

#[test]
fn flops_are_unchanged_and_only_linear_gemms_are_fp8() {
    let (bf16, fp8) = (scenario(Precision::Bf16), scenario(Precision::Fp8));
    for pass in [ComputePass::Forward, ComputePass::Backward] {
        for (embedding, head) in [(false, false), (true, true)] {
            let a = pass_steps(&bf16, pass, 3, embedding, head);
            let b = pass_steps(&fp8, pass, 3, embedding, head);
            assert_eq!(PassSteps::flops(&a), PassSteps::flops(&b), "{pass:?}");
        }
        let steps = pass_steps(&fp8, pass, 1, true, true);
        for step in &steps {
            if let Step::Kernel(k) = step {
                let fp8_gemm = matches!(k.class, KernelClass::Fp8Gemm { .. });
                assert_eq!(fp8_gemm, models::fp8::is_fp8_gemm(k.name), "{}", k.name);
                if let KernelClass::Fp8Gemm { layout, .. } = k.class {
                    assert_eq!(layout, models::ops::GemmLayout::Tn, "{}", k.name);
                }
            }
        }
        // 4 linear layers: forward 4 FP8 GEMMs, backward 8.
        let fp8_gemms = steps
            .iter()
            .filter(
                |s| matches!(s, Step::Kernel(k) if matches!(k.class, KernelClass::Fp8Gemm { .. })),
            )
            .count();
        assert_eq!(fp8_gemms, if pass == ComputePass::Forward { 4 } else { 8 });
    }
}

#[test]
fn cast_kernels_and_fp8_gemms_move_their_closed_form_bytes() {
    let fp8 = scenario(Precision::Fp8);
    let tokens = B * S;
    let forward = pass_steps(&fp8, ComputePass::Forward, 1, false, false);
    let backward = pass_steps(&fp8, ComputePass::Backward, 1, false, false);
    // Cast-transpose: read bf16 (2 B), write FP8 and its transpose (1 + 1 B).
    let cast = |elements: u64| (4 * elements) as f64;
    assert_eq!(
        kernel(&forward, "qkv_gemm.cast_transpose").bytes,
        cast(tokens * H)
    );
    assert_eq!(
        kernel(&forward, "output_projection.cast_transpose").bytes,
        cast(tokens * H / T)
    );
    assert_eq!(
        kernel(&forward, "mlp_fc1.cast_transpose").bytes,
        cast(tokens * H)
    );
    assert_eq!(
        kernel(&forward, "mlp_fc2.cast_transpose").bytes,
        cast(tokens * FFN / T)
    );
    // Backward: each output gradient before its data-gradient GEMM.
    assert_eq!(
        kernel(&backward, "qkv_gemm.dgrad.cast_transpose").bytes,
        cast(tokens * 3 * H / T)
    );
    assert_eq!(
        kernel(&backward, "output_projection.dgrad.cast_transpose").bytes,
        cast(tokens * H)
    );
    assert_eq!(
        kernel(&backward, "mlp_fc1.dgrad.cast_transpose").bytes,
        cast(tokens * FFN / T)
    );
    assert_eq!(
        kernel(&backward, "mlp_fc2.dgrad.cast_transpose").bytes,
        cast(tokens * H)
    );
    // FP8 GEMM: A and B at 1 B, C in bf16. QKV forward: [tokens, h] x [h, 3h/t].
    let qkv = kernel(&forward, "qkv_gemm");
    let n = 3 * H / T;
    assert_eq!(qkv.bytes, (tokens * H + H * n + 2 * tokens * n) as f64);
    // The amax/scale update after each pass: histories read and written,
    // scales written, for 4 modules × 3 forward (2 backward) tensors per layer.
    let per_tensor = (2 * AMAX_HISTORY_LEN + 2) * 4;
    assert_eq!(
        kernel(&forward, "fp8.amax_scale_update").bytes,
        (4 * 3 * per_tensor) as f64
    );
    let three = pass_steps(&fp8, ComputePass::Backward, 3, false, false);
    assert_eq!(
        kernel(&three, "fp8.amax_scale_update.bwd").bytes,
        (3 * 4 * 2 * per_tensor) as f64
    );
    // A recompute reuses the forward's scales.
    let full = file(Precision::Fp8, Recompute::Full, false)
        .resolve()
        .unwrap();
    assert!(pass_steps(&full, ComputePass::Recompute, 2, false, false)
        .iter()
        .all(|s| !matches!(s, Step::Kernel(k) if k.name.starts_with("fp8."))));
}

#[test]
fn fp8_gemms_run_at_the_fp8_peak_with_the_bf16_efficiency_model_times_the_fp8_ratio() {
    let fp8 = scenario(Precision::Fp8);
    let gpu = &fp8.topology.gpu;
    assert_eq!(gpu.peak.fp8_flops_per_s, Some(1979e12));
    let model = KernelCostModel::new(gpu, &fp8.profile).with_precision(Precision::Fp8);
    let forward = pass_steps(&fp8, ComputePass::Forward, 1, false, false);
    let fc1 = kernel(&forward, "mlp_fc1");
    let KernelClass::Fp8Gemm { shape, .. } = fc1.class else {
        panic!("mlp_fc1 is not FP8")
    };
    // The H100 profile's FP8 GEMMs run at 0.95 of the bf16 efficiency (TE's
    // published 1.90x over BF16 on Hopper).
    assert_eq!(fp8.profile.gemm.fp8_relative_efficiency(), 0.95);
    // Priced by the tile model at the FP8 peak times that ratio, on FP8
    // operand bytes: compute-bound, so nearly 0.95 x 1979/989 times the
    // bf16 GEMM's speed.
    let fp8_s = sim::cost::gemm_estimate(Precision::Fp8, &shape, gpu, &fp8.profile)
        .unwrap()
        .seconds;
    let bf16_s = sim::cost::gemm_estimate(Precision::Bf16, &shape, gpu, &fp8.profile)
        .unwrap()
        .seconds;
    let speedup = bf16_s / fp8_s;
    assert!(
        speedup > 1.5 && speedup < 0.95 * 1979.0 / 989.0,
        "{speedup}"
    );
    let overhead_s = fp8.profile.gemm.kernel_overhead_ns.value * 1e-9;
    assert_eq!(model.kernel_seconds(fc1), fp8_s + overhead_s);
    // The attention core stays bf16: the same time as in a bf16 run.
    let bf16 = scenario(Precision::Bf16);
    let bf16_model =
        KernelCostModel::new(&bf16.topology.gpu, &bf16.profile).with_precision(Precision::Bf16);
    let plain = pass_steps(&bf16, ComputePass::Forward, 1, false, false);
    assert_eq!(
        model.kernel_seconds(kernel(&forward, "attention_scores")),
        bf16_model.kernel_seconds(kernel(&plain, "attention_scores"))
    );
}

#[test]
fn each_chunks_first_forward_casts_its_weights_once_per_iteration() {
    let fp8 = scenario(Precision::Fp8);
    let network = ClosedFormNetwork::for_scenario(&fp8);
    let work = |fp8_weight_cast| Work::Compute {
        pass: ComputePass::Forward,
        layers: 22,
        dense_layers: 0,
        first_layer: 0,
        embedding: false,
        head: false,
        fp8_weight_cast,
        segment: sim::task_graph::WHOLE_PASS,
    };
    let costs = cost_works(&fp8, &[work(false), work(true)], &network);
    // 22 layers × (QKV 3h² + proj h² + FC1 4h² + FC2 4h²)/t weights × 4 B.
    let weights_per_layer = 12 * H * H / T;
    assert_eq!(costs[1].bytes - costs[0].bytes, 22 * 4 * weights_per_layer);
    assert_eq!(costs[1].flops, costs[0].flops);
    assert!(costs[1].duration > costs[0].duration);
    // In the task graph: exactly one casting forward per stage (m = 4
    // microbatches, 2 stages, one tensor group each).
    let (_, graph) = sim::build_graph(&fp8);
    let casting = graph
        .works()
        .iter()
        .filter(|w| {
            matches!(
                w,
                Work::Compute {
                    fp8_weight_cast: true,
                    ..
                }
            )
        })
        .count();
    assert_eq!(
        casting, 2,
        "one work per stage (their layer counts differ only by the ends)"
    );
    let bf16 = scenario(Precision::Bf16);
    let (_, graph) = sim::build_graph(&bf16);
    assert!(graph.works().iter().all(|w| !matches!(
        w,
        Work::Compute {
            fp8_weight_cast: true,
            ..
        }
    )));
}

#[test]
fn memory_per_gpu_against_bf16_by_formula() {
    for (recompute, sequence_parallel) in [
        (Recompute::None, false),
        (Recompute::Selective, true),
        (Recompute::Full, false),
    ] {
        let run = |precision| {
            let scenario = file(precision, recompute, sequence_parallel)
                .resolve()
                .unwrap();
            sim::simulate(&scenario).unwrap().memory
        };
        let (bf16, fp8) = (run(Precision::Bf16), run(Precision::Fp8));
        for (a, b) in bf16.iter().zip(&fp8) {
            assert_eq!(a.parameters, b.parameters);
            // 24 layers per stage: FP8 weight + transpose (2 B per linear
            // weight element) and 4 modules × 5 tensors × (history + 2) fp32.
            let layers = 24;
            let state = layers * (2 * 12 * H * H / T + 4 * 5 * (AMAX_HISTORY_LEN + 2) * 4);
            assert_eq!(b.weight_bytes - a.weight_bytes, state, "{recompute:?}");
            assert_eq!(a.gradient_bytes, b.gradient_bytes);
            assert_eq!(a.optimizer_state_bytes, b.optimizer_state_bytes);
            // Saved linear inputs in FP8: QKV and FC1 inputs (h each,
            // replicated unless sequence parallel), projection (h) and FC2
            // (ffn) inputs split t ways; none under full recompute except
            // for the one layer being recomputed.
            let replicated = if sequence_parallel { 2 * H / T } else { 2 * H };
            let per_layer = S * B * (replicated + (H + FFN) / T);
            let saved = match recompute {
                Recompute::Full => per_layer,
                _ => b.peak_microbatches_in_flight as u64 * layers * per_layer,
            };
            assert_eq!(
                a.activation_bytes - b.activation_bytes,
                saved,
                "{recompute:?}"
            );
        }
    }
}

#[test]
fn fp8_is_refused_without_fp8_tensor_cores_and_under_zero_offload() {
    for topology in ["dgx-a100", "dgx2-v100"] {
        let error = ScenarioFile {
            topology: Some(topology.into()),
            tp: Some(2),
            pp: Some(1),
            dp: Some(1),
            model: Some("gpt2-1b".into()),
            ..file(Precision::Fp8, Recompute::None, false)
        }
        .resolve()
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("precision: fp8 needs FP8 tensor cores"),
            "{error}"
        );
    }
    let error = ScenarioFile {
        pp: Some(1),
        tp: Some(8),
        model: Some("gpt2-1b".into()),
        options: TrainingOptionsFile {
            precision: Some(Precision::Fp8),
            zero_offload: Some(true),
            ..TrainingOptionsFile::default()
        },
        ..file(Precision::Fp8, Recompute::None, false)
    }
    .resolve()
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("precision: fp8 under zero_offload"),
        "{error}"
    );
}

#[test]
fn titles_and_options_name_fp8() {
    let fp8 = scenario(Precision::Fp8);
    assert!(fp8.options.title_suffix(1).contains("fp8"));
    let json = serde_json::to_string(&fp8.options).unwrap();
    assert!(json.contains("\"precision\":\"fp8\""), "{json}");
    assert_eq!(FP8_LINEAR_LAYERS.len(), 4);
}
