//! Scenario validation tests: every class of problem is named.

use sim::scenario::*;

#[test]
fn default_and_tiny_scenarios_resolve() {
    ScenarioFile::embedded_default().resolve().unwrap();
    ScenarioFile::tiny_example().resolve().unwrap();
}

#[test]
fn every_layout_problem_is_reported_at_once() {
    let file = ScenarioFile {
        tp: Some(5),
        pp: Some(5),
        dp: Some(4),
        chunks: Some(2),
        global_batch: Some(10),
        schedule: Some(ScheduleKind::Interleaved),
        ..ScenarioFile::embedded_default()
    };
    let text = file.resolve().unwrap_err().to_string();
    for needle in [
        "heads (96) must be divisible by tp (5)",
        "layers (96) must be divisible by pp × chunks",
        "global_batch: 10 is not divisible",
        "tp: 5 neither divides",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
}

#[test]
fn too_many_gpus_and_interleaving_rules_are_named() {
    let file = ScenarioFile {
        dp: Some(64),
        global_batch: Some(1536),
        ..ScenarioFile::embedded_default()
    };
    assert!(file
        .resolve()
        .unwrap_err()
        .to_string()
        .contains("8192 GPUs, but topology 'selene' has 4480"));
    let file = ScenarioFile {
        schedule: Some(ScheduleKind::Interleaved),
        chunks: Some(2),
        global_batch: Some(8 * 20),
        ..ScenarioFile::embedded_default()
    };
    assert!(file
        .resolve()
        .unwrap_err()
        .to_string()
        .contains("multiple of pp = 16"));
    let file = ScenarioFile {
        chunks: Some(2),
        ..ScenarioFile::embedded_default()
    };
    assert!(file
        .resolve()
        .unwrap_err()
        .to_string()
        .contains("need --schedule interleaved"));
}

#[test]
fn bad_offload_combinations_are_named() {
    let single_gpu = ScenarioFile {
        model: Some("gpt2-1b".into()),
        topology: Some("dgx2-v100".into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(1),
        microbatch_size: Some(10),
        global_batch: Some(10),
        ..ScenarioFile::default()
    };
    let expect = |file: ScenarioFile, needle: &str| {
        let text = file.resolve().unwrap_err().to_string();
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    };
    expect(
        ScenarioFile {
            options: sim::scenario::TrainingOptionsFile {
                delayed_update: Some(true),
                ..single_gpu.options.clone()
            },
            ..single_gpu.clone()
        },
        "delayed_update: needs zero_offload",
    );
    expect(
        ScenarioFile {
            options: sim::scenario::TrainingOptionsFile {
                zero_offload: Some(true),
                ..Default::default()
            },
            ..ScenarioFile::embedded_default()
        },
        "pipeline parallelism is not supported with ZeRO-Offload (pp = 16)",
    );
    expect(
        ScenarioFile {
            iterations: Some(3),
            ..single_gpu.clone()
        },
        "only with zero_offload",
    );
    expect(
        ScenarioFile {
            iterations: Some(4),
            options: sim::scenario::TrainingOptionsFile {
                zero_offload: Some(true),
                delayed_update: Some(true),
                dpu_warmup_iterations: Some(2),
                ..single_gpu.options.clone()
            },
            ..single_gpu.clone()
        },
        "simulate at least 5",
    );
    expect(
        ScenarioFile {
            options: sim::scenario::TrainingOptionsFile {
                dpu_warmup_iterations: Some(2),
                zero_offload: Some(true),
                ..single_gpu.options.clone()
            },
            ..single_gpu.clone()
        },
        "dpu_warmup_iterations: only meaningful with delayed_update",
    );
    let scenario = ScenarioFile {
        options: sim::scenario::TrainingOptionsFile {
            zero_offload: Some(true),
            delayed_update: Some(true),
            ..single_gpu.options.clone()
        },
        ..single_gpu
    }
    .resolve()
    .unwrap();
    assert_eq!(scenario.iterations, DEFAULT_DPU_WARMUP_ITERATIONS + 3);
    assert!(scenario.title().contains("ZeRO-Offload + DPU"));
}

#[test]
fn unknown_keys_and_mismatched_profiles_are_rejected() {
    let err =
        serde_json::from_str::<ScenarioFile>(r#"{"tp": 8, "tensor_parallel": 8}"#).unwrap_err();
    assert!(err.to_string().contains("tensor_parallel"));
    let file = ScenarioFile {
        profile: Some("h200".into()),
        ..ScenarioFile::embedded_default()
    };
    assert!(file
        .resolve()
        .unwrap_err()
        .to_string()
        .contains("describes H200"));
}

#[test]
fn a_fat_tree_too_small_for_its_nodes_is_a_scenario_problem_under_contention() {
    let mut topology = serde_json::to_value(topologies::preset("selene").unwrap()).unwrap();
    topology["fabric"]["fat_tree_levels"] = 2.into();
    let file = ScenarioFile {
        topology: Some(topology),
        options: sim::scenario::TrainingOptionsFile {
            network_contention: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::embedded_default()
    };
    let error = file.resolve().unwrap_err().to_string();
    assert!(
        error.contains(
            "network_contention: topology 'selene': a 2-level fat tree of radix-40 switches holds"
        ),
        "{error}"
    );
    // Without contention the closed-form network does not use the tree.
    let closed_form = ScenarioFile {
        options: Default::default(),
        ..file
    };
    assert!(closed_form.resolve().is_ok());
}

/// Sequence parallelism splits each rank's seq_len/cp tokens over the t
/// tensor ranks: a length t·cp does not divide is refused, naming both.
#[test]
fn sequence_parallelism_needs_a_length_t_times_cp_divides() {
    let file = |seq_len: u64, sequence_parallel: bool| {
        let mut file = ScenarioFile {
            seq_len: Some(seq_len),
            ..ScenarioFile::embedded_default()
        };
        file.options.sequence_parallel = Some(sequence_parallel);
        file
    };
    // The embedded default runs t = 8.
    let text = file(2052, true).resolve().unwrap_err().to_string();
    assert!(
        text.contains("sequence_parallel: seq_len (2052) must be divisible by t × cp = 8"),
        "{text}"
    );
    file(2048, true).resolve().unwrap();
    file(2052, false).resolve().unwrap();
}
