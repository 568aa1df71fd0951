//! The error table of a vTrain validation run ([`super::vtrain`]): overall
//! mean and max |error|, per (hidden size, t) group the count, mean signed
//! error, mean |error| and worst row, the worst rows overall, and the reasons
//! rows were refused. Error is 100 · (predicted / measured − 1). Groups come
//! in (hidden, t) order, worst rows by |error| then line: the table is a
//! function of the results alone.

use super::vtrain::VtrainResult;
use serde::Serialize;
use std::collections::BTreeMap;

/// Rows listed as the worst overall.
pub const WORST_ROWS: usize = 5;

/// Over every predicted row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorSummary {
    pub runs: usize,
    pub predicted: usize,
    pub refused: usize,
    pub mean_error_percent: Option<f64>,
    pub mean_abs_error_percent: Option<f64>,
    pub max_abs_error_percent: Option<f64>,
    /// Line of the row with the largest |error|.
    pub max_line: Option<usize>,
}

/// One (hidden size, t) group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupError {
    pub hidden: u32,
    #[serde(rename = "tensor_parallel")]
    pub tp: u32,
    pub runs: usize,
    pub refused: usize,
    pub mean_error_percent: Option<f64>,
    pub mean_abs_error_percent: Option<f64>,
    /// Signed error of the group's row with the largest |error|.
    pub worst_error_percent: Option<f64>,
    pub worst_line: Option<usize>,
}

/// How many rows were refused for one reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefusalCount {
    pub reason: String,
    pub runs: usize,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorTable {
    pub summary: ErrorSummary,
    pub groups: Vec<GroupError>,
    /// At most [`WORST_ROWS`], largest |error| first.
    pub worst: Vec<VtrainResult>,
    /// By reason, alphabetically.
    pub refusals: Vec<RefusalCount>,
}

/// Mean signed error, mean |error| and the row with the largest |error|.
struct Stats {
    mean: Option<f64>,
    mean_abs: Option<f64>,
    worst: Option<(f64, usize)>,
}

fn stats<'a>(results: impl Iterator<Item = &'a VtrainResult>) -> Stats {
    let (mut n, mut sum, mut sum_abs) = (0usize, 0.0, 0.0);
    let mut worst: Option<(f64, usize)> = None;
    for result in results {
        let Some(error) = result.error_percent else {
            continue;
        };
        n += 1;
        sum += error;
        sum_abs += error.abs();
        // Strictly larger wins, so ties keep the earliest line.
        if worst.is_none_or(|(w, _)| error.abs() > w.abs()) {
            worst = Some((error, result.run.line));
        }
    }
    let mean = |total: f64| (n > 0).then(|| total / n as f64);
    Stats {
        mean: mean(sum),
        mean_abs: mean(sum_abs),
        worst,
    }
}

impl ErrorSummary {
    /// The summary of any table's rows given as (line, error if predicted):
    /// a row without an error counts as refused.
    pub fn of_lines(rows: impl Iterator<Item = (usize, Option<f64>)>) -> ErrorSummary {
        let (mut runs, mut n, mut sum, mut sum_abs) = (0usize, 0usize, 0.0, 0.0);
        let mut worst: Option<(f64, usize)> = None;
        for (line, error) in rows {
            runs += 1;
            let Some(error) = error else { continue };
            n += 1;
            sum += error;
            sum_abs += error.abs();
            if worst.is_none_or(|(w, _)| error.abs() > w.abs()) {
                worst = Some((error, line));
            }
        }
        let mean = |total: f64| (n > 0).then(|| total / n as f64);
        ErrorSummary {
            runs,
            predicted: n,
            refused: runs - n,
            mean_error_percent: mean(sum),
            mean_abs_error_percent: mean(sum_abs),
            max_abs_error_percent: worst.map(|(e, _)| e.abs()),
            max_line: worst.map(|(_, line)| line),
        }
    }
}

/// Builds the table from results in row order.
pub fn error_table(results: &[VtrainResult]) -> ErrorTable {
    let overall = stats(results.iter());
    let refused = results.iter().filter(|r| r.refused.is_some()).count();
    let summary = ErrorSummary {
        runs: results.len(),
        predicted: results.iter().filter(|r| r.error_percent.is_some()).count(),
        refused,
        mean_error_percent: overall.mean,
        mean_abs_error_percent: overall.mean_abs,
        max_abs_error_percent: overall.worst.map(|(e, _)| e.abs()),
        max_line: overall.worst.map(|(_, line)| line),
    };
    let mut by_group: BTreeMap<(u32, u32), Vec<&VtrainResult>> = BTreeMap::new();
    for result in results {
        by_group
            .entry((result.run.hidden, result.run.tp))
            .or_default()
            .push(result);
    }
    let groups = by_group
        .into_iter()
        .map(|((hidden, tp), rows)| {
            let s = stats(rows.iter().copied());
            GroupError {
                hidden,
                tp,
                runs: rows.len(),
                refused: rows.iter().filter(|r| r.refused.is_some()).count(),
                mean_error_percent: s.mean,
                mean_abs_error_percent: s.mean_abs,
                worst_error_percent: s.worst.map(|(e, _)| e),
                worst_line: s.worst.map(|(_, line)| line),
            }
        })
        .collect();
    let mut predicted: Vec<&VtrainResult> = results
        .iter()
        .filter(|r| r.error_percent.is_some())
        .collect();
    predicted.sort_by(|a, b| {
        let abs = |r: &VtrainResult| r.error_percent.unwrap_or(0.0).abs();
        abs(b).total_cmp(&abs(a)).then(a.run.line.cmp(&b.run.line))
    });
    let worst = predicted.into_iter().take(WORST_ROWS).cloned().collect();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for reason in results.iter().filter_map(|r| r.refused.as_deref()) {
        *reasons.entry(reason).or_default() += 1;
    }
    let refusals = reasons
        .into_iter()
        .map(|(reason, runs)| RefusalCount {
            reason: reason.to_string(),
            runs,
        })
        .collect();
    ErrorTable {
        summary,
        groups,
        worst,
        refusals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::vtrain::VtrainRun;

    fn result(line: usize, hidden: u32, tp: u32, error: Option<f64>) -> VtrainResult {
        let run = VtrainRun {
            line,
            gpus: tp,
            global_batch: 8,
            microbatch_size: 1,
            hidden,
            heads: 16,
            layers: 4,
            seq_len: 1024,
            tp,
            dp: 1,
            pp: 1,
            measured_ms: 100.0,
        };
        VtrainResult {
            run,
            predicted_ns: error.map(|e| ((100.0 + e) * 1e6) as u64),
            predicted_ms: error.map(|e| 100.0 + e),
            error_percent: error,
            fits_in_memory: error.map(|_| true),
            refused: error.is_none().then(|| "pp: layers (5)".to_string()),
            regime: None,
        }
    }

    #[test]
    fn groups_by_hidden_and_t_with_signed_and_absolute_means() {
        let results = [
            result(2, 2048, 2, Some(-10.0)),
            result(3, 1024, 1, Some(4.0)),
            result(4, 2048, 2, Some(30.0)),
            result(5, 1024, 1, Some(-4.0)),
            result(6, 1024, 1, None),
            result(7, 1024, 4, Some(-30.0)),
            result(8, 1024, 4, Some(1.0)),
            result(9, 1024, 4, Some(2.0)),
        ];
        let table = error_table(&results);
        let s = &table.summary;
        assert_eq!((s.runs, s.predicted, s.refused), (8, 7, 1));
        assert!((s.mean_abs_error_percent.unwrap() - 81.0 / 7.0).abs() < 1e-9);
        // Ties on |error| keep the earliest line.
        assert_eq!((s.max_abs_error_percent, s.max_line), (Some(30.0), Some(4)));
        let keys: Vec<(u32, u32)> = table.groups.iter().map(|g| (g.hidden, g.tp)).collect();
        assert_eq!(keys, [(1024, 1), (1024, 4), (2048, 2)]);
        let g = &table.groups[0];
        assert_eq!((g.runs, g.refused), (3, 1));
        assert_eq!(g.mean_error_percent, Some(0.0));
        assert_eq!(g.mean_abs_error_percent, Some(4.0));
        assert_eq!((g.worst_error_percent, g.worst_line), (Some(4.0), Some(3)));
        let g = &table.groups[2];
        assert_eq!(g.mean_error_percent, Some(10.0));
        assert_eq!((g.worst_error_percent, g.worst_line), (Some(30.0), Some(4)));
        let worst: Vec<usize> = table.worst.iter().map(|r| r.run.line).collect();
        assert_eq!(worst, [4, 7, 2, 3, 5]);
        assert_eq!(
            table.refusals,
            [RefusalCount {
                reason: "pp: layers (5)".into(),
                runs: 1
            }]
        );
    }

    #[test]
    fn an_all_refused_run_has_no_means() {
        let table = error_table(&[result(2, 1024, 1, None)]);
        assert_eq!(table.summary.mean_abs_error_percent, None);
        assert_eq!(table.groups[0].worst_line, None);
        assert!(table.worst.is_empty());
    }
}
