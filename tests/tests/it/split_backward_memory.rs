//! The state a deferred weight-gradient pass keeps (split backwards:
//! ZB-H1/H2, ZB-V, DualPipeV, DualPipe), counted in memory with exact bytes.
//! A weight-gradient GEMM dW = Xᵀ·dY needs each linear layer's input X and
//! output gradient dY from the input-gradient pass `I` until its `W` runs;
//! per microbatch and transformer layer on t tensor ranks (no sequence
//! parallelism, fp16, tokens s·b, GELU MLP of 4h), from the layer's GEMM
//! shapes:
//!
//! - QKV (column-parallel): X s·h, dY s·3h/t;
//! - attention output (row-parallel): X s·h/t, dY s·h;
//! - fc1 (column-parallel): X s·h, dY s·4h/t;
//! - fc2 (row-parallel): X s·4h/t, dY s·h;
//!
//! together (4sh + 12sh/t) elements, 2 bytes each; the head's logits GEMM
//! adds X s·h and dY s·V/t. Memory takes the peak of activations plus this
//! state jointly, step by step over the stage's action order.

use sim::cost::split_backward::weight_gradient_state_bytes;
use sim::memory::memory_per_stage;
use sim::scenario::ScheduleKind;

/// test-48 of `tests::small_scenario`: h = 512, s = 256, V = 51200, b = 1.
const H: u64 = 512;
const S: u64 = 256;
const V: u64 = 51_200;

fn per_layer_bytes(t: u64) -> u64 {
    2 * (4 * S * H + 12 * S * H / t)
}

fn head_bytes(t: u64) -> u64 {
    2 * (S * H + S * V / t)
}

#[test]
fn one_layers_state_is_its_linear_inputs_and_output_gradients() {
    for t in [1u32, 2, 4] {
        let scenario = tests::small_scenario(ScheduleKind::ZbH1, t, 2, 1, 1, 4);
        assert_eq!(
            weight_gradient_state_bytes(&scenario, 1, false),
            per_layer_bytes(t as u64),
            "t={t}"
        );
        assert_eq!(
            weight_gradient_state_bytes(&scenario, 24, true),
            24 * per_layer_bytes(t as u64) + head_bytes(t as u64),
            "t={t}"
        );
    }
}

#[test]
fn zb_h1_counts_the_state_at_the_joint_peak_not_the_sum_of_peaks() {
    // p = 2, m = 4, 24 layers per stage. Stage 1 runs F0 I0 F1 I1 W0 F2 I2 W1
    // F3 I3 W2 W3: with one microbatch of activations A and one deferred state
    // P (P < A here), its peak is A + P at F1 (1F1B's stage 1 holds A alone).
    // Stage 0 runs F0 F1 I0 W0 F2 I1 W1 …: its peak 2A (1F1B's) comes before
    // any W is owed, so nothing is added there although one W is owed later.
    let (p, m) = (2u32, 4u32);
    let zb = tests::small_scenario(ScheduleKind::ZbH1, 1, p, 1, 1, m);
    let plain = tests::small_scenario(ScheduleKind::OneFOneB, 1, p, 1, 1, m);
    let zb_memory = memory_per_stage(&zb, &sim::plan::Plan::of(&zb));
    let plain_memory = memory_per_stage(&plain, &sim::plan::Plan::of(&plain));
    let state = 24 * per_layer_bytes(1) + head_bytes(1);
    assert_eq!(zb_memory[1].weight_gradient_pending_bytes, state);
    // activation_bytes truncates an f64 sum: the difference is the state to a byte.
    let added = zb_memory[1].activation_bytes - plain_memory[1].activation_bytes;
    assert!(added.abs_diff(state) <= 1, "{added} vs {state}");
    assert_eq!(zb_memory[0].weight_gradient_pending_bytes, 0);
    assert_eq!(
        zb_memory[0].activation_bytes,
        plain_memory[0].activation_bytes
    );
    // The schedule owes a W on stage 0 at some step all the same.
    assert_eq!(sim::plan::schedule_of(&zb).peak_weight_pending(0), 1);
    // Unsplit schedules keep nothing for W.
    assert!(plain_memory
        .iter()
        .all(|stage| stage.weight_gradient_pending_bytes == 0));
}

#[test]
fn zb_h2_counts_two_owed_states_beside_one_forward() {
    // ZB-H2 on p = 2, m = 8: stage 1 runs F0 I0 F1 I1 F2 I2 W0 F3 I3 W1 …
    // (W lagging I by 2r = 2). Held: A, P, A+P, 2P, A+2P, 3P, 2P, A+2P, …:
    // with P < A the joint peak is A + 2P (at F2), though 3 Ws are owed at I2.
    let (p, m) = (2u32, 8u32);
    let zb = tests::small_scenario(ScheduleKind::ZbH2, 1, p, 1, 1, m);
    let plain = tests::small_scenario(ScheduleKind::OneFOneB, 1, p, 1, 1, m);
    let plan = sim::plan::Plan::of(&zb);
    assert_eq!(plan.schedule.peak_weight_pending(1), 3);
    let memory = memory_per_stage(&zb, &plan);
    let plain_memory = memory_per_stage(&plain, &sim::plan::Plan::of(&plain));
    let state = 24 * per_layer_bytes(1) + head_bytes(1);
    assert_eq!(memory[1].weight_gradient_pending_bytes, 2 * state);
    let added = memory[1].activation_bytes - plain_memory[1].activation_bytes;
    assert!(added.abs_diff(2 * state) <= 1, "{added} vs {}", 2 * state);
}
