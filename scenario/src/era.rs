//! What a scenario gets for what it does not say, by the era of its model
//! and GPU ([`Era`]): a model of 2023 or later, or a GPU with FP8 tensor
//! cores, is trained today as NVIDIA's recipes train it; the paper-era GPT
//! models on A100 and V100 keep the settings of the papers they reproduce.
//!
//! | default | paper era | today |
//! |---|---|---|
//! | software stack | `megatron-2021` | `megatron-core-2024` |
//! | precision | fp16 (Megatron SC21) | bf16 (a Hugging Face config's `torch_dtype` where it says fp16 or bf16) |
//! | sequence parallelism, t > 1 | off | on |
//! | distributed optimizer, d·cp > 1 | off | on |
//!
//! Today's column is what Megatron-Bridge's H100 pre-training recipes set
//! (NVIDIA-NeMo/Megatron-Bridge 067f987d, `src/megatron/bridge/recipes/llama/h100/llama3.py`:
//! `mixed_precision="bf16_mixed"` from `_pretrain_common`,
//! `cfg.model.sequence_parallel = True` in every recipe with tensor
//! parallelism, `cfg.ddp.use_distributed_optimizer = True`,
//! `cfg.ddp.overlap_grad_reduce = True`, `cfg.model.recompute_granularity = None`);
//! the newest stack here is `megatron-core-2024` (its overlapped gradient
//! reduction on). No recomputation is every scenario file's default already;
//! the command line's embedded GPT-3 scenario keeps its full recompute only
//! for a paper-era model and GPU (`cli`'s `ScenarioArgs`). The two layout
//! options apply only where the scenario names no stack (a named stack gets
//! that stack's own defaults, as its command line would) and where nothing
//! the scenario does set contradicts them (ZeRO stages, ZeRO-Offload,
//! DualPipe, the post-validated optimizer step, an explicit asynchronous
//! tensor all-reduce); the post-validated step, which needs fp16, keeps the
//! precision default too.
//!
//! Which era: RMSNorm marks the 2023-and-later families (Llama 2 and 3,
//! Mistral, Mixtral, Qwen, DeepSeek: every such preset and Hugging Face
//! import); the paper-era GPT presets use LayerNorm. FP8 tensor cores mark
//! Hopper and Blackwell (the H100 whitepaper: FP8 is new in fourth-generation
//! tensor cores).

use crate::options::{Precision, TrainingOptionsFile};
use crate::stack::DEFAULT_STACK;
use models::{ModelSpec, NormType, TrainedDtype};
use schedules::ScheduleKind;
use topologies::TopologySpec;

/// The stack a scenario of today's era gets when it names none.
pub const TODAYS_STACK: &str = "megatron-core-2024";

/// The era whose defaults a scenario takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// GPT-style models (LayerNorm) on GPUs without FP8 (Volta, Ampere).
    Paper,
    /// A 2023-or-later model, or a Hopper or Blackwell GPU.
    Today,
}

impl Era {
    /// The era of a model trained on a topology's GPUs, and why.
    pub fn of(model: &ModelSpec, topology: &TopologySpec) -> (Era, String) {
        let todays_model = model.norm == NormType::Rmsnorm;
        let todays_gpu = topology.gpu.peak.fp8_flops_per_s.is_some();
        let gpu = &topology.gpu.name;
        let why = match (todays_model, todays_gpu) {
            (true, true) => format!(
                "{} is a model of 2023 or later (RMSNorm) and {gpu} has FP8 tensor cores (Hopper or later)",
                model.name
            ),
            (true, false) => format!("{} is a model of 2023 or later (RMSNorm)", model.name),
            (false, true) => format!("{gpu} has FP8 tensor cores (Hopper or later)"),
            (false, false) => format!(
                "{} is a GPT-style model (LayerNorm) on {gpu} (no FP8 tensor cores): the paper-era settings",
                model.name
            ),
        };
        let era = if todays_model || todays_gpu {
            Era::Today
        } else {
            Era::Paper
        };
        (era, why)
    }

    /// The stack of a scenario that names none.
    pub fn stack(self) -> &'static str {
        match self {
            Era::Paper => DEFAULT_STACK,
            Era::Today => TODAYS_STACK,
        }
    }
}

/// One default a scenario took because it did not set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraDefault {
    Stack,
    /// bf16 by era, or the format a Hugging Face config trained in.
    Precision(Precision),
    SequenceParallel,
    DistributedOptimizer,
}

impl EraDefault {
    /// How the summary names it.
    pub fn describe(self, stack: &str) -> String {
        match self {
            EraDefault::Stack => stack.to_string(),
            EraDefault::Precision(precision) => precision.name().to_string(),
            EraDefault::SequenceParallel => "sequence parallelism".to_string(),
            EraDefault::DistributedOptimizer => "distributed optimizer".to_string(),
        }
    }
}

/// The era a scenario was resolved in and the defaults it took from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EraDefaults {
    pub era: Era,
    /// Why this era (names the model and the GPU).
    pub why: String,
    /// What the scenario took, in the order of the table above.
    pub applied: Vec<EraDefault>,
}

/// What the layout options may default to: only where the scenario names no
/// stack and has data-parallel (`d·cp`) or tensor-parallel ranks.
pub(crate) struct LayoutFacts {
    pub stack_named: bool,
    pub tensor_parallel: u32,
    pub data_and_context_parallel: u32,
    pub schedule: ScheduleKind,
}

/// Whether today's sequence-parallelism default may apply to `options` (as
/// written): the scenario sets neither it nor an asynchronous all-reduce,
/// which Megatron turns off under it.
pub fn sequence_parallel_may_default(options: &TrainingOptionsFile) -> bool {
    options.sequence_parallel.is_none() && options.async_tensor_allreduce != Some(true)
}

/// Whether today's distributed-optimizer default may apply to `options` (as
/// written): the scenario sets no sharding of its own (the distributed
/// optimizer, a ZeRO stage, ZeRO-Offload) nor the post-validated step.
pub fn distributed_optimizer_may_default(options: &TrainingOptionsFile) -> bool {
    options.distributed_optimizer.is_none()
        && options.zero_stage.is_none()
        && options.zero_offload != Some(true)
        && options.optimizer_post_validation != Some(true)
}

/// Fills what the scenario's own options (`options`, as written) leave unset
/// with its era's defaults, in `filled` (the options with the stack's
/// defaults); returns them and what was filled.
pub(crate) fn apply(
    era: Era,
    model: &ModelSpec,
    options: &TrainingOptionsFile,
    mut filled: TrainingOptionsFile,
    facts: &LayoutFacts,
) -> (TrainingOptionsFile, Vec<EraDefault>) {
    let mut applied = Vec::new();
    if !facts.stack_named && era == Era::Today {
        applied.push(EraDefault::Stack);
    }
    // The post-validated optimizer step asserts fp16 (its grad scaler's
    // inf/NaN check): bf16 would contradict what the scenario asked for.
    if options.precision.is_none() && options.optimizer_post_validation != Some(true) {
        let precision = match (model.trained_dtype, era) {
            (Some(TrainedDtype::Float16), _) => Some(Precision::Fp16),
            (Some(TrainedDtype::Bfloat16), _) | (_, Era::Today) => Some(Precision::Bf16),
            _ => None,
        };
        if let Some(precision) = precision {
            filled.precision = Some(precision);
            applied.push(EraDefault::Precision(precision));
        }
    }
    if facts.stack_named || era == Era::Paper {
        return (filled, applied);
    }
    if facts.tensor_parallel > 1 && sequence_parallel_may_default(options) {
        filled.sequence_parallel = Some(true);
        // As `Stack::defaults_under` does for a scenario that asks for
        // sequence parallelism: Megatron turns the stack's asynchronous
        // all-reduce off there (the scenario's own setting stays).
        filled.async_tensor_allreduce = options.async_tensor_allreduce;
        applied.push(EraDefault::SequenceParallel);
    }
    if facts.data_and_context_parallel > 1
        && distributed_optimizer_may_default(options)
        && facts.schedule != ScheduleKind::DualPipe
    {
        filled.distributed_optimizer = Some(true);
        applied.push(EraDefault::DistributedOptimizer);
    }
    (filled, applied)
}
