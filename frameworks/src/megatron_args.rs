//! Megatron-LM's `pretrain_gpt.py` argument list as a scenario
//! (`simulate --megatron-args`): the model from its size flags, the layout,
//! batch, precision, recomputation and data-parallel options from theirs,
//! under the `megatron-core-2024` stack, with Megatron's own defaults for
//! what the arguments leave out (fp32 without `--bf16`/`--fp16`, no
//! recompute, tied embeddings, LayerNorm, GeLU, learned positions, dropout
//! 0.1: NVIDIA/Megatron-LM d98e8a64, `frameworks/fixtures/megatron/README.md`).
//!
//! The text is the command line as a shell splits it; torchrun's own flags
//! before the `.py` script give the world size (`--nproc_per_node` ×
//! `--nnodes`). `scripts/megatron-args-of.sh` prints the list a launch
//! script passes.

use crate::megatron_flags::{ignored_because, Flags};
use crate::reading::{Ignored, Reading, Translation, TranslationError};
use scenario::{Optimizer, Precision, Recompute, ScenarioFile, ScheduleKind, TrainingOptionsFile};

/// The stack Megatron-LM's arguments run under.
pub const MEGATRON_STACK: &str = "megatron-core-2024";

/// Megatron-LM's `--make-vocab-size-divisible-by` default.
const VOCAB_DIVISIBLE_BY: u64 = 128;

/// Reads `text` (`source` names it in messages).
pub fn read(text: &str, source: &str) -> Result<Translation, TranslationError> {
    let refuse = |problems: Vec<String>| TranslationError {
        source: source.to_string(),
        problems,
    };
    let tokens = shlex::split(text)
        .ok_or_else(|| refuse(vec!["unbalanced quotes or a trailing backslash".into()]))?;
    let mut problems = Vec::new();
    let (launcher, arguments) = match tokens.iter().position(|t| t.ends_with(".py")) {
        Some(script) => (&tokens[..script], &tokens[script + 1..]),
        None => (&tokens[..0], &tokens[..]),
    };
    let world_size = world_size(launcher, &mut problems);
    let mut flags = Flags::parse(arguments, &mut problems);
    let name = std::path::Path::new(source)
        .file_stem()
        .map_or("megatron-args".into(), |stem| {
            stem.to_string_lossy().into_owned()
        });
    let mut reader = Reader {
        name: name.trim_start_matches("--").to_string(),
        flags: &mut flags,
        problems: &mut problems,
        understood: Vec::new(),
        file: ScenarioFile {
            stack: Some(MEGATRON_STACK.into()),
            ..ScenarioFile::default()
        },
    };
    reader.layout(world_size);
    reader.precision_and_recompute();
    reader.options();
    reader.model();
    let Reader {
        understood, file, ..
    } = reader;
    if !problems.is_empty() {
        return Err(refuse(problems));
    }
    let ignored = flags
        .unread()
        .into_iter()
        .map(|(flag, argument)| Ignored {
            argument,
            reason: ignored_because(&flag).to_string(),
        })
        .collect();
    let samples_per_replica = file
        .global_batch
        .is_none()
        .then_some(file.microbatch_size)
        .flatten();
    Ok(Translation {
        scenario: file,
        world_size,
        samples_per_replica,
        understood,
        ignored,
    })
}

/// torchrun's GPUs: `--nproc_per_node` (or `--nproc-per-node`) × `--nnodes`.
fn world_size(launcher: &[String], problems: &mut Vec<String>) -> Option<u32> {
    // A leading `torchrun` (or `python -m torch.distributed.run`) is not a flag.
    let mut flags = Flags::parse(launcher, &mut Vec::new());
    let per_node = flags
        .number("nproc_per_node", problems)
        .or_else(|| flags.number("nproc-per-node", problems))?;
    let nodes = flags.number("nnodes", problems).unwrap_or(1);
    match per_node
        .checked_mul(nodes)
        .and_then(|n| u32::try_from(n).ok())
    {
        Some(n) if n > 0 => Some(n),
        _ => {
            problems.push(format!(
                "torchrun's {per_node} GPUs per node × {nodes} nodes is not a GPU count"
            ));
            None
        }
    }
}

struct Reader<'a> {
    /// The model's name: the source file's stem.
    name: String,
    flags: &'a mut Flags,
    problems: &'a mut Vec<String>,
    understood: Vec<Reading>,
    file: ScenarioFile,
}

impl Reader<'_> {
    fn note(&mut self, argument: String, meaning: String) {
        self.understood.push(Reading { argument, meaning });
    }

    /// `--name N` as a degree (at least 1), noted as `key = N`.
    fn degree(&mut self, name: &str, key: &str) -> Option<u32> {
        let n = self.flags.number(name, self.problems)?;
        match u32::try_from(n).ok().filter(|&n| n > 0) {
            Some(n) => {
                self.note(format!("--{name} {n}"), format!("{key} = {n}"));
                Some(n)
            }
            None => {
                self.problems
                    .push(format!("--{name} {n}: not a parallel degree"));
                None
            }
        }
    }

    /// The degrees and batch; Megatron's default of 1 for a degree not
    /// given (not a scenario file's), the global batch b·d when absent.
    fn layout(&mut self, world_size: Option<u32>) {
        let one = Some(1);
        self.file.tp = self.degree("tensor-model-parallel-size", "tp").or(one);
        self.file.pp = self.degree("pipeline-model-parallel-size", "pp").or(one);
        self.file.cp = self.degree("context-parallel-size", "cp").or(one);
        self.file.ep = self.degree("expert-model-parallel-size", "ep").or(one);
        self.file.etp = self.degree("expert-tensor-parallel-size", "etp");
        self.file.chunks = one;
        self.file.microbatch_size = self.degree("micro-batch-size", "b");
        if self.file.microbatch_size.is_none() {
            self.problems
                .push("--micro-batch-size is missing (Megatron requires it)".into());
        }
        self.file.global_batch = self.degree("global-batch-size", "B");
        let model_ranks = [self.file.tp, self.file.pp, self.file.cp]
            .iter()
            .map(|d| d.unwrap_or(1))
            .try_fold(1u32, u32::checked_mul);
        if let (Some(world), Some(ranks)) = (world_size, model_ranks) {
            if world % ranks == 0 {
                let dp = world / ranks;
                self.file.dp = Some(dp);
                self.note(
                    format!("torchrun: {world} GPUs"),
                    format!("dp = {world} / (tp·pp·cp = {ranks}) = {dp}"),
                );
                if self.file.global_batch.is_none() {
                    self.file.global_batch =
                        self.file.microbatch_size.and_then(|b| b.checked_mul(dp));
                }
            } else {
                self.problems.push(format!(
                    "torchrun's {world} GPUs are not a multiple of tp·pp·cp = {ranks}"
                ));
            }
        }
        if let Some(layout) = self
            .flags
            .text("pipeline-model-parallel-layout", self.problems)
        {
            self.note(
                format!("--pipeline-model-parallel-layout {layout}"),
                "the layers of each stage".into(),
            );
            self.file.pipeline_layout = Some(layout);
        }
        self.virtual_stages();
    }

    /// Interleaving: `--num-virtual-stages-per-pipeline-rank V`, or
    /// `--num-layers-per-virtual-pipeline-stage N` (V = layers / (pp·N)).
    fn virtual_stages(&mut self) {
        let per_rank = self
            .flags
            .number("num-virtual-stages-per-pipeline-rank", self.problems);
        let per_stage = self
            .flags
            .number("num-layers-per-virtual-pipeline-stage", self.problems);
        let chunks = match (per_rank, per_stage) {
            (Some(v), _) => Some((v, format!("--num-virtual-stages-per-pipeline-rank {v}"))),
            (None, Some(n)) => {
                let layers = self.flags.number("num-layers", self.problems).unwrap_or(0);
                let pp = u64::from(self.file.pp.unwrap_or(1));
                match layers.checked_div(pp.saturating_mul(n)) {
                    Some(v)
                        if v > 0
                            && v.checked_mul(pp).and_then(|x| x.checked_mul(n)) == Some(layers) =>
                    {
                        Some((v, format!("--num-layers-per-virtual-pipeline-stage {n}")))
                    }
                    _ => {
                        self.problems.push(format!("--num-layers-per-virtual-pipeline-stage {n}: {layers} layers are not pp = {pp} stages of chunks of {n}"));
                        None
                    }
                }
            }
            (None, None) => None,
        };
        match chunks {
            Some((v, argument)) if v > 1 => {
                self.note(argument, format!("interleaved 1F1B, v = {v}"));
                self.file.chunks = u32::try_from(v).ok();
                self.file.schedule = Some(ScheduleKind::Interleaved);
            }
            // Megatron's schedule without virtual stages.
            _ => self.file.schedule = Some(ScheduleKind::OneFOneB),
        }
        if let Some(group) = self.flags.number(
            "microbatch-group-size-per-virtual-pipeline-stage",
            self.problems,
        ) {
            self.note(
                format!("--microbatch-group-size-per-virtual-pipeline-stage {group}"),
                format!("microbatch groups of {group}"),
            );
            self.file.microbatch_group_size = u32::try_from(group).ok();
        }
    }

    fn precision_and_recompute(&mut self) {
        let fp8 = self.flags.text("fp8-format", self.problems);
        let recipe = self.flags.text("fp8-recipe", self.problems);
        let (bf16, fp16) = (self.flags.switch("bf16"), self.flags.switch("fp16"));
        let precision = match (&fp8, bf16, fp16) {
            (Some(format), _, _) => {
                if recipe.as_deref().is_some_and(|r| r != "delayed") {
                    self.problems.push(format!("--fp8-recipe {}: only Transformer Engine's delayed scaling (the default) is modeled", recipe.unwrap_or_default()));
                }
                self.note(
                    format!("--fp8-format {format}"),
                    "fp8 (delayed scaling; the rest in bf16)".into(),
                );
                Some(Precision::Fp8)
            }
            (None, true, _) => Some(Precision::Bf16),
            (None, false, true) => Some(Precision::Fp16),
            (None, false, false) => {
                self.problems.push(
                    "neither --bf16 nor --fp16: Megatron then trains in fp32, which is not modeled"
                        .into(),
                );
                None
            }
        };
        if let (None, Some(p)) = (&fp8, precision) {
            self.note(format!("--{}", p.name()), p.name().to_string());
        }
        self.file.options.precision = precision;
        self.recompute();
    }

    fn recompute(&mut self) {
        let granularity = self.flags.text("recompute-granularity", self.problems);
        let legacy = self.flags.switch("recompute-activations");
        let method = self.flags.text("recompute-method", self.problems);
        let layers = self.flags.number("recompute-num-layers", self.problems);
        let modules = self.flags.list("recompute-modules");
        let recompute = match (granularity.as_deref(), legacy) {
            (Some("full"), _) => Recompute::Full,
            (Some("selective"), _) | (None, true) => Recompute::Selective,
            (Some(other), _) => {
                self.problems.push(format!(
                    "--recompute-granularity {other}: full or selective"
                ));
                return;
            }
            (None, false) => Recompute::None,
        };
        if recompute == Recompute::Full && method.as_deref() == Some("block") {
            self.problems.push(format!(
                "--recompute-method block --recompute-num-layers {}: recomputing only some layers of each stage is not modeled (full recomputes every layer)",
                layers.unwrap_or(0)
            ));
        }
        if modules
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m != "core_attn"))
        {
            self.problems.push(format!("--recompute-modules {}: clustersim's selective recompute is the attention core's (core_attn) alone", modules.unwrap_or_default().join(" ")));
        }
        let argument = match (&granularity, legacy) {
            (Some(g), _) => format!("--recompute-granularity {g}"),
            (None, true) => "--recompute-activations".into(),
            (None, false) => "(no --recompute-granularity)".into(),
        };
        self.note(argument, format!("recompute = {}", recompute.name()));
        self.file.recompute = Some(recompute);
    }

    fn options(&mut self) {
        let tensor_parallel = self.file.tp.unwrap_or(1) > 1;
        if self.flags.switch("sequence-parallel") {
            if tensor_parallel {
                self.note("--sequence-parallel".into(), "sequence parallelism".into());
                self.file.options.sequence_parallel = Some(true);
            } else {
                self.note(
                    "--sequence-parallel".into(),
                    "off: Megatron turns it off at tp = 1".into(),
                );
            }
        }
        type Set = fn(&mut TrainingOptionsFile);
        let switches: [(&str, &str, Set); 5] = [
            ("use-distributed-optimizer", "distributed optimizer", |o| {
                o.distributed_optimizer = Some(true)
            }),
            (
                "overlap-grad-reduce",
                "overlapped gradient reduction",
                |o| o.overlap_grad_reduce = Some(true),
            ),
            (
                "overlap-param-gather",
                "overlapped parameter all-gather",
                |o| o.overlap_param_gather = Some(true),
            ),
            (
                "tp-comm-overlap",
                "tensor-parallel communication overlap",
                |o| o.tp_comm_overlap = Some(true),
            ),
            (
                "no-gradient-accumulation-fusion",
                "unfused gradient accumulation",
                |o| o.gradient_accumulation_fusion = Some(false),
            ),
        ];
        for (flag, what, set) in switches {
            if self.flags.switch(flag) {
                self.note(format!("--{flag}"), what.into());
                set(&mut self.file.options);
            }
        }
        if let Some(name) = self.flags.text("optimizer", self.problems) {
            match name.as_str() {
                // Megatron's adam is apex/TE FusedAdam in AdamW mode: the same
                // state and kernels as clustersim's adam.
                "adam" => self.note("--optimizer adam".into(), "optimizer adam (AdamW)".into()),
                "sgd" => {
                    self.note(
                        "--optimizer sgd".into(),
                        "optimizer sgd (with momentum)".into(),
                    );
                    self.file.options.optimizer = Some(Optimizer::Sgd);
                }
                other => self.problems.push(format!(
                    "--optimizer {other}: not modeled (clustersim models Megatron's adam and sgd)"
                )),
            }
        }
        if self.flags.switch("grad-reduce-in-bf16") {
            // Megatron-LM applies it under --bf16 only.
            let effect = if !self.flags.switch("bf16") {
                "no effect: Megatron-LM applies it under --bf16 only"
            } else {
                self.file.options.grad_reduce_in_bf16 = Some(true);
                "bf16 main gradients and data-parallel reductions"
            };
            self.note("--grad-reduce-in-bf16".into(), effect.into());
        }
        self.cpu_offloading();
    }

    /// `--cpu-offloading --cpu-offloading-num-layers N` (Megatron-Core's
    /// TransformerConfig, default N = 0): N layers' activations offloaded;
    /// the number without the switch does nothing in Megatron.
    fn cpu_offloading(&mut self) {
        let layers = self
            .flags
            .number("cpu-offloading-num-layers", self.problems);
        if !self.flags.switch("cpu-offloading") {
            if let Some(layers) = layers {
                self.note(
                    format!("--cpu-offloading-num-layers {layers}"),
                    "no effect without --cpu-offloading".into(),
                );
            }
            return;
        }
        let layers = layers.unwrap_or(0);
        let Ok(layers) = u32::try_from(layers) else {
            self.problems.push(format!(
                "--cpu-offloading-num-layers {layers}: more layers than a model can have"
            ));
            return;
        };
        self.file.options.cpu_offloading_num_layers = Some(layers);
        self.note(
            "--cpu-offloading".into(),
            format!("the activations of {layers} layers offloaded to host memory (Transformer Engine's CPU offloading)"),
        );
    }
}

#[path = "megatron_model_args.rs"]
mod model_args;

#[cfg(test)]
#[path = "megatron_args_tests.rs"]
mod tests;
