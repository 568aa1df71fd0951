//! NVIDIA's published H100 mixture-of-experts runs
//! (`validation/h100-moe-published.json`, Megatron-Bridge 25.11 and 26.02):
//! the targets of issue 17's validation. Every row is predicted — the
//! Qwen3-30B-A3B rows at t = 1, ep = 8; the Qwen3-235B-A22B rows at t = 2
//! with sequence parallelism, etp 1 and ep = 32 over the tensor and data
//! ranks; all FP8 with the overlapped parameter gather — and each error is
//! pinned within 1 point, so that a model change shows here on purpose.
//! The pinned figures are errors, not targets: no constant was fitted to
//! these rows.

use studies::validation::run_dev_set;

#[test]
fn every_published_h100_moe_run_is_predicted_and_its_error_pinned() {
    let text = std::fs::read_to_string(tests::h100_moe_published_path()).unwrap();
    let rows = run_dev_set(&text).unwrap();
    let tokens: Vec<_> = rows
        .iter()
        .filter(|row| row.quantity == "tokens_per_s_per_gpu")
        .collect();
    assert_eq!(tokens.len(), 4);
    // Pinned errors (%), predicted over published. The 30B rows were
    // +175.4 / +157.1 before the token dispatcher's host synchronization and
    // the per-expert GEMMs and quantizations (TE GroupedLinear) were lowered;
    // they are still optimistic, the 235B rows pessimistic (what is not
    // modeled: docs/dev/architecture-notes.md's MoE note). Then 40.2 / -11.0 / 118.4 / -8.7
    // before issue 30's GEMM tile model and carried memory classes; 39.7 /
    // -12.5 / 117.4 / -10.2 before FP8 GEMMs took their own sustained clock;
    // 39.7 / -13.3 / 117.1 / -11.0 before the fused attention's burst rates
    // were priced at the sustained clock; 39.5 / -14.2 / 112.4 / -11.9 while
    // the Qwen3 presets still ran Megatron's default dropout.
    let pinned = [
        ("bridge2602-qwen3-30b-a3b", 40.7),
        ("bridge2602-qwen3-235b-a22b", -13.9),
        ("bridge2511-qwen3-30b-a3b", 113.5),
        ("bridge2511-qwen3-235b-a22b", -11.7),
    ];
    for (case, error) in pinned {
        let row = tokens.iter().find(|row| row.case == case).unwrap();
        let actual = row.error_percent.unwrap_or(f64::NAN);
        assert!(
            (actual - error).abs() < 1.0,
            "{case}: {actual:.2}% vs {error}% ({})",
            row.note
        );
    }
}
