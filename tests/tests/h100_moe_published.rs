//! NVIDIA's published H100 mixture-of-experts runs
//! (`validation/h100-moe-published.json`, Megatron-Bridge 25.11 and 26.02):
//! the targets of issue 17's validation. The Qwen3-30B-A3B rows (t = 1,
//! ep = 8, FP8, overlapped parameter gather) are predicted and their errors
//! pinned within 1 point, so that a model change shows here on purpose; the
//! pinned figure is an error, not a target (no constant was fitted to these
//! rows). The Qwen3-235B-A22B rows (t = 2 with sequence parallelism, ep = 32
//! over the tensor and data ranks) are refused and say why.

use studies::validation::run_dev_set;

#[test]
fn the_30b_rows_are_predicted_and_the_235b_rows_say_why_not() {
    let text = std::fs::read_to_string(tests::h100_moe_published_path()).unwrap();
    let rows = run_dev_set(&text).unwrap();
    let tokens: Vec<_> = rows
        .iter()
        .filter(|row| row.quantity == "tokens_per_s_per_gpu")
        .collect();
    assert_eq!(tokens.len(), 4);
    // Pinned errors (%), predicted over published: the simulation is
    // optimistic (what it leaves out: ARCHITECTURE.md's MoE note).
    let pinned = [
        ("bridge2602-qwen3-30b-a3b", 175.4),
        ("bridge2511-qwen3-30b-a3b", 157.1),
    ];
    for (case, error) in pinned {
        let row = tokens.iter().find(|row| row.case == case).unwrap();
        let actual = row.error_percent.unwrap_or(f64::NAN);
        assert!(
            (actual - error).abs() < 1.0,
            "{case}: {actual:.2}% vs {error}%"
        );
    }
    for row in tokens.iter().filter(|row| row.case.contains("235b")) {
        assert!(row.predicted.is_none(), "{row:?}");
        assert!(
            row.note.contains("tp: tensor parallelism (2)"),
            "{}: {}",
            row.case,
            row.note
        );
    }
}
