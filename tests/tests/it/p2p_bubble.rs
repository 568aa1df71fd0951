//! The bubble formulas that carry a point-to-point time c, with a nonzero
//! uniform c on every activation and gradient transfer between stages.
//!
//! Of the schedules in `../shared/SCHEDULES.md`, only ZB-H2's source gives
//! its bubble with c: (p−1)(F+I+2c−2W)⁺ (Qi et al., "Zero Bubble Pipeline
//! Parallelism", ICLR 2024), here the steady state with optimizer
//! post-validation. ZB-H1's (p−1)(F+I−W), ZB-V's 0, DualPipe's and
//! DualPipeV's (PP/2−1)(F&B+B−3W) (deepseek-ai/DualPipe README at 3da1bbe),
//! 1F1B's, interleaved's and looped BFS's (p−1)(F+B)/v are given without c.
//!
//! Two findings:
//! - The formula holds only because the zero-bubble runtime never waits for
//!   its sends (`ScheduleKind::sends_block`, sail-sg/zero-bubble-pipeline-
//!   parallelism at 39f2c18 `zerobubble/runtime.py`): with Megatron's
//!   blocking, synchronizing sends every stage paid 2c per microbatch
//!   (2mc + …, not 2(p−1)c) before this was fixed.
//! - ZB-H2's action order (SCHEDULES.md: 2(p−r−1) warm-up F, whatever the
//!   costs) meets the formula when W ≤ F. When W > F it cannot: stage 0 has
//!   no W to run before its first I, whose gradient comes back
//!   (p−1)(F+I+2c)+F after its first F started, while its 2(p−1)+1 forwards
//!   take (2p−1)F: it waits (p−1)(I+2c−F), which a heavier W does not fill.
//!   The simulated bubble is then (p−1)·max(F+I+2c−2W, I+2c−F, 0), above
//!   the formula once I+2c > F (the source's own runtime schedules from
//!   measured costs, `zerobubble/scheduler/zb.py`, and is not this order).

use sim::scenario::ScheduleKind;
use tests::bubble::steady_state_with_p2p;

/// W ≤ F: F = I = W (the paper's assumption), F + I > 2W with I > F, and
/// I < F.
const W_AT_MOST_F: [[u64; 4]; 3] = [
    [1_200, 2_400, 1_200, 1_200],
    [1_000, 2_000, 1_100, 900],
    [1_200, 2_000, 1_000, 1_000],
];
/// W > F: F + I < 2W, with I = F and with I > F.
const W_ABOVE_F: [[u64; 4]; 2] = [[1_000, 2_600, 1_000, 1_600], [900, 2_500, 1_200, 1_300]];
/// c: small and large against the passes (700 puts F + I + 2c past 2W for
/// every cost set above).
const P2P_NS: [u64; 3] = [100, 300, 700];
const GRID: [(u32, u32); 7] = [(2, 4), (2, 16), (3, 7), (4, 8), (4, 13), (8, 16), (8, 32)];

/// Steady-state (iteration ns − ideal ns, idle ns per rank) of ZB-H2 with post-validation.
fn zb_h2(pp: u32, m: u32, costs: [u64; 4], c: u64) -> (u64, Vec<u64>) {
    let mut file = tests::small_scenario_file(ScheduleKind::ZbH2, 2, pp, 1, 1, m);
    file.model = Some(serde_json::json!({
        "name": "test-48", "layers": 48, "hidden": 512, "heads": 8, "seq_len": 256,
        "vocab": 51200, "tied_embeddings": false
    }));
    file.options.optimizer_post_validation = Some(true);
    let scenario = file.resolve().unwrap();
    let run = steady_state_with_p2p(&scenario, costs, c);
    let [f, _, i, w] = costs;
    (run.iteration_ns - m as u64 * (f + i + w), run.idle)
}

#[test]
fn zb_h2_steady_state_bubble_with_p2p_time_c_is_its_formula_when_w_is_at_most_f() {
    for (pp, m) in GRID {
        for costs in W_AT_MOST_F {
            for c in P2P_NS {
                let [f, _, i, w] = costs;
                let (bubble, idle) = zb_h2(pp, m, costs, c);
                let formula = (pp as u64 - 1) * (f + i + 2 * c).saturating_sub(2 * w);
                let case = format!("p={pp} m={m} {costs:?} c={c}");
                assert_eq!(bubble, formula, "{case}");
                assert!(idle.iter().all(|&x| x == formula), "{case}: {idle:?}");
            }
        }
    }
}

#[test]
fn zb_h2_with_w_above_f_waits_for_its_first_gradient_on_stage_0() {
    for (pp, m) in GRID {
        for costs in W_ABOVE_F {
            for c in P2P_NS {
                let [f, _, i, w] = costs;
                let (bubble, idle) = zb_h2(pp, m, costs, c);
                let formula = (f + i + 2 * c).saturating_sub(2 * w);
                let first_gradient_wait = (i + 2 * c).saturating_sub(f);
                let expected = (pp as u64 - 1) * formula.max(first_gradient_wait);
                let case = format!("p={pp} m={m} {costs:?} c={c}");
                assert_eq!(bubble, expected, "{case}");
                assert!(idle.iter().all(|&x| x == expected), "{case}: {idle:?}");
                // The disagreement with the source's formula, where there is one.
                assert!(expected > (pp as u64 - 1) * formula, "{case}");
            }
        }
    }
}
