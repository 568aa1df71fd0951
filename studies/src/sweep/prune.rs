//! Bound and prune (issue 37, item 4): `sweep --prune` simulates only the
//! layouts that could rank among the top k, and the ranked top k equals
//! the exhaustive sweep's.
//!
//! **The bound.** A layout's iteration takes at least the critical path of
//! its pipeline schedule with every pass priced at the sum of its kernels'
//! times and everything else free: [`iteration_lower_bound_ns`]. Exact as a
//! lower bound because the simulation only adds to it:
//! - each rank runs its compute tasks one after the other in its action
//!   list's order (program order chains its compute stream), and a pass's
//!   tasks (its segments at host synchronizations, its ZeRO pieces) hold
//!   every kernel of the pass, each task priced at its kernels' time plus
//!   what it does not hide (ring exchanges, offloading stalls), rounded up;
//! - a forward waits for the previous virtual stage's forward of its
//!   microbatch (through a transfer), a backward (or its input-gradient
//!   half) for the next virtual stage's, the last virtual stage's for its
//!   own forward, a weight-gradient half for its input-gradient half;
//! - a pass's blocking tensor all-reduces run on the compute stream after
//!   its kernels ([`sim::cost::unhidden_tensor_all_reduces`]: those nothing
//!   overlaps, each at its work's price; the pass's segments sum to them);
//! - recomputation, the optimizer, every other collective, transfer and
//!   host cost, and the first microbatch's FP8 weight cast only add time.
//!
//! Each pass's bound is rounded down and less 1 ns, against floating-point
//! summation order. Schedules with overlapped F&B pairs (DualPipe's), whose
//! halves' kernels run beside each other's communication, and DualPipe's two
//! model copies (two chains of stages in opposite directions) get no bound
//! (0): they are always simulated.
//!
//! **The pruning.** Layouts are taken in order of their bound (then index),
//! simulated in fixed batches of [`BATCH`] (so which layouts are simulated
//! does not depend on the number of threads), and after each batch every
//! layout whose bound exceeds the k-th best iteration time so far is
//! pruned: its time is above that bound, so it cannot enter the top k, ties
//! included (ties rank by index, and a pruned layout's time is strictly
//! greater).

use std::collections::BTreeMap;

use models::ops::Step;
use serde::{Deserialize, Serialize};
use sim::scenario::Scenario;
use sim::schedule::Pass;
use sim::task_graph::ComputePass;

use super::space::Candidate;

/// Layouts simulated between two prunings.
pub const BATCH: usize = 16;

/// A valid layout not simulated: its bound is above the top k's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrunedRecord {
    pub index: u32,
    pub layout: Candidate,
    /// Its iteration time's lower bound, integer nanoseconds.
    pub lower_bound_ns: u64,
    /// The k-th best iteration time when it was pruned, nanoseconds.
    pub top_k_time_ns: u64,
}

/// A lower bound of `scenario`'s simulated iteration time (the makespan),
/// in nanoseconds: the compute-only critical path of its pipeline schedule
/// (see the module's header). 0 for schedules with overlapped pairs.
pub fn iteration_lower_bound_ns(scenario: &Scenario) -> u64 {
    let schedule = sim::plan::schedule_of(scenario);
    let paired = schedule
        .actions
        .iter()
        .flatten()
        .any(|action| action.pass == Pass::ForwardBackward);
    let sharding = scenario.layout.sharding();
    // DualPipe's two model copies run in opposite directions: their stage
    // ids are not one chain, so the dependencies below do not hold.
    if paired || sharding.map == models::stage_map::StageMap::DualPipe {
        return 0;
    }
    let placement = sim::placement::Placement::of(scenario);
    let network = sim::cost::ClosedFormNetwork::for_scenario(scenario);
    let kernels = sim::cost::KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    let mut priced: BTreeMap<(u32, Pass), u64> = BTreeMap::new();
    let mut pass_ns = |virtual_stage: u32, stage: u32, chunk: u32, pass: Pass| -> u64 {
        *priced.entry((virtual_stage, pass)).or_insert_with(|| {
            let layers = sharding.layers_of_chunk(scenario.model.layers, stage, chunk);
            let first = sharding.first_layer_of_chunk(scenario.model.layers, stage, chunk);
            let dense = models::sharding::dense_layers_in(&scenario.model, first, layers);
            let (embedding, head) = sharding.is_end(virtual_stage);
            let compute_pass = match pass {
                Pass::Forward => ComputePass::Forward,
                Pass::InputGradient => ComputePass::InputGradient,
                Pass::WeightGradient => ComputePass::WeightGradient,
                Pass::Backward | Pass::ForwardBackward => ComputePass::Backward,
            };
            let steps = sim::cost::pass_steps_at(
                scenario,
                compute_pass,
                (
                    sim::cost::work_first_layer(scenario, first),
                    layers as u32,
                    dense as u32,
                ),
                embedding,
                head,
            );
            let seconds: f64 = steps
                .iter()
                .map(|step| match step {
                    Step::Kernel(kernel) => kernels.kernel_seconds(kernel),
                    _ => 0.0,
                })
                .sum();
            let tensor_group = placement.tensor_group(stage, 0);
            let all_reduces = sim::cost::unhidden_tensor_all_reduces(
                scenario,
                compute_pass,
                &steps,
                (
                    tensor_group.len() as u32,
                    placement.nodes_spanned(&tensor_group),
                ),
                &network,
            );
            ((seconds * 1e9).floor() as u64).saturating_sub(1) + all_reduces.0
        })
    };
    critical_path_ns(&schedule, &sharding, &mut pass_ns)
}

/// The makespan of `schedule`'s action lists with each pass taking
/// `pass_ns(virtual stage, stage, chunk, pass)` and nothing else costing
/// time (see the module's header for the dependencies).
fn critical_path_ns(
    schedule: &sim::schedule::PipelineSchedule,
    sharding: &models::sharding::Sharding,
    pass_ns: &mut dyn FnMut(u32, u32, u32, Pass) -> u64,
) -> u64 {
    let last_virtual = sharding.virtual_stages() - 1;
    let stages = schedule.actions.len();
    let mut next = vec![0usize; stages];
    let mut free_at = vec![0u64; stages];
    // (virtual stage, forward?, microbatch) → end; the backward key holds
    // a whole backward's or its input-gradient half's end.
    let mut done: BTreeMap<(u32, bool, u32), u64> = BTreeMap::new();
    let mut weight_done = 0usize;
    let total: usize = schedule.actions.iter().map(Vec::len).sum();
    loop {
        let mut progressed = false;
        for (stage, actions) in schedule.actions.iter().enumerate() {
            while let Some(action) = actions.get(next[stage]) {
                let vs = sharding.virtual_stage(stage as u32, action.chunk);
                let mb = action.microbatch;
                let ready = match action.pass {
                    Pass::Forward if vs == 0 => Some(0),
                    Pass::Forward => done.get(&(vs - 1, true, mb)).copied(),
                    Pass::WeightGradient => done.get(&(vs, false, mb)).copied(),
                    _ if vs == last_virtual => done.get(&(vs, true, mb)).copied(),
                    _ => done.get(&(vs + 1, false, mb)).copied(),
                };
                let Some(ready) = ready else { break };
                let end = ready.max(free_at[stage])
                    + pass_ns(vs, stage as u32, action.chunk, action.pass);
                free_at[stage] = end;
                match action.pass {
                    Pass::WeightGradient => weight_done += 1,
                    pass => {
                        done.insert((vs, pass == Pass::Forward, mb), end);
                    }
                }
                next[stage] += 1;
                progressed = true;
            }
        }
        if done.len() + weight_done >= total || !progressed {
            break;
        }
    }
    // A schedule that cannot progress here (none valid does) bounds nothing.
    if done.len() + weight_done < total {
        return 0;
    }
    free_at.into_iter().max().unwrap_or(0)
}
