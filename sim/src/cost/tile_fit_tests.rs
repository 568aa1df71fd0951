//! The Rust fit against the lab H100 grid: from another GPU's constants it
//! finds what `scripts/derive-gemm-tile-model.py` found.

use super::*;

fn lab() -> Profile {
    Profile::from_json_str(
        include_str!("../../../calibrate/profiles/h100-sxm.json"),
        "lab",
    )
    .unwrap()
}

#[test]
fn the_lab_grid_refits_from_another_gpus_start() {
    let gpu = topologies::preset("h100").unwrap().gpu;
    let mut profile = lab();
    // Start from the A100's constants (its main loop and ratio differ).
    profile.gemm.tile_model = Profile::builtin("a100-80gb").unwrap().gemm.tile_model;
    let fit = fit_tile_model(&profile, &gpu).unwrap();
    assert_eq!(fit.gemms, 182);
    assert_eq!(fit.sustained_gemms, 6);
    // The global search's optimum is 2.87 %; a local search may stop near it.
    assert!(fit.mean_abs_error < 0.032, "{fit:?}");
    let c = &fit.constants;
    assert!((c.mainloop_efficiency.value - 0.8326).abs() < 0.03, "{c:?}");
    assert!((c.sustained_ratio.value - 0.858).abs() < 0.03, "{c:?}");
    assert_eq!(c.mainloop_efficiency.source, Source::Measured);
    assert!(c.kernel_latency_ns.note.contains("182 bf16/fp16 GEMMs"));
    // What it writes is a valid profile.
    profile.gemm.tile_model = Some(fit.constants);
    profile.validate("refit").unwrap();
}

#[test]
fn too_few_gemms_keep_the_profiles_model() {
    let gpu = topologies::preset("h100").unwrap().gpu;
    let mut profile = lab();
    profile.gemm.measured.truncate(10);
    let error = fit_tile_model(&profile, &gpu).unwrap_err();
    assert!(error.contains("the fit needs 30"), "{error}");
    profile.gemm.tile_model = None;
    assert!(fit_tile_model(&profile, &gpu).is_err());
}
