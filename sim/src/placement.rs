//! Placement of ranks on GPUs, in Megatron-LM's order: tensor-parallel ranks
//! innermost (consecutive GPUs of a node), then context-parallel, then
//! data-parallel, then pipeline (Megatron-Core `parallel_state.py`,
//! order "tp-cp-ep-dp-pp"): `rank = stage·(t·cp·d) + (data·cp + context)·t +
//! tensor_index`, and rank r sits on node `r / gpus_per_node`, GPU
//! `r % gpus_per_node`. The grid's `data_index` is the replica index
//! `data·cp + context` (0..d·cp), since the d·cp ranks of a stage and tensor
//! index hold the same weights (Megatron's dp-cp group); without context
//! parallelism it is the data-parallel index.

use scenario::{Layout, Scenario};
use taskgraph::ids::Rank;
pub use taskgraph::representative::Representative;
use taskgraph::task_graph::NodeSpread;

/// Coordinates of one rank in the (pipeline, data, tensor) grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Coordinates {
    pub stage: u32,
    pub data_index: u32,
    pub tensor_index: u32,
}

/// The mapping between ranks, grid coordinates and nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub layout: Layout,
    pub gpus_per_node: u32,
}

impl Placement {
    pub fn new(layout: Layout, gpus_per_node: u32) -> Placement {
        Placement {
            layout,
            gpus_per_node,
        }
    }

    /// The placement of `scenario`'s layout on its topology's nodes.
    pub fn of(scenario: &Scenario) -> Placement {
        Placement::new(scenario.layout, scenario.topology.node.gpus_per_node)
    }

    pub fn rank(&self, coordinates: Coordinates) -> Rank {
        let t = self.layout.tensor_parallel.get();
        let d = self.layout.replicas();
        Rank(coordinates.stage * t * d + coordinates.data_index * t + coordinates.tensor_index)
    }

    pub fn coordinates(&self, rank: Rank) -> Coordinates {
        let t = self.layout.tensor_parallel.get();
        let d = self.layout.replicas();
        Coordinates {
            stage: rank.0 / (t * d),
            data_index: (rank.0 / t) % d,
            tensor_index: rank.0 % t,
        }
    }

    pub fn node(&self, rank: Rank) -> u32 {
        rank.0 / self.gpus_per_node
    }

    /// The tensor-parallel group of (stage, data_index), in tensor order.
    pub fn tensor_group(&self, stage: u32, data_index: u32) -> Vec<Rank> {
        (0..self.layout.tensor_parallel.get())
            .map(|tensor_index| {
                self.rank(Coordinates {
                    stage,
                    data_index,
                    tensor_index,
                })
            })
            .collect()
    }

    /// The context-parallel index of a replica index (0 without cp).
    pub fn context_index(&self, data_index: u32) -> u32 {
        data_index % self.layout.context_parallel.get()
    }

    /// The context-parallel ring of (stage, replica index, tensor index), in
    /// ring order: the cp ranks that share the replica's data-parallel index.
    pub fn context_group(&self, stage: u32, data_index: u32, tensor_index: u32) -> Vec<Rank> {
        let cp = self.layout.context_parallel.get();
        let first = data_index - data_index % cp;
        (first..first + cp)
            .map(|data_index| {
                self.rank(Coordinates {
                    stage,
                    data_index,
                    tensor_index,
                })
            })
            .collect()
    }

    /// The gradient-reduction group of (stage, tensor_index), in replica
    /// order: the d data-parallel ranks, or the d·cp ranks of Megatron's
    /// dp-cp group under context parallelism.
    pub fn data_group(&self, stage: u32, tensor_index: u32) -> Vec<Rank> {
        (0..self.layout.replicas())
            .map(|data_index| {
                self.rank(Coordinates {
                    stage,
                    data_index,
                    tensor_index,
                })
            })
            .collect()
    }

    /// The expert-parallel group of the rank at (stage, data_index,
    /// tensor_index). Megatron-Core carves the expert groups out of the same
    /// ranks as the dense ones (`megatron/core/parallel_state.py`, the
    /// expert `RankGenerator` "tp-ep-dp-pp" with tp = etp, cp folded into
    /// dp): the stage's expert grid is its t·cp·d ranks in Megatron's order
    /// (tensor index innermost, then the dp-cp replica), etp innermost, then
    /// ep, then the expert-data index. So an expert-parallel group is ep
    /// ranks etp apart within a block of ep·etp consecutive grid positions
    /// (ep consecutive ranks at etp = 1, ep consecutive members of the dp-cp
    /// group at t = etp = 1: [`scenario::experts`]).
    pub fn expert_group(&self, stage: u32, data_index: u32, tensor_index: u32) -> Vec<Rank> {
        let (ep, etp) = self.expert_degrees();
        let index = self.expert_grid_index(data_index, tensor_index);
        let first = index / (ep * etp) * (ep * etp) + index % etp;
        (0..ep)
            .map(|j| self.expert_grid_rank(stage, first + j * etp))
            .collect()
    }

    /// The expert tensor-parallel group of the rank at (stage, data_index,
    /// tensor_index): etp consecutive positions of the stage's expert grid
    /// (Megatron-Core's `get_ranks('tp')` of the expert generator), over
    /// which its experts' weights are split and the dispatched tokens
    /// gathered and reduce-scattered.
    pub fn expert_tensor_group(&self, stage: u32, data_index: u32, tensor_index: u32) -> Vec<Rank> {
        let (_, etp) = self.expert_degrees();
        let first = self.expert_grid_index(data_index, tensor_index) / etp * etp;
        (first..first + etp)
            .map(|index| self.expert_grid_rank(stage, index))
            .collect()
    }

    /// The expert-data-parallel group holding the same expert shards as the
    /// rank at (stage, data_index, tensor_index): every (ep·etp)-th rank of
    /// the stage's expert grid (every ep-th member of its dp-cp group at
    /// t = etp = 1), t·cp·d/(ep·etp) ranks.
    pub fn expert_data_group(&self, stage: u32, data_index: u32, tensor_index: u32) -> Vec<Rank> {
        let (ep, etp) = self.expert_degrees();
        let size = self.layout.tensor_parallel.get() * self.layout.replicas();
        (self.expert_grid_index(data_index, tensor_index) % (ep * etp)..size)
            .step_by((ep * etp) as usize)
            .map(|index| self.expert_grid_rank(stage, index))
            .collect()
    }

    /// (ep, etp), each at least 1.
    fn expert_degrees(&self) -> (u32, u32) {
        (
            self.layout.expert_parallel.get(),
            self.layout.expert_tensor_parallel.get(),
        )
    }

    /// A rank's position in its stage's expert grid: replica · t + tensor index.
    fn expert_grid_index(&self, data_index: u32, tensor_index: u32) -> u32 {
        data_index * self.layout.tensor_parallel.get() + tensor_index
    }

    /// The rank at position `index` of a stage's expert grid.
    fn expert_grid_rank(&self, stage: u32, index: u32) -> Rank {
        let t = self.layout.tensor_parallel.get();
        self.rank(Coordinates {
            stage,
            data_index: index / t,
            tensor_index: index % t,
        })
    }

    /// Distinct nodes a set of ranks spans.
    pub fn nodes_spanned(&self, ranks: &[Rank]) -> u32 {
        self.spread(ranks).nodes
    }

    /// How a set of ranks falls on nodes: the nodes it spans and the fewest
    /// of its (distinct) ranks on one of them.
    pub fn spread(&self, ranks: &[Rank]) -> NodeSpread {
        let mut nodes: Vec<(u32, Rank)> = ranks.iter().map(|&r| (self.node(r), r)).collect();
        nodes.sort_unstable();
        nodes.dedup();
        let mut per_node: Vec<u32> = Vec::new();
        let mut last = None;
        for (node, _) in nodes {
            if last == Some(node) {
                *per_node.last_mut().expect("a node was pushed") += 1;
            } else {
                per_node.push(1);
                last = Some(node);
            }
        }
        NodeSpread {
            nodes: per_node.len() as u32,
            fewest_ranks_per_node: per_node.iter().copied().min().unwrap_or(0),
        }
    }

    /// A human-readable table of the placement (for `--explain`), truncated after `max_rows` ranks.
    pub fn explain(&self, max_rows: usize) -> String {
        let total = self.layout.gpus();
        let cp = self.layout.context_parallel.get();
        let mut out = if cp > 1 {
            String::from("rank  node/gpu  stage  data  context  tensor\n")
        } else {
            String::from("rank  node/gpu  stage  data  tensor\n")
        };
        for rank in (0..total).take(max_rows) {
            let c = self.coordinates(Rank(rank));
            if cp > 1 {
                out.push_str(&format!(
                    "{rank:>4}  {:>4}/{:<3}  {:>5}  {:>4}  {:>7}  {:>6}\n",
                    rank / self.gpus_per_node,
                    rank % self.gpus_per_node,
                    c.stage,
                    c.data_index / cp,
                    c.data_index % cp,
                    c.tensor_index
                ));
            } else {
                out.push_str(&format!(
                    "{rank:>4}  {:>4}/{:<3}  {:>5}  {:>4}  {:>6}\n",
                    rank / self.gpus_per_node,
                    rank % self.gpus_per_node,
                    c.stage,
                    c.data_index,
                    c.tensor_index
                ));
            }
        }
        if total as usize > max_rows {
            out.push_str(&format!("… {} more ranks\n", total as usize - max_rows));
        }
        out
    }
}

/// The representative replica of `scenario`'s layout ([`Representative`]).
pub fn representative(scenario: &Scenario) -> Representative {
    Representative {
        tensor_parallel: scenario.layout.tensor_parallel.get(),
        replicas: scenario.layout.replicas(),
        lowered: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(t: u32, p: u32, d: u32) -> Layout {
        Layout {
            tensor_parallel: crate::degree(t),
            pipeline_parallel: crate::degree(p),
            data_parallel: crate::degree(d),
            context_parallel: crate::degree(1),
            expert_parallel: crate::degree(1),
            expert_tensor_parallel: crate::degree(1),
            pipeline_split: Default::default(),
            stage_map: Default::default(),
            chunks: crate::degree(1),
            microbatch_group_size: None,
            microbatch_size: crate::degree(1),
            global_batch: crate::degree(d),
            microbatches: crate::degree(1),
        }
    }

    #[test]
    fn megatron_order_puts_tensor_ranks_in_one_node_then_data_then_pipeline() {
        let placement = Placement::new(layout(8, 64, 6), 8);
        assert_eq!(
            placement.tensor_group(0, 0),
            (0..8).map(Rank).collect::<Vec<_>>()
        );
        assert_eq!(placement.nodes_spanned(&placement.tensor_group(3, 2)), 1);
        assert_eq!(
            placement.data_group(0, 1),
            vec![Rank(1), Rank(9), Rank(17), Rank(25), Rank(33), Rank(41)]
        );
        assert_eq!(
            placement.rank(Coordinates {
                stage: 1,
                data_index: 0,
                tensor_index: 0
            }),
            Rank(48)
        );
        for rank in 0..3072 {
            assert_eq!(
                placement.rank(placement.coordinates(Rank(rank))),
                Rank(rank)
            );
        }
    }

    #[test]
    fn expert_groups_are_consecutive_replicas_and_expert_data_groups_every_ep_th() {
        // t = 1, p = 1, d = 16 on 8-GPU nodes, ep = 8: two expert groups of
        // one node each; expert-data groups pair GPU r with GPU r + 8.
        let placement = Placement::new(
            Layout {
                expert_parallel: crate::degree(8),
                ..layout(1, 1, 16)
            },
            8,
        );
        assert_eq!(
            placement.expert_group(0, 11, 0),
            (8..16).map(Rank).collect::<Vec<_>>()
        );
        assert_eq!(
            placement.expert_data_group(0, 3, 0),
            vec![Rank(3), Rank(11)]
        );
        assert_eq!(placement.nodes_spanned(&placement.expert_group(0, 0, 0)), 1);
    }

    #[test]
    fn with_tensor_parallelism_expert_groups_take_consecutive_ranks_of_the_stage() {
        // t = 2, p = 2, d = 16 on 8-GPU nodes, ep = 8 (etp 1): the stage's
        // 32 ranks in order, 8 at a time (4 replicas × 2 tensor ranks);
        // expert-data groups every 8th rank: 32 / 8 = 4 ranks.
        let placement = Placement::new(
            Layout {
                expert_parallel: crate::degree(8),
                ..layout(2, 2, 16)
            },
            8,
        );
        assert_eq!(placement.layout.expert_replicas(), 4);
        // Replica 5, tensor rank 1 is rank 11 of stage 0: group 8..16.
        assert_eq!(
            placement.expert_group(0, 5, 1),
            (8..16).map(Rank).collect::<Vec<_>>()
        );
        assert_eq!(
            placement.expert_data_group(0, 5, 1),
            vec![Rank(3), Rank(11), Rank(19), Rank(27)]
        );
        // Stage 1 is ranks 32..64.
        assert_eq!(
            placement.expert_group(1, 0, 0),
            (32..40).map(Rank).collect::<Vec<_>>()
        );
    }

    #[test]
    fn context_ranks_sit_between_tensor_and_data_ranks_as_megatron_core_orders_them() {
        // t=2, cp=2, p=2, d=2 on 8-GPU nodes: tp-cp-dp-pp.
        let placement = Placement::new(
            Layout {
                context_parallel: crate::degree(2),
                pipeline_split: Default::default(),
                ..layout(2, 2, 2)
            },
            8,
        );
        assert_eq!(placement.layout.gpus(), 16);
        assert_eq!(placement.context_group(0, 0, 1), vec![Rank(1), Rank(3)]);
        assert_eq!(placement.context_group(0, 3, 0), vec![Rank(4), Rank(6)]);
        // Gradients are reduced over the dp-cp group: d·cp = 4 ranks.
        assert_eq!(
            placement.data_group(1, 1),
            vec![Rank(9), Rank(11), Rank(13), Rank(15)]
        );
        let c = placement.coordinates(Rank(13));
        assert_eq!((c.stage, c.data_index, c.tensor_index), (1, 2, 1));
        assert_eq!(
            (c.data_index / 2, placement.context_index(c.data_index)),
            (1, 0)
        );
        assert!(placement
            .explain(3)
            .starts_with("rank  node/gpu  stage  data  context  tensor\n"));
        for rank in 0..16 {
            assert_eq!(
                placement.rank(placement.coordinates(Rank(rank))),
                Rank(rank)
            );
        }
    }
}
