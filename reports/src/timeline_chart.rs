//! The Gantt chart of one iteration: one lane per rank (or per rank and
//! stream), one block per task occupying that lane, coloured by kind and
//! labelled with its microbatch where the label fits.
//!
//! By default the lanes are the representative pipeline, one rank per stage
//! (data-parallel index 0, tensor index 0); the other pipelines and tensor
//! ranks run the same schedule. In the merged (one lane per rank) view the
//! compute stream fills the upper part of a lane and the other streams share
//! thin bands below it, so communication overlapping compute stays visible.
//!
//! Building the chart (lanes, blocks, layout) is separate from drawing it, and
//! drawing works on any plotters backend (SVG or PNG by the path's extension).

use crate::colors::{darker, kind_color, kind_label, text_color_on};
use crate::error::ReportError;
use crate::font::{ensure_font_registered, FONT_FAMILY};
use crate::output::{render_to_file, Picture, PlotError};
use crate::selection::{representative_pipeline, stage_of_rank, RankSelection};
use crate::time_axis::{ticks, unit_for_span, TimeUnit};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeSet;
use std::path::Path;
use timeline::Timeline;
use timeline::{StreamKind, TaskKind};

/// Opacity of task blocks. Distinct from every other filled rectangle (which
/// are opaque), so a block shows as `opacity="0.9"` in the SVG and overlapping
/// streams in a merged lane stay visible.
pub(crate) const TASK_BLOCK_ALPHA: f64 = 0.9;

/// What the timeline chart shows and how big it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineChartOptions {
    /// Ranks to show, in lane order; `None` shows the representative pipeline
    /// (the first rank of every stage).
    pub ranks: Option<Vec<u32>>,
    /// One lane per (rank, stream) instead of one per rank.
    pub lanes_per_stream: bool,
    /// Image width.
    pub width_px: u32,
    /// Image height; `None` sizes the image to `lane_height_px` per lane.
    pub height_px: Option<u32>,
    /// Lane height when `height_px` is `None`.
    pub lane_height_px: u32,
}

impl Default for TimelineChartOptions {
    fn default() -> Self {
        TimelineChartOptions {
            ranks: None,
            lanes_per_stream: false,
            width_px: 1600,
            height_px: None,
            lane_height_px: 40,
        }
    }
}

/// What was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChartSummary {
    /// Lanes (rows) of the chart.
    pub lanes: usize,
    /// Task blocks drawn: one per task per lane it occupies.
    pub blocks: usize,
}

/// Draws the Gantt chart of `timeline` into `path` (`.svg` or `.png`).
pub fn render_timeline(
    timeline: &Timeline,
    options: &TimelineChartOptions,
    path: &Path,
) -> Result<ChartSummary, ReportError> {
    crate::output::image_format(path)?;
    let chart = GanttChart::build(timeline, options)?;
    render_to_file(&chart, (chart.width_px, chart.height_px), path)
}

const MARGIN_PX: i32 = 16;
const TITLE_FONT_PX: f64 = 20.0;
const SUBTITLE_FONT_PX: f64 = 14.0;
const LEGEND_FONT_PX: f64 = 13.0;
const LANE_FONT_PX: f64 = 13.0;
const BLOCK_FONT_PX: f64 = 12.0;
const AXIS_FONT_PX: f64 = 13.0;
const LEGEND_ROW_PX: i32 = 22;
const LEGEND_SWATCH_PX: i32 = 14;
const AXIS_AREA_PX: i32 = 52;
/// Share of a merged lane's height given to the compute stream.
const COMPUTE_BAND_FRACTION: f64 = 0.56;
const MIN_LANE_HEIGHT_PX: f64 = 4.0;

/// One row of the chart.
#[derive(Debug, Clone, PartialEq)]
struct Lane {
    label: String,
}

/// One task drawn in one lane.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    lane: usize,
    /// Vertical extent inside the lane, as fractions of its height (0 = top).
    band: (f64, f64),
    start_ns: u64,
    end_ns: u64,
    kind: TaskKind,
    label: Option<String>,
}

/// A legend entry placed in the header.
#[derive(Debug, Clone, PartialEq)]
struct LegendEntry {
    kind: TaskKind,
    position_px: (i32, i32),
}

/// The chart, laid out and ready to draw.
#[derive(Debug, Clone, PartialEq)]
struct GanttChart {
    title: String,
    subtitle: String,
    lanes: Vec<Lane>,
    blocks: Vec<Block>,
    legend: Vec<LegendEntry>,
    span_ns: u64,
    unit: TimeUnit,
    width_px: u32,
    height_px: u32,
    plot_left_px: i32,
    plot_right_px: i32,
    plot_top_px: i32,
    lane_height_px: f64,
}

fn font(size_px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size_px, FontStyle::Normal)
}

fn bold_font(size_px: f64) -> FontDesc<'static> {
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size_px, FontStyle::Bold)
}

/// Width of `text` in `font`, 0 when it cannot be measured.
fn text_width_px(font: &FontDesc, text: &str) -> i32 {
    font.box_size(text)
        .map(|(width, _)| width as i32)
        .unwrap_or(0)
}

/// The scenario's "title" field, or a generic title.
pub(crate) fn scenario_title(timeline: &Timeline) -> String {
    match timeline
        .header
        .scenario
        .get("title")
        .and_then(|title| title.as_str())
    {
        Some(title) if !title.trim().is_empty() => title.to_string(),
        _ => format!(
            "clustersim timeline · {} GPUs · t={} p={} d={}",
            timeline.header.n_gpus,
            timeline.header.layout.tensor_parallel,
            timeline.header.layout.pipeline_parallel,
            timeline.header.layout.data_parallel
        ),
    }
}

/// "0, 8, 16" or "0, 8, … 120 (16 ranks)".
fn rank_list(ranks: &[u32]) -> String {
    const SHOWN: usize = 8;
    let head: Vec<String> = ranks.iter().take(SHOWN).map(u32::to_string).collect();
    if ranks.len() <= SHOWN {
        head.join(", ")
    } else {
        format!(
            "{}, … {} ({} ranks)",
            head.join(", "),
            ranks[ranks.len() - 1],
            ranks.len()
        )
    }
}

/// Formats `ns` in `unit` with up to 3 significant decimals.
fn format_duration(ns: u64, unit: TimeUnit) -> String {
    let value = ns as f64 / unit.ns_per_unit;
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$} {}", unit.name)
}

impl GanttChart {
    fn build(
        timeline: &Timeline,
        options: &TimelineChartOptions,
    ) -> Result<GanttChart, ReportError> {
        ensure_font_registered()?;
        let selection = RankSelection::new(timeline, options.ranks.as_deref(), || {
            representative_pipeline(timeline)
        })?;

        // Streams in use on the selected ranks, in stream order.
        let mut streams: BTreeSet<StreamKind> = BTreeSet::new();
        for task in &timeline.tasks {
            if !selection.members(task.group).is_empty() {
                streams.insert(task.stream);
            }
        }
        if streams.is_empty() {
            return Err(selection.empty_error());
        }
        let streams: Vec<StreamKind> = streams.into_iter().collect();

        // Lanes, and where each (rank, stream) is drawn: (lane offset within the rank, band).
        let lanes_per_rank = if options.lanes_per_stream {
            streams.len()
        } else {
            1
        };
        let mut lanes = Vec::with_capacity(selection.ranks.len() * lanes_per_rank);
        for &rank in &selection.ranks {
            if options.lanes_per_stream {
                for stream in &streams {
                    lanes.push(Lane {
                        label: format!("rank {rank} · {}", stream.name()),
                    });
                }
            } else {
                lanes.push(Lane {
                    label: format!("stage {} · rank {rank}", stage_of_rank(timeline, rank)),
                });
            }
        }
        let placement = |stream: StreamKind| -> (usize, (f64, f64)) {
            let position = streams.iter().position(|&s| s == stream).unwrap_or(0);
            if options.lanes_per_stream {
                return (position, (0.0, 1.0));
            }
            let has_compute = streams[0] == StreamKind::Compute;
            let others = if has_compute {
                streams.len() - 1
            } else {
                streams.len()
            };
            if has_compute && stream == StreamKind::Compute {
                let bottom = if others == 0 {
                    1.0
                } else {
                    COMPUTE_BAND_FRACTION
                };
                return (0, (0.0, bottom));
            }
            let (top, index) = if has_compute {
                (COMPUTE_BAND_FRACTION + 0.03, position - 1)
            } else {
                (0.0, position)
            };
            let height = (1.0 - top) / others as f64;
            (
                0,
                (
                    top + index as f64 * height,
                    top + (index + 1) as f64 * height,
                ),
            )
        };

        let chunks = timeline.header.layout.chunks;
        let mut blocks = Vec::new();
        let mut kinds = BTreeSet::new();
        for task in &timeline.tasks {
            let members = selection.members(task.group);
            if members.is_empty() {
                continue;
            }
            kinds.insert(task.kind);
            let (offset, band) = placement(task.stream);
            let label = task.microbatch.map(|microbatch| {
                if chunks > 1 {
                    format!("{microbatch}c{}", task.chunk)
                } else {
                    microbatch.to_string()
                }
            });
            for &member in members {
                blocks.push(Block {
                    lane: member * lanes_per_rank + offset,
                    band,
                    start_ns: task.start_ns,
                    end_ns: task.end_ns,
                    kind: task.kind,
                    label: label.clone(),
                });
            }
        }

        let layout = &timeline.header.layout;
        let span_ns = timeline.makespan_ns().max(1);
        let unit = unit_for_span(span_ns);
        let title = scenario_title(timeline);
        let showing = if options.ranks.is_none() {
            format!(
                "showing pipeline 0 of {}, tensor rank 0 of {}",
                layout.data_parallel, layout.tensor_parallel
            )
        } else {
            format!("showing ranks {}", rank_list(&selection.ranks))
        };
        let subtitle = format!(
            "{showing} · iteration {} · {} GPUs · {} timeline",
            format_duration(timeline.makespan_ns(), unit),
            timeline.header.n_gpus,
            match timeline.header.producer {
                timeline::Producer::Sim => "simulated",
                timeline::Producer::Executor => "measured",
            }
        );

        // Header: title, subtitle, then legend rows wrapped to the width.
        let width_px = options.width_px;
        if width_px < 400 {
            return Err(ReportError::ImageSize {
                width_px,
                height_px: options.height_px.unwrap_or(0),
                reason: "the timeline chart needs at least 400 px of width",
            });
        }
        let legend_font = font(LEGEND_FONT_PX);
        let mut legend = Vec::new();
        let legend_top_px = MARGIN_PX + 30 + 24;
        let (mut x_px, mut row) = (MARGIN_PX, 0);
        for kind in kinds {
            let entry_width_px =
                LEGEND_SWATCH_PX + 6 + text_width_px(&legend_font, kind_label(kind)) + 18;
            if x_px + entry_width_px > width_px as i32 - MARGIN_PX && x_px > MARGIN_PX {
                row += 1;
                x_px = MARGIN_PX;
            }
            legend.push(LegendEntry {
                kind,
                position_px: (x_px, legend_top_px + row * LEGEND_ROW_PX),
            });
            x_px += entry_width_px;
        }
        let plot_top_px = legend_top_px + (row + 1) * LEGEND_ROW_PX + 8;

        let lane_font = font(LANE_FONT_PX);
        let label_width_px = lanes
            .iter()
            .map(|lane| text_width_px(&lane_font, &lane.label))
            .max()
            .unwrap_or(0);
        let plot_left_px = MARGIN_PX + label_width_px + 12;
        let plot_right_px = width_px as i32 - MARGIN_PX - 12;
        if plot_right_px - plot_left_px < 100 {
            return Err(ReportError::ImageSize {
                width_px,
                height_px: options.height_px.unwrap_or(0),
                reason: "too narrow for the lane labels and the plot",
            });
        }
        let fixed_px = plot_top_px + AXIS_AREA_PX + MARGIN_PX;
        let (height_px, lane_height_px) = match options.height_px {
            Some(height_px) => {
                let lane_height_px = f64::from(height_px as i32 - fixed_px) / lanes.len() as f64;
                if lane_height_px < MIN_LANE_HEIGHT_PX {
                    return Err(ReportError::ImageSize {
                        width_px,
                        height_px,
                        reason: "lanes would be under 4 px high",
                    });
                }
                (height_px, lane_height_px)
            }
            None => {
                let lane_height_px = f64::from(options.lane_height_px).max(MIN_LANE_HEIGHT_PX);
                let height_px = fixed_px as f64 + lane_height_px * lanes.len() as f64;
                (
                    height_px.ceil().min(f64::from(u32::MAX)) as u32,
                    lane_height_px,
                )
            }
        };

        Ok(GanttChart {
            title,
            subtitle,
            lanes,
            blocks,
            legend,
            span_ns,
            unit,
            width_px,
            height_px,
            plot_left_px,
            plot_right_px,
            plot_top_px,
            lane_height_px,
        })
    }

    fn x_px(&self, time_ns: f64) -> i32 {
        let width_px = f64::from(self.plot_right_px - self.plot_left_px);
        self.plot_left_px + (time_ns / self.span_ns as f64 * width_px).round() as i32
    }

    fn y_px(&self, lane: usize, fraction: f64) -> i32 {
        self.plot_top_px + ((lane as f64 + fraction) * self.lane_height_px).round() as i32
    }

    fn plot_bottom_px(&self) -> i32 {
        self.y_px(self.lanes.len(), 0.0)
    }
}

impl Picture for GanttChart {
    type Summary = ChartSummary;

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<ChartSummary, PlotError> {
        let grid = RGBColor(0xdd, 0xdd, 0xdd);
        let axis = RGBColor(0x44, 0x44, 0x44);
        root.fill(&WHITE)?;

        // Header.
        let left_top = Pos::new(HPos::Left, VPos::Top);
        root.draw(&Text::new(
            self.title.clone(),
            (MARGIN_PX, MARGIN_PX),
            bold_font(TITLE_FONT_PX).color(&BLACK).pos(left_top),
        ))?;
        root.draw(&Text::new(
            self.subtitle.clone(),
            (MARGIN_PX, MARGIN_PX + 30),
            font(SUBTITLE_FONT_PX).color(&axis).pos(left_top),
        ))?;
        for entry in &self.legend {
            let (x, y) = entry.position_px;
            root.draw(&Rectangle::new(
                [(x, y), (x + LEGEND_SWATCH_PX, y + LEGEND_SWATCH_PX)],
                kind_color(entry.kind).filled(),
            ))?;
            root.draw(&Text::new(
                kind_label(entry.kind).to_string(),
                (x + LEGEND_SWATCH_PX + 6, y + LEGEND_SWATCH_PX / 2),
                font(LEGEND_FONT_PX)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Left, VPos::Center)),
            ))?;
        }

        // Grid: vertical lines at ticks, separators between lanes.
        let plot_bottom_px = self.plot_bottom_px();
        let max_ticks = ((self.plot_right_px - self.plot_left_px) / 90).max(2) as usize;
        let time_ticks = ticks(self.span_ns, self.unit, max_ticks);
        for tick in &time_ticks {
            let x = self.x_px(tick.time_ns);
            root.draw(&PathElement::new(
                vec![(x, self.plot_top_px), (x, plot_bottom_px)],
                grid,
            ))?;
        }
        for lane in 0..=self.lanes.len() {
            let y = self.y_px(lane, 0.0);
            root.draw(&PathElement::new(
                vec![(self.plot_left_px, y), (self.plot_right_px, y)],
                grid,
            ))?;
        }

        // Lane labels.
        for (index, lane) in self.lanes.iter().enumerate() {
            root.draw(&Text::new(
                lane.label.clone(),
                (self.plot_left_px - 8, self.y_px(index, 0.5)),
                font(LANE_FONT_PX)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Right, VPos::Center)),
            ))?;
        }

        // Blocks, then their outlines and labels where there is room.
        let block_font = font(BLOCK_FONT_PX);
        let padding_px = if self.lane_height_px >= 12.0 { 2 } else { 0 };
        for block in &self.blocks {
            let x0 = self.x_px(block.start_ns as f64);
            let x1 = self.x_px(block.end_ns as f64).max(x0 + 1);
            // Pad only at the lane's edges so thin stream bands keep their height.
            let top_padding_px = if block.band.0 == 0.0 { padding_px } else { 0 };
            let bottom_padding_px = if block.band.1 == 1.0 { padding_px } else { 1 };
            let y0 = self.y_px(block.lane, block.band.0) + top_padding_px;
            let y1 = (self.y_px(block.lane, block.band.1) - bottom_padding_px).max(y0 + 1);
            let color = kind_color(block.kind);
            root.draw(&Rectangle::new(
                [(x0, y0), (x1, y1)],
                color.mix(TASK_BLOCK_ALPHA).filled(),
            ))?;
            if x1 - x0 >= 4 && y1 - y0 >= 4 {
                root.draw(&Rectangle::new([(x0, y0), (x1, y1)], darker(color)))?;
            }
            if let Some(label) = &block.label {
                let (label_width_px, label_height_px) =
                    block_font.box_size(label).unwrap_or((u32::MAX / 4, 0));
                if (label_width_px as i32) + 4 <= x1 - x0 && (label_height_px as i32) + 2 <= y1 - y0
                {
                    let text_color = text_color_on(color);
                    root.draw(&Text::new(
                        label.clone(),
                        ((x0 + x1) / 2, (y0 + y1) / 2),
                        block_font
                            .color(&text_color)
                            .pos(Pos::new(HPos::Center, VPos::Center)),
                    ))?;
                }
            }
        }

        // Time axis.
        root.draw(&PathElement::new(
            vec![
                (self.plot_left_px, plot_bottom_px),
                (self.plot_right_px, plot_bottom_px),
            ],
            axis,
        ))?;
        for tick in &time_ticks {
            let x = self.x_px(tick.time_ns);
            root.draw(&PathElement::new(
                vec![(x, plot_bottom_px), (x, plot_bottom_px + 5)],
                axis,
            ))?;
            root.draw(&Text::new(
                tick.label.clone(),
                (x, plot_bottom_px + 8),
                font(AXIS_FONT_PX)
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))?;
        }
        root.draw(&Text::new(
            format!("time ({})", self.unit.name),
            (
                (self.plot_left_px + self.plot_right_px) / 2,
                plot_bottom_px + 28,
            ),
            font(AXIS_FONT_PX)
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;

        Ok(ChartSummary {
            lanes: self.lanes.len(),
            blocks: self.blocks.len(),
        })
    }
}

#[cfg(test)]
#[path = "timeline_chart_tests.rs"]
mod tests;
