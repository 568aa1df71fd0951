//! Zero-bubble optimizer post-validation (Qi et al., "Zero Bubble Pipeline
//! Parallelism", ICLR 2024, Sec. 4; `--optimizer-post-validation`): each
//! stage steps its optimizer once its own gradients are reduced and the
//! previous stage's partial norm is in, and validates afterwards, so the
//! next iteration's warm-up overlaps the previous one's end. Over several
//! iterations, with uniform per-pass costs and free communication, ZB-H2's
//! steady-state idle per rank is exactly its formula (p−1)(F+I+2c−2W)⁺
//! (c = 0), in integer nanoseconds; one iteration alone shows the (p−1)·F
//! start skew besides.

use sim::scenario::{ScenarioFile, ScheduleKind};
use tests::bubble::steady_state;

/// The source's assumption (its Sec. 3.1): F = I = W, the backward B = I + W.
const UNIFORM: [u64; 4] = [1_200, 2_400, 1_200, 1_200];
/// F + I > 2W: the bubble (p−1)(F+I−2W) is not zero.
const UNEVEN: [u64; 4] = [1_000, 2_000, 1_100, 900];
/// F + I < 2W: still no bubble.
const HEAVY_W: [u64; 4] = [1_000, 2_600, 1_000, 1_600];
const GRID: [(u32, u32); 7] = [(2, 4), (2, 16), (3, 7), (4, 8), (4, 13), (8, 16), (8, 32)];

/// The small test scenario with untied embeddings and post-validation on.
fn file(schedule: ScheduleKind, pp: u32, dp: u32, microbatches: u32) -> ScenarioFile {
    let mut file = tests::small_scenario_file(schedule, 2, pp, dp, 1, microbatches);
    file.model = Some(serde_json::json!({
        "name": "test-48", "layers": 48, "hidden": 512, "heads": 8, "seq_len": 256,
        "vocab": 51200, "tied_embeddings": false
    }));
    file.options.optimizer_post_validation = Some(true);
    file
}

#[test]
fn zb_h2_steady_state_bubble_is_its_formula_exactly() {
    for (pp, m) in GRID {
        for costs in [UNIFORM, UNEVEN, HEAVY_W] {
            let [f, _, i, w] = costs;
            let scenario = file(ScheduleKind::ZbH2, pp, 1, m).resolve().unwrap();
            assert_eq!(scenario.iterations, 3);
            let run = steady_state(&scenario, costs);
            let bubble = (pp as u64 - 1) * (f + i).saturating_sub(2 * w);
            let ideal = m as u64 * (f + i + w);
            assert_eq!(run.iteration_ns, ideal + bubble, "p={pp} m={m} {costs:?}");
            assert!(
                run.idle.iter().all(|&idle| idle == bubble),
                "p={pp} m={m} {costs:?}: {:?}",
                run.idle
            );
            // The first iteration still shows the stages' (p−1)·F start skew.
            assert_eq!(
                run.ends[0],
                ideal + (pp as u64 - 1) * f,
                "p={pp} m={m} {costs:?}"
            );
        }
    }
}
