//! The sweep's dimensions beyond the layout of 2021 — context parallelism,
//! ZeRO stages and precisions: a hand-counted enumeration on an H100
//! cluster, ranking by simulated time, byte-exact shard merges with cp in
//! the space, and sweeps that do not vary them writing what they wrote before.

use super::*;
use sim::scenario::{Precision, Recompute, ScheduleKind, ZeroStage};
use std::collections::BTreeMap;

/// tiny on 4 GPUs of an H100 SuperPOD: cp ∈ {1, 2}, ZeRO stage ∈ {1, 3},
/// precision ∈ {bf16, fp8}; b = 1, 1F1B, no recompute.
fn space() -> SweepSpace {
    SweepSpace {
        max_microbatch: 1,
        schedules: vec![ScheduleKind::OneFOneB],
        recompute: vec![Recompute::None],
        context_parallel: vec![1, 2],
        zero_stages: vec![1, 3],
        precisions: vec![Precision::Bf16, Precision::Fp8],
        ..SweepSpace::new("tiny", "dgx-h100-superpod", 4, 8)
    }
}

fn sweep(space: &SweepSpace, shard: Option<Shard>) -> SweepOutput {
    let enumeration = enumerate(space).unwrap();
    let candidates = match shard {
        Some(shard) => shard.select(&enumeration.candidates),
        None => enumeration.candidates.clone(),
    };
    let outcome = run_candidates(&candidates, MemoryRule::of(space), &|_, _| {}).unwrap();
    SweepOutput::new(space, &enumeration, shard, outcome)
}

#[test]
fn cp_zero_stage_and_precision_enumerate_the_hand_counted_tuples() {
    // tiny: 4 layers, 8 heads, ffn 2048, vocab 51200, seq_len 256;
    // dgx-h100-superpod: 8 H100s per node. N = 4, B = 8.
    // (t, cp, p, d) with t·cp·p·d = 4, in generation order (t, then cp, then p):
    //   t=1 cp=1: p ∈ {1, 2, 4}   t=1 cp=2: p ∈ {1, 2}
    //   t=2 cp=1: p ∈ {1, 2}      t=2 cp=2: p = 1
    //   t=4 cp=1: p = 1           t=4 cp=2: none (4/4 = 1 is not a multiple of 2)
    //   = 9 layouts × 2 ZeRO stages × 2 precisions = 36 tuples.
    // Every one is valid: t ∈ {1, 2, 4} divides 8 heads, ffn 2048, vocab
    // 51200 and the node of 8; t·cp ∈ {2, 4} divides the node; p divides the
    // 4 layers; 256 is divisible by 2·cp = 4; d ∈ {1, 2, 4} divides B = 8;
    // ZeRO-3 shards over the d·cp ranks; the H100 has FP8 tensor cores.
    let layouts: [(u32, u32, u32, u32); 9] = [
        (1, 1, 1, 4),
        (1, 1, 2, 2),
        (1, 1, 4, 1),
        (1, 2, 1, 2),
        (1, 2, 2, 1),
        (2, 1, 1, 2),
        (2, 1, 2, 1),
        (2, 2, 1, 1),
        (4, 1, 1, 1),
    ];
    let mut expected = Vec::new();
    for (t, cp, p, d) in layouts {
        for zero_stage in [1, 3] {
            for precision in [Precision::Bf16, Precision::Fp8] {
                expected.push((t, cp, p, d, zero_stage, precision));
            }
        }
    }
    assert_eq!(expected.len(), 36);
    let enumeration = enumerate(&space()).unwrap();
    assert_eq!(enumeration.examined, 36);
    assert_eq!(enumeration.rejected(), 0);
    assert_eq!(enumeration.rejections, BTreeMap::new());
    let listed: Vec<_> = enumeration
        .candidates
        .iter()
        .map(|c| {
            let l = c.candidate;
            let (zero, precision) = (l.zero_stage.unwrap(), l.precision.unwrap());
            (
                l.tensor_parallel,
                l.context_parallel,
                l.pipeline_parallel,
                l.data_parallel,
                zero,
                precision,
            )
        })
        .collect();
    assert_eq!(listed, expected);
    // Each tuple's scenario runs with its own cp, ZeRO stage and precision.
    for valid in &enumeration.candidates {
        let (l, s) = (valid.candidate, &valid.scenario);
        assert_eq!(s.layout.context_parallel.get(), l.context_parallel);
        assert_eq!(s.options.precision, l.precision.unwrap());
        let sharding = match l.zero_stage.unwrap() {
            1 => ZeroStage::Optimizer,
            _ => ZeroStage::Full,
        };
        assert_eq!(s.options.sharding, sharding);
    }
}

#[test]
fn layouts_with_the_new_dimensions_are_ranked_by_simulated_time() {
    let output = sweep(&space(), None);
    // tiny fits in 80 GB everywhere: every valid layout is simulated.
    assert_eq!(output.counts.simulated, 36);
    assert!(output.dropped.is_empty());
    for pair in output.results.windows(2) {
        let key = |r: &SweepRecord| (r.iteration_time_ns, r.index);
        assert!(key(&pair[0]) < key(&pair[1]));
    }
    // The ranking key is the makespan of the layout's own simulation.
    let space = space();
    for record in [&output.results[0], output.results.last().unwrap()] {
        let scenario = space.scenario_file(&record.layout).resolve().unwrap();
        let report = sim::simulate(&scenario).unwrap();
        assert_eq!(record.iteration_time_ns, report.timeline().makespan_ns());
        assert_eq!(report.makespan_ns(), report.timeline().makespan_ns());
    }
    // The layouts differ in cp and precision somewhere in the ranking.
    assert!(output
        .results
        .iter()
        .any(|r| r.layout.context_parallel == 2));
    assert!(output
        .results
        .iter()
        .any(|r| r.layout.precision == Some(Precision::Fp8)));
    let sentence = explain_best(&output.results).unwrap();
    assert!(sentence.contains("precision="), "{sentence}");
    let csv = output.to_csv_string();
    assert!(csv.starts_with(
        "rank,index,status,tp,cp,pp,dp,chunks,microbatch_size,microbatches,schedule,recompute,zero_stage,precision,samples_per_s,"
    ));
    assert_eq!(csv.lines().count(), 37);
    let best = &output.results[0].layout;
    let row = csv.lines().nth(1).unwrap();
    let fields: Vec<&str> = row.split(',').collect();
    assert_eq!(fields[4], best.context_parallel.to_string());
    assert_eq!(fields[12], best.zero_stage.unwrap().to_string());
    assert_eq!(fields[13], best.precision.unwrap().name());
}

#[test]
fn shards_of_a_sweep_over_cp_merge_into_the_unsharded_bytes() {
    let space = SweepSpace {
        max_microbatch: 2,
        max_chunks: 2,
        context_parallel: vec![1, 2, 4],
        recompute: vec![Recompute::None, Recompute::Full],
        ..SweepSpace::new("tiny", "dgx-h100-superpod", 8, 16)
    };
    let whole = sweep(&space, None).to_json_string();
    assert!(
        whole.contains("\"context_parallel\": 4"),
        "cp = 4 layouts are valid"
    );
    for count in [1, 3, 5] {
        let mut shards: Vec<SweepOutput> = (0..count)
            .rev()
            .map(|index| {
                let text = sweep(&space, Some(Shard { index, count })).to_json_string();
                serde_json::from_str(&text).unwrap()
            })
            .collect();
        shards.rotate_left(1);
        let merged = merge(shards).unwrap().to_json_string();
        assert!(merged == whole, "merge of {count} shards differs");
    }
    // A shard of another cp list is another sweep.
    let other = SweepSpace {
        context_parallel: vec![1, 2],
        ..space.clone()
    };
    let text = merge(vec![
        sweep(&space, Some(Shard { index: 0, count: 2 })),
        sweep(&other, Some(Shard { index: 1, count: 2 })),
    ])
    .unwrap_err()
    .to_string();
    assert!(text.contains("different sweep"), "{text}");
}

#[test]
fn sweeps_that_do_not_vary_them_write_no_new_keys() {
    let plain = SweepSpace::new("tiny", "dgx-a100", 8, 16);
    let header = serde_json::to_string(&plain).unwrap();
    for key in ["context_parallel", "zero_stages", "precisions"] {
        assert!(!header.contains(key), "{header}");
    }
    // Documents written before the new keys read as cp = {1}, nothing varied.
    let read: SweepSpace = serde_json::from_str(&header).unwrap();
    assert_eq!(read, plain);
    assert_eq!(read.context_parallel, vec![1]);
    let output = sweep(
        &SweepSpace {
            max_microbatch: 1,
            max_chunks: 2,
            ..plain
        },
        None,
    );
    let text = output.to_json_string();
    for key in ["context_parallel", "zero_stage", "precision"] {
        assert!(!text.contains(key), "{key}");
    }
    assert!(output.to_csv_string().starts_with(
        "rank,index,status,tp,pp,dp,chunks,microbatch_size,microbatches,schedule,recompute,samples_per_s,"
    ));
    // One value in a list is the shared option; several clear it.
    let single = SweepSpace {
        zero_stages: vec![3, 3],
        precisions: vec![Precision::Bf16],
        context_parallel: vec![1, 1],
        ..SweepSpace::new("tiny", "dgx-h100-superpod", 8, 16)
    }
    .normalized();
    assert!(single.zero_stages.is_empty() && single.precisions.is_empty());
    assert_eq!(single.options.zero_stage, Some(3));
    assert_eq!(single.options.precision, Some(Precision::Bf16));
    assert!(!single.varies_context_parallel());
    let several = SweepSpace {
        zero_stages: vec![3, 0, 1],
        options: sim::scenario::TrainingOptionsFile {
            zero_stage: Some(2),
            ..Default::default()
        },
        ..SweepSpace::new("tiny", "dgx-h100-superpod", 8, 16)
    }
    .normalized();
    assert_eq!(several.zero_stages, vec![0, 1, 3]);
    assert_eq!(several.options.zero_stage, None);
}

#[test]
fn cp_lists_that_cannot_generate_tuples_are_refused_by_name() {
    for (list, message) in [
        (vec![], "at least one context-parallel degree"),
        (vec![0, 2], "at least 1"),
    ] {
        let error = enumerate(&SweepSpace {
            context_parallel: list,
            ..SweepSpace::new("tiny", "dgx-h100-superpod", 8, 16)
        })
        .unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("cp: ") && text.contains(message), "{text}");
    }
    // cp = 3 divides no N/t of 8 GPUs: nothing to examine, and the error says cp.
    let error = enumerate(&SweepSpace {
        context_parallel: vec![3],
        ..SweepSpace::new("tiny", "dgx-h100-superpod", 8, 16)
    })
    .unwrap_err();
    assert!(error.to_string().contains("--cp"), "{error}");
    // Invalid values inside the lists are resolve()'s: ZeRO stage 5 and fp8
    // on an A100 are rejections, under their fields.
    let enumeration = enumerate(&SweepSpace {
        zero_stages: vec![1, 5],
        precisions: vec![Precision::Bf16, Precision::Fp8],
        ..SweepSpace::new("tiny", "dgx-a100", 8, 16)
    })
    .unwrap();
    assert!(enumeration.candidates.iter().all(|c| {
        c.candidate.zero_stage == Some(1) && c.candidate.precision == Some(Precision::Bf16)
    }));
    assert!(enumeration.rejections.contains_key("zero_stage"));
    assert!(enumeration.rejections.contains_key("precision"));
}

#[test]
fn ep_enumerates_with_every_layout_and_resolve_decides_validity() {
    // Mixtral 8x7B (8 experts, 32 layers) on 16 GPUs, t = 1, ep ∈ {1,2,3,4,8}:
    // p ∈ {1,2,4,8,16}, d = 16/p; ep is valid where it divides d and 8:
    // d=16: 1,2,4,8; d=8: 1,2,4,8; d=4: 1,2,4; d=2: 1,2; d=1: 1 → 14 of 25.
    let space = SweepSpace {
        max_microbatch: 1,
        schedules: vec![ScheduleKind::OneFOneB],
        recompute: vec![Recompute::Full],
        tensor_parallel: Some(1),
        expert_parallel: vec![8, 1, 2, 3, 4],
        ignore_memory: true,
        ..SweepSpace::new("mixtral-8x7b", "dgx-h100-superpod", 16, 16)
    }
    .normalized();
    assert!(space.varies_expert_parallel());
    let enumeration = enumerate(&space).unwrap();
    assert_eq!(enumeration.examined, 25);
    assert_eq!(enumeration.candidates.len(), 14);
    // Problems, not tuples: each ep = 3 tuple fails both rules (8 experts,
    // d a power of two): 5 × 2, plus the 6 tuples whose d is below ep.
    assert_eq!(enumeration.rejections.get("ep"), Some(&16));
    let first = &enumeration.candidates[3];
    assert_eq!(
        first.candidate.label(),
        "t=1 ep=8 p=1 d=16 b=1 1f1b recompute=full"
    );
    assert_eq!(first.scenario.layout.expert_parallel.get(), 8);
    // The header names the list; a sweep without it writes nothing new.
    let header = serde_json::to_string(&space).unwrap();
    assert!(
        header.contains("\"expert_parallel\":[1,2,3,4,8]"),
        "{header}"
    );
    let plain = serde_json::to_string(&SweepSpace::new("tiny", "selene", 8, 8)).unwrap();
    assert!(!plain.contains("expert_parallel"), "{plain}");
}

/// Llama 3 70B on 64 H100s, B = 128, 1F1B at b = 1: with Adam's 12 bytes
/// of state per parameter some layouts do not fit that 8-bit Adam's ~6
/// bytes let through; each layout runs once with each optimizer, the
/// optimizer in its record, its label and a CSV column.
#[test]
fn smaller_optimizer_states_fit_layouts_adam_cannot() {
    use sim::scenario::Optimizer;
    let space = SweepSpace {
        max_microbatch: 1,
        schedules: vec![ScheduleKind::OneFOneB],
        recompute: vec![Recompute::None],
        optimizers: vec![Optimizer::Adam8bit, Optimizer::Adam],
        ..SweepSpace::new("llama3-70b", "dgx-h100-superpod", 64, 128)
    }
    .normalized();
    assert_eq!(space.optimizers, vec![Optimizer::Adam, Optimizer::Adam8bit]);
    let output = sweep(&space, None);
    let simulated = |optimizer: Optimizer| -> Vec<Candidate> {
        output
            .results
            .iter()
            .map(|r| r.layout)
            .filter(|l| l.optimizer == Some(optimizer))
            .collect()
    };
    let (adam, eight_bit) = (simulated(Optimizer::Adam), simulated(Optimizer::Adam8bit));
    // Every layout that fits with Adam fits with 8-bit Adam, and more do.
    for layout in &adam {
        let same = Candidate {
            optimizer: Some(Optimizer::Adam8bit),
            ..*layout
        };
        assert!(eight_bit.contains(&same), "{}", layout.label());
    }
    assert!(
        eight_bit.len() > adam.len(),
        "{} vs {}",
        eight_bit.len(),
        adam.len()
    );
    let best = &output.results[0].layout;
    assert_eq!(
        best.optimizer,
        Some(Optimizer::Adam8bit),
        "{}",
        best.label()
    );
    assert!(!adam.iter().any(|l| Candidate {
        optimizer: Some(Optimizer::Adam8bit),
        ..*l
    } == *best));
    assert!(
        best.label().ends_with(" optimizer=adam8bit"),
        "{}",
        best.label()
    );
    let csv = output.to_csv_string();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|&c| c == "optimizer").unwrap();
    assert_eq!(header[column - 1], "recompute");
    let first_row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(first_row[column], "adam8bit");
    let json: serde_json::Value = serde_json::from_str(&output.to_json_string()).unwrap();
    assert_eq!(
        json["sweep"]["optimizers"],
        serde_json::json!(["adam", "adam8bit"])
    );
}

/// The same case with Adam alone: keeping the saved activations 2× smaller
/// (`activation_compression`, a shared option) lets layouts fit that do not
/// without it, and every layout that fits without it still fits.
#[test]
fn compressed_activations_fit_layouts_adam_alone_cannot() {
    let space = |ratio: Option<f64>| {
        let mut space = SweepSpace {
            max_microbatch: 1,
            schedules: vec![ScheduleKind::OneFOneB],
            ..SweepSpace::new("llama3-70b", "dgx-h100-superpod", 64, 128)
        };
        space.options.activation_compression =
            ratio.map(|r| sim::scenario::CompressionRatio::new(r).unwrap());
        space.normalized()
    };
    let layouts = |ratio| -> Vec<Candidate> {
        sweep(&space(ratio), None)
            .results
            .iter()
            .map(|r| r.layout)
            .collect()
    };
    let (plain, compressed) = (layouts(None), layouts(Some(2.0)));
    for layout in &plain {
        assert!(compressed.contains(layout), "{}", layout.label());
    }
    assert!(
        compressed.len() > plain.len(),
        "{} vs {}",
        compressed.len(),
        plain.len()
    );
}
