//! A line chart of one quantity against another, with one point marked and
//! named: `run-plan` draws expected days to train against the checkpoint
//! interval (the chosen interval marked) and against the GPU count (the
//! scenario's count marked). The x axis is logarithmic where asked (intervals
//! and GPU counts span decades). Same points, same bytes.

use crate::colors::SERIES_COLORS;
use crate::error::ReportError;
use crate::font::FONT_FAMILY;
use crate::output::{render_to_file, Picture, PlotError};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

const WIDTH_PX: u32 = 1000;
const HEIGHT_PX: u32 = 560;

/// What a line chart shows.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// (x, y), in x order; x positive when `log_x`.
    pub points: Vec<(f64, f64)>,
    /// A point drawn larger and named beside it (the chosen one).
    pub marked: Option<((f64, f64), String)>,
    /// A logarithmic x axis.
    pub log_x: bool,
}

/// Draws `chart` into `path` (.svg or .png).
pub fn render_line_chart(chart: &LineChart, path: &Path) -> Result<(), ReportError> {
    crate::output::image_format(path)?;
    let finite = |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!chart.log_x || x > 0.0);
    if chart.points.len() < 2 || !chart.points.iter().all(finite) {
        return Err(ReportError::NoData {
            what: format!("{}: fewer than two finite points to draw", chart.title),
        });
    }
    render_to_file(chart, (WIDTH_PX, HEIGHT_PX), path)
}

fn font(size_px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size_px, FontStyle::Normal)
}

impl LineChart {
    fn y_range(&self) -> (f64, f64) {
        let (low, high) = self
            .points
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &(_, y)| {
                (lo.min(y), hi.max(y))
            });
        let pad = ((high - low) * 0.1).max(high.abs() * 0.01).max(1e-9);
        ((low - pad).max(0.0), high + pad)
    }

    /// x as drawn: its logarithm on a log axis (labels show x itself).
    fn drawn_x(&self, x: f64) -> f64 {
        if self.log_x {
            x.log10()
        } else {
            x
        }
    }

    fn x_range(&self) -> (f64, f64) {
        let first = self.drawn_x(self.points[0].0);
        let last = self.drawn_x(self.points[self.points.len() - 1].0);
        let (low, high) = (first.min(last), first.max(last));
        let pad = ((high - low) * 0.03).max(1e-9);
        (low - pad, high + pad)
    }
}

impl Picture for LineChart {
    type Summary = ();

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError> {
        root.fill(&WHITE)?;
        let (x_low, x_high) = self.x_range();
        let (y_low, y_high) = self.y_range();
        let mut chart = ChartBuilder::on(root)
            .caption(
                &self.title,
                FontDesc::new(FontFamily::Name(FONT_FAMILY), 20.0, FontStyle::Bold),
            )
            .margin(20)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x_low..x_high, y_low..y_high)?;
        let log_x = self.log_x;
        let x_label = move |x: &f64| {
            let value = if log_x { 10f64.powf(*x) } else { *x };
            if value >= 100.0 {
                format!("{value:.0}")
            } else {
                format!("{value:.2}")
            }
        };
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_label_formatter(&x_label)
            .label_style(font(14.0))
            .axis_desc_style(font(15.0))
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .draw()?;
        let color = SERIES_COLORS[0];
        let drawn: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|&(x, y)| (self.drawn_x(x), y))
            .collect();
        chart.draw_series(LineSeries::new(
            drawn.iter().copied(),
            color.stroke_width(2),
        ))?;
        chart.draw_series(drawn.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        if let Some(((x, y), label)) = &self.marked {
            let point = (self.drawn_x(*x), *y);
            chart.draw_series(std::iter::once(Circle::new(
                point,
                7,
                BLACK.stroke_width(2),
            )))?;
            let (x_px, y_px) = chart.backend_coord(&point);
            // Left of the point in the chart's right half, so the label stays inside.
            let label_px = (label.chars().count() as i32) * 8;
            let x_label_px = if x_px > (WIDTH_PX / 2) as i32 {
                x_px - 10 - label_px
            } else {
                x_px + 10
            };
            root.draw(&Text::new(
                label.clone(),
                (x_label_px, y_px - 24),
                font(15.0).color(&BLACK),
            ))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::render_svg_string;

    fn chart() -> LineChart {
        LineChart {
            title: "expected days to train".into(),
            x_label: "checkpoint interval (min)".into(),
            y_label: "days".into(),
            points: vec![(1.0, 80.0), (4.0, 78.0), (16.0, 79.5), (64.0, 85.0)],
            marked: Some(((4.0, 78.0), "chosen: 4 min".into())),
            log_x: true,
        }
    }

    #[test]
    fn the_same_points_draw_the_same_bytes_and_name_the_marked_point() {
        let (_, first) = render_svg_string(&chart(), (WIDTH_PX, HEIGHT_PX)).unwrap();
        let (_, second) = render_svg_string(&chart(), (WIDTH_PX, HEIGHT_PX)).unwrap();
        assert_eq!(first, second);
        assert!(first.contains("chosen: 4 min"));
    }

    #[test]
    fn fewer_than_two_finite_points_is_an_error_naming_the_chart() {
        let mut one = chart();
        one.points.truncate(1);
        let path = std::env::temp_dir().join("clustersim-line-chart-one.svg");
        let error = render_line_chart(&one, &path).unwrap_err().to_string();
        assert!(error.contains("fewer than two finite points"), "{error}");
        let mut zero_x = chart();
        zero_x.points[0].0 = 0.0;
        assert!(render_line_chart(&zero_x, &path).is_err());
    }
}
