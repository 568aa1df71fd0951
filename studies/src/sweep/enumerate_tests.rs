//! Enumeration against a hand count and against brute force through
//! `resolve()`: the enumerator keeps nothing invalid and drops nothing valid.

use super::*;
use sim::scenario::{Precision, Recompute, ScheduleKind};
use std::collections::BTreeSet;

/// Brute force: every (t, cp, p, d) in 1..=N⁴ with cp from the space's
/// list, every b in 1..=max_b, every schedule, every v in 1..=max_chunks,
/// every recompute mode, ZeRO stage and precision of the space; keep what
/// the sweep's rules allow (t·cp·p·d = N, b a power of two, t within a node
/// unless allowed, fixed t/p) and `resolve()` accepts.
fn brute_force(space: &SweepSpace, gpus_per_node: u32) -> BTreeSet<Candidate> {
    let n = space.gpus;
    let mut zero_stages: Vec<Option<u8>> = space.zero_stages.iter().copied().map(Some).collect();
    let mut precisions: Vec<Option<Precision>> =
        space.precisions.iter().copied().map(Some).collect();
    if zero_stages.is_empty() {
        zero_stages.push(None);
    }
    if precisions.is_empty() {
        precisions.push(None);
    }
    let mut layouts = Vec::new();
    for t in 1..=n {
        for &cp in &space.context_parallel {
            for p in 1..=n {
                for d in 1..=n {
                    let within_rules = u64::from(t * p * d) * u64::from(cp) == u64::from(n)
                        && (t <= gpus_per_node || space.allow_cross_node_tp)
                        && space.tensor_parallel.is_none_or(|x| x == t)
                        && space.pipeline_parallel.is_none_or(|x| x == p);
                    if within_rules {
                        layouts.push((t, cp, p, d));
                    }
                }
            }
        }
    }
    let mut valid = BTreeSet::new();
    for (t, cp, p, d) in layouts {
        for b in (1..=space.max_microbatch).filter(|b| b.is_power_of_two()) {
            for schedule in [
                ScheduleKind::Gpipe,
                ScheduleKind::OneFOneB,
                ScheduleKind::Interleaved,
            ] {
                for v in 1..=space.max_chunks {
                    for recompute in [Recompute::None, Recompute::Full] {
                        for &zero_stage in &zero_stages {
                            for &precision in &precisions {
                                let candidate = Candidate {
                                    tensor_parallel: t,
                                    context_parallel: cp,
                                    expert_parallel: 1,
                                    expert_tensor_parallel: None,
                                    pipeline_parallel: p,
                                    data_parallel: d,
                                    chunks: v,
                                    microbatch_size: b,
                                    schedule,
                                    recompute,
                                    zero_stage,
                                    precision,
                                    optimizer: None,
                                    microbatch_group_size: None,
                                };
                                if space.scenario_file(&candidate).resolve().is_ok() {
                                    valid.insert(candidate);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    valid
}

fn enumerated(space: &SweepSpace) -> Vec<Candidate> {
    enumerate(space)
        .unwrap()
        .candidates
        .iter()
        .map(|c| c.candidate)
        .collect()
}

#[test]
fn tiny_model_on_eight_gpus_has_the_hand_counted_84_layouts() {
    // tiny: 4 layers, 8 heads, ffn 2048, vocab 51200; dgx-a100: one node of 8.
    // N = 8, B = 16, b ∈ {1, 2}, v ≤ 4.
    // (t, p, d) with t·p·d = 8: t ∈ {1, 2, 4, 8} all divide heads/ffn/vocab
    // and the node; p must divide the 4 layers, so p ∈ {1, 2, 4}:
    //   t=1: (1,8) (2,4) (4,2)    t=2: (1,4) (2,2) (4,1)    t=4: (1,2) (2,1)    t=8: (1,1)
    //   = 9 triples (p = 8 fails "layers % p").
    // b ∈ {1, 2}: b·d ≤ 16 always divides B = 16, so 9 × 2 = 18 (t, p, d, b).
    // GPipe and 1F1B: 18 × 2 = 36.
    // Interleaved needs p ≥ 2, v ≥ 2 and 4 % (p·v) = 0, so only p = 2, v = 2;
    //   p = 2 triples: (t=1,d=4) (t=2,d=2) (t=4,d=1); m = 16/(b·d) ∈ {4,8,16} for
    //   b = 1 and {2,4,8} for b = 2, all even (m % p = 0): 3 × 2 = 6.
    // Per recompute mode 36 + 6 = 42; two modes: 84.
    let space = SweepSpace {
        max_microbatch: 2,
        max_chunks: 4,
        ..SweepSpace::new("tiny", "dgx-a100", 8, 16)
    };
    let enumeration = enumerate(&space).unwrap();
    assert_eq!(enumeration.candidates.len(), 84);
    // 4 t × 4 (p over divisors of 8/t, summed: 4+3+2+1 = 10 (t,p)) … the space itself:
    // 10 (t, p) × 2 b × (2 + 3 interleaved v) × 2 recompute = 200 tuples.
    assert_eq!(enumeration.examined, 200);
    assert_eq!(enumeration.rejected(), 116);
    let interleaved = enumeration
        .candidates
        .iter()
        .filter(|c| c.candidate.schedule == ScheduleKind::Interleaved)
        .count();
    assert_eq!(interleaved, 12);
    let indices: Vec<u32> = enumeration.candidates.iter().map(|c| c.index).collect();
    assert_eq!(indices, (0..84).collect::<Vec<u32>>());
}

#[test]
fn enumeration_equals_brute_force_through_resolve() {
    let cases = [
        SweepSpace {
            max_microbatch: 2,
            max_chunks: 4,
            ..SweepSpace::new("tiny", "dgx-a100", 8, 16)
        },
        SweepSpace {
            max_microbatch: 4,
            max_chunks: 4,
            ..SweepSpace::new("tiny", "selene", 16, 24)
        },
        // Cross-node tensor parallelism, a non-power-of-two GPU count.
        SweepSpace {
            max_microbatch: 4,
            max_chunks: 6,
            allow_cross_node_tp: true,
            ..SweepSpace::new("gpt-22b", "selene", 24, 48)
        },
        SweepSpace {
            max_microbatch: 8,
            max_chunks: 3,
            allow_cross_node_tp: true,
            ..SweepSpace::new("gpt-22b", "selene", 32, 64)
        },
        // Today's dimensions: cp, ZeRO stages and precisions on an H100 cluster
        // (cp = 3 divides no N/t here but 6/t; seq_len 256 is not divisible by 2·3).
        SweepSpace {
            max_microbatch: 2,
            max_chunks: 2,
            context_parallel: vec![1, 2, 3, 4],
            zero_stages: vec![0, 1, 2, 3],
            precisions: vec![Precision::Bf16, Precision::Fp8],
            ..SweepSpace::new("tiny", "dgx-h100-superpod", 8, 16)
        },
        SweepSpace {
            max_microbatch: 1,
            max_chunks: 2,
            context_parallel: vec![1, 2, 3],
            zero_stages: vec![1, 3],
            ..SweepSpace::new("tiny", "dgx-h100-superpod", 12, 12)
        },
    ];
    for space in cases {
        let listed = enumerated(&space);
        let unique: BTreeSet<Candidate> = listed.iter().copied().collect();
        assert_eq!(unique.len(), listed.len(), "duplicates for {space:?}");
        let expected = brute_force(&space, 8);
        assert!(!expected.is_empty());
        let missing: Vec<_> = expected.difference(&unique).collect();
        let extra: Vec<_> = unique.difference(&expected).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{} {}: missing {missing:?}, extra {extra:?}",
            super::space::label(&space.model),
            space.gpus
        );
    }
}

#[test]
fn restrictions_and_cross_node_rule_are_applied() {
    let base = SweepSpace::new("gpt-22b", "selene", 32, 64);
    let within = enumerated(&base);
    assert!(within.iter().all(|c| c.tensor_parallel <= 8));
    let across = enumerated(&SweepSpace {
        allow_cross_node_tp: true,
        ..base.clone()
    });
    assert!(across.iter().any(|c| c.tensor_parallel == 16));
    let fixed = enumerated(&SweepSpace {
        tensor_parallel: Some(8),
        schedules: vec![ScheduleKind::Interleaved],
        recompute: vec![Recompute::Full],
        ..base
    });
    assert!(!fixed.is_empty());
    assert!(fixed.iter().all(|c| c.tensor_parallel == 8
        && c.schedule == ScheduleKind::Interleaved
        && c.recompute == Recompute::Full));
}

#[test]
fn unreachable_gpu_counts_and_bad_constraints_are_clear_errors() {
    // 7 GPUs: t ∈ {1, 7}; 7 divides neither 96 heads nor 96 layers, and B = 1536 is not a multiple of 7.
    let error = enumerate(&SweepSpace::new("gpt3-175b", "selene", 7, 1536)).unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, SweepError::NoValidLayout { .. }), "{text}");
    assert!(text.contains("no layout of 7 GPUs"), "{text}");
    assert!(text.contains("global_batch ×"), "{text}");
    let error = enumerate(&SweepSpace::new("gpt3-175b", "selene", 8192, 1536)).unwrap_err();
    assert!(error.to_string().contains("has only 4480 GPUs"), "{error}");
    let error = enumerate(&SweepSpace {
        max_chunks: 0,
        ..SweepSpace::new("tiny", "dgx-a100", 8, 16)
    })
    .unwrap_err();
    assert!(error.to_string().starts_with("max_chunks:"), "{error}");
    let error = enumerate(&SweepSpace::new("no-such-model", "dgx-a100", 8, 16)).unwrap_err();
    assert!(matches!(error, SweepError::Base(_)), "{error}");
}

#[test]
fn options_checked_against_each_layouts_d_and_zero_stage_reject_layouts_not_the_sweep() {
    // HSDP groups of 4 and ZeRO++ over a ZeRO stage list: the base (d = 1,
    // no stage) would refuse them; each layout checks them instead.
    let mut space = SweepSpace::new("tiny", "dgx-a100", 8, 16);
    space.zero_stages = vec![1, 3];
    space.options.shard_group_size = Some(4);
    space.options.zero_quantized_weights = Some(true);
    let enumeration = enumerate(&space).unwrap();
    assert!(!enumeration.candidates.is_empty());
    for valid in &enumeration.candidates {
        assert_eq!(valid.candidate.zero_stage, Some(3));
        assert!(valid.candidate.data_parallel.is_multiple_of(4));
        assert!(valid.scenario.options.zeropp.quantized_weights);
    }
    assert!(enumeration.rejections["zero_quantized_weights"] > 0);
    assert!(enumeration.rejections["shard_group_size"] > 0);
}
