//! `--prune` (issue 37, item 4): every layout's lower bound is at most its
//! simulated iteration time, over every schedule and recomputation mode, and
//! the pruned sweep's ranked top k is the exhaustive sweep's.

use super::prune::iteration_lower_bound_ns;
use super::*;
use sim::scenario::{Recompute, ScheduleKind};

/// GPT-22B-class layouts on 64 A100s: every schedule, every recomputation
/// mode, chunks up to 4, microbatches up to 2.
fn space() -> SweepSpace {
    SweepSpace {
        max_microbatch: 2,
        max_chunks: 4,
        schedules: ScheduleKind::ALL.to_vec(),
        recompute: vec![Recompute::None, Recompute::Selective, Recompute::Full],
        ignore_memory: true,
        ..SweepSpace::new("gpt-22b", "dgx-a100:8", 64, 128)
    }
}

/// Mixtral 8x7B on 16 H100s over ep 1, 2 and 8, with asynchronous tensor
/// all-reduces and the ZB and interleaved schedules: expert all-to-alls,
/// host synchronizations and overlapped all-reduces in the passes.
fn moe_space() -> SweepSpace {
    let mut space = SweepSpace {
        max_microbatch: 1,
        max_chunks: 2,
        schedules: vec![
            ScheduleKind::OneFOneB,
            ScheduleKind::Interleaved,
            ScheduleKind::ZbH1,
        ],
        expert_parallel: vec![1, 2, 8],
        ignore_memory: true,
        stack: Some("megatron-core-2024".into()),
        seq_len: Some(1024),
        ..SweepSpace::new("mixtral-8x7b", "dgx-h100-superpod:2", 16, 32)
    };
    space.options.async_tensor_allreduce = Some(true);
    space
}

#[test]
fn every_moe_layout_s_bound_is_at_most_its_simulated_time() {
    let enumeration = enumerate(&moe_space()).unwrap();
    let outcome = run_candidates(&enumeration.candidates, MemoryRule::Ignore, &|_, _| {}).unwrap();
    assert!(
        outcome.results.len() > 10,
        "{} layouts",
        outcome.results.len()
    );
    for record in &outcome.results {
        let candidate = &enumeration.candidates[record.index as usize];
        let bound = iteration_lower_bound_ns(&candidate.scenario);
        assert!(
            0 < bound && bound <= record.iteration_time_ns,
            "{}: bound {bound} ns against the simulated {} ns",
            candidate.candidate.label(),
            record.iteration_time_ns
        );
    }
}

#[test]
fn every_layout_s_bound_is_at_most_its_simulated_time() {
    let enumeration = enumerate(&space()).unwrap();
    let outcome = run_candidates(&enumeration.candidates, MemoryRule::Ignore, &|_, _| {}).unwrap();
    let mut schedules = std::collections::BTreeSet::new();
    let (mut bounded, mut ratio_sum) = (0, 0.0);
    for record in &outcome.results {
        let candidate = &enumeration.candidates[record.index as usize];
        let bound = iteration_lower_bound_ns(&candidate.scenario);
        assert!(
            bound <= record.iteration_time_ns,
            "{}: bound {bound} ns above the simulated {} ns",
            candidate.candidate.label(),
            record.iteration_time_ns
        );
        if bound > 0 {
            bounded += 1;
            ratio_sum += bound as f64 / record.iteration_time_ns as f64;
            schedules.insert(candidate.candidate.schedule);
        }
    }
    assert!(
        outcome.results.len() > 100,
        "{} layouts",
        outcome.results.len()
    );
    // Every schedule but the paired ones gets a bound, and it is not idle:
    // on average most of the simulated time.
    assert!(
        schedules.len() >= ScheduleKind::ALL.len() - 2,
        "{schedules:?}"
    );
    let mean = ratio_sum / bounded as f64;
    assert!(
        mean > 0.6,
        "the bounds average {mean:.3} of the simulated times"
    );
}

#[test]
fn the_pruned_top_k_is_the_exhaustive_top_k() {
    let space = space();
    let enumeration = enumerate(&space).unwrap();
    let full = SweepOutput::new(
        &space,
        &enumeration,
        None,
        run_candidates(&enumeration.candidates, MemoryRule::Ignore, &|_, _| {}).unwrap(),
    );
    for keep in [1, 5, 20] {
        let outcome = run_candidates_pruned(
            &enumeration.candidates,
            MemoryRule::Ignore,
            sim::Expansion::Auto,
            keep,
            &|_, _| {},
        )
        .unwrap();
        let pruned = SweepOutput::new(&space, &enumeration, None, outcome);
        assert_eq!(pruned.results[..keep], full.results[..keep], "top {keep}");
        assert_eq!(
            pruned.counts.simulated + pruned.counts.pruned,
            full.counts.simulated
        );
        assert!(pruned.counts.pruned > 0, "top {keep}: nothing pruned");
        // Every pruned layout is slower than the top k's slowest.
        let kth = full.results[keep - 1].iteration_time_ns;
        for record in &pruned.pruned {
            assert!(record.lower_bound_ns > record.top_k_time_ns);
            let simulated = full
                .results
                .iter()
                .find(|r| r.index == record.index)
                .unwrap();
            assert!(simulated.iteration_time_ns > kth);
        }
        // The document reads back as written.
        let text = pruned.to_json_string();
        assert_eq!(serde_json::from_str::<SweepOutput>(&text).unwrap(), pruned);
    }
}
