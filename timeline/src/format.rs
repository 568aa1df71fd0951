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
    pub chunks: u32,
    pub microbatches: u32,
    pub microbatch_size: u32,
    pub global_batch: u32,
    pub gpus_per_node: u32,
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

    /// Latest end time of each recorded iteration's tasks (one entry when
    /// records carry no iteration).
    pub fn iteration_ends_ns(&self) -> Vec<u64> {
        let count = self
            .tasks
            .iter()
            .map(|task| task.iteration.unwrap_or(0) as usize + 1)
            .max()
            .unwrap_or(1);
        let mut ends = vec![0u64; count];
        for task in &self.tasks {
            let end = &mut ends[task.iteration.unwrap_or(0) as usize];
            *end = (*end).max(task.end_ns);
        }
        ends
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

    /// Reads either form (a `.jsonl` path, or text whose first line is a bare header, is JSON lines).
    pub fn read(path: &std::path::Path) -> Result<Timeline, TimelineError> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| TimelineError::Read {
            path: name.clone(),
            source,
        })?;
        let reader = std::io::BufReader::new(file);
        let timeline = if name.ends_with(".jsonl") {
            Self::read_json_lines(reader, &name)?
        } else {
            serde_json::from_reader(reader).map_err(|source| TimelineError::Parse {
                path: name.clone(),
                line: 1,
                source,
            })?
        };
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

    /// Checks version, group references and time order of every record.
    pub fn check(&self, name: &str) -> Result<(), TimelineError> {
        if self.header.format_version != TIMELINE_FORMAT_VERSION {
            return Err(TimelineError::Version {
                path: name.to_string(),
                found: self.header.format_version,
            });
        }
        for task in &self.tasks {
            if task.group as usize >= self.header.groups.len() {
                return Err(TimelineError::Inconsistent {
                    path: name.to_string(),
                    problem: format!(
                        "task {} refers to group {} of {}",
                        task.id,
                        task.group,
                        self.header.groups.len()
                    ),
                });
            }
            if task.end_ns < task.start_ns {
                return Err(TimelineError::Inconsistent {
                    path: name.to_string(),
                    problem: format!("task {} ends before it starts", task.id),
                });
            }
        }
        Ok(())
    }
}
