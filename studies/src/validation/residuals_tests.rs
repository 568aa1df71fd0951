//! The committed residual table is what the validation files give today,
//! and its ranges cover the validation runs they come from.

use super::*;
use crate::validation::{run_dev_set, vtrain};

const ABOUT: &str = "Measured / predicted iteration time of the validation runs, by regime \
(GPU architecture, stack, precision, dense or MoE, pipelined or one stage): the range simulate \
prints. Generated from validation/dev-set.json, h100-published.json, h100-moe-published.json, \
deepseek-v3-published.json and vtrain-single-node.csv by `CLUSTERSIM_BLESS=1 cargo test --release \
-p studies residuals` (studies/src/validation/residuals.rs); do not edit.";

fn validation_file(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../validation/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

/// Every validation run's residual.
fn every_residual() -> Vec<Residual> {
    let mut residuals = Vec::new();
    for file in [
        "dev-set.json",
        "h100-published.json",
        "h100-moe-published.json",
        "deepseek-v3-published.json",
    ] {
        let rows = run_dev_set(&validation_file(file)).unwrap();
        residuals.extend(of_rows(&rows));
    }
    let runs = vtrain::read_csv(&validation_file("vtrain-single-node.csv")).unwrap();
    residuals.extend(of_vtrain(&vtrain::simulate_runs(
        &runs,
        &sim::scenario::fitted::FitValues::CALIBRATED,
        &|_, _| {},
    )));
    residuals
}

#[test]
fn the_committed_table_is_what_the_validation_files_give() {
    let table = ResidualTable {
        about: ABOUT.into(),
        regimes: summarize(&every_residual()),
    };
    let text = serde_json::to_string_pretty(&table).unwrap() + "\n";
    if std::env::var_os("CLUSTERSIM_BLESS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../validation/residuals.json");
        std::fs::write(path, &text).unwrap();
        return;
    }
    assert_eq!(
        committed(),
        table,
        "validation/residuals.json is stale: CLUSTERSIM_BLESS=1 cargo test --release -p studies residuals"
    );
}

#[test]
fn the_ranges_cover_most_validation_runs() {
    let residuals = every_residual();
    let table = committed();
    let mut inside = 0;
    let mut width = 0.0;
    for residual in &residuals {
        let range = table
            .regimes
            .iter()
            .find(|r| r.regime == residual.regime)
            .unwrap();
        if (range.ratio_low..=range.ratio_high).contains(&residual.ratio) {
            inside += 1;
        }
        width += range.ratio_high / range.ratio_low - 1.0;
    }
    let coverage = inside as f64 / residuals.len() as f64;
    let mean_width = width / residuals.len() as f64;
    // Left out: each run against the range of its regime's other runs.
    let left_out_inside = (0..residuals.len())
        .filter(|&i| {
            let others: Vec<Residual> = residuals
                .iter()
                .enumerate()
                .filter(|&(j, r)| j != i && r.regime == residuals[i].regime)
                .map(|(_, r)| r.clone())
                .collect();
            summarize(&others)
                .first()
                .is_some_and(|r| (r.ratio_low..=r.ratio_high).contains(&residuals[i].ratio))
        })
        .count();
    eprintln!(
        "{} runs: {:.1} % inside their regime's range (mean width {:.1} %), {:.1} % inside the range of the others",
        residuals.len(),
        100.0 * coverage,
        100.0 * mean_width,
        100.0 * left_out_inside as f64 / residuals.len() as f64
    );
    assert!(residuals.len() > 1000, "{}", residuals.len());
    assert!(
        coverage >= 0.8,
        "coverage {coverage:.3}, mean width {mean_width:.3}"
    );
}

#[test]
fn a_regime_with_fewer_than_twenty_runs_spans_them_all() {
    let regime = |pipelined| Regime {
        architecture: "Hopper".into(),
        stack: "s".into(),
        precision: "fp8".into(),
        experts: false,
        pipelined,
    };
    let few: Vec<Residual> = [1.1, 0.9, 1.3]
        .into_iter()
        .map(|ratio| Residual {
            regime: regime(false),
            ratio,
        })
        .collect();
    let many: Vec<Residual> = (1..=100)
        .map(|i| Residual {
            regime: regime(true),
            ratio: 1.0 + i as f64 / 100.0,
        })
        .collect();
    let ranges = summarize(&[few, many].concat());
    assert_eq!(ranges.len(), 2);
    assert_eq!((ranges[0].ratio_low, ranges[0].ratio_high), (0.9, 1.3));
    assert_eq!(ranges[0].method, "lowest to highest");
    // Nearest rank: the 5th and 95th of 100 sorted ratios.
    assert_eq!((ranges[1].ratio_low, ranges[1].ratio_high), (1.05, 1.95));
    assert_eq!(ranges[1].runs, 100);
}

#[test]
fn a_held_out_run_is_covered_only_inside_the_others_range() {
    // 1.0 and 1.3 fall outside the others' ranges; 1.1 and 1.2 inside.
    let (covered, runs, width) = held_out_coverage(&[1.0, 1.1, 1.2, 1.3]).unwrap();
    assert_eq!((covered, runs), (2, 4));
    let expected = (1.3 / 1.1 + 1.3 / 1.0 + 1.3 / 1.0 + 1.2 / 1.0 - 4.0) / 4.0;
    assert!((width - expected).abs() < 1e-12, "{width} {expected}");
    assert_eq!(held_out_coverage(&[1.0, 1.1, 1.2]), None);
}
