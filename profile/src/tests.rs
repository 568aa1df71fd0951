//! Tests of the profile schema and the embedded defaults.

use super::*;

#[test]
fn every_embedded_profile_parses_and_validates() {
    for name in Profile::builtin_names() {
        let profile = Profile::builtin(name).unwrap();
        assert_eq!(profile.id, name);
        assert!(profile
            .gemm
            .measured
            .iter()
            .all(|m| m.source != Source::Measured));
    }
}

#[test]
fn embedded_profiles_are_found_by_their_gpu() {
    let h100 = Profile::default_for_gpu("H100-SXM5-80GB").unwrap();
    assert_eq!(h100.id, "h100-sxm");
    assert!((h100.memory.hbm_efficiency.value - 0.9).abs() < 1e-12);
    assert_eq!(Profile::default_for_gpu("H200").unwrap().id, "h200");
    assert_eq!(Profile::default_for_gpu("B200").unwrap().id, "b200");
    assert_eq!(Profile::default_for_gpu("GB200").unwrap().id, "gb200");
    assert_eq!(
        Profile::default_for_gpu("H100-PCIe-80GB").unwrap().id,
        "h100-pcie"
    );
    assert!(Profile::builtin_names().contains(&"h100-sxm"));
    // Each GPU has at most one embedded default.
    let mut gpus: Vec<_> = Profile::builtin_names()
        .into_iter()
        .map(|name| Profile::builtin(name).unwrap().gpu)
        .collect();
    let count = gpus.len();
    gpus.sort();
    gpus.dedup();
    assert_eq!(gpus.len(), count);
}

#[test]
fn blackwell_defaults_say_their_efficiencies_are_assumed() {
    for name in ["b200", "gb200"] {
        let profile = Profile::builtin(name).unwrap();
        for quantity in [
            &profile.gemm.large_gemm_efficiency,
            &profile.memory.hbm_efficiency,
            &profile.communication.nvlink_bus_bandwidth_bytes_per_s,
        ] {
            assert_eq!(quantity.source, Source::Model, "{name}");
            assert!(
                quantity.note.starts_with("Assumed, not measured"),
                "{name}: {}",
                quantity.note
            );
        }
        // NVLink 5 ring: Hopper's 370 of 450 GB/s scaled to 900 GB/s.
        let nvlink = profile.communication.nvlink_bus_bandwidth_bytes_per_s.value;
        assert!((nvlink - 370e9 * 2.0).abs() < 1e9, "{name}: {nvlink}");
        assert!(profile.provenance.method.contains("not measured"), "{name}");
    }
}

#[test]
fn provenance_without_gpu_state_or_remarks_writes_no_such_keys() {
    let profile = Profile::builtin("h200").unwrap();
    let text = serde_json::to_string(&profile).unwrap();
    for key in ["gpu_state_before", "gpu_state_after", "remarks"] {
        assert!(!text.contains(key), "{key}");
    }
    let mut with_state = profile.clone();
    with_state.provenance.gpu_state_before = Some(GpuStateSample {
        read_at: "2026-11-13T10:00:00Z".into(),
        gpus: vec![GpuState {
            sm_clock_mhz: Some(435),
            power_draw_w: Some(100.5),
            temperature_c: Some(39),
            ..GpuState::default()
        }],
        unavailable: None,
    });
    with_state.provenance.gpu_state_after = Some(GpuStateSample {
        read_at: "2026-11-13T10:01:00Z".into(),
        gpus: vec![],
        unavailable: Some("nvidia-smi not found".into()),
    });
    with_state.provenance.remarks = vec!["collectives not timed".into()];
    let text = serde_json::to_string(&with_state).unwrap();
    assert!(
        !text.contains("memory_clock_mhz"),
        "None fields are skipped"
    );
    let reread = Profile::from_json_str(&text, "state.json").unwrap();
    assert_eq!(reread.provenance, with_state.provenance);
}

#[test]
fn memory_entries_need_bytes_time_and_a_physical_rate() {
    let mut profile = Profile::builtin("h200").unwrap();
    let entry = |bytes, time_ns| MemoryMeasurement {
        kernel: "layernorm".into(),
        bytes,
        time_ns,
        source: Source::Measured,
    };
    profile.memory.measured = vec![entry(1 << 30, 300_000)];
    profile.validate("ok").unwrap();
    profile.memory.measured = vec![
        entry(1 << 30, 300_000),
        entry(0, 5),
        entry(5, 0),
        entry(1, u64::MAX),
    ];
    let error = profile.validate("bad").unwrap_err().to_string();
    assert!(!error.contains("memory.measured[0]"), "{error}");
    for index in 1..=3 {
        assert!(
            error.contains(&format!("memory.measured[{index}] (layernorm)")),
            "{error}"
        );
    }
}

#[test]
fn wrong_schema_version_is_named() {
    let mut value = serde_json::to_value(Profile::builtin("h200").unwrap()).unwrap();
    value["schema_version"] = 99.into();
    let err = Profile::from_json_str(&value.to_string(), "p.json").unwrap_err();
    assert!(err.to_string().contains("schema version 99"), "{err}");
}

#[test]
fn gemm_layout_is_optional_checked_and_omitted_when_unknown() {
    let entry = r#"{"batch": 1, "m": 8, "n": 8, "k": 8, "dtype": "bf16", "time_ns": 5, "source": "measured"}"#;
    let old: GemmMeasurement = serde_json::from_str(entry).unwrap();
    assert_eq!(old.layout, None);
    assert!(!serde_json::to_string(&old).unwrap().contains("layout"));
    let with_layout = entry.replace("\"bf16\"", "\"bf16\", \"layout\": \"nt\"");
    let timed: GemmMeasurement = serde_json::from_str(&with_layout).unwrap();
    assert_eq!(timed.layout.as_deref(), Some("nt"));
    let reread: GemmMeasurement =
        serde_json::from_str(&serde_json::to_string(&timed).unwrap()).unwrap();
    assert_eq!(reread, timed);

    let mut profile = Profile::builtin("h200").unwrap();
    profile.gemm.measured = vec![
        timed,
        GemmMeasurement {
            layout: Some("xt".into()),
            ..old
        },
    ];
    let error = profile.validate("p.json").unwrap_err().to_string();
    assert!(error.contains("gemm.measured[1].layout"), "{error}");
    assert!(!error.contains("gemm.measured[0]"), "{error}");
    profile.gemm.measured.truncate(1);
    profile.validate("p.json").unwrap();
}

#[test]
fn h100_pcie_default_says_its_efficiencies_are_the_sxm_ones_assumed() {
    let profile = Profile::builtin("h100-pcie").unwrap();
    let sxm = Profile::builtin("h100-sxm").unwrap();
    for (quantity, sxm_value) in [
        (
            &profile.gemm.large_gemm_efficiency,
            sxm.gemm.large_gemm_efficiency.value,
        ),
        (
            &profile.memory.hbm_efficiency,
            sxm.memory.hbm_efficiency.value,
        ),
    ] {
        assert_eq!(quantity.source, Source::Model);
        assert!(quantity.note.starts_with("Assumed, not measured"));
        assert_eq!(quantity.value, sxm_value);
    }
    // The bridge's 300 GB/s per direction at the SXM rings' 370/450.
    let nvlink = profile.communication.nvlink_bus_bandwidth_bytes_per_s.value;
    assert!((nvlink - 0.82 * 300e9).abs() < 1.0, "{nvlink}");
    // Attention rates: the SXM's scaled by the dense peaks, 756/989.
    let rates = |p: &Profile| -> Vec<f64> {
        p.attention
            .as_ref()
            .unwrap()
            .measured
            .iter()
            .map(|e| e.flops_per_s)
            .collect()
    };
    for (pcie, sxm) in rates(&profile).into_iter().zip(rates(&sxm)) {
        assert!(
            (pcie - sxm * 756.0 / 989.0).abs() <= 0.5e9,
            "{pcie} vs {sxm}"
        );
    }
}
