//! The `Timeline`: the one contract between producers (the event engine, the
//! GPU executor) and consumers (metrics, reports, compare).
//!
//! Format (stable): a header describing the run, the rank groups tasks refer
//! to, and one record per task with start and end in integer nanoseconds.
//! Written as one JSON object, or as JSON lines for big runs (first line the
//! header with groups, then one task per line).

use crate::kinds::{StreamKind, TaskKind};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// Version of the Timeline format; bumped on any incompatible change.
pub const TIMELINE_FORMAT_VERSION: u32 = 1;

/// Who recorded the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Producer {
    Sim,
    Executor,
}

/// The layout numbers consumers need without re-reading the scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineLayout {
    pub tensor_parallel: u32,
    pub pipeline_parallel: u32,
    pub data_parallel: u32,
    /// Context-parallel degree (1 when absent: written only when above 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub context_parallel: u32,
    pub chunks: u32,
    pub microbatches: u32,
    pub microbatch_size: u32,
    pub global_batch: u32,
    pub gpus_per_node: u32,
}

fn one() -> u32 {
    1
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

impl TimelineLayout {
    /// Ranks per pipeline stage: t · cp · d.
    pub fn ranks_per_stage(&self) -> u32 {
        self.tensor_parallel
            .saturating_mul(self.context_parallel)
            .saturating_mul(self.data_parallel)
    }
}

/// What was run, by whom, with what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineHeader {
    pub format_version: u32,
    pub producer: Producer,
    /// `real` or `synthetic` for executor timelines; absent for the simulator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_mode: Option<String>,
    /// The fully resolved scenario (model, topology name, layout, schedule, options).
    pub scenario: serde_json::Value,
    pub profile_id: String,
    pub seed: u64,
    pub n_gpus: u32,
    pub layout: TimelineLayout,
    /// Ranks of each group; tasks refer to groups by index.
    pub groups: Vec<Vec<u32>>,
}

/// One task as it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRecord {
    pub id: u32,
    pub kind: TaskKind,
    pub stream: StreamKind,
    /// Index into `header.groups`: the ranks whose `stream` this task occupied.
    pub group: u32,
    pub stage: u32,
    pub chunk: u16,
    /// Microbatch, absent for per-iteration tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatch: Option<u32>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Bytes communicated (communication tasks) or moved through HBM (compute).
    pub bytes: u64,
    /// Matrix FLOPs done by each rank of the group.
    pub flops: f64,
    /// Training iteration, when several consecutive ones were recorded
    /// (ZeRO-Offload's delayed update); absent means iteration 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
}

impl TaskRecord {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// A recorded iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeline {
    pub header: TimelineHeader,
    pub tasks: Vec<TaskRecord>,
}

/// Problems reading a timeline.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    #[error("cannot read timeline {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("timeline {path} line {line}: {source}")]
    Parse {
        path: String,
        line: usize,
        source: serde_json::Error,
    },
    #[error("timeline {path}: format version {found}, this build reads {TIMELINE_FORMAT_VERSION}")]
    Version { path: String, found: u32 },
    #[error("timeline {path}: {problem}")]
    Inconsistent { path: String, problem: String },
}

impl Timeline {
    /// Latest end time over all tasks (the iteration time).
    pub fn makespan_ns(&self) -> u64 {
        self.tasks.iter().map(|task| task.end_ns).max().unwrap_or(0)
    }

    /// Latest end time of each recorded iteration's tasks, in iteration
    /// order (one entry when records carry no iteration). Never allocates
    /// more than one entry per distinct iteration present; on a timeline
    /// that passed [`Timeline::check`] those are exactly 0..n.
    pub fn iteration_ends_ns(&self) -> Vec<u64> {
        let mut ends = std::collections::BTreeMap::new();
        for task in &self.tasks {
            let end = ends.entry(task.iteration.unwrap_or(0)).or_insert(0u64);
            *end = (*end).max(task.end_ns);
        }
        if ends.is_empty() {
            return vec![0];
        }
        ends.into_values().collect()
    }

    /// Writes one pretty-printed JSON object.
    pub fn write_json<W: Write>(&self, writer: W) -> std::io::Result<()> {
        serde_json::to_writer(writer, self).map_err(std::io::Error::other)
    }

    /// Writes JSON lines: header first, then one task per line.
    pub fn write_json_lines<W: Write>(&self, mut writer: W) -> std::io::Result<()> {
        serde_json::to_writer(&mut writer, &self.header).map_err(std::io::Error::other)?;
        writer.write_all(b"\n")?;
        for task in &self.tasks {
            serde_json::to_writer(&mut writer, task).map_err(std::io::Error::other)?;
            writer.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Reads either form (a `.jsonl` path, or text whose first line is a bare
    /// header, is JSON lines), refusing a file over
    /// [`input_file::MAX_TIMELINE_BYTES`] (4 GiB) or one that never ends,
    /// then [`Timeline::check`]s it.
    pub fn read(path: &std::path::Path) -> Result<Timeline, TimelineError> {
        let name = path.display().to_string();
        let read_error = |source| TimelineError::Read {
            path: name.clone(),
            source,
        };
        let mut reader =
            input_file::open_capped(path, input_file::MAX_TIMELINE_BYTES).map_err(read_error)?;
        let result = if name.ends_with(".jsonl") {
            Self::read_json_lines(&mut reader, &name)
        } else {
            serde_json::from_reader(&mut reader).map_err(|source| TimelineError::Parse {
                path: name.clone(),
                line: 1,
                source,
            })
        };
        if reader.exceeded() {
            return Err(read_error(reader.too_large_error()));
        }
        let timeline = result?;
        timeline.check(&name)?;
        Ok(timeline)
    }

    fn read_json_lines<R: BufRead>(reader: R, name: &str) -> Result<Timeline, TimelineError> {
        let mut lines = reader.lines().enumerate();
        let (_, first) = lines.next().ok_or_else(|| TimelineError::Inconsistent {
            path: name.to_string(),
            problem: "empty file".into(),
        })?;
        let first = first.map_err(|source| TimelineError::Read {
            path: name.to_string(),
            source,
        })?;
        let header: TimelineHeader =
            serde_json::from_str(&first).map_err(|source| TimelineError::Parse {
                path: name.to_string(),
                line: 1,
                source,
            })?;
        let mut tasks = Vec::new();
        for (index, line) in lines {
            let line = line.map_err(|source| TimelineError::Read {
                path: name.to_string(),
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            tasks.push(
                serde_json::from_str(&line).map_err(|source| TimelineError::Parse {
                    path: name.to_string(),
                    line: index + 1,
                    source,
                })?,
            );
        }
        Ok(Timeline { header, tasks })
    }

    /// Checks everything a consumer relies on, so metrics, compare and the
    /// reports never divide by zero, index out of range, allocate by an input
    /// number or print an absurd number: the format version; layout degrees
    /// of at least 1 whose product is `n_gpus`; non-empty groups of ranks
    /// below `n_gpus`; at least one task; every task's group in range and
    /// start ≤ end; iterations numbered 0..n without gaps whose ends ascend.
    pub fn check(&self, name: &str) -> Result<(), TimelineError> {
        let header = &self.header;
        if header.format_version != TIMELINE_FORMAT_VERSION {
            return Err(TimelineError::Version {
                path: name.to_string(),
                found: header.format_version,
            });
        }
        let problem = |problem: String| TimelineError::Inconsistent {
            path: name.to_string(),
            problem,
        };
        let layout = &header.layout;
        for (key, value) in [
            ("tensor_parallel", layout.tensor_parallel),
            ("pipeline_parallel", layout.pipeline_parallel),
            ("data_parallel", layout.data_parallel),
            ("context_parallel", layout.context_parallel),
        ] {
            if value == 0 {
                return Err(problem(format!(
                    "header.layout.{key} is 0 (must be at least 1)"
                )));
            }
        }
        let product = u128::from(layout.tensor_parallel)
            * u128::from(layout.pipeline_parallel)
            * u128::from(layout.data_parallel)
            * u128::from(layout.context_parallel);
        if product != u128::from(header.n_gpus) && layout.context_parallel > 1 {
            return Err(problem(format!(
                "header.n_gpus is {} but the layout's tensor × context × pipeline × data parallel degrees are {} × {} × {} × {} = {product}",
                header.n_gpus, layout.tensor_parallel, layout.context_parallel, layout.pipeline_parallel, layout.data_parallel
            )));
        }
        if product != u128::from(header.n_gpus) {
            return Err(problem(format!(
                "header.n_gpus is {} but the layout's tensor × pipeline × data parallel degrees are {} × {} × {} = {product}",
                header.n_gpus, layout.tensor_parallel, layout.pipeline_parallel, layout.data_parallel
            )));
        }
        for (index, group) in header.groups.iter().enumerate() {
            if group.is_empty() {
                return Err(problem(format!("header.groups[{index}] is empty")));
            }
            if let Some(rank) = group.iter().find(|&&rank| rank >= header.n_gpus) {
                return Err(problem(format!(
                    "header.groups[{index}] holds rank {rank}, but the timeline has {} GPUs (ranks 0..{})",
                    header.n_gpus,
                    header.n_gpus - 1
                )));
            }
        }
        if self.tasks.is_empty() {
            return Err(problem("no tasks".to_string()));
        }
        for task in &self.tasks {
            if task.group as usize >= header.groups.len() {
                return Err(problem(format!(
                    "task {} refers to group {} of {}",
                    task.id,
                    task.group,
                    header.groups.len()
                )));
            }
            if task.end_ns < task.start_ns {
                return Err(problem(format!("task {} ends before it starts", task.id)));
            }
        }
        let ends = self.iteration_ends_ns();
        let mut iterations = std::collections::BTreeSet::new();
        for task in &self.tasks {
            iterations.insert(task.iteration.unwrap_or(0));
        }
        if let Some(missing) = (0u32..)
            .zip(&iterations)
            .find(|(expected, &found)| *expected != found)
        {
            return Err(problem(format!(
                "tasks record iteration {} but no iteration {} ({} distinct iterations must be numbered 0..{})",
                iterations.last().copied().unwrap_or(0),
                missing.0,
                iterations.len(),
                iterations.len() - 1
            )));
        }
        if let Some(at) = ends.windows(2).position(|pair| pair[1] <= pair[0]) {
            return Err(problem(format!(
                "iteration {} ends at {} ns, not after iteration {} (ends at {} ns): iterations are out of order",
                at + 1,
                ends[at + 1],
                at,
                ends[at]
            )));
        }
        Ok(())
    }
}
