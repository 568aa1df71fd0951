//! # timeline — the one contract between producers and consumers
//!
//! The event engine (`sim`) and the GPU executor (`executor`) both produce a
//! [`Timeline`]: a header describing the run and one [`TaskRecord`] per task
//! with integer-nanosecond start and end. Everything downstream reads only
//! this: [`metrics`] (iteration time, TFLOP/s, bubble, exposed
//! communication), [`compare`] (two timelines side by side) and the `reports`
//! crate (Gantt charts, Perfetto traces). Judging simulated and measured runs
//! with the same code is what makes `clustersim compare` meaningful.
//!
//! ```
//! use timeline::{TaskKind, StreamKind};
//! assert_eq!(TaskKind::TensorAllReduce.name(), "tensor_all_reduce");
//! assert!(TaskKind::Backward.is_compute());
//! assert_eq!(StreamKind::PipelineSendNext.name(), "pp_send_next");
//! ```

pub mod compare;
mod format;
mod kinds;
pub mod metrics;
mod rank_time;
pub mod time;

pub use format::*;
pub use kinds::{CommClass, StreamKind, TaskKind};
pub use rank_time::RankClassSeconds;
