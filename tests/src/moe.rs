//! Mixture-of-experts scenarios that several test files share: Mixtral 8x7B
//! on the DGX H100 SuperPOD, a small 4-expert mixture on one node, the
//! link rates their closed forms are computed with, and the works of a
//! graph the tests look up.

use models::ModelSpec;
use sim::collective::LinkRates;
use sim::scenario::{Precision, Recompute, Scenario, ScenarioFile, TrainingOptionsFile};
use sim::task_graph::{ComputePass, TaskGraph, Work};

/// Mixtral 8x7B at s = 4096 on the DGX H100 SuperPOD, t = 1, bf16, 4
/// microbatches per replica.
pub fn mixtral(
    pp: u32,
    dp: u32,
    ep: u32,
    imbalance: Option<&str>,
    distributed: bool,
) -> ScenarioFile {
    ScenarioFile {
        model: Some("mixtral-8x7b".into()),
        seq_len: Some(4096),
        topology: Some("dgx-h100-superpod".into()),
        // The 2021 stack's mechanics (blocking gradient all-reduces, unfused
        // accumulation), which these tests pin: named, so no era default
        // of today's (sim::scenario::era) applies.
        stack: Some("megatron-2021".into()),
        tp: Some(1),
        pp: Some(pp),
        dp: Some(dp),
        ep: Some(ep),
        expert_imbalance: imbalance.map(Into::into),
        chunks: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(4 * dp),
        recompute: Some(Recompute::None),
        options: TrainingOptionsFile {
            precision: Some(Precision::Bf16),
            distributed_optimizer: Some(distributed),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
}

/// A small mixture: 4 layers, h = 1024, 4 experts of F = 4096, top-1,
/// s = 4096 (Mixtral's blocks otherwise).
pub fn small_model() -> ModelSpec {
    let mut model = models::preset("mixtral-8x7b").unwrap();
    model.name = "moe-small".into();
    model.layers = 4;
    model.hidden = 1024;
    model.heads = 8;
    model.kv_heads = Some(8);
    model.ffn_hidden = Some(4096);
    model.seq_len = 4096;
    model.vocab = 1024;
    model.vocab_unpadded = None;
    let moe = model.moe.as_mut().unwrap();
    moe.experts = 4;
    moe.top_k = 1;
    moe.expert_ffn_hidden = 4096;
    model
}

/// `model` on one DGX H100, dp = 2, ep = 2, one microbatch each, bf16,
/// routed by `imbalance`.
pub fn small_scenario(model: &ModelSpec, imbalance: &str) -> Scenario {
    ScenarioFile {
        model: Some(serde_json::to_value(model).unwrap()),
        topology: Some("dgx-h100-superpod".into()),
        stack: Some("megatron-2021".into()),
        tp: Some(1),
        pp: Some(1),
        dp: Some(2),
        ep: Some(2),
        expert_imbalance: Some(imbalance.into()),
        chunks: Some(1),
        microbatch_size: Some(1),
        global_batch: Some(2),
        recompute: Some(Recompute::None),
        options: TrainingOptionsFile {
            precision: Some(Precision::Bf16),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::default()
    }
    .resolve()
    .expect("valid scenario")
}

/// The link rates of `scenario`'s topology and profile under its stack's NCCL.
pub fn link_rates(scenario: &Scenario) -> LinkRates {
    LinkRates::from(&scenario.topology, &scenario.profile).with_nccl(scenario.stack.nccl)
}

/// The index of `graph`'s first backward expert all-to-all work.
pub fn backward_all_to_all_work(graph: &TaskGraph) -> usize {
    graph
        .works()
        .iter()
        .position(|work| {
            matches!(
                work,
                Work::ExpertAllToAll {
                    pass: ComputePass::Backward,
                    ..
                }
            )
        })
        .expect("a backward expert all-to-all")
}

/// (bytes, group size, nodes) of every data-parallel all-reduce work of
/// `graph`, in work order.
pub fn data_parallel_all_reduces(graph: &TaskGraph) -> Vec<(u64, u32, u32)> {
    graph
        .works()
        .iter()
        .filter_map(|work| match *work {
            Work::DataParallelAllReduce {
                bytes,
                group_size,
                spread,
            } => Some((bytes, group_size, spread.nodes)),
            _ => None,
        })
        .collect()
}
