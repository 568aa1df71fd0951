//! Unit tests of the dev-set runner (`super`).

use super::*;

#[test]
fn every_numeric_measured_key_yields_a_row_with_a_prediction_or_a_reason() {
    let text = r#"{"hardware": "Selene", "cases": [
        {"id": "small", "model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_len": 1024, "vocab": 51200},
         "layout": {"tp": 2, "pp": 2, "dp": 2, "microbatch_size": 1, "global_batch": 8, "colour": "red"},
         "measured": {"iteration_time_s_full_recompute": 0.1, "tflops_per_gpu": 50,
                      "aggregate_pflops": 0.4, "bubble_depth": 3, "iteration_time_s_derived": 0.1,
                      "note": "text is not a figure"}},
        {"id": "odd-layers", "model": {"layers": 5, "hidden": 1024, "heads": 16, "seq_len": 1024, "vocab": 51200},
         "layout": {"tp": 2, "pp": 2, "dp": 1, "microbatch_size": 1, "global_batch": 8},
         "measured": {"iteration_time_s_full_recompute": 0.1}},
        {"id": "no-model", "measured": {"tflops_per_gpu": 30}}
    ]}"#;
    let rows = run_dev_set(text).unwrap();
    let find = |case: &str, quantity: &str| {
        rows.iter()
            .find(|r| r.case == case && r.quantity.starts_with(quantity))
            .unwrap_or_else(|| panic!("no row {case} {quantity}: {rows:?}"))
    };
    assert_eq!(rows.len(), 7, "{rows:?}");
    let time = find("small", "iteration_time_s (full recompute)");
    let tflops = find("small", "tflops_per_gpu (full recompute)");
    let aggregate = find("small", "aggregate_pflops");
    // One simulation feeds all three: aggregate = per-GPU × 8 GPUs.
    let (t, a) = (tflops.predicted.unwrap(), aggregate.predicted.unwrap());
    assert!((a - t * 8.0 / 1e3).abs() < 1e-9, "{t} {a}");
    assert!(time.predicted.unwrap() > 0.0);
    assert!(
        time.note.contains("ignored layout keys: colour"),
        "{}",
        time.note
    );
    assert!(find("small", "bubble_depth").note.contains("unknown"));
    assert!(find("small", "iteration_time_s_derived")
        .note
        .contains("restates"));
    let invalid = find("odd-layers", "iteration_time_s");
    assert!(invalid.predicted.is_none());
    assert!(invalid.note.contains("pp: layers (5)") && !invalid.note.contains('\n'));
    assert!(find("no-model", "tflops_per_gpu")
        .note
        .contains("needs `model`"));
}

#[test]
fn sc21_runs_without_pipelining_overlap_bucketed_gradient_all_reduces() {
    assert!(runs_pytorch_ddp(
        "Narayanan et al. SC21 (Megatron-LM), Table 1",
        1
    ));
    assert!(!runs_pytorch_ddp(
        "Narayanan et al. SC21 (Megatron-LM), Table 1",
        8
    ));
    assert!(!runs_pytorch_ddp("Korthikanti et al. 2022", 1));
    let case = serde_json::json!({
        "source": "Narayanan et al. SC21, examples/sc21/run_table_1.sh",
        "model": {"layers": 4, "hidden": 1024, "heads": 16, "seq_len": 1024, "vocab": 51200},
        "layout": {"tp": 2, "pp": 1, "dp": 4, "microbatch_size": 1, "global_batch": 8}
    });
    let (file, _, _) = case_scenario("sc21", &case, "Selene").unwrap();
    assert_eq!(file.options.overlap_grad_reduce, Some(true));
    assert_eq!(file.options.grad_reduce_bucket_params, Some(12_500_000));
    assert!(file.resolve().is_ok());
}

#[test]
fn a_zero_offload_source_runs_the_offload_scenario() {
    let case = serde_json::json!({
        "source": "Ren et al. 2021, ZeRO-Offload, Figure 11 (with DPU), one DGX-2",
        "model": {"layers": 20, "hidden": 4096, "heads": 32, "seq_len": 512, "vocab": 50257},
        "layout": {"tp": 1, "pp": 1, "dp": 1, "microbatch_size": 8, "global_batch": 8}
    });
    let (file, _, _) = case_scenario("zo", &case, "one DGX-2 (V100)").unwrap();
    assert_eq!(file.options.zero_offload, Some(true));
    assert_eq!(file.options.delayed_update, Some(true));
    assert_eq!(file.topology, Some("dgx2-v100".into()));
    assert!(file.resolve().is_ok());
    let plain = serde_json::json!({
        "source": "Korthikanti et al. 2022",
        "model": {"layers": 20, "hidden": 4096, "heads": 32, "seq_len": 512, "vocab": 50257},
        "layout": {"tp": 1, "pp": 1, "dp": 1, "microbatch_size": 8, "global_batch": 8}
    });
    let (file, _, _) = case_scenario("plain", &plain, "Selene").unwrap();
    assert_eq!(
        (file.options.zero_offload, file.options.delayed_update),
        (None, None)
    );
    assert!(!delayed_update_from_source(
        "ZeRO-Offload, Figure 7, without DPU"
    ));
}

#[test]
fn hardware_text_picks_the_topology() {
    assert_eq!(
        topology_for_hardware("Selene, DGX A100 80GB", 3072),
        "selene"
    );
    assert_eq!(
        topology_for_hardware("one DGX-2 (16 x V100)", 1),
        "dgx2-v100"
    );
    assert_eq!(topology_for_hardware("DGX-2 cluster", 128), "dgx2-v100-x8");
}
