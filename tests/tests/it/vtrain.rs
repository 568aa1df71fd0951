//! vTrain's single-node ground truth, the whole file (about 0.05 s in
//! release): every one of its 1,440 rows reads, simulates in row order and
//! gets a prediction (none refused), and the error table covers every row.
//! The overall error is pinned within 0.5 points so that a change to the
//! host lane or the kernel model shows here and in the README on purpose.

use studies::validation::vtrain::{read_csv, simulate_runs};
use studies::validation::vtrain_table::error_table;

#[test]
fn every_row_of_the_vtrain_file_is_predicted_in_row_order() {
    let text = std::fs::read_to_string(tests::vtrain_csv_path()).unwrap();
    let runs = read_csv(&text).unwrap();
    assert_eq!(runs.len(), 1440);
    let results = simulate_runs(
        &runs,
        &sim::scenario::fitted::FitValues::CALIBRATED,
        &|_, _| {},
    );
    let lines: Vec<usize> = results.iter().map(|r| r.run.line).collect();
    assert_eq!(lines, (2..=1441).collect::<Vec<_>>());
    for result in &results {
        assert!(result.refused.is_none(), "{result:?}");
        assert!(result.predicted_ms.is_some_and(|ms| ms > 0.0), "{result:?}");
    }
    let table = error_table(&results);
    assert_eq!((table.summary.predicted, table.summary.refused), (1440, 0));
    let keys: Vec<(u32, u32)> = table.groups.iter().map(|g| (g.hidden, g.tp)).collect();
    let expected: Vec<(u32, u32)> = [1024, 2048]
        .into_iter()
        .flat_map(|h| [1, 2, 4, 8].map(|t| (h, t)))
        .collect();
    assert_eq!(keys, expected);
    assert_eq!(table.groups.iter().map(|g| g.runs).sum::<usize>(), 1440);
    assert_eq!(table.worst.len(), 5);
    // Pinned (README, "Accuracy"): mean |error| and mean signed error, percent.
    let (mean_abs, mean) = (
        table.summary.mean_abs_error_percent.unwrap(),
        table.summary.mean_error_percent.unwrap(),
    );
    assert!((mean_abs - 8.8).abs() < 0.5, "mean |error| {mean_abs:.2}%");
    assert!((mean - -0.7).abs() < 0.5, "mean error {mean:.2}%");
}
