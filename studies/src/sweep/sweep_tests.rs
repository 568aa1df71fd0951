//! Whole sweeps on the tiny model: sharded runs merged equal the unsharded
//! run byte for byte, results do not depend on thread count or repetition,
//! and the memory model drops layouts with the right reason.

use super::*;
use sim::scenario::ScheduleKind;

fn space() -> SweepSpace {
    SweepSpace {
        max_microbatch: 4,
        max_chunks: 4,
        ..SweepSpace::new("tiny", "dgx-a100", 8, 16)
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
fn merged_shards_equal_the_unsharded_sweep_byte_for_byte() {
    let space = space();
    let whole = sweep(&space, None).to_json_string();
    for count in [1, 3, 7] {
        // Shards pass through their JSON text, as they do between Slurm jobs, in scrambled order.
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
}

#[test]
fn merge_rejects_incomplete_duplicate_and_foreign_shards() {
    let space = space();
    let shard = |index, count| sweep(&space, Some(Shard { index, count }));
    let text = merge(vec![shard(0, 3), shard(2, 3)])
        .unwrap_err()
        .to_string();
    assert!(text.contains("exactly once"), "{text}");
    let text = merge(vec![shard(0, 2), shard(0, 2)])
        .unwrap_err()
        .to_string();
    assert!(text.contains("exactly once"), "{text}");
    let other = SweepSpace {
        global_batch: 32,
        ..space.clone()
    };
    let text = merge(vec![
        shard(0, 2),
        sweep(&other, Some(Shard { index: 1, count: 2 })),
    ])
    .unwrap_err()
    .to_string();
    assert!(text.contains("different sweep"), "{text}");
    let text = merge(vec![sweep(&space, None)]).unwrap_err().to_string();
    assert!(text.contains("not a shard"), "{text}");
}

#[test]
fn results_do_not_depend_on_threads_or_repetition() {
    let space = space();
    let run_with = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| sweep(&space, None).to_json_string())
    };
    let one = run_with(1);
    assert_eq!(one, run_with(4));
    assert_eq!(one, run_with(4));
    let csv = sweep(&space, None).to_csv_string();
    assert_eq!(csv, sweep(&space, None).to_csv_string());
}

#[test]
fn results_are_ranked_by_iteration_time_then_index() {
    let output = sweep(&space(), None);
    assert_eq!(output.counts.simulated, output.results.len());
    assert_eq!(
        output.counts.valid,
        output.results.len() + output.dropped.len()
    );
    for pair in output.results.windows(2) {
        let key = |r: &SweepRecord| (r.iteration_time_ns, r.index);
        assert!(key(&pair[0]) < key(&pair[1]));
        assert!(pair[0].samples_per_s >= pair[1].samples_per_s);
    }
    let sentence = explain_best(&output.results).unwrap();
    assert!(sentence.starts_with("Best: "), "{sentence}");
    assert!(sentence.contains("ahead of the runner-up"), "{sentence}");
    let csv = output.to_csv_string();
    assert_eq!(csv.lines().count(), 1 + output.counts.valid);
    assert!(csv.lines().nth(1).unwrap().starts_with("1,"));
}

#[test]
fn layouts_that_do_not_fit_are_dropped_with_their_reason() {
    // GPT-3 175B on 8 GPUs: 175e9 × 16 B / 8 ≈ 350 GB of model states per GPU.
    let space = SweepSpace {
        schedules: vec![ScheduleKind::OneFOneB],
        ..SweepSpace::new("gpt3-175b", "dgx-a100", 8, 8)
    };
    let enumeration = enumerate(&space).unwrap();
    let dropped: Vec<DroppedRecord> = enumeration
        .candidates
        .iter()
        .filter_map(|c| run::check_memory(c, 0))
        .collect();
    assert_eq!(dropped.len(), enumeration.candidates.len());
    assert!(dropped
        .iter()
        .all(|d| d.reason == DropReason::ModelStatesExceedMemory
            && d.peak_memory_bytes > d.memory_capacity_bytes));
    // GPT 22B on 8 GPUs with t = 8: 44 GB of states fit; b = 8 without recompute does not.
    let space = SweepSpace {
        schedules: vec![ScheduleKind::OneFOneB],
        tensor_parallel: Some(8),
        ..SweepSpace::new("gpt-22b", "dgx-a100", 8, 8)
    };
    let enumeration = enumerate(&space).unwrap();
    let reasons: Vec<DropReason> = enumeration
        .candidates
        .iter()
        .filter_map(|c| run::check_memory(c, 0))
        .map(|d| d.reason)
        .collect();
    assert!(reasons.contains(&DropReason::ActivationsExceedMemory));
    assert!(reasons.len() < enumeration.candidates.len(), "some fit");
}

#[test]
fn ignore_memory_simulates_layouts_that_do_not_fit_and_flags_them() {
    let space = SweepSpace {
        schedules: vec![ScheduleKind::OneFOneB],
        tensor_parallel: Some(8),
        max_microbatch: 1,
        ignore_memory: true,
        ..SweepSpace::new("gpt3-175b", "dgx-a100", 8, 8)
    };
    let output = sweep(&space, None);
    assert!(output.dropped.is_empty());
    assert_eq!(output.counts.simulated, output.counts.valid);
    assert!(output.results.iter().all(|r| !r.fits_in_memory));
}

#[test]
fn shared_options_reach_every_layout_and_mark_the_sweep() {
    let plain = space();
    let with_options = SweepSpace {
        options: sim::scenario::TrainingOptionsFile {
            sequence_parallel: Some(true),
            ..Default::default()
        },
        recompute: vec![sim::scenario::Recompute::Selective],
        ..space()
    };
    let every_file_has_sequence_parallelism = enumerate(&with_options)
        .unwrap()
        .candidates
        .iter()
        .all(|c| {
            with_options
                .scenario_file(&c.candidate)
                .options
                .sequence_parallel
                == Some(true)
        });
    assert!(every_file_has_sequence_parallelism);
    // Sequence parallelism and selective recompute store fewer activation bytes.
    let peak = |output: &SweepOutput| -> u64 {
        output
            .results
            .iter()
            .map(|r| r.peak_memory_bytes)
            .max()
            .unwrap()
    };
    let (a, b) = (sweep(&plain, None), sweep(&with_options, None));
    assert!(peak(&b) < peak(&a), "{} vs {}", peak(&b), peak(&a));
    // A shard of one sweep does not merge with a shard of the other.
    let text = merge(vec![
        sweep(&plain, Some(Shard { index: 0, count: 2 })),
        sweep(&with_options, Some(Shard { index: 1, count: 2 })),
    ])
    .unwrap_err()
    .to_string();
    assert!(text.contains("different sweep"), "{text}");
    // The header names the options only when they are on.
    assert!(!serde_json::to_string(&plain)
        .unwrap()
        .contains("sequence_parallel"));
    assert!(serde_json::to_string(&with_options)
        .unwrap()
        .contains("\"sequence_parallel\":true"));
}

#[test]
fn zb_h1_beats_one_f_one_b_on_every_pipelined_layout() {
    let space = SweepSpace {
        schedules: vec![ScheduleKind::OneFOneB, ScheduleKind::ZbH1],
        recompute: vec![sim::scenario::Recompute::None],
        ..space()
    };
    let output = sweep(&space, None);
    let key = |r: &SweepRecord| {
        let l = &r.layout;
        (
            l.tensor_parallel,
            l.pipeline_parallel,
            l.data_parallel,
            l.microbatch_size,
        )
    };
    let mut compared = 0;
    for zb in output
        .results
        .iter()
        .filter(|r| r.layout.schedule == ScheduleKind::ZbH1 && r.layout.pipeline_parallel > 1)
    {
        let one_f = output
            .results
            .iter()
            .find(|r| r.layout.schedule == ScheduleKind::OneFOneB && key(r) == key(zb))
            .expect("the same layout under 1F1B");
        // The same compute, split (each pass rounded up to a whole ns on its
        // own): only the bubble shrinks.
        assert!((zb.compute_time_s - one_f.compute_time_s).abs() < 1e-6);
        assert!(zb.samples_per_s > one_f.samples_per_s, "{:?}", key(zb));
        assert!(zb.bubble_fraction < one_f.bubble_fraction);
        compared += 1;
    }
    assert!(compared >= 3, "{compared} pipelined layouts");
}

#[test]
fn symmetric_and_fully_expanded_sweeps_give_the_same_records_and_ranking() {
    for space in [
        space(),
        SweepSpace {
            max_microbatch: 2,
            max_chunks: 2,
            ignore_memory: true,
            ..SweepSpace::new("gpt2-1b", "selene", 64, 128)
        },
    ] {
        let enumeration = enumerate(&space).unwrap();
        let candidates = enumeration.candidates.clone();
        let run = |expansion| {
            let mut outcome =
                run_candidates_with(&candidates, MemoryRule::of(&space), expansion, &|_, _| {})
                    .unwrap();
            ranking::rank(&mut outcome.results);
            outcome
        };
        let (auto, full) = (run(sim::Expansion::Auto), run(sim::Expansion::Full));
        assert!(full.results.len() >= 8, "{}", full.results.len());
        assert_eq!(auto, full);
        let symmetric = candidates
            .iter()
            .filter(|c| sim::symmetry::symmetric_replicas(&c.scenario).is_ok())
            .count();
        assert!(
            symmetric * 2 >= candidates.len(),
            "{symmetric} of {}",
            candidates.len()
        );
    }
}
