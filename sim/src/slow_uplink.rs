//! Slow switch uplinks (issue 35, item 4): the cables from one leaf switch
//! up to the next level of the fat tree deliver 1/`factor` of their
//! bandwidth in each direction — optics that trained at a lower speed, a
//! cable losing packets, uplinks of a switch taken down for repair. The
//! leaf is named by a rank whose NIC it serves.
//!
//! **Which leaf.** Under the rail-optimized placement the fabric wires
//! ([`topologies::fat_tree::fat_tree_of`]), NIC r of node n sits on leaf
//! r · L + ⌊n / a⌋ of the tree's a-port-down leaves, L leaves per rail: a
//! leaf serves one rail of a block of a consecutive nodes.
//!
//! **Closed form.** NCCL's rings and trees join nodes rail by rail (a GPU's
//! traffic to another node leaves through its own NIC and arrives at the
//! same rail), so a group's traffic stays inside its leaves while its nodes
//! sit in one block, and climbs through the leaf of every rail it uses
//! once its nodes span several. A group whose nodes span several blocks
//! and that has a member on the slow leaf's rail in its block is costed
//! with the NIC tier at 1/factor, as a slow NIC costs it
//! ([`crate::slow_link`]): each of the leaf's ports has one uplink's worth
//! of bandwidth, so a crossing flow gets the NIC's rate ÷ factor. Groups
//! inside one block, and groups on other rails, keep their time.
//!
//! **Not alike in closed form and in flows:** traffic between GPUs of
//! different local indices on different nodes (a pipeline send whose
//! tensor groups do not line up with the nodes' rails, e.g. t = 2 on
//! 8-GPU nodes with 3 replicas) leaves through one rail and arrives on
//! another, so in the fabric it climbs above the leaf even inside one
//! block; the closed form, which takes every hop as rail to rail, does not
//! slow it there.
//!
//! **Under `--contention`** the leaf's a up and a down cables carry
//! 1/factor of their capacity, and ECMP spreads the crossing flows over
//! them.
//!
//! **Full expansion.** Whether a group crosses the leaf depends on where
//! all its members sit, which renumbering replicas
//! ([`crate::symmetry_exceptions`]) does not keep: a run with a slow uplink
//! simulates every replica.

use std::fmt;

use scenario::Scenario;
use taskgraph::ids::Rank;

use crate::slow_link::nic_of;
use crate::straggler::{check_slow, SlowPart, StragglerError};

/// The uplinks of the leaf switch above rank `rank`'s NIC, at 1/`factor`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SlowUplink {
    pub rank: u32,
    /// The uplinks' nominal bandwidth ÷ what they deliver (≥ 1).
    pub factor: f64,
}

/// A checked slow leaf: which rail and block of nodes it serves.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ResolvedSlowUplink {
    /// The rank it was named by.
    pub rank: u32,
    /// The leaf's index in the fat tree (rail × leaves per rail + block).
    pub leaf: u64,
    /// The NIC rail it serves (the NIC's number within its node).
    pub rail: u32,
    /// The nodes it serves: `first_node..first_node + nodes`.
    pub first_node: u32,
    pub nodes: u32,
    pub factor: f64,
    /// Where every rank's NIC sits.
    #[serde(skip)]
    geometry: LeafGeometry,
}

/// Where ranks' NICs sit: GPUs and NICs per node, nodes per leaf.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LeafGeometry {
    gpus_per_node: u32,
    nics_per_node: u32,
    nodes_per_leaf: u32,
    leaves_per_rail: u64,
}

impl LeafGeometry {
    /// The geometry of `scenario`'s fat tree, or why it has no uplinks.
    fn of(scenario: &Scenario) -> Result<LeafGeometry, StragglerError> {
        let topology = &scenario.topology;
        let tree = topologies::fat_tree::fat_tree_of(topology)
            .map_err(|_| StragglerError::NoUplinks {
                why: "its fat tree cannot hold its nodes".into(),
            })?
            .ok_or_else(|| StragglerError::NoUplinks {
                why: format!(
                    "{} node(s) with {} NIC(s) each use no switch",
                    topology.nodes, topology.fabric.nics_per_node
                ),
            })?;
        let (fat_tree, leaves_per_rail) = tree;
        if fat_tree.cable_levels() == 0 {
            return Err(StragglerError::NoUplinks {
                why: format!(
                    "its {} nodes fit under one leaf per rail, which has no uplinks in use",
                    topology.nodes
                ),
            });
        }
        Ok(LeafGeometry {
            gpus_per_node: topology.node.gpus_per_node,
            nics_per_node: topology.fabric.nics_per_node,
            nodes_per_leaf: u32::try_from(fat_tree.arity).unwrap_or(u32::MAX),
            leaves_per_rail,
        })
    }

    /// (rail, block of nodes) of the leaf `rank`'s NIC sits on.
    fn rail_and_block(&self, rank: u32) -> (u32, u32) {
        let rail = nic_of(rank, self.gpus_per_node, self.nics_per_node) % self.nics_per_node;
        (rail, rank / self.gpus_per_node / self.nodes_per_leaf)
    }
}

/// Checks `given` against `scenario`: each rank in range, each factor in
/// [1, 100], each leaf named once, a fat tree with uplinks. Sorted by leaf.
pub fn resolve_uplinks(
    given: &[SlowUplink],
    scenario: &Scenario,
) -> Result<Vec<ResolvedSlowUplink>, StragglerError> {
    if given.is_empty() {
        return Ok(Vec::new());
    }
    let geometry = LeafGeometry::of(scenario)?;
    let mut leaves = Vec::with_capacity(given.len());
    for slow in given {
        check_slow(
            SlowPart::Uplink,
            slow.rank,
            slow.factor,
            scenario.layout.gpus(),
        )?;
        let (rail, block) = geometry.rail_and_block(slow.rank);
        let first_node = block * geometry.nodes_per_leaf;
        leaves.push(ResolvedSlowUplink {
            rank: slow.rank,
            leaf: u64::from(rail) * geometry.leaves_per_rail + u64::from(block),
            rail,
            first_node,
            nodes: geometry
                .nodes_per_leaf
                .min(scenario.topology.nodes - first_node),
            factor: slow.factor,
            geometry,
        });
    }
    leaves.sort_by_key(|leaf| leaf.leaf);
    if let Some(pair) = leaves.windows(2).find(|pair| pair[0].leaf == pair[1].leaf) {
        return Err(StragglerError::LeafRepeated {
            first: pair[0].rank.min(pair[1].rank),
            second: pair[0].rank.max(pair[1].rank),
            leaf: pair[0].leaf,
        });
    }
    Ok(leaves)
}

/// The largest factor of `uplinks` whose leaf a group of `ranks` climbs
/// through (1 where none): its nodes span several blocks and a member sits
/// on the leaf's rail in its block.
pub fn uplink_factor(uplinks: &[ResolvedSlowUplink], ranks: &[Rank]) -> f64 {
    let (Some(first), Some(&first_rank)) = (uplinks.first(), ranks.first()) else {
        return 1.0;
    };
    let geometry = first.geometry;
    let first_block = geometry.rail_and_block(first_rank.0).1;
    if ranks
        .iter()
        .all(|rank| geometry.rail_and_block(rank.0).1 == first_block)
    {
        return 1.0;
    }
    uplinks
        .iter()
        .filter(|leaf| ranks.iter().any(|rank| under_leaf(leaf, rank.0)))
        .map(|leaf| leaf.factor)
        .fold(1.0, f64::max)
}

/// Whether `rank`'s NIC climbs through `leaf` (its rail, in its block of nodes).
pub(crate) fn under_leaf(leaf: &ResolvedSlowUplink, rank: u32) -> bool {
    let geometry = leaf.geometry;
    geometry.rail_and_block(rank) == (leaf.rail, leaf.first_node / geometry.nodes_per_leaf)
}

impl fmt::Display for ResolvedSlowUplink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "uplinks of leaf {} (rail {}, nodes {}–{}, rank {}'s) at 1/{} of their bandwidth",
            self.leaf,
            self.rail,
            self.first_node,
            self.first_node + self.nodes - 1,
            self.rank,
            self.factor
        )
    }
}
