//! NVIDIA's published H100 pre-training runs (NeMo 24.07, Megatron-Bridge
//! 25.11 and 26.02 performance summaries; `validation/h100-published.json`),
//! each a whole scenario: every tokens-per-GPU figure gets a prediction or
//! the reason there is none, and the error over the predicted ones is pinned
//! within 0.5 points so that a model change shows here and in the README on
//! purpose. The pinned figure is an error, not a target: these runs are FP8,
//! and no FP8 GEMM has been measured (the FP8 rate takes the bf16
//! large-GEMM efficiency, measured on the lab H100 under sustained load,
//! times TE's published FP8:BF16 kernel ratio).

use studies::validation::{run_dev_set, ValidationRow};

#[test]
fn every_published_h100_run_is_predicted_or_says_why_not() {
    let text = std::fs::read_to_string(tests::h100_published_path()).unwrap();
    let rows = run_dev_set(&text).unwrap();
    let tokens: Vec<_> = rows
        .iter()
        .filter(|row| row.quantity == "tokens_per_s_per_gpu")
        .collect();
    assert_eq!(tokens.len(), 14);
    // Llama 3.1 405B's 126 layers on 8 × 8 virtual stages run with
    // Megatron-Core's uneven split (its recipes count embedding and loss).
    let predicted: Vec<&ValidationRow> = tokens
        .iter()
        .copied()
        .filter(|row| row.predicted.is_some())
        .collect();
    assert_eq!(predicted.len(), 14, "{tokens:?}");
    // The derived TFLOP/s restate the tokens with NVIDIA's FLOP count.
    assert!(rows
        .iter()
        .filter(|row| row.quantity.starts_with("derived"))
        .all(|row| row.predicted.is_none()));
    let errors: Vec<f64> = predicted.iter().map(|r| r.error_percent.unwrap()).collect();
    let mean_abs = errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64;
    // Pinned (README, "Accuracy"): every prediction is optimistic today.
    // 27.60 % under NCCL 2.12's tuner, 27.70 % since megatron-core-2024 runs 2.21's,
    // 14.2 % since the H100 profile takes the sustained large-GEMM efficiency
    // (0.697, not a burst's 0.8) and FP8 GEMMs 0.95 of it; 13.7 % since the
    // overlapped GEMMs pay the SMs of each recipe's userbuffers configuration;
    // 12.6 % since GEMMs are priced by tiles and waves at the sustained clock;
    // 11.5 % since memory-bound kernels take the lab H100's measured classes;
    // 11.6 % since the H100's launch gap is the lab's measured 1,628 ns;
    // 7.5 % since FP8 GEMMs run at their own sustained clock (0.795, not
    // the bf16 GEMMs' 0.858), when two of the 14 became pessimistic;
    // 6.3 % since the fused attention's published burst rates are priced at
    // the sustained clock too, when a third (Llama 3 8B, FSDP) did; 6.2 %
    // (max 15.5 -> 13.2) since dropout runs as the configs set it (GPT-3's
    // 0.1 inside the fused attention kernel, none for Llama).
    assert!((mean_abs - 6.2).abs() < 0.5, "mean |error| {mean_abs:.2}%");
    let worst = errors.iter().fold(0.0f64, |m, e| m.max(e.abs()));
    assert!(worst < 15.0, "worst {worst:.2}%");
    let optimistic = errors.iter().filter(|&&e| e > 0.0).count();
    assert_eq!(optimistic, 11, "{errors:?}");
}
