//! Chrome / Perfetto trace JSON (the "JSON object format" both UIs load):
//! one process per node ("node N"), one thread per (rank, stream)
//! ("rank R · compute"), one complete event (`"ph": "X"`) per task per
//! selected rank of its group.
//!
//! Times are microseconds written as exact decimals of the integer
//! nanoseconds (`1234567 ns` → `1234.567`). The output is streamed event by
//! event, so a 3072-GPU trace never sits in memory as one string, and its
//! order is deterministic: metadata by (node, rank, stream), then events in
//! timeline order, each expanded over its selected ranks in ascending order.

use crate::error::ReportError;
use crate::selection::RankSelection;
use crate::timeline_chart::scenario_title;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;
use timeline::StreamKind;
use timeline::{Producer, TaskRecord, Timeline};

/// Which part of the timeline goes into the trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceOptions {
    /// Ranks to include; `None` includes every rank. Big runs should pick a few.
    pub ranks: Option<Vec<u32>>,
}

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceSummary {
    /// Complete ("X") events: one per task per selected rank of its group.
    pub events: usize,
    /// Processes (nodes) holding at least one event.
    pub processes: usize,
    /// Threads ((rank, stream) pairs) holding at least one event.
    pub threads: usize,
}

/// Thread ids are `rank · TID_PER_RANK + stream index`, readable in the UI.
const TID_PER_RANK: u64 = 100;

/// Writes the trace of `timeline` to `writer` (buffered internally).
pub fn write_perfetto_trace<W: Write>(
    timeline: &Timeline,
    options: &TraceOptions,
    writer: W,
) -> Result<TraceSummary, ReportError> {
    let selection = RankSelection::new(timeline, options.ranks.as_deref(), || {
        (0..timeline.header.n_gpus).collect()
    })?;

    // Threads in use: (rank, stream) for every selected member of every task's group.
    let mut group_streams: BTreeSet<(u32, StreamKind)> = BTreeSet::new();
    for task in &timeline.tasks {
        group_streams.insert((task.group, task.stream));
    }
    let mut threads: BTreeSet<(u32, u32, StreamKind)> = BTreeSet::new();
    for &(group, stream) in &group_streams {
        for &member in selection.members(group) {
            let rank = selection.ranks[member];
            threads.insert((node_of(timeline, rank), rank, stream));
        }
    }
    if threads.is_empty() {
        return Err(selection.empty_error());
    }

    let mut out = std::io::BufWriter::new(writer);
    let io = |source| ReportError::Io {
        path: PathBuf::from("<trace writer>"),
        source,
    };
    let summary = write_all(timeline, &selection, &threads, &mut out).map_err(io)?;
    out.flush().map_err(io)?;
    Ok(summary)
}

fn node_of(timeline: &Timeline, rank: u32) -> u32 {
    rank / timeline.header.layout.gpus_per_node.max(1)
}

fn thread_id(rank: u32, stream: StreamKind) -> u64 {
    u64::from(rank) * TID_PER_RANK + stream.index() as u64
}

/// `ns` as microseconds, exactly: integer part, '.', three digits.
fn microseconds(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// A JSON string literal (escaped by serde_json).
fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn write_all<W: Write>(
    timeline: &Timeline,
    selection: &RankSelection,
    threads: &BTreeSet<(u32, u32, StreamKind)>,
    out: &mut W,
) -> std::io::Result<TraceSummary> {
    let producer = match timeline.header.producer {
        Producer::Sim => "sim",
        Producer::Executor => "executor",
    };
    write!(
        out,
        "{{\"displayTimeUnit\":\"ns\",\"otherData\":{{\"title\":{},\"producer\":\"{producer}\",\"profile_id\":{},\"seed\":{},\"n_gpus\":{}}},\n\"traceEvents\":[",
        json_string(&scenario_title(timeline)),
        json_string(&timeline.header.profile_id),
        timeline.header.seed,
        timeline.header.n_gpus,
    )?;
    let mut first = true;
    let mut separator = |out: &mut W| -> std::io::Result<()> {
        let text: &[u8] = if first { b"\n" } else { b",\n" };
        first = false;
        out.write_all(text)
    };

    let mut processes = BTreeSet::new();
    for &(node, rank, stream) in threads {
        if processes.insert(node) {
            separator(out)?;
            write!(
                out,
                "{{\"ph\":\"M\",\"pid\":{node},\"name\":\"process_name\",\"args\":{{\"name\":\"node {node}\"}}}}"
            )?;
            separator(out)?;
            write!(
                out,
                "{{\"ph\":\"M\",\"pid\":{node},\"name\":\"process_sort_index\",\"args\":{{\"sort_index\":{node}}}}}"
            )?;
        }
        let tid = thread_id(rank, stream);
        separator(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"pid\":{node},\"tid\":{tid},\"name\":\"thread_name\",\"args\":{{\"name\":{}}}}}",
            json_string(&format!("rank {rank} · {}", stream.name()))
        )?;
        separator(out)?;
        write!(
            out,
            "{{\"ph\":\"M\",\"pid\":{node},\"tid\":{tid},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{tid}}}}}"
        )?;
    }

    let mut events = 0;
    for task in &timeline.tasks {
        for &member in selection.members(task.group) {
            let rank = selection.ranks[member];
            separator(out)?;
            write_event(
                out,
                task,
                node_of(timeline, rank),
                thread_id(rank, task.stream),
            )?;
            events += 1;
        }
    }
    out.write_all(b"\n]}\n")?;
    Ok(TraceSummary {
        events,
        processes: processes.len(),
        threads: threads.len(),
    })
}

fn write_event<W: Write>(
    out: &mut W,
    task: &TaskRecord,
    pid: u32,
    tid: u64,
) -> std::io::Result<()> {
    let kind = task.kind.name();
    let microbatch = match task.microbatch {
        Some(microbatch) => microbatch.to_string(),
        None => "null".to_string(),
    };
    // serde_json writes f64 in the shortest form that reads back exactly; non-finite becomes null.
    let flops = serde_json::Value::from(task.flops).to_string();
    write!(
        out,
        "{{\"name\":\"{kind}\",\"cat\":\"{kind}\",\"ph\":\"X\",\"pid\":{pid},\"tid\":{tid},\"ts\":{},\"dur\":{},\"args\":{{\"kind\":\"{kind}\",\"stage\":{},\"chunk\":{},\"microbatch\":{microbatch},\"bytes\":{},\"flops\":{flops},\"task_id\":{}}}}}",
        microseconds(task.start_ns),
        microseconds(task.end_ns.saturating_sub(task.start_ns)),
        task.stage,
        task.chunk,
        task.bytes,
        task.id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::one_f_one_b;
    use std::collections::BTreeMap;

    fn trace(timeline: &Timeline, options: &TraceOptions) -> (TraceSummary, Vec<u8>) {
        let mut bytes = Vec::new();
        let summary = write_perfetto_trace(timeline, options, &mut bytes).unwrap();
        (summary, bytes)
    }

    #[test]
    fn microseconds_are_exact_decimals() {
        assert_eq!(microseconds(0), "0.000");
        assert_eq!(microseconds(1_234_567), "1234.567");
        assert_eq!(microseconds(1_001), "1.001");
        assert_eq!("1.001".parse::<f64>().unwrap(), 1001.0 / 1000.0);
    }

    #[test]
    fn trace_parses_and_holds_every_task_of_the_selected_ranks() {
        let timeline = one_f_one_b(4, 8, 2, 2);
        let ranks = vec![0, 3, 6, 13];
        let options = TraceOptions {
            ranks: Some(ranks.clone()),
        };
        let (summary, bytes) = trace(&timeline, &options);
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["displayTimeUnit"], "ns");
        let events = json["traceEvents"].as_array().unwrap();

        // Expected: (task id, rank) for every selected rank of every task's group.
        let mut expected: BTreeMap<(u64, u64), &TaskRecord> = BTreeMap::new();
        for task in &timeline.tasks {
            for &rank in &timeline.header.groups[task.group as usize] {
                if ranks.contains(&rank) {
                    expected.insert((u64::from(task.id), u64::from(rank)), task);
                }
            }
        }
        let complete: Vec<&serde_json::Value> =
            events.iter().filter(|event| event["ph"] == "X").collect();
        assert_eq!(complete.len(), expected.len());
        assert_eq!(summary.events, expected.len());
        let mut seen = BTreeSet::new();
        for event in complete {
            let tid = event["tid"].as_u64().unwrap();
            let rank = tid / TID_PER_RANK;
            let id = event["args"]["task_id"].as_u64().unwrap();
            let task = expected[&(id, rank)];
            assert!(seen.insert((id, rank)), "task {id} twice on rank {rank}");
            assert_eq!(event["ts"].as_f64().unwrap(), task.start_ns as f64 / 1000.0);
            assert_eq!(
                event["dur"].as_f64().unwrap(),
                task.duration_ns() as f64 / 1000.0
            );
            assert_eq!(event["pid"].as_u64().unwrap(), rank / 4);
            assert_eq!(tid % TID_PER_RANK, task.stream.index() as u64);
            assert_eq!(event["args"]["kind"], task.kind.name());
            assert_eq!(event["args"]["stage"], task.stage);
            assert_eq!(
                event["args"]["microbatch"],
                serde_json::json!(task.microbatch)
            );
        }

        // Metadata names every process and thread that has events.
        let names: BTreeSet<String> = events
            .iter()
            .filter(|event| event["name"] == "thread_name" || event["name"] == "process_name")
            .map(|event| event["args"]["name"].as_str().unwrap().to_string())
            .collect();
        for name in [
            "node 0",
            "node 1",
            "node 3",
            "rank 0 · compute",
            "rank 6 · pp_send_prev",
            "rank 13 · dp",
        ] {
            assert!(names.contains(name), "missing {name}");
        }
        assert!(!names.contains("node 2"));
        assert_eq!(summary.processes, 3);
    }

    #[test]
    fn all_ranks_by_default_and_same_bytes_every_time() {
        let timeline = one_f_one_b(4, 8, 2, 2);
        let (summary, first) = trace(&timeline, &TraceOptions::default());
        let (_, second) = trace(&timeline, &TraceOptions::default());
        assert_eq!(first, second);
        let expected: usize = timeline
            .tasks
            .iter()
            .map(|task| timeline.header.groups[task.group as usize].len())
            .sum();
        assert_eq!(summary.events, expected);
        assert_eq!(summary.processes, 4);
    }

    #[test]
    fn empty_or_unknown_selections_are_errors() {
        let timeline = one_f_one_b(4, 8, 1, 1);
        let mut sink = Vec::new();
        let error = write_perfetto_trace(
            &timeline,
            &TraceOptions {
                ranks: Some(vec![2, 99]),
            },
            &mut sink,
        )
        .unwrap_err();
        assert!(matches!(
            error,
            ReportError::RankOutOfRange { rank: 99, .. }
        ));
        let mut idle = timeline.clone();
        idle.tasks.retain(|task| task.stage != 2);
        let error = write_perfetto_trace(
            &idle,
            &TraceOptions {
                ranks: Some(vec![2]),
            },
            &mut sink,
        )
        .unwrap_err();
        assert_eq!(error.to_string(), "no tasks to show for ranks [2]");
        assert!(sink.is_empty(), "nothing written on error");
    }
}
