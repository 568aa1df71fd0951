//! `clustersim plot bubble`'s series against their curves: each point's
//! scenario as the chart builds it (`studies::bubble_chart::point_file`,
//! ZB-H2 with optimizer post-validation), run with uniform per-pass costs
//! F = I = W (B = I + W) and free communication, leaves every rank idle
//! exactly its curve's fraction of the ideal compute time (interleaved with
//! flexible groups where p does not divide m), in integer
//! nanoseconds; and the chart's y, from the metrics as the command takes
//! them (the steady-state window under post-validation), is that fraction.

use studies::bubble_chart::{over_ideal, point_file, BubbleCurve, BubbleFormula, CURVES};
use tests::bubble::{idle_of, steady_state};

/// F, B, I, W per pass of one chunk.
const UNIFORM: [u64; 4] = [1_200, 2_400, 1_200, 1_200];

/// (idle ns per rank, ideal compute ns per rank, chart y from the metrics).
fn point(curve: &BubbleCurve, pp: u32, m: u32) -> (Vec<u64>, u64, f64) {
    let mut file = tests::small_scenario_file(curve.schedule, 2, pp, 1, 1, m);
    // Post-validation needs untied embeddings (and fp16, the default); 96
    // layers divide into p·v = 8 × 4.
    file.model = Some(serde_json::json!({
        "name": "test-96", "layers": 96, "hidden": 512, "heads": 8, "seq_len": 256,
        "vocab": 51200, "tied_embeddings": false
    }));
    let scenario = point_file(&file, curve, m, 1, pp).resolve().unwrap();
    assert_eq!(
        scenario.options.optimizer_post_validation,
        curve.post_validation
    );
    let [f, _, i, w] = UNIFORM;
    // Each microbatch passes every chunk of a rank once; DualPipe's passes
    // only one of the two copies a rank holds.
    let chunks_passed = match curve.schedule {
        sim::scenario::ScheduleKind::DualPipe => 1,
        _ => curve.chunks as u64,
    };
    let ideal = m as u64 * chunks_passed * (f + i + w);
    let (idle, timeline) = if curve.post_validation {
        let run = steady_state(&scenario, UNIFORM);
        (run.idle, run.timeline)
    } else {
        let run = idle_of(&scenario, UNIFORM, 0);
        (run.idle, run.timeline)
    };
    // The peak only scales TFLOP/s, not the bubble.
    let metrics = timeline::metrics::compute(&timeline, 1e15);
    (
        idle,
        ideal,
        over_ideal(metrics.bubble_fraction, metrics.iteration_time_s),
    )
}

#[test]
fn zb_h2_series_is_simulated_with_post_validation_over_the_zero_line() {
    let curve = CURVES
        .iter()
        .find(|c| c.schedule == sim::scenario::ScheduleKind::ZbH2)
        .expect("plot bubble has a ZB-H2 series");
    assert!(curve.post_validation);
    assert_eq!(curve.formula, BubbleFormula::Zero);
    assert!(curve.label.contains("post-validation"));
    for (pp, m) in [(2, 4), (3, 7), (4, 8), (4, 16), (8, 32)] {
        let (idle, ideal, y) = point(curve, pp, m);
        // (p−1)(F+I+2c−2W)⁺ = 0 ns at F = I = W, c = 0.
        assert!(
            idle.iter().all(|&x| x == 0),
            "p={pp} m={m}: {idle:?} of {ideal}"
        );
        assert_eq!(y, 0.0, "p={pp} m={m}");
    }
}

#[test]
fn every_series_leaves_its_curves_fraction_idle_in_ns() {
    let schedules: Vec<_> = CURVES.iter().map(|c| c.schedule.name()).collect();
    for name in [
        "zb-h1",
        "zb-h2",
        "zb-v",
        "dualpipe",
        "dualpipev",
        "looped-bfs",
        "interleaved",
    ] {
        assert!(schedules.contains(&name), "{name} has no series");
    }
    for curve in &CURVES {
        // p ∤ m at (4, 10) and (8, 20): interleaved with groups of N = 5, 10.
        for (pp, m) in [(4, 8), (4, 10), (4, 16), (8, 16), (8, 20), (8, 32)] {
            let (idle, ideal, y) = point(curve, pp, m);
            let (numerator, denominator) = curve.formula.ratio(pp, m);
            let case = format!("{} p={pp} m={m}: {idle:?} of {ideal}", curve.label);
            assert!(
                idle.iter().all(|&x| x * denominator == numerator * ideal),
                "{case}"
            );
            let expected = numerator as f64 / denominator as f64;
            assert!((y - expected).abs() < 1e-12, "{case}: y {y} vs {expected}");
        }
    }
}
