//! The scenario flags shared by every command that takes a scenario
//! (`simulate`, `execute`): a scenario file, overridden by flags; the
//! training options are `sim::scenario::TrainingOptionsFile`, flattened.

use super::registry_help;
use crate::exit::user_error;
use clap::Args;
use sim::scenario::era::Era;
use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind, TrainingOptionsFile};
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct ScenarioArgs {
    /// Scenario JSON file (every key optional; flags below override it; at most
    /// 256 MiB, as every input file but a timeline). Without
    /// one, the embedded default is used: GPT-3 175B on 1024 Selene GPUs,
    /// t=8 p=16 d=8, b=1, B=1536, 1F1B, full recompute.
    pub scenario: Option<PathBuf>,
    /// Model: a preset (see `clustersim presets`) or a model JSON file (≤ 256 MiB).
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long, help = registry_help::topology_help())]
    pub topology: Option<String>,
    #[arg(long, help = registry_help::profile_help())]
    pub profile: Option<String>,
    #[arg(long, value_name = "NAME|FILE", help = registry_help::stack_help())]
    pub stack: Option<String>,
    /// Tensor-parallel degree t (ranks inside a node).
    #[arg(long)]
    pub tp: Option<u32>,
    /// Pipeline-parallel degree p (stages).
    #[arg(long)]
    pub pp: Option<u32>,
    /// Data-parallel degree d.
    #[arg(long)]
    pub dp: Option<u32>,
    /// Context-parallel degree cp (default 1): each of cp ranks holds s/cp
    /// tokens and attention runs as Transformer Engine's ring attention
    /// (t·cp·p·d GPUs; the sequence must divide into 2·cp chunks).
    #[arg(long)]
    pub cp: Option<u32>,
    /// Expert-parallel degree ep of a mixture-of-experts model (default 1):
    /// groups of ep ranks carved out of the dp × cp ranks, each holding E/ep
    /// experts, tokens exchanged by all-to-all (needs tp 1; E and dp·cp
    /// divisible by ep).
    #[arg(long)]
    pub ep: Option<u32>,
    /// Expert tensor-parallel degree (default 1; only 1 is simulated).
    #[arg(long)]
    pub etp: Option<u32>,
    /// How routed tokens spread over the experts: uniform (default), skew:X
    /// (geometric, the first expert X times the last, X ≥ 1) or a file of
    /// tokens per expert: E numbers for every MoE layer, or one line of E
    /// numbers per MoE layer in layer order (# starts a comment line) for a
    /// routing that varies layer by layer; the busiest expert-parallel rank
    /// gates each MoE layer.
    #[arg(long, value_name = "uniform|skew:X|FILE")]
    pub expert_imbalance: Option<String>,
    /// Sequence length in tokens, overriding the model's (a Hugging Face
    /// config gives its longest context, e.g. 131072 for Llama 3.1).
    #[arg(long, value_name = "TOKENS")]
    pub seq_len: Option<u64>,
    /// Model chunks per stage v (interleaved and looped-bfs; zb-v, dualpipev and dualpipe run exactly 2, the default for them).
    #[arg(long)]
    pub chunks: Option<u32>,
    /// Interleaved schedule: microbatches per group N, pp ≤ N ≤ m (Megatron-Core's
    /// --microbatch-group-size-per-vp-stage; default pp). Each group runs
    /// through every chunk before the next starts; m need not be a multiple
    /// of pp, but m mod N must be 0 or at least pp.
    #[arg(long, value_name = "N")]
    pub microbatch_group_size: Option<u32>,
    /// Megatron-Core's pipeline layout (--pipeline-model-parallel-layout): the
    /// layers of each of the pp × chunks virtual stages, e.g.
    /// "Et*7|(t*8|)*14,t*7L" for 126 layers on 16 stages. E embedding (first),
    /// t transformer layer, L loss (last), | between stages, (…)*n and x*n
    /// repeat, commas are ignored. Replaces the even (or --account-for-…) split.
    #[arg(long, value_name = "LAYOUT")]
    pub pipeline_layout: Option<String>,
    /// Megatron-Core's uneven pipeline split: count the embedding as a layer
    /// of the first virtual stage, which then builds one transformer layer
    /// fewer (layers + 1 [+ 1] must divide into p·v).
    #[arg(long)]
    pub account_for_embedding_in_pipeline_split: bool,
    /// Count the loss as a layer of the last virtual stage (one transformer
    /// layer fewer there). Llama 3.1 405B's 126 layers on p·v = 64 run with
    /// both: 2 layers per virtual stage, 1 on the first and the last.
    #[arg(long)]
    pub account_for_loss_in_pipeline_split: bool,
    /// Microbatch size b.
    #[arg(long)]
    pub microbatch_size: Option<u32>,
    /// Global batch size B; microbatches per pipeline m = B/(b·d).
    #[arg(long)]
    pub global_batch: Option<u32>,
    /// Pipeline schedule: gpipe, 1f1b, interleaved, zb-h1 or zb-h2
    /// (zero-bubble: split backwards, weight gradients deferred), zb-v or
    /// dualpipev (two chunks per stage on the V map; dualpipev needs m ≥ 2p),
    /// or looped-bfs (PyTorch's ScheduleLoopedBFS: --chunks stages per rank on
    /// the interleaved map, all forwards of each, then the backwards in
    /// reverse; m·v microbatch-chunks of activations).
    /// dualpipe (DeepSeek's DualPipe: two parameter copies, stage r holding
    /// stage r of one and pp−1−r of the other, half the microbatches fed from
    /// each end; pp even, m even and ≥ 2p).
    #[arg(long, value_parser = registry_help::schedule_values())]
    pub schedule: Option<String>,
    /// Activation recomputation: none, selective (attention core only) or full.
    #[arg(long, value_parser = ["none", "selective", "full"])]
    pub recompute: Option<String>,
    /// Megatron-LM's `pretrain_gpt.py` arguments (the text, or a file of
    /// it), read as the model, layout, batch, precision, recomputation and
    /// data-parallel options under megatron-core-2024, with Megatron's own
    /// defaults; torchrun's --nproc_per_node and --nnodes before the .py give
    /// the data parallelism. Flags here override them; they override a
    /// scenario file. What each argument was read as, and why the others
    /// were ignored, goes to standard error; what cannot be modeled (fp32,
    /// partial recompute, …) is refused by name. `scripts/megatron-args-of.sh
    /// LAUNCH.sh` prints the list a launch script passes.
    #[arg(
        long,
        value_name = "ARGS|FILE",
        allow_hyphen_values = true,
        conflicts_with = "torchtitan"
    )]
    pub megatron_args: Option<String>,
    /// A torchtitan training TOML (`--job.config_file`): its llama3 flavor as
    /// the preset, batch, sequence length, degrees (FSDP2 as ZeRO stage 3,
    /// HSDP as shard groups), bf16 or float8, and full or no activation
    /// checkpointing, with torchtitan's defaults; priced under
    /// megatron-core-2024 (torchtitan's kernels were not measured). As
    /// --megatron-args: what was read and ignored goes to standard error,
    /// what cannot be modeled is refused by name, flags override it;
    /// `data_parallel_shard_degree = -1` needs --dp.
    #[arg(long, value_name = "FILE", conflicts_with = "bridge_config")]
    pub torchtitan: Option<PathBuf>,
    /// A Megatron-Bridge / NeMo 2 configuration YAML (a ConfigContainer's
    /// `to_yaml()` dump, or an override file): its keys read as the
    /// Megatron-LM arguments they map to (Megatron-Bridge's
    /// translate_mlm_to_bridge.py), as --megatron-args reads them. Keys it
    /// leaves out take Megatron-Core's defaults (the recipe is Python), but
    /// the precision, the recipes' bf16_mixed; without the architecture the
    /// model comes from --model; the GPU count is not in it: pass --dp.
    #[arg(long, value_name = "FILE", conflicts_with = "megatron_args")]
    pub bridge_config: Option<PathBuf>,
    /// Seed recorded in outputs.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Consecutive iterations to simulate (ZeRO-Offload only; default 1, or
    /// warm-up + 3 with --delayed-update). Metrics describe the steady state.
    #[arg(long, value_name = "N")]
    pub iterations: Option<u32>,
    /// Training options (the same keys as the scenario file's).
    #[command(flatten)]
    pub options: TrainingOptionsFile,
}

impl ScenarioArgs {
    /// File (or default) overridden by flags, then validated.
    pub fn resolve(&self) -> anyhow::Result<Scenario> {
        self.file()?.resolve().map_err(user_error)
    }

    /// The scenario file (or default) with the flags applied, not yet validated.
    pub fn file(&self) -> anyhow::Result<ScenarioFile> {
        let base = match &self.scenario {
            Some(path) => ScenarioFile::from_file(path)
                .map_err(user_error)?
                .or(ScenarioFile::default()),
            None => {
                let mut default = ScenarioFile::embedded_default();
                // Its one chunk is 1F1B's: another schedule takes its own
                // default (2 for the V-shaped ones and DualPipe).
                let schedule = self.schedule.as_deref().and_then(ScheduleKind::parse);
                if schedule.is_some_and(|kind| Some(kind) != default.schedule) {
                    default.chunks = None;
                }
                default
            }
        };
        let flags = ScenarioFile {
            model: self.model.clone().map(Into::into),
            seq_len: self.seq_len,
            topology: self.topology.clone().map(Into::into),
            profile: self.profile.clone(),
            stack: self.stack.clone(),
            tp: self.tp,
            pp: self.pp,
            dp: self.dp,
            cp: self.cp,
            ep: self.ep,
            etp: self.etp,
            expert_imbalance: self.expert_imbalance.clone(),
            chunks: self.chunks,
            microbatch_group_size: self.microbatch_group_size,
            pipeline_layout: self.pipeline_layout.clone(),
            pipeline_split: (self.account_for_embedding_in_pipeline_split
                || self.account_for_loss_in_pipeline_split)
                .then_some(models::sharding::PipelineSplit {
                    embedding: self.account_for_embedding_in_pipeline_split,
                    loss: self.account_for_loss_in_pipeline_split,
                    layout: None,
                }),
            microbatch_size: self.microbatch_size,
            global_batch: self.global_batch,
            schedule: self.schedule.as_deref().and_then(ScheduleKind::parse),
            recompute: self.recompute.as_deref().and_then(Recompute::parse),
            seed: self.seed,
            iterations: self.iterations,
            options: self.options.clone(),
        };
        let base = match self.framework_layer()? {
            Some(layer) => layer.or(base),
            None => base,
        };
        let mut merged = flags.or(base);
        if self.takes_todays_recompute(merged.era()) {
            // The embedded default's full recompute is GPT-3 175B's, as its
            // paper trained on A100s; today's models and GPUs train without
            // it by default (sim::scenario::era).
            merged.recompute = None;
        }
        Ok(merged)
    }

    /// Whether the scenario's recomputation is today's default (none) rather
    /// than the embedded default's (full): no scenario file, no
    /// `--recompute`, and a model or GPU of today's era.
    pub fn takes_todays_recompute(&self, era: Option<Era>) -> bool {
        self.scenario.is_none()
            && self.megatron_args.is_none()
            && self.torchtitan.is_none()
            && self.bridge_config.is_none()
            && self.recompute.is_none()
            && era == Some(Era::Today)
    }

    /// `--megatron-args` or `--torchtitan` read as a scenario layer; what
    /// was understood and ignored goes to standard error.
    fn framework_layer(&self) -> anyhow::Result<Option<ScenarioFile>> {
        let read_file = |path: &std::path::Path, flag: &str| {
            input_file::read_to_string(path)
                .map_err(|e| user_error(format!("{flag} {}: {e}", path.display())))
        };
        let (translation, source) =
            match (&self.megatron_args, &self.torchtitan, &self.bridge_config) {
                (Some(arguments), _, _) => {
                    let path = std::path::Path::new(arguments);
                    let (text, source) = if path.is_file() {
                        (
                            read_file(path, "--megatron-args")?,
                            path.display().to_string(),
                        )
                    } else {
                        (arguments.clone(), "--megatron-args".to_string())
                    };
                    (frameworks::megatron_args::read(&text, &source), source)
                }
                (None, None, Some(path)) => {
                    let source = path.display().to_string();
                    (
                        frameworks::bridge::read(&read_file(path, "--bridge-config")?, &source),
                        source,
                    )
                }
                (None, Some(path), _) => {
                    let source = path.display().to_string();
                    (
                        frameworks::torchtitan::read(&read_file(path, "--torchtitan")?, &source),
                        source,
                    )
                }
                (None, None, None) => return Ok(None),
            };
        let translation = translation.map_err(user_error)?;
        let mut layer = translation.scenario.clone();
        if layer.dp.is_none() && self.dp.is_none() {
            return Err(user_error(format!(
                "{source}: the data parallelism: the file gives no world size (torchrun's --nproc_per_node and --nnodes, or torchtitan's data_parallel_shard_degree); pass --dp"
            )));
        }
        if let (None, None, Some(per_replica), Some(dp)) = (
            layer.global_batch,
            self.global_batch,
            translation.samples_per_replica,
            self.dp.or(layer.dp),
        ) {
            layer.global_batch = per_replica.checked_mul(dp);
        }
        eprint!("{}", translation.report(&source));
        Ok(Some(layer))
    }
}
