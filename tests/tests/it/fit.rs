//! `clustersim fit` (issue 32) on the project's own measured runs: NVIDIA's
//! H100 table, each case predicted by the factors fitted without it, and
//! vTrain's single-node runs, the rest predicted from three chosen by fixed
//! seeds. Both figures are pinned: the first is the target (≤ 5%),
//! the second is not met (the issue asks ≤ 5%): a fit of all 1,440 runs
//! leaves 8.2% in-sample, so the simulator's structure, not its rates,
//! limits vTrain (issue 30), and three runs give factors that predict the
//! rest about as well as the calibrated simulator or worse.

use sim::scenario::fitted::{FitParameter, FitValues};
use studies::fit::cases::{units_of, FitUnit};
use studies::fit::fit_file::FitRecord;
use studies::fit::{fit, FitError, FitOptions};
use studies::validation::vtrain;

fn options() -> FitOptions {
    FitOptions {
        parameters: None,
        cases_file: "test".into(),
    }
}

fn within_bounds(record: &FitRecord) {
    for p in &record.parameters {
        let (low, high) = p.name.bounds();
        assert!(low <= p.value && p.value <= high, "{p:?}");
        assert_eq!(p.fitted, p.kept_at_prior_because.is_none(), "{p:?}");
    }
}

#[test]
fn each_h100_case_left_out_is_predicted_within_five_percent() {
    let text = std::fs::read_to_string(tests::h100_published_path()).unwrap();
    let units = units_of(&text, false).unwrap();
    let record = fit(&units, &options(), &|_| {}).unwrap();
    within_bounds(&record);
    assert_eq!(record.in_sample.runs, 14);
    let loo = record.leave_one_out.mean_abs_error_percent;
    assert!(loo <= 5.0, "leave-one-out {loo:.2}% (issue 32: ≤ 5%)");
    assert!(
        record.in_sample.mean_abs_error_percent
            < record.in_sample.calibrated_mean_abs_error_percent
    );
    assert!(record.leave_one_out_beats_calibrated);
    // FP8 runs the calibrated GEMM rate over-predicts (issue 30): the fit
    // lowers it, and FIT.json reads back as written.
    let gemm = &record.parameters[FitParameter::GemmRate as usize];
    assert!(gemm.fitted && gemm.value < 1.0, "{gemm:?}");
    let written = serde_json::to_string_pretty(&record).unwrap();
    assert_eq!(FitRecord::parse(&written).unwrap(), record);
}

/// SplitMix64: the seeds' choice of runs, the same on every platform.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[test]
fn three_vtrain_runs_predict_the_others_as_pinned() {
    let text = std::fs::read_to_string(tests::vtrain_csv_path()).unwrap();
    let runs = vtrain::read_csv(&text).unwrap();
    let units: Vec<FitUnit> = runs.iter().copied().map(FitUnit::Vtrain).collect();
    let mut per_seed = Vec::new();
    let mut refused = 0;
    for seed in 0..10u64 {
        let mut state = seed;
        let mut chosen: Vec<usize> = Vec::new();
        while chosen.len() < 3 {
            let index = (splitmix(&mut state) % runs.len() as u64) as usize;
            if !chosen.contains(&index) {
                chosen.push(index);
            }
        }
        let fitted_units: Vec<FitUnit> = chosen.iter().map(|&i| units[i].clone()).collect();
        // Three runs that identify no factor are refused: the calibrated
        // factors (the priors) predict the rest.
        let values = match fit(&fitted_units, &options(), &|_| {}) {
            Ok(record) => {
                within_bounds(&record);
                record.values()
            }
            Err(FitError::NothingIdentified { .. }) => {
                refused += 1;
                FitValues::CALIBRATED
            }
            Err(other) => panic!("seed {seed}: {other}"),
        };
        let others: Vec<vtrain::VtrainRun> = (0..runs.len())
            .filter(|i| !chosen.contains(i))
            .map(|i| runs[i])
            .collect();
        let results = vtrain::simulate_runs(&others, &values, &|_, _| {});
        let errors: Vec<f64> = results.iter().filter_map(|r| r.error_percent).collect();
        assert_eq!(errors.len(), others.len());
        per_seed.push(errors.iter().map(|e| e.abs()).sum::<f64>() / errors.len() as f64);
    }
    let mean = per_seed.iter().sum::<f64>() / per_seed.len() as f64;
    // Pinned, not a target (issue 32 asks ≤ 5%): see the module's header.
    assert!(
        (mean - PINNED_VTRAIN_PERCENT).abs() < 0.5,
        "{mean:.2}% {per_seed:.2?}, {refused} refused"
    );
    assert_eq!(refused, PINNED_VTRAIN_REFUSED, "{per_seed:.2?}");
}

/// The mean over the ten seeds of the other runs' mean |error|, measured.
const PINNED_VTRAIN_PERCENT: f64 = 10.45;

/// Seeds whose three runs identify no factor (refused, calibrated used).
const PINNED_VTRAIN_REFUSED: usize = 1;

#[test]
fn a_fit_of_runs_that_contradict_each_other_says_so() {
    let text = std::fs::read_to_string(tests::h100_published_path()).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let case = value["cases"][0].clone();
    let tokens = case["measured"]["tokens_per_s_per_gpu"].as_f64().unwrap();
    // The same run measured twice, 40% apart.
    let mut slower = case.clone();
    slower["id"] = "slower".into();
    slower["measured"]["tokens_per_s_per_gpu"] = (tokens * 0.6).into();
    let mut faster = case.clone();
    faster["id"] = "faster".into();
    let file = serde_json::json!({ "cases": [faster, slower] }).to_string();
    let record = fit(&units_of(&file, false).unwrap(), &options(), &|_| {}).unwrap();
    within_bounds(&record);
    assert!(!record.consistent);
    assert!(
        record.warnings[0].contains("inconsistent"),
        "{:?}",
        record.warnings
    );
}

/// The fit of one run of `scenario` whose `keys` are what the simulator
/// predicts under `truth`: the case `import-trace` would write of a cluster
/// with those factors.
fn fit_of_one_run(scenario: serde_json::Value, keys: &[&str], truth: &FitValues) -> FitRecord {
    let case = |measured: serde_json::Value| {
        serde_json::json!({ "cases": [{ "id": "run", "scenario": scenario, "measured": measured }] })
            .to_string()
    };
    let probe = case(serde_json::Value::Object(
        keys.iter().map(|key| (key.to_string(), 1.into())).collect(),
    ));
    let rows = studies::validation::run_dev_set_with(&probe, truth).unwrap();
    let measured: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .map(|key| {
            let row = rows.iter().find(|r| r.quantity == *key).unwrap();
            (key.to_string(), row.predicted.unwrap().into())
        })
        .collect();
    let units = units_of(&case(measured.into()), false).unwrap();
    let record = fit(&units, &options(), &|_| {}).unwrap();
    within_bounds(&record);
    record
}

#[test]
fn kernel_class_times_of_a_trace_recover_the_factors_that_made_them() {
    let scenario = serde_json::json!({
        "model": "llama3-8b", "seq_len": 4096, "topology": "dgx-h100-superpod",
        "stack": "megatron-core-2024", "tp": 2, "pp": 1, "dp": 4, "microbatch_size": 1,
        "global_batch": 32, "recompute": "none", "precision": "bf16"
    });
    let keys = [
        "iteration_time_s",
        "gemm_s",
        "attention_s",
        "memory_bound_s",
    ];
    // What a cluster 20% slower in GEMMs and 20% faster in memory-bound
    // kernels than calibrated measures, as import-trace would write it.
    let truth = FitValues::CALIBRATED
        .with(FitParameter::GemmRate, 0.8)
        .with(FitParameter::MemoryBoundRate, 1.2);
    let record = fit_of_one_run(scenario, &keys, &truth);
    assert_eq!(record.runs.iter().filter(|r| r.kernel_class).count(), 3);
    for (parameter, value) in [
        (FitParameter::GemmRate, 0.8),
        (FitParameter::MemoryBoundRate, 1.2),
        (FitParameter::AttentionRate, 1.0),
    ] {
        let fitted = &record.parameters[parameter as usize];
        assert!(fitted.fitted, "{fitted:?}");
        // The priors pull each factor a little toward 1.
        assert!((fitted.value / value - 1.0).abs() < 0.03, "{fitted:?}");
    }
}

#[test]
fn task_class_times_of_a_timeline_recover_the_factors_that_made_them() {
    // What `import-trace` of an executed Timeline writes: rank 0's busy
    // seconds per iteration in compute, tensor, pipeline and data-parallel
    // tasks, here of a cluster whose GEMMs run at 0.8 and NVLink at 0.6 of
    // the calibration.
    let scenario = serde_json::json!({
        "model": "llama3-8b", "seq_len": 2048, "topology": "dgx-h100-superpod",
        "stack": "megatron-core-2024", "tp": 2, "pp": 2, "dp": 2, "microbatch_size": 1,
        "global_batch": 8, "recompute": "none", "precision": "bf16"
    });
    let keys = [
        "iteration_time_s",
        "compute_s",
        "tensor_comm_s",
        "pipeline_comm_s",
        "data_parallel_comm_s",
    ];
    let truth = FitValues::CALIBRATED
        .with(FitParameter::GemmRate, 0.8)
        .with(FitParameter::NvlinkBandwidth, 0.6);
    let record = fit_of_one_run(scenario, &keys, &truth);
    assert_eq!(record.runs.iter().filter(|r| r.kernel_class).count(), 4);
    for (parameter, value) in [
        (FitParameter::GemmRate, 0.8),
        (FitParameter::NvlinkBandwidth, 0.6),
    ] {
        let fitted = &record.parameters[parameter as usize];
        assert!(fitted.fitted, "{fitted:?}");
        assert!((fitted.value / value - 1.0).abs() < 0.03, "{fitted:?}");
    }
}
