//! Two timelines side by side (e.g. simulator vs executor, or before vs after
//! a change): the median task duration of every kind and the iteration time
//! (makespan), as a table ([`comparison_table`], for the `compare` command)
//! and as grouped bars ([`render_comparison`]).
//!
//! A kind's median is over its task records, each counted once whatever the
//! size of its group; with an even count it is the mean of the middle two.

use crate::colors::{kind_label, COMPARISON_COLORS};
use crate::error::ReportError;
use crate::font::FONT_FAMILY;
use crate::output::{render_to_file, Picture, PlotError};
use crate::time_axis::unit_for_span;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;
use std::path::Path;
use timeline::TaskKind;
use timeline::Timeline;

/// The metric name of the iteration-time row.
pub const ITERATION_METRIC: &str = "iteration";

/// One timeline's value in a comparison row.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonSide {
    /// The label given for this timeline.
    pub label: String,
    /// Task records counted (kind rows) or all task records (iteration row).
    pub tasks: usize,
    /// Median task duration (kind rows) or makespan (iteration row), in ms;
    /// `None` when this timeline has no task of the kind.
    pub value_ms: Option<f64>,
}

/// One row of a comparison: a task kind, or the iteration time.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparisonRow {
    /// The kind's JSON name, or [`ITERATION_METRIC`].
    pub metric: String,
    /// The kind, `None` for the iteration row.
    pub kind: Option<TaskKind>,
    /// The two timelines, in the order given.
    pub sides: [ComparisonSide; 2],
    /// (b − a) ÷ a; `None` when either value is missing or a's is zero.
    pub relative_difference: Option<f64>,
}

/// Median durations per kind (kinds in `TaskKind` order), then the iteration time.
pub fn comparison_table(a: &Timeline, b: &Timeline, labels: [&str; 2]) -> Vec<ComparisonRow> {
    let timelines = [a, b];
    let kinds: BTreeSet<TaskKind> = timelines
        .iter()
        .flat_map(|timeline| timeline.tasks.iter().map(|task| task.kind))
        .collect();
    let mut rows: Vec<ComparisonRow> = kinds
        .into_iter()
        .map(|kind| {
            let side = |index: usize| {
                let mut durations_ns: Vec<u64> = timelines[index]
                    .tasks
                    .iter()
                    .filter(|task| task.kind == kind)
                    .map(|task| task.end_ns.saturating_sub(task.start_ns))
                    .collect();
                ComparisonSide {
                    label: labels[index].to_string(),
                    tasks: durations_ns.len(),
                    value_ms: median_ns(&mut durations_ns).map(|ns| ns / 1e6),
                }
            };
            row(kind.name().to_string(), Some(kind), [side(0), side(1)])
        })
        .collect();
    let iteration = |index: usize| ComparisonSide {
        label: labels[index].to_string(),
        tasks: timelines[index].tasks.len(),
        value_ms: Some(timelines[index].makespan_ns() as f64 / 1e6),
    };
    rows.push(row(
        ITERATION_METRIC.to_string(),
        None,
        [iteration(0), iteration(1)],
    ));
    rows
}

fn row(metric: String, kind: Option<TaskKind>, sides: [ComparisonSide; 2]) -> ComparisonRow {
    let relative_difference = match (sides[0].value_ms, sides[1].value_ms) {
        (Some(a), Some(b)) if a > 0.0 => Some((b - a) / a),
        _ => None,
    };
    ComparisonRow {
        metric,
        kind,
        sides,
        relative_difference,
    }
}

/// Median of `values` in ns (sorts them); `None` when empty.
fn median_ns(values: &mut [u64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let middle = values.len() / 2;
    Some(if values.len() % 2 == 1 {
        values[middle] as f64
    } else {
        (values[middle - 1] as f64 + values[middle] as f64) / 2.0
    })
}

/// The rows as an aligned plain-text table (ms, and the difference in percent).
pub fn format_comparison_table(rows: &[ComparisonRow]) -> String {
    let Some(first) = rows.first() else {
        return String::new();
    };
    let header = [
        "metric".to_string(),
        format!("{} (ms)", first.sides[0].label),
        format!("{} (ms)", first.sides[1].label),
        "difference".to_string(),
    ];
    let value = |value: Option<f64>| value.map_or("—".to_string(), |ms| format!("{ms:.3}"));
    let body: Vec<[String; 4]> = rows
        .iter()
        .map(|row| {
            [
                row.metric.clone(),
                value(row.sides[0].value_ms),
                value(row.sides[1].value_ms),
                row.relative_difference
                    .map_or("—".to_string(), |ratio| format!("{:+.1}%", ratio * 100.0)),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..4)
        .map(|column| {
            std::iter::once(&header)
                .chain(&body)
                .map(|cells| cells[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for cells in std::iter::once(&header).chain(&body) {
        let line: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(column, cell)| {
                let pad = " ".repeat(widths[column] - cell.chars().count());
                if column == 0 {
                    format!("{cell}{pad}")
                } else {
                    format!("{pad}{cell}")
                }
            })
            .collect();
        text.push_str(line.join("  ").trim_end());
        text.push('\n');
    }
    text
}

const WIDTH_PX: u32 = 1400;
const HEIGHT_PX: u32 = 620;

/// Draws grouped bars of `a` and `b` (median duration per kind, and iteration time) into `path`.
pub fn render_comparison(
    a: &Timeline,
    b: &Timeline,
    labels: [&str; 2],
    path: &Path,
) -> Result<(), ReportError> {
    crate::output::image_format(path)?;
    let rows = comparison_table(a, b, labels);
    if rows.len() == 1 && a.tasks.is_empty() && b.tasks.is_empty() {
        return Err(ReportError::NoData {
            what: "both timelines have no tasks".to_string(),
        });
    }
    let chart = ComparisonChart {
        rows,
        labels: [labels[0].to_string(), labels[1].to_string()],
    };
    render_to_file(&chart, (WIDTH_PX, HEIGHT_PX), path)
}

struct ComparisonChart {
    rows: Vec<ComparisonRow>,
    labels: [String; 2],
}

fn font(size_px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size_px, FontStyle::Normal)
}

/// Formats a bar's value with three significant digits.
fn bar_value(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// One panel of grouped bars: a category per entry, two bars each.
fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    y_description: &str,
    categories: &[(String, [Option<f64>; 2])],
) -> Result<(), PlotError> {
    let y_max = categories
        .iter()
        .flat_map(|(_, values)| values.iter().flatten().copied())
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, font(17.0))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..categories.len().max(1) as f64, 0.0..y_max)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .y_desc(y_description)
        .label_style(font(13.0))
        .axis_desc_style(font(14.0))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .draw()?;
    // backend_coord gives image pixels; text drawn on `area` is relative to its corner.
    let (base_x_px, base_y_px) = area.get_base_pixel();
    let to_area = |(x_px, y_px): (i32, i32)| (x_px - base_x_px, y_px - base_y_px);
    for (index, (name, values)) in categories.iter().enumerate() {
        let left = index as f64;
        for (side, value) in values.iter().enumerate() {
            let Some(value) = *value else { continue };
            let x0 = left + 0.12 + side as f64 * 0.38;
            let x1 = x0 + 0.36;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, 0.0), (x1, value)],
                COMPARISON_COLORS[side].filled(),
            )))?;
            let (x_px, y_px) = to_area(chart.backend_coord(&((x0 + x1) / 2.0, value)));
            area.draw(&Text::new(
                bar_value(value),
                (x_px, y_px - 3),
                font(12.0)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
        }
        let (x_px, y_px) = to_area(chart.backend_coord(&(left + 0.5, 0.0)));
        area.draw(&Text::new(
            name.clone(),
            (x_px, y_px + 8),
            font(13.0)
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

impl Picture for ComparisonChart {
    type Summary = ();

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        root.fill(&WHITE)?;
        let (header, body) = root.split_vertically(70);
        header.draw(&Text::new(
            format!("{} vs {}", self.labels[0], self.labels[1]),
            (16, 12),
            FontDesc::new(FontFamily::Name(FONT_FAMILY), 22.0, FontStyle::Bold)
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Top)),
        ))?;
        let mut x_px = 16;
        for (side, label) in self.labels.iter().enumerate() {
            header.draw(&Rectangle::new(
                [(x_px, 44), (x_px + 14, 58)],
                COMPARISON_COLORS[side].filled(),
            ))?;
            header.draw(&Text::new(
                label.clone(),
                (x_px + 20, 51),
                font(14.0)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
            let width_px = font(14.0)
                .box_size(label)
                .map(|(width, _)| width as i32)
                .unwrap_or(100);
            x_px += 20 + width_px + 24;
        }

        let (kinds_area, iteration_area) = body.split_horizontally(WIDTH_PX as i32 * 3 / 4);
        let kinds: Vec<(String, [Option<f64>; 2])> = self
            .rows
            .iter()
            .filter_map(|row| {
                let kind = row.kind?;
                Some((
                    kind_label(kind).to_string(),
                    [row.sides[0].value_ms, row.sides[1].value_ms],
                ))
            })
            .collect();
        draw_panel(
            &kinds_area,
            "median task duration per kind",
            "median duration (ms)",
            &kinds,
        )?;
        let iteration = self.rows.iter().find(|row| row.kind.is_none());
        if let Some(iteration) = iteration {
            let longest_ms = iteration.sides[0]
                .value_ms
                .unwrap_or(0.0)
                .max(iteration.sides[1].value_ms.unwrap_or(0.0));
            let unit = unit_for_span((longest_ms * 1e6) as u64);
            let scale = 1e6 / unit.ns_per_unit;
            let values = [
                iteration.sides[0].value_ms.map(|ms| ms * scale),
                iteration.sides[1].value_ms.map(|ms| ms * scale),
            ];
            let change = iteration
                .relative_difference
                .map_or(String::new(), |ratio| format!(" ({:+.1}%)", ratio * 100.0));
            draw_panel(
                &iteration_area,
                &format!("iteration time{change}"),
                &format!("makespan ({})", unit.name),
                &[("makespan".to_string(), values)],
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{one_f_one_b, one_f_one_b_recompute, BACKWARD_NS, FORWARD_NS};

    #[test]
    fn medians_and_relative_differences_per_kind() {
        let a = one_f_one_b(4, 8, 1, 1);
        let mut b = one_f_one_b_recompute(4, 8, 1, 1);
        for task in &mut b.tasks {
            if task.kind == TaskKind::Backward {
                task.end_ns = task.start_ns + BACKWARD_NS * 3 / 2;
            }
        }
        let rows = comparison_table(&a, &b, ["sim", "gpu"]);
        let metrics: Vec<&str> = rows.iter().map(|row| row.metric.as_str()).collect();
        assert_eq!(
            metrics,
            [
                "forward",
                "recompute",
                "backward",
                "pipeline_activation",
                "pipeline_gradient",
                "optimizer_step",
                "iteration"
            ]
        );
        let forward = &rows[0];
        assert_eq!(forward.sides[0].value_ms, Some(FORWARD_NS as f64 / 1e6));
        assert_eq!(forward.sides[0].tasks, 32);
        assert_eq!(forward.relative_difference, Some(0.0));
        assert_eq!(rows[1].sides[0].value_ms, None);
        assert_eq!(rows[1].relative_difference, None);
        let backward = &rows[2];
        assert!((backward.relative_difference.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(backward.sides[1].label, "gpu");
        let iteration = rows.last().unwrap();
        assert_eq!(iteration.kind, None);
        assert_eq!(
            iteration.sides[0].value_ms,
            Some(a.makespan_ns() as f64 / 1e6)
        );
    }

    #[test]
    fn median_of_even_counts_is_the_mean_of_the_middle_two() {
        assert_eq!(median_ns(&mut [4, 1, 3, 2]), Some(2.5));
        assert_eq!(median_ns(&mut [5, 1, 3]), Some(3.0));
        assert_eq!(median_ns(&mut []), None);
    }

    #[test]
    fn text_table_is_aligned() {
        let a = one_f_one_b(4, 8, 1, 1);
        let text = format_comparison_table(&comparison_table(&a, &a, ["a", "b"]));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "metric               a (ms)  b (ms)  difference");
        assert!(lines
            .iter()
            .any(|line| line.starts_with("forward") && line.ends_with("+0.0%")));
        assert_eq!(lines.len(), 1 + 6);
    }

    #[test]
    fn chart_files_are_written() {
        let a = one_f_one_b(4, 8, 1, 1);
        let b = one_f_one_b_recompute(4, 8, 1, 1);
        let dir = std::env::temp_dir();
        for extension in ["svg", "png"] {
            let path = dir.join(format!(
                "reports-compare-{}.{extension}",
                std::process::id()
            ));
            render_comparison(&a, &b, ["no recompute", "recompute"], &path).unwrap();
            assert!(std::fs::metadata(&path).unwrap().len() > 1000);
            std::fs::remove_file(&path).ok();
        }
        if let Some(samples) = std::env::var_os("REPORTS_SAMPLE_DIR") {
            let samples = std::path::PathBuf::from(samples);
            std::fs::create_dir_all(&samples).unwrap();
            render_comparison(
                &a,
                &b,
                ["no recompute", "recompute"],
                &samples.join("compare.png"),
            )
            .unwrap();
        }
    }
}
