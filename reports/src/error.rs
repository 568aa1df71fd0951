//! `ReportError`: everything that can go wrong turning a timeline into a
//! picture or a trace. Every variant carries the context a user needs to fix
//! the problem (the path, the extension, the ranks); nothing in this crate
//! panics on user input.

use std::path::PathBuf;

/// Problems writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Creating or writing an output file (or writer) failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file being written (`<writer>` for a caller-supplied writer).
        path: PathBuf,
        source: std::io::Error,
    },
    /// The output path's extension names no format this crate writes.
    #[error("unsupported image extension {extension:?} for {path}: use .svg or .png")]
    UnsupportedExtension {
        /// The extension found (empty when the path has none).
        extension: String,
        path: PathBuf,
    },
    /// The selected ranks have no tasks (or the selection is empty).
    #[error("no tasks to show for ranks {ranks:?}")]
    EmptySelection {
        /// The ranks that were asked for.
        ranks: Vec<u32>,
    },
    /// A selected rank does not exist in the timeline.
    #[error("rank {rank} is not in the timeline, which has {n_gpus} GPUs (ranks 0..{n_gpus})")]
    RankOutOfRange { rank: u32, n_gpus: u32 },
    /// A task refers to a group the header does not have.
    #[error("task {task_id} refers to group {group}, but the timeline has {n_groups} groups")]
    UnknownGroup {
        task_id: u32,
        group: u32,
        n_groups: usize,
    },
    /// An image size that cannot be drawn (too small to hold the chart, or too big to allocate).
    #[error("image size {width_px}×{height_px} px is not drawable: {reason}")]
    ImageSize {
        width_px: u32,
        height_px: u32,
        reason: &'static str,
    },
    /// There is nothing to plot (no series, or no finite points).
    #[error("nothing to plot: {what}")]
    NoData {
        /// What was missing, e.g. "bubble series have no finite points with m ≥ 1".
        what: String,
    },
    /// The embedded font could not be registered with the plotting library.
    #[error("cannot register the embedded DejaVu font")]
    Font,
    /// The plotting backend failed (the message comes from plotters).
    #[error("plotting failed for {path}: {message}")]
    Plotting { path: PathBuf, message: String },
}
