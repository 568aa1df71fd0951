//! Slow network links (issue 35, item 4): the NIC a rank sends through
//! delivers 1/`factor` of its bandwidth in each direction — a port that
//! trained at a lower speed, or one losing packets to a bad cable. Its
//! latency is unchanged.
//!
//! Every rank whose traffic goes through that NIC (the GPUs that share it,
//! [`nic_of`]) is affected, and so is every communication that has one of
//! them as a member: NCCL cuts a collective's bytes evenly over its rings
//! and channels and each ring step waits for its slowest hop, so one slow
//! NIC sets the bandwidth of the whole collective's network tier (and of a
//! pipeline transfer it sends or receives). In closed form such a task is
//! costed with the NIC's rate divided by the largest factor among its
//! members' NICs, NCCL's tuner choosing for that rate as it does for a port
//! that reports a lower speed; tasks inside a node do not use the NIC rate
//! and keep their time. Under `--contention` the fabric's two links of that
//! NIC carry 1/factor of their capacity instead, and the flows through them
//! slow as they share it; a flow plan keeps the rest of a collective's
//! closed-form time (NCCL's latency, the protocol's bandwidth loss) as a
//! fixed tail, so there only the Simple transfer through the NIC takes the
//! factor (for a 2.3 MB all-reduce at factor 4 on two DGX A100 nodes the
//! flows give 321.8 µs, the closed form 340.4 µs:
//! `tests/tests/it/slow_links.rs`).
//!
//! A slow NIC makes the replicas differ, so a scenario with one runs in full
//! expansion.

use std::fmt;

use scenario::Scenario;
use taskgraph::ids::TaskId;
use taskgraph::task_graph::TaskGraph;
use timeline::time::SimDuration;

use crate::cost::{cost_works, ClosedFormNetwork, WorkCost};
use crate::straggler::{StragglerError, MAX_FACTOR};

/// One slow NIC, named by a rank that sends through it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SlowNic {
    pub rank: u32,
    /// The NIC's nominal bandwidth ÷ what it delivers (≥ 1).
    pub factor: f64,
}

/// A checked slow NIC: its global index among the job's NICs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ResolvedSlowNic {
    /// The rank it was named by.
    pub rank: u32,
    /// Its node.
    pub node: u32,
    /// Its index among all NICs (node × NICs per node + its number in the node).
    pub nic: u32,
    pub factor: f64,
}

/// The NIC (global index) `rank` sends through: its node's NICs are shared
/// out over the node's GPUs in order (as the fabric wires them).
pub fn nic_of(rank: u32, gpus_per_node: u32, nics_per_node: u32) -> u32 {
    let node = rank / gpus_per_node;
    let local = rank % gpus_per_node;
    node * nics_per_node + local * nics_per_node / gpus_per_node
}

/// Checks `given` against a layout of `gpus` ranks on nodes of
/// `gpus_per_node` GPUs and `nics_per_node` NICs: each rank in range, each
/// factor finite and in [1, 100], each NIC named once. Sorted by NIC.
pub fn resolve(
    given: &[SlowNic],
    gpus: u32,
    gpus_per_node: u32,
    nics_per_node: u32,
) -> Result<Vec<ResolvedSlowNic>, StragglerError> {
    if !given.is_empty() && nics_per_node == 0 {
        return Err(StragglerError::NoNics);
    }
    let mut nics = Vec::with_capacity(given.len());
    for slow in given {
        if slow.rank >= gpus {
            return Err(StragglerError::NicRankOutOfRange {
                rank: slow.rank,
                gpus,
            });
        }
        if !(slow.factor.is_finite() && (1.0..=MAX_FACTOR).contains(&slow.factor)) {
            return Err(StragglerError::NicFactor {
                rank: slow.rank,
                factor: slow.factor,
            });
        }
        nics.push(ResolvedSlowNic {
            rank: slow.rank,
            node: slow.rank / gpus_per_node,
            nic: nic_of(slow.rank, gpus_per_node, nics_per_node),
            factor: slow.factor,
        });
    }
    nics.sort_by_key(|n| n.nic);
    for pair in nics.windows(2) {
        if pair[0].rank == pair[1].rank {
            return Err(StragglerError::NicGivenTwice { rank: pair[0].rank });
        }
        if pair[0].nic == pair[1].nic {
            return Err(StragglerError::NicRepeated {
                first: pair[0].rank.min(pair[1].rank),
                second: pair[0].rank.max(pair[1].rank),
                nic: pair[0].nic,
            });
        }
    }
    Ok(nics)
}

/// Closed-form costs of every work with slow NICs: one table per distinct
/// factor, and for each of the graph's groups the table its tasks take.
#[derive(Debug, Clone)]
pub struct SlowNicCosts {
    /// Per group: the index into `tables`, or `None` where no member's NIC is slow.
    group_table: Vec<Option<usize>>,
    tables: Vec<Vec<WorkCost>>,
}

impl SlowNicCosts {
    /// The costs of `graph`'s works under each factor of `nics`.
    pub fn new(scenario: &Scenario, graph: &TaskGraph, nics: &[ResolvedSlowNic]) -> SlowNicCosts {
        let node = &scenario.topology.node;
        let nics_per_node = scenario.topology.fabric.nics_per_node;
        let factor_of_nic = |nic: u32| {
            nics.iter()
                .find(|slow| slow.nic == nic)
                .map(|slow| slow.factor)
        };
        let mut factors: Vec<f64> = Vec::new();
        let group_factor: Vec<Option<f64>> = graph
            .groups()
            .iter()
            .map(|ranks| {
                ranks
                    .iter()
                    .filter_map(|r| factor_of_nic(nic_of(r.0, node.gpus_per_node, nics_per_node)))
                    .max_by(f64::total_cmp)
            })
            .collect();
        for factor in group_factor.iter().flatten() {
            if !factors.contains(factor) {
                factors.push(*factor);
            }
        }
        factors.sort_by(f64::total_cmp);
        let network = ClosedFormNetwork::for_scenario(scenario);
        let tables = factors
            .iter()
            .map(|&factor| cost_works(scenario, graph.works(), &network.with_nic_slowed(factor)))
            .collect();
        let group_table = group_factor
            .iter()
            .map(|factor| factor.map(|f| factors.iter().position(|&g| g == f).expect("listed")))
            .collect();
        SlowNicCosts {
            group_table,
            tables,
        }
    }

    /// Task `id`'s closed-form duration: its slow table's where a member's
    /// NIC is slow, else `nominal`.
    #[inline]
    pub fn duration(&self, graph: &TaskGraph, id: TaskId, nominal: SimDuration) -> SimDuration {
        match self.group_table[graph.group_of(id).0 as usize] {
            Some(table) => self.tables[table][graph.work_of(id).index()].duration,
            None => nominal,
        }
    }
}

impl fmt::Display for ResolvedSlowNic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NIC {} (node {}, rank {}'s) at 1/{} of its bandwidth",
            self.nic, self.node, self.rank, self.factor
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow(rank: u32, factor: f64) -> SlowNic {
        SlowNic { rank, factor }
    }

    #[test]
    fn a_rank_names_the_nic_it_sends_through() {
        // 8 GPUs and 8 NICs a node: rank 11 is node 1's NIC 3, global 11.
        assert_eq!(nic_of(11, 8, 8), 11);
        // 16 GPUs sharing 8 NICs (DGX-2): GPUs 2r and 2r+1 share NIC r.
        assert_eq!(nic_of(5, 16, 8), 2);
        assert_eq!(nic_of(4, 16, 8), 2);
        assert_eq!(nic_of(21, 16, 8), 10);
    }

    #[test]
    fn slow_nics_are_checked() {
        let nics = resolve(&[slow(9, 2.0), slow(2, 1.5)], 16, 8, 8).unwrap();
        assert_eq!(nics.iter().map(|n| n.nic).collect::<Vec<_>>(), [2, 9]);
        assert_eq!(nics[1].node, 1);
        assert_eq!(
            resolve(&[slow(16, 2.0)], 16, 8, 8),
            Err(StragglerError::NicRankOutOfRange { rank: 16, gpus: 16 })
        );
        for factor in [0.9, f64::NAN, 101.0] {
            assert!(resolve(&[slow(1, factor)], 16, 8, 8).is_err());
        }
        // Ranks 4 and 5 share NIC 2 on a DGX-2.
        assert_eq!(
            resolve(&[slow(5, 2.0), slow(4, 3.0)], 16, 16, 8),
            Err(StragglerError::NicRepeated {
                first: 4,
                second: 5,
                nic: 2
            })
        );
        assert_eq!(
            resolve(&[slow(0, 2.0)], 8, 8, 0),
            Err(StragglerError::NoNics)
        );
    }
}
