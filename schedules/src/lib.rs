//! Pipeline schedules as data: for each pipeline stage, the ordered list of
//! [`Action`]s it runs in one iteration. Generators produce data, never
//! events; lowering turns actions into tasks.
//!
//! - GPipe (Huang et al. 2019): all forwards, then all backwards.
//! - 1F1B / PipeDream-Flush (Narayanan et al. 2021): stage s runs
//!   min(p−s−1, m) warm-up forwards, then alternates one forward and one
//!   backward, then drains the remaining backwards (Megatron-LM
//!   `forward_backward_pipelining_without_interleaving`).
//! - Interleaved 1F1B (Megatron-LM SC21 Sec. 2.2.2): each stage holds v model
//!   chunks; warm-up (p−s−1)·2 + (v−1)·p virtual microbatches; the k-th forward
//!   runs chunk (k mod p·v) div p on microbatch (k div p·v)·p + k mod p, the
//!   k-th backward the mirrored chunk v−1−… (Megatron-LM
//!   `forward_backward_pipelining_with_interleaving`, `get_model_chunk_id`).
//! - ZB-H1 and ZB-H2 (Qi et al. 2024): 1F1B with split backwards, the
//!   weight-gradient passes deferred into the cool-down (`zero_bubble.rs`).
//! - Interleaved with Megatron-Core's flexible microbatch groups of N
//!   (`flexible_interleaved.rs`; N = p is the order above).
//! - Looped BFS (PyTorch `ScheduleLoopedBFS`): every forward of each local
//!   stage, then the backwards in reverse (`looped_bfs.rs`).
//! - ZB-V (Qi et al. 2024, Sec. 6) and DualPipeV (deepseek-ai/DualPipe):
//!   two chunks per rank on the V map (`v_shape.rs`).
//! - DualPipe (DeepSeek-V3; deepseek-ai/DualPipe `dualpipe.py`): two model
//!   copies fed from both ends (`dualpipe.rs`).

mod action;
mod definition;
mod dualpipe;
pub mod flexible_interleaved;
mod flush;
mod kind;
mod looped_bfs;
mod pipeline_schedule;
mod v_shape;
mod zero_bubble;

pub use action::{Action, ActionParseError, Paired, Pass};
pub use definition::{PipelineShape, ScheduleDefinition};
pub use kind::ScheduleKind;
pub use pipeline_schedule::PipelineSchedule;

/// (microbatch, chunk) of the k-th virtual microbatch in Megatron's interleaved order.
#[cfg(test)]
fn interleaved_slot(k: u32, stages: u32, chunks: u32, pass: Pass) -> (u32, u32) {
    let group = stages * chunks;
    let in_group = k % group;
    let forward_chunk = in_group / stages;
    let chunk = match pass {
        Pass::Forward => forward_chunk,
        Pass::Backward | Pass::InputGradient | Pass::WeightGradient | Pass::ForwardBackward => {
            chunks - 1 - forward_chunk
        }
    };
    let microbatch = (k / group) * stages + k % stages;
    (microbatch, chunk)
}

/// SC21's interleaved order (groups of p), the reference the flexible
/// groups reproduce with N = p.
#[cfg(test)]
fn interleaved(stage: u32, stages: u32, chunks: u32, microbatches: u32) -> Vec<Action> {
    let total = microbatches * chunks;
    let warmup = if microbatches == stages {
        total
    } else {
        ((stages - stage - 1) * 2 + (chunks - 1) * stages).min(total)
    };
    let steady = total - warmup;
    let fwd = |k: u32| {
        let (mb, chunk) = interleaved_slot(k, stages, chunks, Pass::Forward);
        action::forward(stage, mb, chunk)
    };
    let bwd = |k: u32| {
        let (mb, chunk) = interleaved_slot(k, stages, chunks, Pass::Backward);
        action::backward(stage, mb, chunk)
    };
    let mut list = Vec::with_capacity(2 * total as usize);
    list.extend((0..warmup).map(fwd));
    for i in 0..steady {
        list.push(fwd(warmup + i));
        list.push(bwd(i));
    }
    list.extend((steady..total).map(bwd));
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_f_one_b_for_four_stages_reads_as_in_the_paper() {
        let schedule = PipelineSchedule::generate(ScheduleKind::OneFOneB, 4, 1, 8);
        assert_eq!(
            schedule.actions[0]
                .iter()
                .take(6)
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            "s0F0 s0F1 s0F2 s0F3 s0B0 s0F4"
        );
        assert_eq!(
            schedule.actions[3]
                .iter()
                .take(4)
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(" "),
            "s3F0 s3B0 s3F1 s3B1"
        );
    }

    #[test]
    fn text_form_parses_back() {
        for kind in ScheduleKind::ALL {
            let schedule =
                PipelineSchedule::generate(kind, 4, if kind.uses_chunks() { 2 } else { 1 }, 8);
            assert_eq!(
                PipelineSchedule::parse_actions(&schedule.to_text()).unwrap(),
                schedule.actions
            );
        }
    }

    #[test]
    fn every_stage_runs_each_forward_and_backward_exactly_once() {
        for (kind, v) in [
            (ScheduleKind::Gpipe, 1),
            (ScheduleKind::OneFOneB, 1),
            (ScheduleKind::Interleaved, 3),
        ] {
            for (p, m) in [(4, 8), (8, 8), (4, 12), (2, 2)] {
                let schedule = PipelineSchedule::generate(kind, p, v, m);
                for list in &schedule.actions {
                    let mut seen: Vec<_> = list
                        .iter()
                        .map(|a| (a.pass, a.microbatch, a.chunk))
                        .collect();
                    seen.sort();
                    seen.dedup();
                    assert_eq!(seen.len() as u32, 2 * m * v, "{kind:?} p={p} m={m}");
                    assert_eq!(list.len() as u32, 2 * m * v);
                }
            }
        }
    }

    #[test]
    fn one_f_one_b_limits_in_flight_microbatches_and_gpipe_holds_all() {
        let (p, m) = (8, 32);
        let one_f = PipelineSchedule::generate(ScheduleKind::OneFOneB, p, 1, m);
        let gpipe = PipelineSchedule::generate(ScheduleKind::Gpipe, p, 1, m);
        for stage in 0..p {
            assert_eq!(one_f.peak_in_flight(stage), p - stage);
            assert_eq!(gpipe.peak_in_flight(stage), m);
        }
    }

    #[test]
    fn zb_h1_for_four_stages_defers_each_stages_weight_gradients_by_its_rank() {
        let schedule = PipelineSchedule::generate(ScheduleKind::ZbH1, 4, 1, 6);
        let text = schedule.to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "s0F0 s0F1 s0F2 s0F3 s0I0 s0W0 s0F4 s0I1 s0W1 s0F5 s0I2 s0W2 s0I3 s0W3 s0I4 s0W4 s0I5 s0W5"
        );
        assert_eq!(
            lines[3],
            "s3F0 s3I0 s3F1 s3I1 s3F2 s3I2 s3F3 s3I3 s3W0 s3F4 s3I4 s3W1 s3F5 s3I5 s3W2 s3W3 s3W4 s3W5"
        );
        // Every stage runs F, I and W of every microbatch once, I before its W.
        for (p, m) in [(4, 6), (4, 2), (1, 3), (8, 8), (3, 1)] {
            let schedule = PipelineSchedule::generate(ScheduleKind::ZbH1, p, 1, m);
            for list in &schedule.actions {
                assert_eq!(list.len() as u32, 3 * m);
                for mb in 0..m {
                    let at = |pass| {
                        list.iter()
                            .position(|a| a.pass == pass && a.microbatch == mb)
                    };
                    let (f, i, w) = (
                        at(Pass::Forward).unwrap(),
                        at(Pass::InputGradient).unwrap(),
                        at(Pass::WeightGradient).unwrap(),
                    );
                    assert!(f < i && i < w, "p={p} m={m} mb={mb}");
                }
            }
        }
    }

    #[test]
    fn interleaved_chunk_order_matches_megatron() {
        // p=2, v=2: virtual microbatches k=0..3 run chunk 0 on mb 0,1 then chunk 1 on mb 0,1.
        let order: Vec<_> = (0..4)
            .map(|k| interleaved_slot(k, 2, 2, Pass::Forward))
            .collect();
        assert_eq!(order, vec![(0, 0), (1, 0), (0, 1), (1, 1)]);
        let order: Vec<_> = (0..4)
            .map(|k| interleaved_slot(k, 2, 2, Pass::Backward))
            .collect();
        assert_eq!(order, vec![(0, 1), (1, 1), (0, 0), (1, 0)]);
    }
}
