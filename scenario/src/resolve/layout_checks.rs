//! The layout checks [`super`] runs on a scenario file once its degrees
//! are known: what the schedule asks of chunks, stages and microbatches,
//! and whether tensor parallelism divides the model's heads, widths and
//! vocabulary and the pipeline its layers.

use super::Degrees;
use crate::problem::Problem;
use crate::scenario_file::ScenarioFile;
use models::ModelSpec;
use schedules::ScheduleKind;

impl ScenarioFile {
    /// What the schedule asks of chunks, stages and microbatches.
    pub(super) fn check_schedule(
        &self,
        schedule: ScheduleKind,
        degrees: Degrees,
        problems: &mut Vec<Problem>,
    ) {
        let (p, v, m) = (degrees.p.get(), degrees.v.get(), degrees.m);
        match schedule {
            ScheduleKind::Interleaved => {
                if v < 2 {
                    problems.push(Problem::new(
                        "chunks",
                        format!("the interleaved schedule needs chunks ≥ 2 (got {v})"),
                    ));
                }
                if p < 2 {
                    problems.push(Problem::new(
                        "pp",
                        "the interleaved schedule needs at least 2 pipeline stages",
                    ));
                }
                match self.microbatch_group_size {
                None if m > 0 && !m.is_multiple_of(p) => problems.push(Problem::new("global_batch", format!(
                    "the interleaved schedule needs microbatches m = B/(b·d) = {m} to be a multiple of pp = {p} (or a microbatch_group_size N in [pp, m] with m mod N = 0 or ≥ pp)"
                ))),
                Some(n) if m > 0 && p >= 2 => {
                    if let Some(problem) =
                        schedules::flexible_interleaved::group_size_problem(p, m, n)
                    {
                        problems.push(Problem::worded("microbatch_group_size", problem));
                    }
                }
                _ => {}
            }
            }
            ScheduleKind::LoopedBfs => {}
            ScheduleKind::DualPipe => {
                if v != 2 {
                    problems.push(Problem::new("chunks", format!(
                    "dualpipe runs exactly 2 model chunks per stage (stage r holds stage r of one model copy and stage pp−1−r of the other); got chunks = {v}, give --chunks 2"
                )));
                }
                // dualpipe.py `DualPipe.step`: `assert num_ranks % 2 == 0` and
                // `num_chunks % 2 == 0 and num_chunks >= num_ranks * 2`.
                if !p.is_multiple_of(2) {
                    problems.push(Problem::new("pp", format!(
                    "dualpipe needs an even number of pipeline stages (half the microbatches enter from each end); got pp = {p}"
                )));
                }
                if m > 0 && (!m.is_multiple_of(2) || (m as u64) < 2 * p as u64) {
                    problems.push(Problem::new(
                        "global_batch",
                        format!(
                    "dualpipe needs an even number of microbatches m = B/(b·d) = {m} ≥ 2 × pp = {}",
                    2 * p as u64
                ),
                    ));
                }
                if self.pipeline_layout.is_some() {
                    problems.push(Problem::new("pipeline_layout", "not built for dualpipe (its two copies would each need the layout's stages); use an even split or pipeline_split"));
                }
            }
            ScheduleKind::ZbV | ScheduleKind::DualPipeV => {
                if v != 2 {
                    problems.push(Problem::new("chunks", format!(
                    "{} runs exactly 2 model chunks per stage (the V map: stage r holds virtual stages r and 2p−1−r); got chunks = {v}, give --chunks 2",
                    schedule.name()
                )));
                }
                // dualpipev.py asserts num_chunks >= num_ranks * 2; PyTorch's
                // ScheduleDualPipeV refuses fewer microbatches than stages (2p).
                if schedule == ScheduleKind::DualPipeV && m > 0 && (m as u64) < 2 * p as u64 {
                    problems.push(Problem::new(
                        "global_batch",
                        format!(
                            "dualpipev needs microbatches m = B/(b·d) = {m} ≥ 2 × pp = {}",
                            2 * p as u64
                        ),
                    ));
                }
            }
            _ => {
                if v != 1 {
                    problems.push(Problem::new("chunks", format!(
                    "{v} model chunks need --schedule interleaved or looped-bfs ({} uses one chunk per stage)",
                    schedule.name()
                )));
                }
            }
        }
        if self.microbatch_group_size.is_some() && schedule != ScheduleKind::Interleaved {
            problems.push(Problem::new(
                "microbatch_group_size",
                format!(
                    "microbatch groups are the interleaved schedule's ({} has none)",
                    schedule.name()
                ),
            ));
        }
    }

    /// Whether tensor parallelism divides the model's heads, widths and
    /// vocabulary, and the pipeline its layers.
    pub(super) fn check_model_split(
        &self,
        model: &ModelSpec,
        schedule: ScheduleKind,
        degrees: Degrees,
        problems: &mut Vec<Problem>,
    ) {
        let (t, p, v) = (degrees.t.get(), degrees.p.get(), degrees.v.get());
        if !model.heads.is_multiple_of(t as u64) {
            problems.push(Problem::new(
                "tp",
                format!("heads ({}) must be divisible by tp ({t})", model.heads),
            ));
        }
        // Megatron-Core splits the key/value heads across tensor ranks
        // (`num_query_groups % tensor_model_parallel_size == 0`); it does
        // not replicate them when t exceeds kv_heads. (Without grouped
        // attention the heads check above says it.)
        if model.kv_heads() != model.heads && !model.kv_heads().is_multiple_of(t as u64) {
            problems.push(Problem::new(
                "tp",
                format!(
                    "kv_heads ({}) must be divisible by tp ({t})",
                    model.kv_heads()
                ),
            ));
        }
        if !model.ffn().is_multiple_of(t as u64) {
            problems.push(Problem::new(
                "tp",
                format!("ffn_hidden ({}) must be divisible by tp ({t})", model.ffn()),
            ));
        }
        if !model.vocab.is_multiple_of(t as u64) {
            problems.push(Problem::new(
                "tp",
                format!(
                    "vocab ({}) must be divisible by tp ({t}) (pad the vocabulary)",
                    model.vocab
                ),
            ));
        }
        let split = self.pipeline_split.unwrap_or_default();
        let split_layers = model.layers + split.counted_ends();
        // DualPipe cuts each of its two copies into p stages.
        let virtual_stages =
            p as u64 * v as u64 / u64::from(schedule.stage_map().copies()).min(v as u64);
        // What the layers are cut into, for the messages below.
        let cut = if schedule == ScheduleKind::DualPipe {
            format!("pp = {p} (each of dualpipe's two model copies is cut into pp stages)")
        } else {
            format!("pp × chunks = {p} × {v} = {virtual_stages}")
        };
        if self.pipeline_layout.is_some() {
            // Checked by `pipeline_layout::resolve` below.
        } else if split.is_even() && !model.layers.is_multiple_of(virtual_stages) {
            problems.push(Problem::new("pp", format!(
                "layers ({}) must be divisible by {cut} (or count the embedding and the loss as layers: pipeline_split)",
                model.layers,
            )));
        } else if !split.is_even() && !split_layers.is_multiple_of(virtual_stages) {
            problems.push(Problem::new(
                "pipeline_split",
                format!("layers + embedding + loss ({split_layers}) must be divisible by {cut}"),
            ));
        } else if !split.is_even() && {
            // Every virtual stage builds at least one transformer layer.
            let (e, l) = (u64::from(split.embedding), u64::from(split.loss));
            let needed = if virtual_stages == 1 {
                1 + e + l
            } else {
                1 + e.max(l)
            };
            split_layers / virtual_stages < needed
        } {
            problems.push(Problem::new("pipeline_split", format!(
                "{virtual_stages} virtual stages leave no transformer layer beside the embedding or the loss"
            )));
        }
    }
}
