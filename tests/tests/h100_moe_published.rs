//! NVIDIA's published H100 mixture-of-experts runs
//! (`validation/h100-moe-published.json`, Megatron-Bridge 25.11 and 26.02):
//! the targets of issue 17's validation. None is predicted yet, and each
//! says why: the Qwen3 models' attention heads are wider than hidden/heads
//! with per-head query/key norms, which the layer's kernels do not lower.
//! When they are, this test fails and the rows get their pinned errors.

use studies::validation::run_dev_set;

#[test]
fn every_published_h100_moe_run_is_refused_today_with_its_reason() {
    let text = std::fs::read_to_string(tests::h100_moe_published_path()).unwrap();
    let rows = run_dev_set(&text).unwrap();
    let tokens: Vec<_> = rows
        .iter()
        .filter(|row| row.quantity == "tokens_per_s_per_gpu")
        .collect();
    assert_eq!(tokens.len(), 4);
    for row in tokens {
        assert!(row.predicted.is_none(), "{row:?}");
        assert!(
            row.note.contains("head_dim") && row.note.contains("qk_norm"),
            "{}: {}",
            row.case,
            row.note
        );
    }
}
