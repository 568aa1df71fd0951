//! Resolution of a raw scenario file into a validated [`Scenario`]: every
//! problem is collected and reported at once, each naming its field.

use crate::era::{self, Era, EraDefaults, LayoutFacts};
use crate::experts;
use crate::kinds::Recompute;
use crate::layout::Layout;
use crate::options::TrainingOptions;
use crate::problem::Problem;
use crate::resolved::{Scenario, ScenarioError};
use crate::scenario_file::ScenarioFile;
use crate::stack::{Stack, DEFAULT_STACK};
use crate::task_count::{task_limit, GradientSplits, MAX_TASKS, TASK_LIMIT_VARIABLE};
use models::ModelSpec;
use profile::Profile;
use schedules::ScheduleKind;
use std::num::NonZeroU32;
use topologies::TopologySpec;

/// What a scenario's model, topology and profile resolve to (None where
/// one is missing or wrong: its problem is listed).
struct Inputs {
    model: Option<ModelSpec>,
    topology: Option<TopologySpec>,
    profile: Option<Profile>,
}

/// The layout's degrees and batch, each a positive count (a missing or zero
/// one is a problem and counts as 1 for the checks after it), and the
/// microbatches m = B/(b·d) they give.
#[derive(Debug, Clone, Copy)]
struct Degrees {
    t: NonZeroU32,
    p: NonZeroU32,
    d: NonZeroU32,
    cp: NonZeroU32,
    ep: NonZeroU32,
    etp: NonZeroU32,
    v: NonZeroU32,
    b: NonZeroU32,
    global_batch: NonZeroU32,
    /// 0 where the global batch is smaller than b·d (a problem listed).
    m: u32,
}

impl ScenarioFile {
    /// Validates and resolves; every problem is reported at once, in the
    /// order of the sections below.
    pub fn resolve(&self) -> Result<Scenario, ScenarioError> {
        let mut problems = Vec::new();
        let Inputs {
            model,
            topology,
            profile,
        } = self.resolve_inputs(&mut problems);
        let schedule = self.schedule.unwrap_or(ScheduleKind::OneFOneB);
        let recompute = self.recompute.unwrap_or(Recompute::None);
        let degrees = self.resolve_degrees(schedule, &mut problems);
        self.check_schedule(schedule, degrees, &mut problems);
        if let Some(model) = &model {
            self.check_model_split(model, schedule, degrees, &mut problems);
        }
        if let Some(topology) = &topology {
            check_topology_fit(topology, degrees, &mut problems);
        }
        let pipeline_split = match &self.pipeline_layout {
            Some(text) => super::pipeline_layout::resolve(
                text,
                model.as_ref(),
                degrees.p.get(),
                degrees.v.get(),
                self.pipeline_split.is_some_and(|split| !split.is_even()),
                &mut problems,
            )
            .unwrap_or_default(),
            None => self.pipeline_split.unwrap_or_default(),
        };
        let era = match (&model, &topology) {
            (Some(model), Some(topology)) => Some(Era::of(model, topology)),
            _ => None,
        };
        let default_stack = era.as_ref().map_or(DEFAULT_STACK, |(era, _)| era.stack());
        let stack = Stack::resolve(self.stack.as_deref().unwrap_or(default_stack))
            .map_err(|e| problems.push(Problem::new("stack", e)))
            .ok();
        let options_file = match &stack {
            Some(stack) => stack.defaults_under(&self.options),
            None => self.options.clone(),
        };
        let facts = LayoutFacts {
            stack_named: self.stack.is_some(),
            tensor_parallel: degrees.t.get(),
            data_and_context_parallel: degrees.d.saturating_mul(degrees.cp).get(),
            schedule,
        };
        let (options_file, defaults) = match (era, &model) {
            (Some((era, why)), Some(model)) => {
                let (filled, applied) = era::apply(era, model, &self.options, options_file, &facts);
                (filled, Some(EraDefaults { era, why, applied }))
            }
            _ => (options_file, None),
        };
        // ZeroStage and HSDP groups span the dp-cp group: d·cp ranks.
        let options = options_file.resolve(
            degrees.p.get(),
            degrees.d.saturating_mul(degrees.cp).get(),
            &mut problems,
        );
        check_options(schedule, &options, topology.as_ref(), &mut problems);
        let (iterations, experts) = self.check_features(
            &options,
            schedule,
            recompute,
            model.as_ref(),
            degrees,
            &mut problems,
        );
        check_activation_offload(
            &options,
            schedule,
            recompute,
            model.as_ref(),
            degrees.p.get(),
            &mut problems,
        );
        if let Some(topology) = &topology {
            let layout = super::zeropp::ZeroPlusPlusLayout {
                model_parallel: [degrees.t, degrees.p, degrees.cp, degrees.ep].map(|n| n.get()),
                data_parallel: degrees.d.get(),
                gpus_per_node: topology.node.gpus_per_node,
            };
            super::zeropp::check(&options, layout, &mut problems);
        }
        super::powersgd::check(
            &options,
            model.as_ref(),
            schedule == ScheduleKind::DualPipe,
            &mut problems,
        );
        let Degrees {
            t,
            p,
            d,
            cp,
            ep,
            etp,
            v,
            b,
            global_batch,
            m,
        } = degrees;
        // A dense model has no expert tensor groups, whatever tp.
        let etp = if experts.is_some() {
            etp
        } else {
            NonZeroU32::MIN
        };
        let layout = Layout {
            tensor_parallel: t,
            pipeline_parallel: p,
            data_parallel: d,
            context_parallel: cp,
            expert_parallel: ep,
            expert_tensor_parallel: etp,
            pipeline_split,
            stage_map: schedule.stage_map(),
            chunks: v,
            microbatch_group_size: self.microbatch_group_size.and_then(NonZeroU32::new),
            microbatch_size: b,
            global_batch,
            // Never returned at 0: that is a problem listed above.
            microbatches: NonZeroU32::new(m).unwrap_or(NonZeroU32::MIN),
        };
        check_task_count(
            &layout,
            m,
            recompute,
            stack.as_ref(),
            iterations,
            model.as_ref(),
            schedule,
            &options,
            &mut problems,
        );
        if !problems.is_empty() {
            return Err(ScenarioError::Invalid { problems });
        }
        Ok(Scenario {
            model: model.expect("checked"),
            topology: topology.expect("checked"),
            profile: profile.expect("checked"),
            layout,
            experts,
            schedule,
            recompute,
            seed: self.seed.unwrap_or(0),
            stack: stack.expect("checked"),
            stack_is_default: self.stack.is_none(),
            defaults: defaults.expect("checked: the model and topology resolved"),
            options,
            iterations,
        })
    }

    /// The era of the scenario's model and topology ([`Era`]), where both
    /// resolve (the rest is not checked).
    pub fn era(&self) -> Option<Era> {
        self.era_defaults().map(|defaults| defaults.era)
    }

    /// The era and the defaults this file takes at its own degrees (1 where
    /// unset: a sweep's base takes the stack and precision; the layout
    /// options depend on each layout), where the model and topology resolve.
    pub fn era_defaults(&self) -> Option<EraDefaults> {
        let inputs = self.resolve_inputs(&mut Vec::new());
        let (model, topology) = (inputs.model?, inputs.topology?);
        let (era, why) = Era::of(&model, &topology);
        let degree = |value: Option<u32>| value.unwrap_or(1);
        let facts = LayoutFacts {
            stack_named: self.stack.is_some(),
            tensor_parallel: degree(self.tp),
            data_and_context_parallel: degree(self.dp).saturating_mul(degree(self.cp)),
            schedule: self.schedule.unwrap_or(ScheduleKind::OneFOneB),
        };
        let (_, applied) = era::apply(era, &model, &self.options, self.options.clone(), &facts);
        Some(EraDefaults { era, why, applied })
    }

    /// The model (with the sequence length it trains at), the topology and
    /// the profile, and whether the profile describes the topology's GPU.
    fn resolve_inputs(&self, problems: &mut Vec<Problem>) -> Inputs {
        let model = match &self.model {
            None => {
                problems.push(Problem::new(
                    "model",
                    "missing (a preset name, a model JSON file, or an inline object)",
                ));
                None
            }
            Some(value) => resolve_model(value)
                .map_err(|e| problems.push(Problem::new("model", e)))
                .ok(),
        };
        let model = match (model, self.seq_len) {
            (Some(mut model), Some(seq_len)) => {
                model.seq_len = seq_len;
                match model.validate() {
                    Ok(()) => Some(model),
                    Err(e) => {
                        problems.push(Problem::new("seq_len", format!("{seq_len} tokens: {e}")));
                        None
                    }
                }
            }
            (model, _) => model,
        };
        // Experts, latent attention and Qwen3's heads are counted by the
        // models crate but no kernel, routing or expert parallelism is
        // lowered for them yet: refused here, so nothing downstream sees them.
        let model = match model {
            Some(model) if has_unsimulated_blocks(&model) => {
                problems.push(Problem::new("model", unsimulated(&model)));
                None
            }
            model => model,
        };
        let topology = match &self.topology {
            None => {
                problems.push(Problem::new(
                    "topology",
                    "missing (a preset name, a topology JSON file, or an inline object)",
                ));
                None
            }
            Some(value) => resolve_topology(value)
                .map_err(|e| problems.push(Problem::new("topology", e)))
                .ok(),
        };
        let profile = match (&self.profile, &topology) {
            (Some(name), _) => Profile::resolve(name)
                .map_err(|e| problems.push(Problem::new("profile", e)))
                .ok(),
            (None, Some(topology)) => {
                let found = Profile::default_for_gpu(&topology.gpu.name);
                if found.is_none() {
                    problems.push(Problem::new(
                        "profile",
                        format!(
                            "no embedded profile for GPU '{}'; pass --profile (built-ins: {})",
                            topology.gpu.name,
                            Profile::builtin_names().join(", ")
                        ),
                    ));
                }
                found
            }
            (None, None) => None,
        };
        if let (Some(profile), Some(topology)) = (&profile, &topology) {
            if profile.gpu != topology.gpu.name {
                problems.push(Problem::new(
                    "profile",
                    format!(
                        "'{}' describes {} but topology '{}' has {}",
                        profile.id, profile.gpu, topology.name, topology.gpu.name
                    ),
                ));
            }
        }
        Inputs {
            model,
            topology,
            profile,
        }
    }

    /// Each degree and the batch, and the microbatches they give.
    fn resolve_degrees(&self, schedule: ScheduleKind, problems: &mut Vec<Problem>) -> Degrees {
        let mut positive =
            |key: &'static str, value: Option<u32>, default: Option<u32>| -> NonZeroU32 {
                match value.or(default).map(NonZeroU32::new) {
                    None => {
                        problems.push(Problem::new(key, "missing"));
                        NonZeroU32::MIN
                    }
                    Some(None) => {
                        problems.push(Problem::new(key, "must be at least 1"));
                        NonZeroU32::MIN
                    }
                    Some(Some(v)) => v,
                }
            };
        let t = positive("tp", self.tp, Some(1));
        let p = positive("pp", self.pp, Some(1));
        let d = positive("dp", self.dp, Some(1));
        let cp = positive("cp", self.cp, Some(1));
        let ep = positive("ep", self.ep, Some(1));
        // Megatron-Core's default expert tensor parallelism is tp
        // (megatron/training/arguments.py: expert_tensor_parallel_size =
        // tensor_model_parallel_size when not given).
        let etp = positive("etp", self.etp, Some(t.get()));
        // The V-shaped schedules hold two chunks per rank (the V map), DualPipe
        // one chunk of each of its two copies.
        let v_shaped = schedule.stage_map() != models::sharding::StageMap::Interleaved;
        let v = positive("chunks", self.chunks, Some(if v_shaped { 2 } else { 1 }));
        let b = positive("microbatch_size", self.microbatch_size, Some(1));
        let global_batch = positive("global_batch", self.global_batch, None);
        // u64 arithmetic throughout: flags are u32 and their products can overflow.
        let samples_per_step = u64::from(b.get()) * u64::from(d.get());
        let m = (u64::from(global_batch.get()) / samples_per_step) as u32;

        if !u64::from(global_batch.get()).is_multiple_of(samples_per_step) {
            problems.push(Problem::new("global_batch", format!(
            "{global_batch} is not divisible by microbatch_size × dp = {b} × {d} = {samples_per_step}"
        )));
        } else if m == 0 {
            problems.push(Problem::new("global_batch", "gives zero microbatches"));
        }
        Degrees {
            t,
            p,
            d,
            cp,
            ep,
            etp,
            v,
            b,
            global_batch,
            m,
        }
    }

    /// What the schedule asks of chunks, stages and microbatches.
    fn check_schedule(
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
    fn check_model_split(
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

    /// The checks of features with rules of their own (post-validation, the
    /// iterations simulated, context parallelism, latent attention, MoE
    /// communication, experts): the iterations and the expert routing.
    fn check_features(
        &self,
        options: &TrainingOptions,
        schedule: ScheduleKind,
        recompute: Recompute,
        model: Option<&ModelSpec>,
        degrees: Degrees,
        problems: &mut Vec<Problem>,
    ) -> (u32, Option<experts::ExpertRouting>) {
        let Degrees {
            t, d, cp, ep, etp, ..
        } = degrees;
        let (t, d, cp, ep, etp) = (t.get(), d.get(), cp.get(), ep.get(), etp.get());
        super::post_validation::check(
            options,
            schedule,
            model.map(|model| model.tied_embeddings),
            problems,
        );
        let iterations = self.resolve_iterations(options, problems);
        if cp > 1 {
            super::context::check(cp, model, recompute, options, problems);
        }
        if let Some(model) = model {
            super::mla::check(model, t, cp, options, problems);
            super::sequence_parallel::check(t, cp, model, options, problems);
        }
        super::moe_comm::check(options, schedule, ep, recompute, problems);
        let experts = model.and_then(|model| {
            super::experts::check(
                model,
                ep,
                (etp, self.etp.is_some()),
                t,
                d.saturating_mul(cp),
                self.expert_imbalance.is_some(),
                options,
                problems,
            );
            super::experts::resolve(
                model,
                (degrees.ep, degrees.etp),
                self.expert_imbalance.as_deref(),
                problems,
            )
        });
        (iterations, experts)
    }
}

/// Whether the layout's GPUs fit the topology and its tensor groups and
/// context-parallel rings sit evenly on its nodes.
fn check_topology_fit(topology: &TopologySpec, degrees: Degrees, problems: &mut Vec<Problem>) {
    let (t, p, d, cp) = (
        degrees.t.get(),
        degrees.p.get(),
        degrees.d.get(),
        degrees.cp.get(),
    );
    let needed = t as u64 * cp as u64 * p as u64 * d as u64;
    if needed > topology.total_gpus() {
        if cp > 1 {
            problems.push(Problem::gpu_count(format!(
                "tp × cp × pp × dp = {t} × {cp} × {p} × {d} = {needed} GPUs, but topology '{}' has {}",
                topology.name,
                topology.total_gpus()
            )));
        } else {
            problems.push(Problem::gpu_count(format!(
                "tp × pp × dp = {t} × {p} × {d} = {needed} GPUs, but topology '{}' has {}",
                topology.name,
                topology.total_gpus()
            )));
        }
    }
    let ring = t as u64 * cp as u64;
    let per_node_u64 = topology.node.gpus_per_node as u64;
    if cp > 1
        && per_node_u64 > 0
        && !per_node_u64.is_multiple_of(ring)
        && !ring.is_multiple_of(per_node_u64)
    {
        problems.push(Problem::new("cp", format!(
            "tp × cp = {t} × {cp} = {ring} neither divides nor is a multiple of the {per_node_u64} GPUs per node, so context-parallel rings would straddle nodes unevenly"
        )));
    }
    let per_node = topology.node.gpus_per_node;
    if !per_node.is_multiple_of(t) && !t.is_multiple_of(per_node) {
        problems.push(Problem::new("tp", format!(
            "{t} neither divides nor is a multiple of the {per_node} GPUs per node, so tensor groups would straddle nodes unevenly"
        )));
    }
}

/// The options against the schedule, the precision against the GPU, and
/// contention against the fabric.
fn check_options(
    schedule: ScheduleKind,
    options: &TrainingOptions,
    topology: Option<&TopologySpec>,
    problems: &mut Vec<Problem>,
) {
    if schedule.splits_backward() && options.sharding >= crate::zero_stage::ZeroStage::Gradients {
        problems.push(Problem::new("schedule", format!(
            "{} splits the backward, which the sharded lowering of zero_stage {} does not cut yet (it shards whole backwards); use --schedule 1f1b or zero_stage 1",
            schedule.name(),
            options.sharding.stage()
        )));
    }
    if schedule.splits_backward() && options.offload.is_some() {
        problems.push(Problem::new("schedule", format!(
            "{} splits the backward, which the ZeRO-Offload program does not build (it runs whole backwards); use --schedule 1f1b",
            schedule.name()
        )));
    }
    if schedule == ScheduleKind::DualPipe && options.distributed_optimizer {
        problems.push(Problem::new("distributed_optimizer", "not built for dualpipe (its mirrored ranks order the two copies' gradients differently, so their shards would not line up); use dualpipev"));
    }
    if schedule == ScheduleKind::LoopedBfs && options.offload.is_some() {
        problems.push(Problem::new("schedule", "looped-bfs under zero_offload is not built (the ZeRO-Offload program runs one chunk per stage); use --schedule 1f1b"));
    }
    if let (crate::options::Precision::Bf16, Some(topology)) = (options.precision, topology) {
        let datasheet = topologies::datasheets::datasheet(&topology.gpu.name);
        if datasheet.is_some_and(|d| d.architecture == "Volta") {
            problems.push(Problem::new(
                "precision",
                format!(
                    "bf16 needs bf16 tensor cores, which the {} (Volta) does not have; use fp16",
                    topology.gpu.name
                ),
            ));
        }
    }
    if let (crate::options::Precision::Fp8, Some(topology)) = (options.precision, topology) {
        if topology.gpu.peak.fp8_flops_per_s.is_none() {
            let architecture = topologies::datasheets::datasheet(&topology.gpu.name)
                .map_or(String::new(), |d| format!(" ({})", d.architecture));
            problems.push(Problem::new("precision", format!(
                "fp8 needs FP8 tensor cores (Hopper or Blackwell), and the {}{architecture} has none (its topology gives no gpu.peak.fp8_flops_per_s); use bf16",
                topology.gpu.name
            )));
        }
    }
    if options.precision == crate::options::Precision::Fp8 && options.offload.is_some() {
        problems.push(Problem::new("precision", "fp8 under zero_offload is not modeled (DeepSpeed's ZeRO-Offload trains in fp16); use bf16 or fp16"));
    }
    if let (true, Some(topology)) = (options.network_contention, topology) {
        if let Err(error) = topologies::fat_tree::fat_tree_of(topology) {
            problems.push(Problem::new("network_contention", error));
        }
        if topology.node.gpus_per_node > 1 && topology.node.nvlink_bandwidth_bytes_per_s <= 0.0 {
            problems.push(Problem::new("network_contention", format!(
                "topology '{}' has no NVLink inside its nodes (node.nvlink_bandwidth_bytes_per_s = 0: its GPUs talk over PCIe), and the fabric's intra-node PCIe paths are not built; run without contention",
                topology.name
            )));
        }
    }
}

/// CPU offloading of activations (`cpu_offloading_num_layers`) where
/// Megatron-Core allows it (`transformer_config.py`: fewer layers than the
/// model's, no pipeline parallelism, no recomputation) and the simulator
/// builds it (one microbatch at a time, layers alike, PCIe not shared with
/// ZeRO-Offload).
fn check_activation_offload(
    options: &TrainingOptions,
    schedule: ScheduleKind,
    recompute: Recompute,
    model: Option<&models::ModelSpec>,
    pipeline_parallel: u32,
    problems: &mut Vec<Problem>,
) {
    let offloaded = options.activation_offload_layers;
    if offloaded == 0 {
        return;
    }
    let field = "cpu_offloading_num_layers";
    if let Some(model) = model {
        if u64::from(offloaded) >= model.layers {
            problems.push(Problem::new(field, format!(
                "{offloaded} of the model's {} layers: Megatron-Core offloads fewer layers than the model has",
                model.layers
            )));
        }
        if model.moe.is_some() {
            problems.push(Problem::new(field, "not built for a mixture of experts (the stall model takes every layer's time alike)"));
        }
    }
    if pipeline_parallel > 1 {
        problems.push(Problem::new(field, format!(
            "needs pp = 1 (got {pipeline_parallel}): Megatron-Core has no CPU offloading with pipeline parallelism"
        )));
    }
    if recompute != Recompute::None {
        problems.push(Problem::new(field, "Megatron-Core's CPU offloading does not work with activation recomputation; use recompute none"));
    }
    if schedule != ScheduleKind::OneFOneB {
        problems.push(Problem::new(field, format!(
            "needs --schedule 1f1b (each microbatch's forward then its backward, as Megatron runs p = 1), not {}",
            schedule.name()
        )));
    }
    if options.offload.is_some() {
        problems.push(Problem::new(
            field,
            "not built with zero_offload (both would share the PCIe host link)",
        ));
    }
}

/// Task ids are 32-bit: graphs past them are refused before they are built
/// (whether a graph fits this machine's memory is `host_memory`'s check).
#[allow(clippy::too_many_arguments)]
fn check_task_count(
    layout: &Layout,
    microbatches: u32,
    recompute: Recompute,
    stack: Option<&Stack>,
    iterations: u32,
    model: Option<&ModelSpec>,
    schedule: ScheduleKind,
    options: &TrainingOptions,
    problems: &mut Vec<Problem>,
) {
    let splits = GradientSplits {
        split_backward: schedule.splits_backward(),
        ..model.map_or(GradientSplits::default(), |model| {
            GradientSplits::of(model, layout, options)
        })
    };
    let estimated_tasks = super::task_count::estimated_task_count_at(
        layout,
        u64::from(microbatches),
        recompute,
        stack.is_some_and(|s| s.host.is_some()),
        iterations,
        splits,
    );
    let limit = task_limit();
    if estimated_tasks > limit {
        let why = if limit < MAX_TASKS {
            format!("set by {TASK_LIMIT_VARIABLE}")
        } else {
            "task ids are 32-bit".to_string()
        };
        problems.push(Problem::new("global_batch", format!(
            "this layout needs about {estimated_tasks} tasks per simulation; the limit is {limit} ({why}); use fewer microbatches (a larger microbatch_size or smaller global_batch) or fewer GPUs"
        )));
    }
}

fn resolve_model(value: &serde_json::Value) -> Result<ModelSpec, String> {
    match value {
        serde_json::Value::String(name) => ModelSpec::resolve(name).map_err(|e| e.to_string()),
        serde_json::Value::Object(_) => {
            ModelSpec::from_json_str(&value.to_string(), "inline model").map_err(|e| e.to_string())
        }
        other => Err(format!("expected a name, a path or an object, got {other}")),
    }
}

/// Whether the model has blocks the simulator does not lower: of mixtures
/// of experts, biases ([`super::experts`]).
fn has_unsimulated_blocks(model: &ModelSpec) -> bool {
    model.moe.is_some() && model.bias
}

/// Why a model the models crate counts cannot be simulated: its first
/// unlowered block leads, the others follow, then its parameter counts.
fn unsimulated(model: &ModelSpec) -> String {
    let mut blocks: Vec<(&str, String)> = Vec::new();
    if model.moe.is_some() && model.bias {
        blocks.push(("experts with biases are", "biased experts".into()));
    }
    let lead = blocks.first().map_or("these blocks are", |(lead, _)| lead);
    let has: Vec<&str> = blocks.iter().map(|(_, what)| what.as_str()).collect();
    format!(
        "{lead} not simulated yet (issue 17): '{}' has {}; {} parameters, {} active per token",
        model.name,
        has.join(", "),
        models::formulas::published_parameter_count(model),
        models::formulas::published_active_parameter_count(model),
    )
}

fn resolve_topology(value: &serde_json::Value) -> Result<TopologySpec, String> {
    match value {
        serde_json::Value::String(name) => TopologySpec::resolve(name).map_err(|e| e.to_string()),
        serde_json::Value::Object(_) => {
            TopologySpec::from_json_str(&value.to_string(), "inline topology")
                .map_err(|e| e.to_string())
        }
        other => Err(format!("expected a name, a path or an object, got {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::ScenarioFile;

    fn resolve_with_tp(model: &str, tp: u32) -> Result<(), String> {
        let file = ScenarioFile {
            model: Some(serde_json::Value::String(model.into())),
            tp: Some(tp),
            ..ScenarioFile::embedded_default()
        };
        file.resolve().map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn mixtures_of_experts_are_refused_where_not_built_with_their_counts() {
        // Mixtral (experts in every layer, dropless, no biases) is simulated;
        // at t > 1 only with sequence parallelism (etp then defaults to t),
        // which today's defaults turn on and which, turned off, is refused.
        assert_eq!(resolve_with_tp("mixtral-8x7b", 8), Ok(()));
        let without_sp = ScenarioFile {
            model: Some(serde_json::Value::String("mixtral-8x7b".into())),
            tp: Some(8),
            options: crate::TrainingOptionsFile {
                sequence_parallel: Some(false),
                ..crate::TrainingOptionsFile::default()
            },
            ..ScenarioFile::embedded_default()
        };
        let text = without_sp.resolve().map(|_| ()).unwrap_err().to_string();
        assert!(
            text.contains(
                "sequence_parallel: tensor parallelism (8) in a mixture-of-experts model needs sequence parallelism"
            ) && !text.contains("etp:"),
            "{text}"
        );
        assert!(resolve_with_tp("mixtral-8x7b", 1).is_ok());
        // DeepSeek-V3 (MLA, dense layers before its MoE layers, sigmoid
        // router) is simulated: only the default layout's pp is refused.
        let text = resolve_with_tp("deepseek-v3", 1).unwrap_err();
        assert!(!text.contains("model:"), "{text}");
        assert!(text.contains("pp: layers (61)"), "{text}");
        // Token dropping is simulated; biased experts are refused with
        // the model's counts.
        let mut dropping = models::preset("mixtral-8x7b").unwrap();
        dropping.moe.as_mut().unwrap().capacity_factor = Some(models::CapacityFactor(1.25));
        let file = |model: &models::ModelSpec| ScenarioFile {
            model: Some(serde_json::to_value(model).unwrap()),
            tp: Some(1),
            ..ScenarioFile::embedded_default()
        };
        if let Err(e) = file(&dropping).resolve() {
            panic!("{e}");
        }
        let mut biased = dropping.clone();
        biased.bias = true;
        let text = file(&biased).resolve().map(|_| ()).unwrap_err().to_string();
        assert!(
            text.contains("model: experts with biases are not simulated yet (issue 17): 'mixtral-8x7b' has biased experts;"),
            "{text}"
        );
        // Qwen3's wider heads and q/k norms are lowered.
        assert!(resolve_with_tp("qwen3-30b-a3b", 1).is_ok());
        // A simulated model's layout is checked like any other: every
        // problem of tp = 64 is listed.
        let text = resolve_with_tp("qwen3-30b-a3b", 64).unwrap_err();
        assert!(
            text.contains("tp: heads (32) must be divisible by tp (64)")
                && text.contains("tp: kv_heads (4) must be divisible by tp (64)"),
            "{text}"
        );
        // MLA alone is simulated at tp 1; tensor parallelism is refused by name.
        let mut deepseek = models::preset("deepseek-v3").unwrap();
        deepseek.moe = None;
        let file = |tp| ScenarioFile {
            model: Some(serde_json::to_value(&deepseek).unwrap()),
            tp: Some(tp),
            pp: Some(1),
            ..ScenarioFile::embedded_default()
        };
        if let Err(e) = file(1).resolve() {
            panic!("{e}");
        }
        let text = file(2).resolve().map(|_| ()).unwrap_err().to_string();
        assert!(
            text.contains(
                "tp: tensor parallelism (2) with multi-head latent attention is not simulated yet"
            ),
            "{text}"
        );
    }

    #[test]
    fn kv_heads_must_split_evenly_over_tensor_ranks() {
        // Llama-3-8B: 32 query heads, 8 KV heads.
        let text = resolve_with_tp("llama3-8b", 16).unwrap_err();
        assert!(
            text.contains("tp: kv_heads (8) must be divisible by tp (16)"),
            "{text}"
        );
        assert!(!text.contains("tp: heads"), "{text}");
        let text = resolve_with_tp("llama3-8b", 8).err().unwrap_or_default();
        assert!(!text.contains("kv_heads"), "{text}");
        // Multi-head attention: only the heads check speaks.
        let text = resolve_with_tp("gpt3-175b", 5).unwrap_err();
        assert!(text.contains("tp: heads (96)"), "{text}");
        assert!(!text.contains("kv_heads"), "{text}");
    }
}
