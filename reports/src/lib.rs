//! # reports — pictures and traces from a Timeline
//!
//! Everything here reads a [`timeline::Timeline`] (the one contract
//! between producers and consumers) and writes something a person looks at:
//!
//! - [`render_timeline`]: a Gantt chart (SVG or PNG by the path's extension) of
//!   the representative pipeline or of chosen ranks, one block per task.
//! - [`write_perfetto_trace`]: a Chrome/Perfetto JSON trace, streamed, one
//!   process per node and one thread per (rank, stream).
//! - [`render_bubble_chart`]: simulated pipeline-bubble fractions over the
//!   analytical curves (p−1)/m and (p−1)/(v·m).
//! - [`render_sweep_chart`]: throughput of every layout of a sweep, ranked,
//!   coloured by schedule, the best named.
//! - [`render_comparison`] and [`comparison_table`]: two timelines side by side
//!   (median task duration per kind, iteration time).
//!
//! Charts use an embedded font (DejaVu Sans), so output never depends on the
//! fonts installed on the machine, and the same input always gives the same
//! bytes. Task kinds unknown to this crate still draw, in grey.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use reports::{render_timeline, write_perfetto_trace, TimelineChartOptions, TraceOptions};
//! let timeline = timeline::Timeline::read(std::path::Path::new("run.json"))?;
//! let summary = render_timeline(&timeline, &TimelineChartOptions::default(), "run.svg".as_ref())?;
//! println!("{} lanes, {} blocks", summary.lanes, summary.blocks);
//! # Ok(())
//! # }
//! ```

mod bubble_chart;
pub mod colors;
mod comparison;
mod error;
mod font;
mod line_chart;
mod output;
mod perfetto;
mod selection;
mod sweep_chart;
mod time_axis;
mod timeline_chart;

#[cfg(test)]
mod fixtures;

pub use bubble_chart::{render_bubble_chart, BubbleFormula, BubbleSeries};
pub use comparison::{
    comparison_table, format_comparison_table, render_comparison, ComparisonRow, ComparisonSide,
    ITERATION_METRIC,
};
pub use error::ReportError;
pub use line_chart::{render_line_chart, LineChart};
pub use output::check_image_path;
pub use perfetto::{write_perfetto_trace, TraceOptions, TraceSummary};
pub use sweep_chart::render_sweep_chart;
pub use timeline_chart::{render_timeline, ChartSummary, TimelineChartOptions};
