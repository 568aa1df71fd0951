//! Which tasks become flows on the shared fabric, and which flows.
//!
//! Under `--contention` every communication task the fabric can carry runs as
//! flows (the engine shares link bandwidth among them max-min fairly); the
//! rest keep their closed-form durations. Each plan is built so that, alone on
//! the fabric, the task takes its closed-form time (to within a nanosecond of
//! rounding); with other traffic on its links it takes longer.
//! - a pipeline transfer between nodes: one flow per tensor rank, from the
//!   sender to the receiver with the same tensor index (same rail), carrying
//!   1/t of the activation with Megatron's scatter/gather (then an NVLink
//!   all-gather, costed in closed form as the task's tail) or all of it
//!   without; tail = one network step latency (`LinkRates::network_step_ns`: the
//!   profile's, plus a declared fabric's path latency);
//! - a pipeline transfer inside a node: one flow per tensor rank over its
//!   NVSwitch ports (NVLink up, NVLink down) carrying the whole activation;
//! - an all-reduce whose group spans nodes: NCCL's rings, one per rail of the
//!   group (ranks per node × NICs per GPU), each carrying 1/rails of the data;
//!   only the node-to-node hops are flows (each ring's hop leaves node k from
//!   the ring's rail and enters node k+1 on the same rail), each carrying the
//!   ring's bus factor 2(n−1)/n of its share; tail = the ring's per-step
//!   latencies;
//! - an all-reduce inside one node (tensor-parallel groups, data-parallel
//!   groups that fit in a node): the ring's hops GPU i → GPU i+1 over the
//!   NVSwitch, each carrying 2(n−1)/n of the bytes; tail = the closed-form
//!   time minus that transfer alone (the per-step latencies of every
//!   all-reduce the task stands for); a tensor group's ring is marked
//!   `alone` where `lone_rings.rs` proves nothing else uses its ports while
//!   it runs (the engine then times it at its start);
//! - ZeRO-2's reduce-scatter and all-gather: the same rings with the bus
//!   factor (n−1)/n of the full buffer;
//! - a mixture of experts' all-to-alls (one task per pass and tensor group,
//!   standing for all of the pass's dispatches and combines): one flow from
//!   each of the task's ranks to each peer of its expert-parallel group,
//!   carrying 1/ep of the bytes, over the NVSwitch inside a node and the
//!   rank's NIC rail across nodes (every rank of the group runs its own task
//!   at the same time, so together they are the whole exchange); tail = the
//!   closed-form time minus that transfer alone (the per-peer step latencies);
//! - ZeRO-Offload's PCIe copies: one flow over the GPU's PCIe link and its
//!   switch's host uplink (which the GPUs behind it share, and which the NIC
//!   traffic of the GPU shares too); tail = the PCIe latency. The closed form
//!   charges every copy rate ÷ (GPUs per host link), as if all of them copied
//!   at once; as flows they share the link only while they overlap.
//!
//! Not flows: the NVLink all-gather after a scattered pipeline transfer, and
//! backward tensor all-reduces under the asynchronous tensor all-reduce
//! (charged only the part their weight-gradient GEMMs do not hide).

use crate::cost::{NetworkModel, WorkCost};
use crate::placement::{Coordinates, Placement};
use collectives::all_to_all::all_to_all_terms;
use collectives::{ring_terms, CollectiveOp, GroupShape, LinkRates};
use engine::network::{FlowEnds, FlowPlan, FlowPlanner};
use scenario::Scenario;
use taskgraph::ids::{Rank, TaskId};
use taskgraph::task::TaskKind;
use taskgraph::task_graph::{ComputePass, NodeSpread, PcieDirection, TaskGraph, Work};
use timeline::time::SimDuration;

/// Plans fabric flows for the communication tasks of one graph.
pub struct FabricFlowPlanner<'a> {
    graph: &'a TaskGraph,
    placement: &'a Placement,
    rates: LinkRates,
    costs: &'a [WorkCost],
    pcie_latency: SimDuration,
    /// Backward tensor all-reduces overlap weight-gradient GEMMs and are
    /// charged only their exposed part: they stay closed form.
    async_tensor_allreduce: bool,
    /// Tensor all-reduces overlapped with the linear layers' GEMMs
    /// (`--tp-comm-overlap`): charged only their exposed part, closed form.
    tp_comm_overlap: bool,
    /// Per work: a cross-node pipeline transfer's tail (the network step and,
    /// scattered, the NVLink all-gather), computed once per work instead of
    /// at each of its tasks' starts; zero for other works.
    pipeline_tails: Vec<SimDuration>,
    /// Per work: a collective inside one node as a ring over `group_size`
    /// ranks, (hop bytes, tail) for each operation the planner may cost it
    /// as (all-reduce, all-gather), computed once per work; `None` for
    /// other works.
    nvlink_rings: Vec<Option<[(u64, SimDuration); 2]>>,
    /// Tensor all-reduce rings inside a node have their NVSwitch ports to
    /// themselves while they run, and their plans say so
    /// ([`super::lone_rings`]).
    lone_tensor_rings: bool,
}

impl<'a> FabricFlowPlanner<'a> {
    /// The planner of `graph` with its works' `costs`; `placement` is the
    /// plan's ([`crate::plan::Plan::placement`]).
    pub fn new(
        scenario: &'a Scenario,
        placement: &'a Placement,
        graph: &'a TaskGraph,
        network: &'a dyn NetworkModel,
        costs: &'a [WorkCost],
    ) -> Self {
        let rates =
            LinkRates::from(&scenario.topology, &scenario.profile).with_nccl(scenario.stack.nccl);
        let step = SimDuration::from_seconds_ceil(rates.network_step_ns() * 1e-9);
        let pipeline_tails = graph
            .works()
            .iter()
            .map(|work| match *work {
                Work::PipelineTransfer {
                    bytes,
                    tensor_parallel,
                    crosses_nodes: true,
                    scatter_gather,
                } => {
                    let gather = if scatter_gather {
                        network.all_gather(
                            bytes,
                            tensor_parallel,
                            NodeSpread::even(tensor_parallel, 1),
                        )
                    } else {
                        SimDuration::ZERO
                    };
                    step + gather
                }
                _ => SimDuration::ZERO,
            })
            .collect();
        let nvlink_bus_bytes_per_s = rates.nvlink_bus_bytes_per_s;
        let nvlink_rings = graph
            .works()
            .iter()
            .zip(costs)
            .map(|(work, cost)| match *work {
                Work::DataParallelAllReduce { group_size, .. }
                | Work::TensorAllReduce { group_size, .. }
                | Work::DataParallelReduceScatter { group_size, .. }
                | Work::DataParallelAllGather { group_size, .. } => Some(
                    [CollectiveOp::AllReduce, CollectiveOp::AllGather].map(|op| {
                        nvlink_ring_hop(
                            op,
                            group_size as usize,
                            cost.bytes,
                            cost.duration,
                            nvlink_bus_bytes_per_s,
                        )
                    }),
                ),
                _ => None,
            })
            .collect();
        let mut planner = FabricFlowPlanner {
            graph,
            placement,
            rates,
            pipeline_tails,
            nvlink_rings,
            pcie_latency: SimDuration::from_seconds_ceil(
                scenario.topology.pcie.latency_ns as f64 * 1e-9,
            ),
            async_tensor_allreduce: scenario.options.async_tensor_allreduce,
            tp_comm_overlap: scenario.options.tp_comm_overlap,
            costs,
            lone_tensor_rings: false,
        };
        planner.lone_tensor_rings = super::lone_rings::tensor_rings_run_alone(&planner);
        planner
    }

    /// The same planner sharing every flow in the fair-share network, even
    /// rings that would run alone: the reference the shortcut is tested
    /// against (`Expansion::Built`).
    pub(crate) fn sharing_every_flow(mut self) -> Self {
        self.lone_tensor_rings = false;
        self
    }

    /// The planner of twins whose ranks are their representative's moved
    /// by multiples of `ranks` (`TwinPlanner`): the lone-ring proof, made
    /// on the representative's graph, holds for every twin only when such
    /// a move keeps GPUs that share a node together (`ranks` a multiple of
    /// the GPUs per node); otherwise every flow is shared.
    pub(crate) fn for_twins_moved_by(mut self, ranks: u32) -> Self {
        if ranks.checked_rem(self.placement.gpus_per_node) != Some(0) {
            self.lone_tensor_rings = false;
        }
        self
    }

    /// Whether tensor all-reduce rings inside a node run alone on their
    /// ports, so their plans say so ([`super::lone_rings`]).
    pub fn rings_run_alone(&self) -> bool {
        self.lone_tensor_rings
    }

    /// The graph it plans.
    pub(crate) fn graph(&self) -> &TaskGraph {
        self.graph
    }

    /// GPUs per node (ranks `r` and `s` share a node when
    /// `r / gpus_per_node == s / gpus_per_node`).
    pub(crate) fn gpus_per_node(&self) -> u32 {
        self.placement.gpus_per_node
    }

    /// A pipeline transfer between nodes: one flow per tensor rank, 1/t of
    /// the activation each when scattered.
    fn pipeline_flows(
        &self,
        task: TaskId,
        ranks: &[Rank],
        bytes: u64,
        tensor_parallel: u32,
        scatter_gather: bool,
        plan: &mut FlowPlan,
    ) {
        let per_rank_bytes = if scatter_gather {
            bytes.div_ceil(tensor_parallel as u64)
        } else {
            bytes
        };
        self.pipeline_pairs(task, ranks, per_rank_bytes, &mut plan.flows);
        plan.tail = self.pipeline_tails[self.graph.work_of(task).index()];
    }

    /// Appends one flow of `bytes` per tensor rank of a pipeline transfer
    /// task on `ranks`: from the sender to the receiver with the same
    /// coordinates.
    fn pipeline_pairs(
        &self,
        task: TaskId,
        ranks: &[Rank],
        bytes: u64,
        flows: &mut Vec<(FlowEnds, u64)>,
    ) {
        let (stage, chunk) = self.graph.stage_and_chunk_of(task);
        let p = self.placement.layout.pipeline_parallel.get();
        let map = self.placement.layout.stage_map;
        let virtual_stage = map.stage_of(p, stage, chunk as u32);
        let peer_stage = match self.graph.kind_of(task) {
            TaskKind::PipelineActivation | TaskKind::NormExchange => {
                map.place(p, virtual_stage + 1).0
            }
            _ => map.place(p, virtual_stage.saturating_sub(1)).0,
        };
        // `Placement::rank` of the rank's coordinates with the peer's stage:
        // the stage is the rank's outermost digit (t·d ranks a stage).
        let ranks_per_stage =
            self.placement.layout.tensor_parallel.get() * self.placement.layout.replicas();
        flows.extend(ranks.iter().map(|&rank| {
            let peer = peer_stage * ranks_per_stage + rank.0 % ranks_per_stage;
            debug_assert_eq!(
                Rank(peer),
                self.placement.rank(Coordinates {
                    stage: peer_stage,
                    ..self.placement.coordinates(rank)
                })
            );
            (FlowEnds::Gpus(rank.0, peer), bytes)
        }));
    }

    /// A pipeline transfer between stages on one node: every tensor rank sends
    /// the whole activation to its peer through the NVSwitch.
    fn nvlink_pipeline_flows(&self, task: TaskId, ranks: &[Rank], bytes: u64, plan: &mut FlowPlan) {
        self.pipeline_pairs(task, ranks, bytes, &mut plan.flows);
        plan.tail = SimDuration::from_seconds_ceil(self.rates.nvlink_step_latency_ns * 1e-9);
    }

    /// A ring inside one node: GPU i sends to GPU i+1 (in rank order) over
    /// the NVSwitch, each hop carrying the operation's bus factor of the bytes.
    fn nvlink_ring_flows(
        &self,
        op: CollectiveOp,
        ranks: &[Rank],
        bytes: u64,
        duration: SimDuration,
        plan: &mut FlowPlan,
    ) {
        let (hop_bytes, tail) = nvlink_ring_hop(
            op,
            ranks.len(),
            bytes,
            duration,
            self.rates.nvlink_bus_bytes_per_s,
        );
        push_ring(ranks, hop_bytes, plan);
        plan.tail = tail;
    }

    /// A collective task's rings over `ranks`: across nodes over the NIC
    /// rails, or inside one node.
    fn collective_flows(
        &self,
        task: TaskId,
        ranks: &[Rank],
        op: CollectiveOp,
        group_size: u32,
        nodes: u32,
        plan: &mut FlowPlan,
    ) -> bool {
        let cost = self.costs[self.graph.work_of(task).index()];
        if group_size <= 1 || cost.bytes == 0 {
            return false;
        }
        let work = self.graph.work_of(task);
        if nodes > 1 {
            *plan = self.ring_flows(op, ranks, cost.bytes, cost.duration);
        } else if let Some(rings) =
            self.nvlink_rings[work.index()].filter(|_| ranks.len() == group_size as usize)
        {
            // The work's ring, computed once (for a group of its size).
            let (hop_bytes, tail) = rings[usize::from(op == CollectiveOp::AllGather)];
            push_ring(ranks, hop_bytes, plan);
            plan.tail = tail;
        } else {
            self.nvlink_ring_flows(op, ranks, cost.bytes, cost.duration, plan);
        }
        true
    }

    /// A pass's expert all-to-alls: each of the task's `ranks` sends 1/ep
    /// of the bytes to every other rank of its expert-parallel group.
    fn all_to_all_flows(
        &self,
        task: TaskId,
        ranks: &[Rank],
        group_size: u32,
        nodes: u32,
    ) -> Option<FlowPlan> {
        let cost = self.costs[self.graph.work_of(task).index()];
        if group_size <= 1 || cost.bytes == 0 {
            return None;
        }
        let per_peer = cost.bytes.div_ceil(group_size as u64);
        let mut flows = Vec::new();
        for &rank in ranks {
            let c = self.placement.coordinates(rank);
            for peer in self
                .placement
                .expert_group(c.stage, c.data_index, c.tensor_index)
            {
                if peer != rank {
                    flows.push((FlowEnds::Gpus(rank.0, peer.0), per_peer));
                }
            }
        }
        let nodes = nodes.max(1);
        let group = GroupShape::new(nodes, group_size.div_ceil(nodes));
        let alone = SimDuration::from_seconds_ceil(
            all_to_all_terms(cost.bytes, &group, &self.rates).transfer_seconds,
        );
        Some(FlowPlan {
            flows,
            tail: SimDuration(cost.duration.0.saturating_sub(alone.0)),
            alone: false,
        })
    }

    fn ring_flows(
        &self,
        op: CollectiveOp,
        ranks: &[Rank],
        bytes: u64,
        duration: SimDuration,
    ) -> FlowPlan {
        let gpus_per_node = self.placement.gpus_per_node;
        // Ranks grouped by node, in rank order.
        let mut nodes: Vec<Vec<u32>> = Vec::new();
        for &rank in ranks {
            match nodes.last_mut() {
                Some(node) if node[0] / gpus_per_node == rank.0 / gpus_per_node => {
                    node.push(rank.0)
                }
                _ => nodes.push(vec![rank.0]),
            }
        }
        let ranks_per_node = nodes.iter().map(Vec::len).min().unwrap_or(1) as u32;
        let group = GroupShape::new(nodes.len() as u32, ranks_per_node);
        let rails =
            (self.rates.rails_per_node(ranks_per_node).floor() as u32).clamp(1, ranks_per_node);
        let bus_factor = op.bus_factor(group.ranks);
        let hop_bytes = (bus_factor * bytes as f64 / rails as f64).ceil() as u64;
        let mut flows = Vec::with_capacity(rails as usize * nodes.len());
        for rail in 0..rails as usize {
            for (index, node) in nodes.iter().enumerate() {
                let next = &nodes[(index + 1) % nodes.len()];
                // Spread the rings' exits over the node's GPUs so each rail's
                // ring leaves through a different NIC when GPUs share NICs
                // (DGX-2: GPUs 2r and 2r+1 share NIC r).
                let exit = |members: &[u32]| members[rail * members.len() / rails as usize];
                let (from, to) = (exit(node), exit(next));
                flows.push((FlowEnds::Gpus(from, to), hop_bytes));
            }
        }
        // The hops stand for the Simple ring's transfer term (bus factor × bytes at
        // the group's rails); the rest of the closed-form time (NCCL's latency term,
        // the protocol's bandwidth loss, a tree's slower bandwidth) is the tail.
        let transfer = ring_terms(op, bytes, &group, &self.rates).transfer_seconds;
        let alone = SimDuration::from_seconds_ceil(transfer);
        FlowPlan {
            flows,
            tail: SimDuration(duration.0.saturating_sub(alone.0)),
            alone: false,
        }
    }
}

impl FlowPlanner for FabricFlowPlanner<'_> {
    fn plan(&self, task: TaskId) -> Option<FlowPlan> {
        let mut plan = FlowPlan::default();
        self.plan_into(task, &mut plan).then_some(plan)
    }

    fn plan_into(&self, task: TaskId, plan: &mut FlowPlan) -> bool {
        self.plan_on_ranks(
            task,
            self.graph.group_ranks(self.graph.group_of(task)),
            plan,
        )
    }
}

impl FabricFlowPlanner<'_> {
    /// [`FlowPlanner::plan_into`] of `task` run on `ranks` instead of its
    /// group's (its twin in another replica, `engine::replicated_flows`):
    /// the work, kind and stage are the task's, the flows' ends are
    /// `ranks`'.
    pub fn plan_on_ranks(&self, task: TaskId, ranks: &[Rank], plan: &mut FlowPlan) -> bool {
        plan.flows.clear();
        plan.tail = SimDuration::ZERO;
        plan.alone = false;
        // The work alone decides (one column read: most tasks are not flows).
        match *self.graph.work(self.graph.work_of(task)) {
            Work::PipelineTransfer {
                bytes,
                tensor_parallel,
                crosses_nodes: true,
                scatter_gather,
            } => {
                self.pipeline_flows(task, ranks, bytes, tensor_parallel, scatter_gather, plan);
                true
            }
            Work::PipelineTransfer {
                bytes,
                crosses_nodes: false,
                ..
            } => {
                self.nvlink_pipeline_flows(task, ranks, bytes, plan);
                true
            }
            Work::TensorAllReduce {
                pass: ComputePass::Backward,
                ..
            } if self.async_tensor_allreduce => false,
            Work::TensorAllReduce { .. } if self.tp_comm_overlap => false,
            Work::DataParallelAllReduce {
                spread, group_size, ..
            } => self.collective_flows(
                task,
                ranks,
                CollectiveOp::AllReduce,
                group_size,
                spread.nodes,
                plan,
            ),
            Work::TensorAllReduce {
                nodes, group_size, ..
            } => {
                let planned = self.collective_flows(
                    task,
                    ranks,
                    CollectiveOp::AllReduce,
                    group_size,
                    nodes,
                    plan,
                );
                plan.alone = planned && nodes == 1 && self.lone_tensor_rings;
                planned
            }
            // ZeRO-2 (the cost model charges both as an all-gather of the buffer).
            Work::DataParallelReduceScatter {
                spread, group_size, ..
            }
            | Work::DataParallelAllGather {
                spread, group_size, ..
            } => self.collective_flows(
                task,
                ranks,
                CollectiveOp::AllGather,
                group_size,
                spread.nodes,
                plan,
            ),
            Work::ExpertAllToAll {
                group_size, nodes, ..
            } => match self.all_to_all_flows(task, ranks, group_size, nodes) {
                Some(planned) => {
                    *plan = planned;
                    true
                }
                None => false,
            },
            Work::PcieTransfer {
                direction, bytes, ..
            } if bytes > 0 => {
                let gpu = ranks[0].0;
                let ends = match direction {
                    PcieDirection::DeviceToHost => FlowEnds::ToHost(gpu),
                    PcieDirection::HostToDevice => FlowEnds::FromHost(gpu),
                };
                plan.flows.push((ends, bytes));
                plan.tail = self.pcie_latency;
                true
            }
            _ => false,
        }
    }
}

/// A ring inside one node of `ranks` ranks: each hop's bytes (the
/// operation's bus factor of the work's) and the tail (the closed-form time
/// minus that hop alone at the NVSwitch's bus rate).
fn nvlink_ring_hop(
    op: CollectiveOp,
    ranks: usize,
    bytes: u64,
    duration: SimDuration,
    nvlink_bus_bytes_per_s: f64,
) -> (u64, SimDuration) {
    let bus_factor = op.bus_factor(ranks as u32);
    let hop_bytes = (bus_factor * bytes as f64).ceil() as u64;
    let alone = SimDuration::from_seconds_ceil(hop_bytes as f64 / nvlink_bus_bytes_per_s);
    (hop_bytes, SimDuration(duration.0.saturating_sub(alone.0)))
}

/// GPU i sends `hop_bytes` to GPU i+1, in rank order, around the ring.
fn push_ring(ranks: &[Rank], hop_bytes: u64, plan: &mut FlowPlan) {
    plan.flows.extend((0..ranks.len()).map(|i| {
        let next = ranks[(i + 1) % ranks.len()].0;
        (FlowEnds::Gpus(ranks[i].0, next), hop_bytes)
    }));
}
