//! A slow rank in a pipeline with uniform costs (issue 35): the iteration
//! slows by exactly what the schedule's critical path predicts; so does a
//! spread of GPU speeds, every stage at its own.

use sim::rank_spread::RankSpread;
use sim::scenario::ScheduleKind;
use sim::straggler::{SlowRank, Stragglers};
use tests::bubble::pass_costs;

/// The makespan of 1F1B over p stages and m microbatches, F and B per pass,
/// transfers free, with `slow` = Some((stage, f)) stretching one stage's rank.
fn makespan(p: u32, m: u32, f_ns: u64, b_ns: u64, slow: Option<(u32, f64)>) -> u64 {
    let stragglers = match slow {
        // t = 1, d = 1: stage s is rank s.
        Some((stage, factor)) => Stragglers::new(
            vec![SlowRank {
                rank: stage,
                factor,
            }],
            p,
        )
        .unwrap(),
        None => Stragglers::none(),
    };
    makespan_with(p, m, f_ns, b_ns, &stragglers)
}

/// [`makespan`] with any `stragglers`.
fn makespan_with(p: u32, m: u32, f_ns: u64, b_ns: u64, stragglers: &Stragglers) -> u64 {
    let scenario = tests::small_scenario(ScheduleKind::OneFOneB, 1, p, 1, 1, m);
    let (_, graph) = sim::build_graph(&scenario);
    let costs = pass_costs(&graph, [f_ns, b_ns, 0, 0], 0);
    let (timeline, _) =
        sim::run_graph_with_stragglers(&scenario, &graph, &costs, stragglers).unwrap();
    timeline.makespan_ns()
}

/// The critical path of a 1F1B schedule, computed from its action lists
/// alone (not from the simulator's task graph): each stage runs its actions
/// in order; a forward waits for the previous stage's forward of the same
/// microbatch, a backward for the next stage's backward (the last stage's
/// for its own forward). Stage s's passes take `factor_of(s)` × F and × B,
/// rounded up to whole nanoseconds.
fn critical_path_ns(
    schedule: &sim::schedule::PipelineSchedule,
    f_ns: u64,
    b_ns: u64,
    factor_of: impl Fn(u32) -> f64,
) -> u64 {
    use sim::schedule::Pass;
    use std::collections::BTreeMap;
    let stretch = |stage: u32, ns: u64| match factor_of(stage) {
        1.0 => ns,
        factor => (ns as f64 * factor).ceil() as u64,
    };
    let stages = schedule.actions.len();
    let mut next = vec![0usize; stages];
    let mut free_at = vec![0u64; stages];
    let mut done: BTreeMap<(u32, bool, u32), u64> = BTreeMap::new();
    let total: usize = schedule.actions.iter().map(Vec::len).sum();
    while done.len() < total {
        let before = done.len();
        for (stage, actions) in schedule.actions.iter().enumerate() {
            while let Some(action) = actions.get(next[stage]) {
                let forward = action.pass == Pass::Forward;
                let s = action.stage;
                let dependency = match (forward, s) {
                    (true, 0) => Some(0),
                    (true, _) => done.get(&(s - 1, true, action.microbatch)).copied(),
                    (false, _) if s as usize == stages - 1 => {
                        done.get(&(s, true, action.microbatch)).copied()
                    }
                    (false, _) => done.get(&(s + 1, false, action.microbatch)).copied(),
                };
                let Some(ready) = dependency else { break };
                let start = ready.max(free_at[stage]);
                let end = start + stretch(s, if forward { f_ns } else { b_ns });
                free_at[stage] = end;
                done.insert((s, forward, action.microbatch), end);
                next[stage] += 1;
            }
        }
        assert!(done.len() > before, "the schedule cannot progress");
    }
    free_at.into_iter().max().unwrap_or(0)
}

#[test]
fn a_slow_stage_slows_1f1b_by_exactly_what_its_critical_path_predicts() {
    let (f_ns, b_ns) = (1000, 3000);
    for (p, m) in [
        (2, 1),
        (2, 4),
        (4, 1),
        (4, 3),
        (4, 4),
        (4, 8),
        (8, 5),
        (8, 16),
    ] {
        let scenario = tests::small_scenario(ScheduleKind::OneFOneB, 1, p, 1, 1, m);
        let (schedule, _) = sim::build_graph(&scenario);
        let base = makespan(p, m, f_ns, b_ns, None);
        // The uniform 1F1B makespan: (m + p − 1)(F + B).
        assert_eq!(base, u64::from(m + p - 1) * (f_ns + b_ns), "p={p} m={m}");
        for stage in 0..p {
            for factor in [1.25, 2.0, 3.5] {
                let slow = makespan(p, m, f_ns, b_ns, Some((stage, factor)));
                let predicted = critical_path_ns(&schedule, f_ns, b_ns, |s| match s == stage {
                    true => factor,
                    false => 1.0,
                });
                assert_eq!(slow, predicted, "p={p} m={m} stage={stage} f={factor}");
            }
        }
        // The last stage has no warm-up slack: every one of its passes is on the path.
        let last = makespan(p, m, f_ns, b_ns, Some((p - 1, 2.0)));
        assert_eq!(
            last,
            u64::from(p - 1) * (f_ns + b_ns) + u64::from(m) * 2 * (f_ns + b_ns)
        );
    }
}

#[test]
fn no_slow_rank_leaves_the_run_as_priced() {
    assert_eq!(
        makespan(4, 8, 1000, 3000, Some((2, 1.0))),
        makespan(4, 8, 1000, 3000, None)
    );
}

/// `--rank-spread`: every stage at its own drawn speed (and one also slowed
/// by `--slow-rank`, the factors multiplied) slows 1F1B by exactly what the
/// critical path with those factors predicts.
#[test]
fn a_spread_of_gpu_speeds_slows_1f1b_by_exactly_its_critical_path() {
    let (f_ns, b_ns) = (1000, 3000);
    let spread = RankSpread::lognormal(0.1).unwrap();
    for (p, m) in [(2, 4), (4, 4), (4, 8), (8, 16)] {
        let scenario = tests::small_scenario(ScheduleKind::OneFOneB, 1, p, 1, 1, m);
        let (schedule, _) = sim::build_graph(&scenario);
        for seed in 0..4 {
            let drawn = spread.draw(p, seed);
            let alone = Stragglers::none().with_spread(Some(spread), seed, p);
            let predicted = critical_path_ns(&schedule, f_ns, b_ns, |s| drawn.factor(s));
            assert_eq!(
                makespan_with(p, m, f_ns, b_ns, &alone),
                predicted,
                "p={p} m={m} seed={seed}"
            );
            let slow = SlowRank {
                rank: 1,
                factor: 1.5,
            };
            let with_slow =
                Stragglers::new(vec![slow], p)
                    .unwrap()
                    .with_spread(Some(spread), seed, p);
            let predicted = critical_path_ns(&schedule, f_ns, b_ns, |s| match s {
                1 => drawn.factor(s) * 1.5,
                _ => drawn.factor(s),
            });
            assert_eq!(
                makespan_with(p, m, f_ns, b_ns, &with_slow),
                predicted,
                "p={p} m={m} seed={seed}, rank 1 also ×1.5"
            );
        }
    }
}
