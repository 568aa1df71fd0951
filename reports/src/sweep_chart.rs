//! The sweep chart: one bar per simulated layout, ranked by throughput
//! (samples/s, best on the left), coloured by pipeline schedule, with the best
//! layout outlined and named. Same records, same bytes (embedded font, no
//! timestamps).

use crate::colors::SERIES_COLORS;
use crate::error::ReportError;
use crate::font::FONT_FAMILY;
use crate::output::{render_to_file, Picture, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use sim::scenario::ScheduleKind;
use std::path::Path;
use studies::sweep::SweepRecord;

const WIDTH_PX: u32 = 1200;
const HEIGHT_PX: u32 = 640;

/// Draws `results` (in any order; ranked here by samples/s, ties by index)
/// into `path` (.svg or .png); `title` goes above the chart.
pub fn render_sweep_chart(
    results: &[SweepRecord],
    title: &str,
    path: &Path,
) -> Result<(), ReportError> {
    crate::output::image_format(path)?;
    let chart = SweepChart::build(results, title)?;
    render_to_file(&chart, (WIDTH_PX, HEIGHT_PX), path)
}

/// Colour of a schedule's bars: its place in [`ScheduleKind::ALL`] over the
/// series palette, so a new schedule needs no colour of its own (the palette
/// repeats past its ten colours).
fn schedule_color(schedule: ScheduleKind) -> RGBColor {
    let index = ScheduleKind::ALL
        .iter()
        .position(|&kind| kind == schedule)
        .unwrap_or(0);
    SERIES_COLORS[index % SERIES_COLORS.len()]
}

#[derive(Debug, Clone, PartialEq)]
struct SweepChart {
    title: String,
    /// (schedule, samples/s), best first.
    bars: Vec<(ScheduleKind, f64)>,
    best_label: String,
    y_max: f64,
}

impl SweepChart {
    fn build(results: &[SweepRecord], title: &str) -> Result<SweepChart, ReportError> {
        let mut ranked: Vec<&SweepRecord> = results
            .iter()
            .filter(|r| r.samples_per_s.is_finite() && r.samples_per_s > 0.0)
            .collect();
        ranked.sort_by(|a, b| {
            b.samples_per_s
                .total_cmp(&a.samples_per_s)
                .then(a.index.cmp(&b.index))
        });
        let Some(best) = ranked.first() else {
            return Err(ReportError::NoData {
                what: "the sweep has no simulated layouts with a positive throughput".to_string(),
            });
        };
        Ok(SweepChart {
            title: title.to_string(),
            best_label: format!(
                "best: {} — {:.2} samples/s, {:.1} TFLOP/s per GPU",
                best.layout.label(),
                best.samples_per_s,
                best.tflops_per_gpu
            ),
            y_max: best.samples_per_s * 1.15,
            bars: ranked
                .iter()
                .map(|r| (r.layout.schedule, r.samples_per_s))
                .collect(),
        })
    }
}

fn font(size_px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size_px, FontStyle::Normal)
}

impl Picture for SweepChart {
    type Summary = ();

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        root.fill(&WHITE)?;
        let n = self.bars.len();
        let mut chart = ChartBuilder::on(root)
            .caption(
                &self.title,
                FontDesc::new(FontFamily::Name(FONT_FAMILY), 20.0, FontStyle::Bold),
            )
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..n as f64, 0.0..self.y_max)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n.min(10))
            .x_label_formatter(&|x| format!("{}", x.floor() as usize + 1))
            .y_labels(8)
            .y_desc("throughput (samples/s)")
            .x_desc(format!("{n} layouts, ranked by throughput"))
            .label_style(font(14.0))
            .axis_desc_style(font(15.0))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()?;
        let gap = if n <= 100 { 0.15 } else { 0.0 };
        for schedule in ScheduleKind::ALL {
            let color = schedule_color(schedule);
            let bars: Vec<Rectangle<(f64, f64)>> = self
                .bars
                .iter()
                .enumerate()
                .filter(|(_, (kind, _))| *kind == schedule)
                .map(|(position, &(_, value))| {
                    let x = position as f64;
                    Rectangle::new([(x + gap, 0.0), (x + 1.0 - gap, value)], color.filled())
                })
                .collect();
            if bars.is_empty() {
                continue;
            }
            chart
                .draw_series(bars)?
                .label(schedule.name())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled())
                });
        }
        // The best bar: outlined, with its layout written above it.
        let best = self.bars[0].1;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, 0.0), (1.0, best)],
            BLACK.stroke_width(2),
        )))?;
        let (x_px, y_px) = chart.backend_coord(&(0.0, best));
        root.draw(&Text::new(
            self.best_label.clone(),
            (x_px + 4, y_px - 22),
            font(15.0).color(&BLACK),
        ))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(font(14.0))
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(0xaa, 0xaa, 0xaa))
            .draw()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::render_svg_string;
    use sim::scenario::Recompute;
    use studies::sweep::Candidate;

    fn record(index: u32, schedule: ScheduleKind, samples_per_s: f64) -> SweepRecord {
        SweepRecord {
            index,
            layout: Candidate {
                tensor_parallel: 8,
                context_parallel: 1,
                expert_parallel: 1,
                expert_tensor_parallel: None,
                pipeline_parallel: 2,
                data_parallel: 1,
                chunks: if schedule.uses_chunks() { 2 } else { 1 },
                microbatch_size: 1,
                schedule,
                recompute: Recompute::None,
                zero_stage: None,
                precision: None,
                optimizer: None,
                microbatch_group_size: None,
            },
            microbatches: 8,
            iteration_time_ns: (1e9 / samples_per_s) as u64,
            iteration_time_s: 1.0 / samples_per_s,
            samples_per_s,
            tflops_per_gpu: 100.0,
            model_tflops_per_gpu: 90.0,
            percent_of_peak: 32.0,
            bubble_fraction: 0.1,
            tokens_per_s_per_gpu: 1000.0,
            mfu_percent: 29.0,
            compute_time_s: 0.5,
            exposed_communication_s: timeline::metrics::ExposedCommunication {
                tensor_s: 0.1,
                pipeline_s: 0.01,
                ..Default::default()
            },
            peak_memory_bytes: 1 << 30,
            memory_capacity_bytes: 80 << 30,
            fits_in_memory: true,
            events: 100,
            expected_time_to_train_s: None,
        }
    }

    fn records() -> Vec<SweepRecord> {
        vec![
            record(0, ScheduleKind::Gpipe, 10.0),
            record(1, ScheduleKind::OneFOneB, 12.0),
            record(2, ScheduleKind::Interleaved, 14.0),
            record(3, ScheduleKind::OneFOneB, 12.0),
        ]
    }

    #[test]
    fn bars_are_ranked_coloured_by_schedule_and_the_best_is_named() {
        let chart = SweepChart::build(&records(), "sweep").unwrap();
        let order: Vec<f64> = chart.bars.iter().map(|&(_, v)| v).collect();
        assert_eq!(order, vec![14.0, 12.0, 12.0, 10.0]);
        assert!(chart.best_label.contains("interleaved v=2"));
        let ((), svg) = render_svg_string(&chart, (WIDTH_PX, HEIGHT_PX)).unwrap();
        assert!(svg.contains("best: t=8 p=2 d=1 b=1 interleaved v=2"));
        for name in ["gpipe", "1f1b", "interleaved"] {
            assert!(
                svg.contains(&format!(">\n{name}\n</text>")),
                "legend {name}"
            );
        }
    }

    #[test]
    fn same_records_give_the_same_bytes_in_svg_and_png() {
        let dir = std::env::temp_dir();
        for extension in ["svg", "png"] {
            let paths: Vec<_> = (0..2)
                .map(|k| {
                    dir.join(format!(
                        "reports-sweep-{}-{k}.{extension}",
                        std::process::id()
                    ))
                })
                .collect();
            let mut shuffled = records();
            for (k, path) in paths.iter().enumerate() {
                shuffled.rotate_left(k);
                render_sweep_chart(&shuffled, "GPT on 8 GPUs", path).unwrap();
            }
            let first = std::fs::read(&paths[0]).unwrap();
            assert!(first.len() > 1000);
            assert_eq!(first, std::fs::read(&paths[1]).unwrap());
            for path in paths {
                std::fs::remove_file(path).ok();
            }
        }
    }

    #[test]
    fn nothing_to_plot_is_an_error() {
        assert!(matches!(
            SweepChart::build(&[], "empty"),
            Err(ReportError::NoData { .. })
        ));
    }
}
