//! The numeric optimum interval against Daly's and Young's estimates.

use goodput::interval::{daly_interval_s, optimal_interval_s, young_interval_s};
use goodput::{evaluate, IntervalChoice};

use crate::fixtures::plan;

#[test]
fn numeric_optimum_agrees_with_daly_where_checkpoints_are_cheap() {
    // C/M from 1e-4 to 1e-2: Daly's expansion is accurate there. Stated
    // tolerances: Daly within 0.5 % of the numeric optimum; Young within
    // √(C/2M) (its first neglected term is −⅔·√(C/2M) relative).
    let mtbf_s = 6.0 * 3600.0;
    for ratio in [1e-4, 1e-3, 3e-3, 1e-2] {
        let c = ratio * mtbf_s;
        let lambda = 1.0 / mtbf_s;
        let numeric = optimal_interval_s(lambda, &|_| c, 1.0, 1e9).unwrap();
        let daly = daly_interval_s(c, lambda).unwrap();
        let young = young_interval_s(c, lambda).unwrap();
        let daly_error = (daly / numeric - 1.0).abs();
        let young_error = (young / numeric - 1.0).abs();
        let bound = (c / (2.0 * mtbf_s)).sqrt();
        println!(
            "C/M = {ratio:e}: numeric {numeric:.2} s, Daly {daly:.2} s ({daly_error:.2e}), Young {young:.2} s ({young_error:.2e}, bound {bound:.2e})"
        );
        assert!(daly_error < 5e-3, "Daly {daly_error} at C/M {ratio}");
        assert!(young_error < bound, "Young {young_error} at C/M {ratio}");
        assert!(young > numeric, "Young overestimates the optimum");
    }
}

#[test]
fn the_plans_chosen_interval_is_the_numeric_optimum_rounded_to_iterations() {
    let report = evaluate(&plan()).unwrap();
    let interval = report.interval;
    assert_eq!(interval.choice, "optimal");
    assert!((interval.chosen_s - interval.numeric_optimum_s).abs() <= 5.0 + 1e-9);
    assert_eq!(interval.chosen_s % 5.0, 0.0, "whole iterations of 5 s");
    let daly = interval.daly_s.unwrap();
    assert!(
        (interval.numeric_optimum_s / daly - 1.0).abs() < 5e-3,
        "{interval:?}"
    );
    // The optimum beats its neighbours in the closed form.
    let best = report.expected.wall_clock_s;
    for k in [0.5, 2.0] {
        let mut p = plan();
        p.monte_carlo.trials = 0;
        p.interval = IntervalChoice::EverySeconds(interval.chosen_s * k);
        assert!(evaluate(&p).unwrap().expected.wall_clock_s > best);
    }
}
