//! Hand-made timelines for tests: a 1F1B (PipeDream-Flush) iteration with
//! uniform costs, built by a tiny list scheduler so the pictures look like the
//! real thing without depending on the simulator.

use timeline::{Producer, TaskRecord, Timeline, TimelineHeader, TimelineLayout};
use timeline::{StreamKind, TaskKind};

pub(crate) const FORWARD_NS: u64 = 1_000_000;
pub(crate) const BACKWARD_NS: u64 = 2_000_000;
pub(crate) const TENSOR_ALL_REDUCE_NS: u64 = 150_000;
pub(crate) const SEND_NS: u64 = 200_000;
pub(crate) const DATA_PARALLEL_NS: u64 = 3_000_000;
pub(crate) const OPTIMIZER_NS: u64 = 400_000;

/// One 1F1B iteration over p stages, m microbatches, t-way tensor and d-way
/// data parallelism, 4 GPUs per node.
pub(crate) fn one_f_one_b(p: u32, m: u32, t: u32, d: u32) -> Timeline {
    build(p, m, t, d, false)
}

/// As [`one_f_one_b`] with full recompute before every backward.
pub(crate) fn one_f_one_b_recompute(p: u32, m: u32, t: u32, d: u32) -> Timeline {
    build(p, m, t, d, true)
}

#[derive(Clone, Copy)]
enum Action {
    Forward(u32),
    Backward(u32),
}

struct Builder {
    tasks: Vec<TaskRecord>,
}

impl Builder {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        kind: TaskKind,
        stream: StreamKind,
        group: u32,
        stage: u32,
        microbatch: Option<u32>,
        start_ns: u64,
        duration_ns: u64,
    ) -> u64 {
        let id = self.tasks.len() as u32;
        self.tasks.push(TaskRecord {
            id,
            kind,
            stream,
            group,
            stage,
            chunk: 0,
            microbatch,
            start_ns,
            end_ns: start_ns + duration_ns,
            bytes: if kind.is_compute() { 0 } else { 1 << 20 },
            flops: if kind.is_compute() { 1e12 } else { 0.0 },
            iteration: None,
        });
        start_ns + duration_ns
    }
}

fn build(p: u32, m: u32, t: u32, d: u32, recompute: bool) -> Timeline {
    let tensor_group = |stage: u32, dp: u32| stage * d + dp;
    let data_group = |stage: u32, tensor: u32| p * d + stage * t + tensor;
    let mut groups = Vec::new();
    for stage in 0..p {
        for dp in 0..d {
            groups.push(
                (0..t)
                    .map(|tensor| stage * t * d + dp * t + tensor)
                    .collect(),
            );
        }
    }
    for stage in 0..p {
        for tensor in 0..t {
            groups.push((0..d).map(|dp| stage * t * d + dp * t + tensor).collect());
        }
    }

    // Per-stage action order (Megatron's 1F1B: warm-up forwards, steady pairs, cool-down).
    let orders: Vec<Vec<Action>> = (0..p)
        .map(|stage| {
            let warmup = (p - stage - 1).min(m);
            let mut order: Vec<Action> = (0..warmup).map(Action::Forward).collect();
            for k in 0..m - warmup {
                order.push(Action::Forward(warmup + k));
                order.push(Action::Backward(k));
            }
            order.extend((m - warmup..m).map(Action::Backward));
            order
        })
        .collect();

    let mut builder = Builder { tasks: Vec::new() };
    let unknown = u64::MAX;
    // Time the input of (stage, microbatch) arrives.
    let mut forward_input_ns = vec![vec![unknown; m as usize]; p as usize];
    let mut backward_input_ns = vec![vec![unknown; m as usize]; p as usize];
    forward_input_ns[0].fill(0);
    let mut next_action = vec![0usize; p as usize];
    let mut compute_free_ns = vec![0u64; p as usize];
    // Send streams are per (stage, replica); replicas run in lockstep.
    let mut send_next_free_ns = vec![0u64; (p * d) as usize];
    let mut send_previous_free_ns = vec![0u64; (p * d) as usize];
    let mut last_backward_end_ns = vec![0u64; p as usize];
    loop {
        let mut progressed = false;
        for stage in 0..p as usize {
            let Some(&action) = orders[stage].get(next_action[stage]) else {
                continue;
            };
            let (microbatch, ready_ns) = match action {
                Action::Forward(mb) => (mb, forward_input_ns[stage][mb as usize]),
                Action::Backward(mb) => (mb, backward_input_ns[stage][mb as usize]),
            };
            if ready_ns == unknown {
                continue;
            }
            progressed = true;
            next_action[stage] += 1;
            let s = stage as u32;
            let time_ns = ready_ns.max(compute_free_ns[stage]);
            for dp in 0..d {
                let group = tensor_group(s, dp);
                let mb = Some(microbatch);
                let mut end_ns = time_ns;
                match action {
                    Action::Forward(_) => {
                        end_ns = builder.push(
                            TaskKind::Forward,
                            StreamKind::Compute,
                            group,
                            s,
                            mb,
                            end_ns,
                            FORWARD_NS,
                        );
                    }
                    Action::Backward(_) => {
                        if recompute {
                            end_ns = builder.push(
                                TaskKind::Recompute,
                                StreamKind::Compute,
                                group,
                                s,
                                mb,
                                end_ns,
                                FORWARD_NS,
                            );
                        }
                        end_ns = builder.push(
                            TaskKind::Backward,
                            StreamKind::Compute,
                            group,
                            s,
                            mb,
                            end_ns,
                            BACKWARD_NS,
                        );
                    }
                }
                if t > 1 {
                    end_ns = builder.push(
                        TaskKind::TensorAllReduce,
                        StreamKind::Compute,
                        group,
                        s,
                        mb,
                        end_ns,
                        TENSOR_ALL_REDUCE_NS,
                    );
                }
                let send = match action {
                    Action::Forward(_) if stage + 1 < p as usize => Some((
                        TaskKind::PipelineActivation,
                        StreamKind::PipelineSendNext,
                        &mut send_next_free_ns[stage * d as usize + dp as usize],
                    )),
                    Action::Backward(_) if stage > 0 => Some((
                        TaskKind::PipelineGradient,
                        StreamKind::PipelineSendPrevious,
                        &mut send_previous_free_ns[stage * d as usize + dp as usize],
                    )),
                    _ => None,
                };
                let arrival_ns = send.map(|(kind, stream, free_ns)| {
                    let start_ns = end_ns.max(*free_ns);
                    *free_ns = builder.push(kind, stream, group, s, mb, start_ns, SEND_NS);
                    *free_ns
                });
                if dp + 1 == d {
                    match action {
                        Action::Forward(_) => {
                            if let Some(arrival_ns) = arrival_ns {
                                forward_input_ns[stage + 1][microbatch as usize] = arrival_ns;
                            } else {
                                backward_input_ns[stage][microbatch as usize] = end_ns;
                            }
                        }
                        Action::Backward(_) => {
                            if let Some(arrival_ns) = arrival_ns {
                                backward_input_ns[stage - 1][microbatch as usize] = arrival_ns;
                            }
                            last_backward_end_ns[stage] = end_ns;
                        }
                    }
                }
                compute_free_ns[stage] = end_ns;
            }
        }
        if !progressed {
            break;
        }
    }
    for stage in 0..p {
        let mut update_ns = last_backward_end_ns[stage as usize];
        if d > 1 {
            for tensor in 0..t {
                let end_ns = builder.push(
                    TaskKind::DataParallelAllReduce,
                    StreamKind::DataParallel,
                    data_group(stage, tensor),
                    stage,
                    None,
                    last_backward_end_ns[stage as usize],
                    DATA_PARALLEL_NS,
                );
                update_ns = update_ns.max(end_ns);
            }
        }
        for dp in 0..d {
            builder.push(
                TaskKind::OptimizerStep,
                StreamKind::Compute,
                tensor_group(stage, dp),
                stage,
                None,
                update_ns,
                OPTIMIZER_NS,
            );
        }
    }

    let scenario = serde_json::json!({
        "title": format!("test model on test cluster · t={t} p={p} d={d} v=1 · m={m} · 1f1b"),
    });
    Timeline {
        header: TimelineHeader {
            format_version: timeline::TIMELINE_FORMAT_VERSION,
            producer: Producer::Sim,
            executor_mode: None,
            scenario,
            profile_id: "test".to_string(),
            seed: 0,
            n_gpus: p * t * d,
            layout: TimelineLayout {
                tensor_parallel: t,
                pipeline_parallel: p,
                data_parallel: d,
                context_parallel: 1,
                chunks: 1,
                microbatches: m,
                microbatch_size: 1,
                global_batch: m * d,
                gpus_per_node: 4,
            },
            groups,
        },
        tasks: builder.tasks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_is_a_consistent_1f1b_iteration() {
        let timeline = one_f_one_b(4, 8, 2, 2);
        timeline.check("fixture").unwrap();
        let forwards = timeline
            .tasks
            .iter()
            .filter(|task| task.kind == TaskKind::Forward)
            .count();
        assert_eq!(forwards, 4 * 8 * 2);
        // Uniform costs, free-ish communication: makespan ≈ (m + p − 1)·(F + B) plus sends.
        let ideal_ns = (8 + 4 - 1) * (FORWARD_NS + BACKWARD_NS + 2 * TENSOR_ALL_REDUCE_NS);
        assert!(timeline.makespan_ns() > ideal_ns);
        assert!(timeline.makespan_ns() < ideal_ns * 3 / 2);
    }
}
