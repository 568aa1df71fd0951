//! The scenario flags shared by every command that takes a scenario
//! (`simulate`, later `execute` and `sweep`): a scenario file, overridden by flags.

use crate::exit::user_error;
use clap::Args;
use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind};
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct ScenarioArgs {
    /// Scenario JSON file (every key optional; flags below override it). Without
    /// one, the embedded default is used: GPT-3 175B on 1024 Selene GPUs,
    /// t=8 p=16 d=8, b=1, B=1536, 1F1B, full recompute.
    pub scenario: Option<PathBuf>,
    /// Model: a preset (see `clustersim presets`) or a model JSON file.
    #[arg(long)]
    pub model: Option<String>,
    /// Topology: a preset (selene, dgx-a100, dgx2-v100, dgx2-v100-x8, h200) or a JSON file.
    #[arg(long)]
    pub topology: Option<String>,
    /// Calibration profile: a built-in (a100-80gb, v100-32gb, h200) or a file written by
    /// `clustersim calibrate`. Default: the built-in for the topology's GPU.
    #[arg(long)]
    pub profile: Option<String>,
    /// Tensor-parallel degree t (ranks inside a node).
    #[arg(long)]
    pub tp: Option<u32>,
    /// Pipeline-parallel degree p (stages).
    #[arg(long)]
    pub pp: Option<u32>,
    /// Data-parallel degree d.
    #[arg(long)]
    pub dp: Option<u32>,
    /// Model chunks per stage v (interleaved schedule only).
    #[arg(long)]
    pub chunks: Option<u32>,
    /// Microbatch size b.
    #[arg(long)]
    pub microbatch_size: Option<u32>,
    /// Global batch size B; microbatches per pipeline m = B/(b·d).
    #[arg(long)]
    pub global_batch: Option<u32>,
    /// Pipeline schedule: gpipe, 1f1b or interleaved.
    #[arg(long, value_parser = ["gpipe", "1f1b", "interleaved"])]
    pub schedule: Option<String>,
    /// Activation recomputation: none, selective (attention core only) or full.
    #[arg(long, value_parser = ["none", "selective", "full"])]
    pub recompute: Option<String>,
    /// Send whole activations on one NIC per rank instead of Megatron's scatter/gather over the t NICs.
    #[arg(long)]
    pub no_scatter_gather: bool,
    /// Start each model chunk's data-parallel gradient all-reduce when its last
    /// backward ends (overlapping later backwards) instead of after the last pass.
    #[arg(long)]
    pub overlap_grad_reduce: bool,
    /// With --overlap-grad-reduce: split each chunk's last backward into gradient
    /// buckets of at most PARAMS parameters (whole layers, at least one), each all-reduced as soon
    /// as its layers are done, as PyTorch DDP does (its 25 MB buckets: 12500000).
    #[arg(long, value_name = "PARAMS")]
    pub grad_reduce_bucket_params: Option<u64>,
    /// Megatron's sequence parallelism (LayerNorm/dropout split across tensor ranks).
    #[arg(long)]
    pub sequence_parallel: bool,
    /// Megatron's gradient-accumulation fusion with fp32 main gradients: weight
    /// gradients accumulate inside the GEMMs (no per-microbatch add kernel) and are
    /// all-reduced in fp32. Default: unfused fp16 accumulation, as in the SC21 and
    /// Korthikanti et al. 2022 fp16 runs.
    #[arg(long)]
    pub grad_accumulation_fusion: bool,
    /// Megatron's asynchronous tensor all-reduce (2022): each column-parallel layer's
    /// backward all-reduce overlaps its weight-gradient GEMM (default: blocking, as in
    /// SC21; not with --sequence-parallel).
    #[arg(long)]
    pub async_tensor_allreduce: bool,
    /// Run pipeline transfers, collectives and ZeRO-Offload's PCIe copies as flows
    /// sharing the fabric's links (NVSwitch ports, NICs, fat-tree cables, PCIe and
    /// host links; max-min fair) instead of costing each alone; adds the busiest
    /// links to --json.
    #[arg(long)]
    pub contention: bool,
    /// Seed recorded in outputs.
    #[arg(long)]
    pub seed: Option<u64>,
    /// ZeRO-Offload: fp16 parameters and activations on the GPU; gradients streamed
    /// to the CPU over PCIe, Adam on the CPU, parameters copied back (needs --pp 1;
    /// with --dp > 1, ZeRO-2 partitioning).
    #[arg(long)]
    pub zero_offload: bool,
    /// ZeRO-Offload's delayed parameter update: step N's CPU update overlaps step
    /// N+1's forward and backward (needs --zero-offload).
    #[arg(long)]
    pub delayed_update: bool,
    /// Iterations without delay before the delayed update starts (default 1).
    #[arg(long, value_name = "N")]
    pub dpu_warmup_iterations: Option<u32>,
    /// Consecutive iterations to simulate (ZeRO-Offload only; default 1, or
    /// warm-up + 3 with --delayed-update). Metrics describe the steady state.
    #[arg(long, value_name = "N")]
    pub iterations: Option<u32>,
    /// Gradient bucket size in parameters for the offload stream (default 500000000,
    /// DeepSpeed's reduce_bucket_size), rounded to whole layers.
    #[arg(long, value_name = "PARAMS")]
    pub offload_bucket_params: Option<u64>,
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
            None => ScenarioFile::embedded_default(),
        };
        let flags = ScenarioFile {
            model: self.model.clone().map(Into::into),
            topology: self.topology.clone().map(Into::into),
            profile: self.profile.clone(),
            tp: self.tp,
            pp: self.pp,
            dp: self.dp,
            chunks: self.chunks,
            microbatch_size: self.microbatch_size,
            global_batch: self.global_batch,
            schedule: self.schedule.as_deref().and_then(ScheduleKind::parse),
            recompute: self.recompute.as_deref().and_then(Recompute::parse),
            pipeline_scatter_gather: self.no_scatter_gather.then_some(false),
            seed: self.seed,
            network_contention: self.contention.then_some(true),
            sequence_parallel: self.sequence_parallel.then_some(true),
            gradient_accumulation_fusion: self.grad_accumulation_fusion.then_some(true),
            async_tensor_allreduce: self.async_tensor_allreduce.then_some(true),
            overlap_grad_reduce: self.overlap_grad_reduce.then_some(true),
            grad_reduce_bucket_params: self.grad_reduce_bucket_params,
            zero_offload: self.zero_offload.then_some(true),
            delayed_update: self.delayed_update.then_some(true),
            dpu_warmup_iterations: self.dpu_warmup_iterations,
            iterations: self.iterations,
            offload_bucket_params: self.offload_bucket_params,
        };
        Ok(flags.or(base))
    }
}
