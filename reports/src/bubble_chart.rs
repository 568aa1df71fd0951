//! The pipeline-bubble chart: simulated bubble fractions (bubble time ÷ ideal
//! compute time) as markers against the number of microbatches m, over the
//! analytical curves (p−1)/m for GPipe and 1F1B and (p−1)/(v·m) for
//! interleaved 1F1B with v model chunks per rank; ZB-H1's (p−1)(F+I−W) over
//! m(F+I+W) is (p−1)/(3·m) when F = I = W (Qi et al., ICLR 2024, Sec. 3.1),
//! drawn as the curve of k = 3, as is DualPipeV's (p−1)(F&B+B−3W) over
//! 2m(F+I+W) per chunk when F&B = F+B (the DualPipe README); ZB-V's start
//! skew (p−1)F over 2m(F+I+W) is the curve of k = 6. DualPipe's
//! (p/2−1)(F&B+B−3W) over m(F+I+W) is (p−2)/(3·m) (the DualPipe README,
//! PP = p): the curve of k = 3 with one stage fewer in the numerator
//! ([`BubbleFormula::OverKm`]'s `fewer_stages`). ZB-H2 with optimizer
//! post-validation has (p−1)(F+I+2c−2W)⁺ = 0 at F = I = W and c = 0: the
//! zero line ([`BubbleFormula::Zero`]). Which schedule gets which curve:
//! `studies::bubble_chart`. The m axis is logarithmic (base 2), ticked at
//! the m values of the data.

use crate::colors::SERIES_COLORS;
use crate::error::ReportError;
use crate::font::FONT_FAMILY;
use crate::output::{render_to_file, Picture, PlotError};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;
use std::path::Path;
pub use studies::bubble_chart::BubbleFormula;

/// Simulated bubble fractions of one schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct BubbleSeries {
    /// Legend label, e.g. "1F1B (simulated)".
    pub label: String,
    /// The analytical curve it is drawn over.
    pub formula: BubbleFormula,
    /// (microbatches m, simulated bubble time ÷ ideal compute time).
    pub points: Vec<(u32, f64)>,
}

const WIDTH_PX: u32 = 1000;
const HEIGHT_PX: u32 = 640;
/// Most distinct m values ticked individually; beyond that, powers of two.
const MAX_DATA_TICKS: usize = 10;

/// Draws `series` over the analytical bubble curves for `pipeline_stages` stages into `path`.
pub fn render_bubble_chart(
    series: &[BubbleSeries],
    pipeline_stages: u32,
    path: &Path,
) -> Result<(), ReportError> {
    crate::output::image_format(path)?;
    let chart = BubbleChart::build(series, pipeline_stages)?;
    render_to_file(&chart, (WIDTH_PX, HEIGHT_PX), path)
}

#[derive(Debug, Clone, PartialEq)]
struct BubbleChart {
    series: Vec<BubbleSeries>,
    pipeline_stages: u32,
    /// Distinct formulas, one analytical curve each.
    curves: Vec<BubbleFormula>,
    /// log2(m) range shown.
    x_range: (f64, f64),
    y_max: f64,
    /// m values that get a tick.
    tick_ms: Vec<u32>,
}

impl BubbleChart {
    fn build(series: &[BubbleSeries], pipeline_stages: u32) -> Result<BubbleChart, ReportError> {
        let series: Vec<BubbleSeries> = series
            .iter()
            .map(|one| BubbleSeries {
                label: one.label.clone(),
                formula: one.formula,
                points: one
                    .points
                    .iter()
                    .copied()
                    .filter(|&(m, fraction)| m >= 1 && fraction.is_finite() && fraction >= 0.0)
                    .collect(),
            })
            .filter(|one| !one.points.is_empty())
            .collect();
        let all_ms: BTreeSet<u32> = series
            .iter()
            .flat_map(|one| one.points.iter().map(|&(m, _)| m))
            .collect();
        let (Some(&m_min), Some(&m_max)) = (all_ms.first(), all_ms.last()) else {
            return Err(ReportError::NoData {
                what: "bubble series have no points with m ≥ 1 and a finite, non-negative fraction"
                    .to_string(),
            });
        };
        let curves: Vec<BubbleFormula> = series
            .iter()
            .map(|one| one.formula)
            .collect::<BTreeSet<BubbleFormula>>()
            .into_iter()
            .collect();
        let x_range = (f64::from(m_min).log2() - 0.3, f64::from(m_max).log2() + 0.3);
        let simulated_max = series
            .iter()
            .flat_map(|one| one.points.iter().map(|&(_, fraction)| fraction))
            .fold(0.0, f64::max);
        let analytical_max = curves
            .iter()
            .map(|formula| formula.fraction(pipeline_stages, m_min))
            .fold(0.0, f64::max);
        let y_max = (simulated_max.max(analytical_max) * 1.15).max(0.01);
        let tick_ms = if all_ms.len() <= MAX_DATA_TICKS {
            all_ms.into_iter().collect()
        } else {
            (0..32)
                .map(|power| 1u32 << power)
                .filter(|&m| m >= m_min && m <= m_max)
                .collect()
        };
        Ok(BubbleChart {
            series,
            pipeline_stages,
            curves,
            x_range,
            y_max,
            tick_ms,
        })
    }

    fn series_color(&self, index: usize) -> RGBColor {
        SERIES_COLORS[index % SERIES_COLORS.len()]
    }

    /// Colour of the curve of `formula`: that of the first series using it.
    fn curve_color(&self, formula: BubbleFormula) -> RGBColor {
        let index = self
            .series
            .iter()
            .position(|one| one.formula == formula)
            .unwrap_or(0);
        self.series_color(index)
    }
}

/// The legend of the curve (p−1−`fewer`)/(`k`·m).
fn curve_label(k: u32, fewer: u32) -> String {
    if fewer > 0 {
        format!("(p−1−{fewer})/({k}·m) analytical: DualPipe (F = I = W)")
    } else if k == 1 {
        "(p−1)/m analytical".to_string()
    } else if k == 3 {
        "(p−1)/(3·m) analytical: ZB-H1, DualPipeV (F = I = W), interleaved v = 3".to_string()
    } else if k == 6 {
        "(p−1)/(6·m) analytical: ZB-V's start skew (F = I = W)".to_string()
    } else {
        format!("(p−1)/(v·m) analytical, v = {k}")
    }
}

fn font(size_px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size_px, FontStyle::Normal)
}

impl Picture for BubbleChart {
    type Summary = ();

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        root.fill(&WHITE)?;
        let p = self.pipeline_stages;
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Pipeline bubble vs microbatches (p = {p})"),
                FontDesc::new(FontFamily::Name(FONT_FAMILY), 22.0, FontStyle::Bold),
            )
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(self.x_range.0..self.x_range.1, 0.0..self.y_max)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(8)
            .y_desc("bubble time ÷ ideal compute time")
            .x_desc("microbatches m (log scale)")
            .label_style(font(14.0))
            .axis_desc_style(font(15.0))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()?;

        // m ticks: light vertical lines and labels under the axis.
        let grid = RGBColor(0xdd, 0xdd, 0xdd);
        for &m in &self.tick_ms {
            let x = f64::from(m).log2();
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x, 0.0), (x, self.y_max)],
                grid,
            )))?;
            let (x_px, y_px) = chart.backend_coord(&(x, 0.0));
            root.draw(&Text::new(
                m.to_string(),
                (x_px, y_px + 6),
                font(14.0)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))?;
        }

        // Analytical curves, dashed, clipped to the y range.
        const SAMPLES: usize = 200;
        for &formula in &self.curves {
            let color = self.curve_color(formula);
            let (x0, x1) = self.x_range;
            let points: Vec<(f64, f64)> = (0..=SAMPLES)
                .map(|index| x0 + (x1 - x0) * index as f64 / SAMPLES as f64)
                .map(|x| {
                    let m = x.exp2();
                    let y = match formula {
                        BubbleFormula::OverKm { k, fewer_stages } => {
                            f64::from(p.saturating_sub(1).saturating_sub(fewer_stages))
                                / (f64::from(k.max(1)) * m)
                        }
                        BubbleFormula::Zero => 0.0,
                    };
                    (x, y)
                })
                .filter(|&(_, y)| y <= self.y_max)
                .collect();
            let label = match formula {
                BubbleFormula::Zero => {
                    "0 analytical: ZB-H2 with post-validation, (p−1)(F+I+2c−2W)⁺ at F = I = W, c = 0"
                        .to_string()
                }
                BubbleFormula::OverKm { k, fewer_stages } => curve_label(k, fewer_stages),
            };
            chart
                .draw_series(DashedLineSeries::new(points, 8, 5, color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| {
                    DashedPathElement::new(vec![(x, y), (x + 20, y)], 5, 3, color.stroke_width(2))
                });
        }

        // Simulated points.
        for (index, one) in self.series.iter().enumerate() {
            let color = self.series_color(index);
            chart
                .draw_series(one.points.iter().map(|&(m, fraction)| {
                    Circle::new((f64::from(m).log2(), fraction), 6, color.filled())
                }))?
                .label(one.label.clone())
                .legend(move |(x, y)| Circle::new((x + 10, y), 6, color.filled()));
        }

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

    fn over(k: u32, fewer_stages: u32) -> BubbleFormula {
        BubbleFormula::OverKm { k, fewer_stages }
    }

    fn series() -> Vec<BubbleSeries> {
        vec![
            BubbleSeries {
                formula: BubbleFormula::OverKm {
                    k: 1,
                    fewer_stages: 0,
                },
                label: "1F1B (simulated)".to_string(),
                points: vec![(8, 0.40), (16, 0.20), (32, 0.10), (64, 0.05)],
            },
            BubbleSeries {
                formula: BubbleFormula::OverKm {
                    k: 2,
                    fewer_stages: 0,
                },
                label: "interleaved v=2 (simulated)".to_string(),
                points: vec![(8, 0.20), (16, 0.10), (32, 0.05), (64, 0.025)],
            },
        ]
    }

    #[test]
    fn dualpipe_gets_its_own_curve_with_one_stage_fewer() {
        let mut all = series();
        all.push(BubbleSeries {
            formula: BubbleFormula::OverKm {
                k: 3,
                fewer_stages: 1,
            },
            label: "DualPipe".to_string(),
            points: vec![(8, 0.09), (16, 0.04)],
        });
        let chart = BubbleChart::build(&all, 8).unwrap();
        assert_eq!(chart.curves, vec![over(1, 0), over(2, 0), over(3, 1)]);
        let ((), svg) = render_svg_string(&chart, (WIDTH_PX, HEIGHT_PX)).unwrap();
        assert!(svg.contains("(p−1−1)/(3·m) analytical: DualPipe (F = I = W)"));
        // (p−2)/(3·m) at p = 8, m = 16.
        assert_eq!(over(3, 1).fraction(8, 16), 6.0 / 48.0);
    }

    #[test]
    fn zb_h2_gets_the_zero_line_labelled_with_what_is_simulated() {
        let mut all = series();
        all.push(BubbleSeries {
            formula: BubbleFormula::Zero,
            label: "ZB-H2 (post-validation, steady state)".to_string(),
            points: vec![(8, 0.02), (16, 0.01)],
        });
        let chart = BubbleChart::build(&all, 4).unwrap();
        assert_eq!(
            chart.curves,
            vec![over(1, 0), over(2, 0), BubbleFormula::Zero]
        );
        let ((), svg) = render_svg_string(&chart, (WIDTH_PX, HEIGHT_PX)).unwrap();
        assert!(svg.contains(
            "0 analytical: ZB-H2 with post-validation, (p−1)(F+I+2c−2W)⁺ at F = I = W, c = 0"
        ));
        assert!(svg.contains("ZB-H2 (post-validation, steady state)"));
    }

    #[test]
    fn analytical_fraction_matches_the_formulas() {
        assert_eq!(over(1, 0).fraction(4, 8), 3.0 / 8.0);
        assert_eq!(over(3, 0).fraction(8, 16), 7.0 / 48.0);
        assert_eq!(over(1, 0).fraction(1, 8), 0.0);
        assert_eq!(BubbleFormula::Zero.fraction(8, 16), 0.0);
        assert_eq!(over(3, 1).ratio(8, 16), (6, 48));
    }

    #[test]
    fn chart_has_one_marker_per_point_a_curve_per_chunk_count_and_a_legend() {
        let chart = BubbleChart::build(&series(), 4).unwrap();
        assert_eq!(chart.curves, vec![over(1, 0), over(2, 0)]);
        assert_eq!(chart.tick_ms, vec![8, 16, 32, 64]);
        let ((), svg) = render_svg_string(&chart, (WIDTH_PX, HEIGHT_PX)).unwrap();
        // 8 data markers plus 2 legend markers.
        assert_eq!(svg.matches("<circle").count(), 10);
        assert!(svg.contains("(p−1)/(v·m) analytical, v = 2"));
        assert!(svg.contains("interleaved v=2 (simulated)"));
        assert!(svg.contains(">\n64\n</text>"), "tick label for m = 64");
    }

    #[test]
    fn unusable_points_are_dropped_and_nothing_left_is_an_error() {
        let bad = vec![BubbleSeries {
            formula: BubbleFormula::OverKm {
                k: 0,
                fewer_stages: 0,
            },
            label: "broken".to_string(),
            points: vec![(0, 0.5), (8, f64::NAN), (8, -1.0)],
        }];
        assert!(matches!(
            BubbleChart::build(&bad, 4),
            Err(ReportError::NoData { .. })
        ));
        assert!(matches!(
            BubbleChart::build(&[], 4),
            Err(ReportError::NoData { .. })
        ));
    }

    #[test]
    fn png_and_svg_files_are_written() {
        let dir = std::env::temp_dir();
        let stem = format!("reports-bubble-{}", std::process::id());
        for extension in ["svg", "png"] {
            let path = dir.join(format!("{stem}.{extension}"));
            render_bubble_chart(&series(), 4, &path).unwrap();
            assert!(std::fs::metadata(&path).unwrap().len() > 1000);
            std::fs::remove_file(&path).ok();
        }
        if let Some(samples) = std::env::var_os("REPORTS_SAMPLE_DIR") {
            let samples = std::path::PathBuf::from(samples);
            std::fs::create_dir_all(&samples).unwrap();
            render_bubble_chart(&series(), 4, &samples.join("bubble.png")).unwrap();
        }
    }
}
