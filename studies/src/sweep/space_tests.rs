//! Tests of `space.rs`: divisors and powers, the order the tuples come in
//! and how their dimensions nest.

use super::*;

#[test]
fn divisors_and_powers_are_ascending() {
    assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
    assert_eq!(powers_of_two_up_to(8), vec![1, 2, 4, 8]);
    assert_eq!(powers_of_two_up_to(6), vec![1, 2, 4]);
    assert_eq!(powers_of_two_up_to(0), Vec::<u32>::new());
}

#[test]
fn tuples_follow_the_documented_order() {
    let space = SweepSpace {
        max_microbatch: 1,
        max_chunks: 2,
        ..SweepSpace::new("tiny", "dgx-a100", 2, 8)
    };
    let labels: Vec<String> = space.tuples(8, 4).iter().map(Candidate::label).collect();
    // (t, p) ∈ {(1,1), (1,2), (2,1)} × b = 1 × {gpipe, 1f1b, interleaved v=2} × 2 recompute.
    assert_eq!(labels.len(), 3 * 3 * 2);
    assert_eq!(labels[0], "t=1 p=1 d=2 b=1 gpipe recompute=none");
    assert_eq!(labels[1], "t=1 p=1 d=2 b=1 gpipe recompute=full");
    assert_eq!(labels[4], "t=1 p=1 d=2 b=1 interleaved v=2 recompute=none");
    assert_eq!(labels[6], "t=1 p=2 d=1 b=1 gpipe recompute=none");
}

#[test]
fn cp_zero_stages_and_precisions_nest_as_documented() {
    let space = SweepSpace {
        max_microbatch: 1,
        schedules: vec![ScheduleKind::OneFOneB],
        recompute: vec![Recompute::None],
        context_parallel: vec![1, 2],
        zero_stages: vec![1, 3],
        precisions: vec![Precision::Bf16, Precision::Fp8],
        ..SweepSpace::new("tiny", "dgx-h100-superpod", 4, 8)
    };
    let labels: Vec<String> = space.tuples(8, 4).iter().map(Candidate::label).collect();
    // cp = 1: (t, p) ∈ {(1,1), (1,2), (1,4)}, then cp = 2: p ∈ {1, 2}; × 2 stages × 2 precisions.
    let zero_and_precision = [
        "zero_stage=1 precision=bf16",
        "zero_stage=1 precision=fp8",
        "zero_stage=3 precision=bf16",
        "zero_stage=3 precision=fp8",
    ];
    for (i, tail) in zero_and_precision.iter().enumerate() {
        assert_eq!(
            labels[i],
            format!("t=1 p=1 d=4 b=1 1f1b recompute=none {tail}")
        );
    }
    assert_eq!(
        labels[12],
        "t=1 cp=2 p=1 d=2 b=1 1f1b recompute=none zero_stage=1 precision=bf16"
    );
    assert_eq!(
        labels[16],
        "t=1 cp=2 p=2 d=1 b=1 1f1b recompute=none zero_stage=1 precision=bf16"
    );
    assert_eq!(
        labels[20],
        "t=2 p=1 d=2 b=1 1f1b recompute=none zero_stage=1 precision=bf16"
    );
    // 9 (t, cp, p) × 4: t = 4 has no cp = 2 (4/4 = 1).
    assert_eq!(labels.len(), 36);
}

#[test]
fn no_more_chunks_than_the_model_has_layers_are_tried() {
    let space = SweepSpace {
        max_microbatch: 1,
        max_chunks: u32::MAX,
        schedules: vec![ScheduleKind::Interleaved],
        ..SweepSpace::new("tiny", "dgx-a100", 2, 8)
    };
    let tuples = space.tuples(8, 4);
    // (t, p) ∈ {(1,1), (1,2), (2,1)} × v ∈ {2, 3, 4} × 2 recompute.
    assert_eq!(tuples.len(), 3 * 3 * 2);
    assert!(tuples.iter().all(|c| c.chunks <= 4));
}
