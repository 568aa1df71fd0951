//! Geometry of the fat tree: a k-ary n-tree (Petrini & Vanneschi) of radix-k
//! switches, arity a = k/2 (a ports down, a up), n levels (0 = leaf), holding up
//! to aⁿ endpoints (NIC ports). Numbering, routing and whether a topology's
//! rail-optimized nodes fit ([`fat_tree_of`]); no capacities.
//!
//! - Endpoint e sits on leaf e / a, port e % a.
//! - A level-ℓ switch is (s, r): s = e / a^(ℓ+1) is the subtree of a^(ℓ+1)
//!   endpoints it serves, r ∈ [0, a^ℓ) its replica; its index in the level is
//!   w = s·a^ℓ + r ∈ [0, a^(n−1)).
//! - Up port j of (ℓ, s, r) is cable w·a + j to (ℓ+1, s / a, r + j·a^ℓ); there are
//!   aⁿ cables between two adjacent levels. Top-level switches use only a ports.
//!
//! Routing: up to the lowest level h whose subtree holds both endpoints, choosing
//! each up port by ECMP (a fixed hash, below); down is then determined (the
//! replica keeps its low digits). Every route between two endpoints of one subtree
//! at level h passes 2h + 1 switches.
//!
//! ECMP: up port at level ℓ = SplitMix64(src·2³² + dst + (ℓ+1)·φ) mod a, with src and
//! dst the GPUs' global indices and φ = 0x9E3779B97F4A7C15: deterministic, the same
//! for every flow between the same pair of GPUs, spread evenly over ports.

use crate::spec::TopologySpec;

/// A direction on one fat-tree cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TreeHop {
    /// Lower level of the cable (0: between leaves and level-1 switches).
    pub level: u32,
    /// Cable index within that level, in [0, aⁿ).
    pub cable: u64,
    /// True when going towards the root.
    pub up: bool,
}

/// A k-ary n-tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FatTree {
    /// a = radix / 2.
    pub arity: u64,
    /// n switch levels.
    pub levels: u32,
}

/// SplitMix64 finalizer: a fixed, well-mixed 64-bit hash.
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl FatTree {
    pub fn new(radix: u32, levels: u32) -> FatTree {
        FatTree {
            arity: (radix / 2).max(1) as u64,
            levels: levels.max(1),
        }
    }

    /// aⁿ: endpoints the tree can hold (saturating).
    pub fn max_endpoints(&self) -> u64 {
        self.arity.saturating_pow(self.levels)
    }

    /// The same tree cut to the levels that `endpoints` (numbered from 0)
    /// use: the lowest n′ ≤ n with aⁿ′ ≥ endpoints (at least 1). Every route
    /// between those endpoints turns at a level below n′, so routes, hop
    /// counts and cable indices are the full tree's; the switches above n′
    /// are never on a route and are not built.
    pub fn serving(&self, endpoints: u64) -> FatTree {
        let mut levels = 1;
        while levels < self.levels && self.arity.saturating_pow(levels) < endpoints {
            levels += 1;
        }
        FatTree {
            arity: self.arity,
            levels,
        }
    }

    /// Cables between level ℓ and ℓ + 1 that routes between `endpoints`
    /// (numbered from 0) can take: ⌈endpoints / a^(ℓ+1)⌉ · a^(ℓ+1), at most
    /// aⁿ. Their indices are below this count; a level-ℓ switch's up cables
    /// are numbered after the subtree of a^(ℓ+1) endpoints it serves.
    pub fn cables_used(&self, level: u32, endpoints: u64) -> u64 {
        let subtree = self.arity.saturating_pow(level + 1);
        endpoints
            .div_ceil(subtree)
            .saturating_mul(subtree)
            .min(self.max_endpoints())
    }

    /// Cable boundaries: levels − 1.
    pub fn cable_levels(&self) -> u32 {
        self.levels - 1
    }

    fn pow(&self, exponent: u32) -> u64 {
        self.arity.pow(exponent)
    }

    /// Lowest level whose subtree holds both endpoints (0 = same leaf).
    pub fn common_level(&self, src: u64, dst: u64) -> u32 {
        (0..self.levels)
            .find(|&level| src / self.pow(level + 1) == dst / self.pow(level + 1))
            .unwrap_or(self.levels - 1)
    }

    /// Switch-to-switch hops from leaf of `src` to leaf of `dst`, with ECMP by `ecmp_key`.
    pub fn route(&self, src: u64, dst: u64, ecmp_key: u64) -> Vec<TreeHop> {
        let top = self.common_level(src, dst);
        let mut hops = Vec::with_capacity(2 * top as usize);
        let mut replica = 0u64;
        for level in 0..top {
            let subtree = src / self.pow(level + 1);
            let switch = subtree * self.pow(level) + replica;
            let salt = u64::from(level + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let port = splitmix64(ecmp_key.wrapping_add(salt)) % self.arity;
            hops.push(TreeHop {
                level,
                cable: switch * self.arity + port,
                up: true,
            });
            replica += port * self.pow(level);
        }
        for level in (1..=top).rev() {
            let child_subtree = dst / self.pow(level);
            let child_replica = replica % self.pow(level - 1);
            let port = replica / self.pow(level - 1);
            let child = child_subtree * self.pow(level - 1) + child_replica;
            hops.push(TreeHop {
                level: level - 1,
                cable: child * self.arity + port,
                up: false,
            });
            replica = child_replica;
        }
        hops
    }
}

/// The fat tree holds fewer NIC ports than the rail-optimized placement needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("topology '{topology}': a {levels}-level fat tree of radix-{radix} switches holds {capacity} NIC ports; {needed} are needed ({nodes} nodes × {rails} rails, leaves of {per_leaf} nodes)")]
pub struct FatTreeTooSmall {
    pub topology: String,
    pub levels: u32,
    pub radix: u32,
    pub capacity: u64,
    pub needed: u64,
    pub nodes: u32,
    pub rails: u32,
    pub per_leaf: u64,
}

/// The fat tree of a multi-node topology, cut to the levels its NIC ports use
/// ([`FatTree::serving`]), and its leaves per NIC rail (None: one node, or no
/// NICs), or why the tree cannot hold the rail-optimized placement of its
/// nodes. Scenario validation calls this, so a simulation
/// never meets the error.
pub fn fat_tree_of(topology: &TopologySpec) -> Result<Option<(FatTree, u64)>, FatTreeTooSmall> {
    let nodes = topology.nodes;
    let nics_per_node = topology.fabric.nics_per_node;
    if nodes <= 1 || nics_per_node == 0 {
        return Ok(None);
    }
    let fat_tree = FatTree::new(
        topology.fabric.switch_radix,
        topology.fabric.fat_tree_levels,
    );
    let leaves_per_rail = (nodes as u64).div_ceil(fat_tree.arity);
    let needed = nics_per_node as u64 * leaves_per_rail * fat_tree.arity;
    if needed > fat_tree.max_endpoints() {
        return Err(FatTreeTooSmall {
            topology: topology.name.clone(),
            levels: fat_tree.levels,
            radix: topology.fabric.switch_radix,
            capacity: fat_tree.max_endpoints(),
            needed,
            nodes,
            rails: nics_per_node,
            per_leaf: fat_tree.arity,
        });
    }
    Ok(Some((fat_tree.serving(needed), leaves_per_rail)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preset_grown_to_2048_nodes_fits_its_grown_tree() {
        let big = TopologySpec::resolve("dgx-h100-ib:2048").unwrap();
        let (tree, leaves_per_rail) = fat_tree_of(&big).unwrap().unwrap();
        assert_eq!((tree.arity, tree.levels, leaves_per_rail), (32, 3, 64));
    }

    #[test]
    fn common_level_follows_subtrees() {
        let tree = FatTree::new(8, 3); // a = 4: leaves of 4, pods of 16, 64 endpoints
        assert_eq!(tree.max_endpoints(), 64);
        assert_eq!(tree.common_level(0, 3), 0);
        assert_eq!(tree.common_level(0, 4), 1);
        assert_eq!(tree.common_level(0, 15), 1);
        assert_eq!(tree.common_level(0, 16), 2);
    }

    #[test]
    fn routes_climb_to_the_common_level_and_come_back_down_symmetrically() {
        let tree = FatTree::new(8, 3);
        for (src, dst) in [(0u64, 1u64), (0, 5), (3, 60), (17, 47)] {
            for key in 0..20 {
                let hops = tree.route(src, dst, key);
                let top = tree.common_level(src, dst) as usize;
                assert_eq!(hops.len(), 2 * top);
                // Up cables leave src's switches; down cables reach dst's leaf.
                for (i, hop) in hops.iter().enumerate() {
                    assert_eq!(hop.up, i < top);
                    assert!(hop.cable < tree.max_endpoints());
                }
                if top > 0 {
                    // The first up cable leaves src's leaf; the last down cable enters dst's.
                    assert_eq!(hops[0].cable / tree.arity, src / tree.arity);
                    assert_eq!(hops.last().unwrap().cable / tree.arity, dst / tree.arity);
                    // Up and down meet at one top switch: the parent of the last up cable
                    // is the parent of the first down cable.
                    let parent = |hop: &TreeHop| {
                        let level = hop.level;
                        let child = hop.cable / tree.arity;
                        let port = hop.cable % tree.arity;
                        let pow = tree.arity.pow(level);
                        let (subtree, replica) = (child / pow, child % pow);
                        (subtree / tree.arity, replica + port * pow)
                    };
                    assert_eq!(parent(&hops[top - 1]), parent(&hops[top]));
                }
            }
        }
    }

    #[test]
    fn ecmp_spreads_over_up_ports() {
        let tree = FatTree::new(8, 2);
        let mut used = [0u32; 4];
        for key in 0..400 {
            let hops = tree.route(0, 15, splitmix64(key));
            used[(hops[0].cable % 4) as usize] += 1;
        }
        assert!(used.iter().all(|&count| count > 60), "{used:?}");
    }

    #[test]
    fn a_tree_cut_to_its_endpoints_routes_as_the_whole_tree() {
        let whole = FatTree::new(8, 6); // a = 4, 4096 endpoints
        let cut = whole.serving(40); // 40 endpoints need 3 levels (64)
        assert_eq!((cut.arity, cut.levels), (4, 3));
        for (src, dst) in [(0u64, 1u64), (0, 5), (3, 39), (17, 38)] {
            for key in 0..10 {
                let hops = cut.route(src, dst, key);
                assert_eq!(hops, whole.route(src, dst, key));
                for hop in &hops {
                    assert!(hop.cable < cut.cables_used(hop.level, 40));
                }
            }
        }
    }

    #[test]
    fn a_tree_of_forty_levels_is_cut_to_the_levels_its_ports_use() {
        let tree = FatTree::new(40, 40); // 20^40 overflows u64
        assert_eq!(tree.max_endpoints(), u64::MAX);
        let cut = tree.serving(16 * 20);
        assert_eq!(cut.levels, 2);
        assert_eq!(cut.cables_used(0, 16 * 20), 320);
    }
}
