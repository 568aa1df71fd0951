//! The cluster's links as a flat table of directed links with achieved
//! capacities, and deterministic routes between GPUs (and to/from hosts).
//!
//! Links, each direction its own [`LinkId`], in this order:
//!
//! | kind | one per | capacity (per direction) |
//! |---|---|---|
//! | `NvlinkUp/Down` | GPU (GPU ↔ NVSwitch port) | min(profile NVLink bus bw, topology NVLink bw) |
//! | `GpuPcieUp/Down` | GPU (GPU ↔ its PCIe switch; NIC and host traffic share it) | min(profile PCIe D2H/H2D, topology PCIe) |
//! | `HostUp/Down` | PCIe switch uplink to the CPU, shared by `pcie.gpus_per_host_link` GPUs | min(profile PCIe, topology PCIe) |
//! | `NicUp/Down` | NIC (NIC ↔ leaf switch) | min(profile NIC, topology NIC) |
//! | `TreeUp/Down` | fat-tree cable between switch levels | same as a NIC (HDR ports throughout) |
//!
//! GPU `g` of a node uses rail `g · nics_per_node / gpus_per_node` (one NIC per GPU on
//! DGX A100, one per two GPUs on DGX-2). Placement is rail-optimized, as in a DGX
//! SuperPOD: each leaf switch serves one rail of a/2 … a consecutive nodes (a = radix/2
//! down ports), so same-rail traffic between nearby nodes stays on one leaf; rails
//! meet higher up. The levels above the leaves are the k-ary n-tree of `topologies::fat_tree`.
//! Selene (560 nodes, radix 40, 3 levels): 8 rails × 28 leaves of 20 nodes, 4480 of the
//! tree's 8000 endpoints used.
//!
//! Routes: same GPU → no links; same node → NVLink up, NVLink down (through the
//! NVSwitch); other node → GPU's PCIe, its NIC, up the fat tree to the lowest common
//! level (ECMP hash in `topologies::fat_tree`), down, the destination's NIC and PCIe. The route
//! never detours over NVLink to another rail (no PXN): lowering should pair same-rail
//! GPUs, as NCCL's rings do.

use super::ids::LinkId;
use profile::Profile;
use topologies::fat_tree::FatTree;
use topologies::TopologySpec;

/// What a link connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkKind {
    NvlinkUp,
    NvlinkDown,
    GpuPcieUp,
    GpuPcieDown,
    HostUp,
    HostDown,
    NicUp,
    NicDown,
    /// A cable between fat-tree level `level` and `level + 1`, towards the root.
    TreeUp {
        level: u32,
    },
    TreeDown {
        level: u32,
    },
}

/// One directed link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub kind: LinkKind,
    /// Index among links of its kind (GPU, host link, NIC or cable number).
    pub index: u64,
    pub capacity_bytes_per_s: f64,
}

/// A path through the fabric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Route {
    pub links: Vec<LinkId>,
    /// One-way latency of the path (NVLink, NICs, switch hops or PCIe), for the
    /// caller to add; the flow model itself only shares bandwidth.
    pub latency_ns: u64,
}

/// Why a topology cannot be turned into a fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FabricError {
    /// The fat tree holds fewer NIC ports than the rail-optimized placement needs.
    #[error(transparent)]
    TreeTooSmall(#[from] topologies::fat_tree::FatTreeTooSmall),
    /// More links than a `LinkId` numbers.
    #[error("the fabric has {links} links; at most {} can be simulated", u32::MAX)]
    TooManyLinks { links: usize },
}

/// The links of a cluster and routes over them.
#[derive(Debug, Clone)]
pub struct Fabric {
    nodes: u32,
    gpus_per_node: u32,
    nics_per_node: u32,
    gpus_per_host_link: u32,
    host_links_per_node: u32,
    links: Vec<Link>,
    tree: Option<FatTree>,
    leaves_per_rail: u64,
    /// By cable level: the first `LinkId` of its up cables and of its down
    /// cables (each level holds [`FatTree::cables_used`] of each).
    tree_level_bases: Vec<(u64, u64)>,
    nvlink_latency_ns: u64,
    nic_latency_ns: u64,
    switch_hop_latency_ns: u64,
    pcie_latency_ns: u64,
    /// The node's GPUs reach each other over NVLink (else the `Nvlink` links
    /// stand for their PCIe paths to their peers).
    intra_node_nvlink: bool,
}

fn capped(achieved: f64, line_rate: f64) -> f64 {
    if line_rate > 0.0 {
        achieved.min(line_rate)
    } else {
        achieved
    }
}

impl Fabric {
    /// Builds every link of `topology` with the rates `profile` says are achieved.
    pub fn new(topology: &TopologySpec, profile: &Profile) -> Result<Fabric, FabricError> {
        let nodes = topology.nodes;
        let gpus_per_node = topology.node.gpus_per_node;
        let gpus = nodes as u64 * gpus_per_node as u64;
        let gpus_per_host_link = topology.pcie.gpus_per_host_link.max(1);
        let host_links_per_node = gpus_per_node.div_ceil(gpus_per_host_link);
        let nics_per_node = if nodes > 1 {
            topology.fabric.nics_per_node
        } else {
            0
        };
        let nvlink_bytes_per_s = capped(
            profile.communication.nvlink_bus_bandwidth_bytes_per_s.value,
            topology.node.nvlink_bandwidth_bytes_per_s,
        );
        let pcie = topology.pcie.bandwidth_bytes_per_s;
        let d2h_bytes_per_s = capped(profile.pcie.device_to_host_bytes_per_s.value, pcie);
        let h2d_bytes_per_s = capped(profile.pcie.host_to_device_bytes_per_s.value, pcie);
        let nic_bytes_per_s = capped(
            profile.communication.nic_bandwidth_bytes_per_s.value,
            topology.fabric.nic_bandwidth_bytes_per_s,
        );

        let (tree, leaves_per_rail) = match topologies::fat_tree::fat_tree_of(topology)? {
            Some((fat_tree, leaves_per_rail)) => (Some(fat_tree), leaves_per_rail),
            None => (None, 0),
        };

        let mut links = Vec::new();
        let add = |links: &mut Vec<Link>, kind: LinkKind, count: u64, capacity_bytes_per_s: f64| {
            links.extend((0..count).map(|index| Link {
                kind,
                index,
                capacity_bytes_per_s,
            }));
        };
        add(&mut links, LinkKind::NvlinkUp, gpus, nvlink_bytes_per_s);
        add(&mut links, LinkKind::NvlinkDown, gpus, nvlink_bytes_per_s);
        add(&mut links, LinkKind::GpuPcieUp, gpus, d2h_bytes_per_s);
        add(&mut links, LinkKind::GpuPcieDown, gpus, h2d_bytes_per_s);
        let host_links = nodes as u64 * host_links_per_node as u64;
        add(&mut links, LinkKind::HostUp, host_links, d2h_bytes_per_s);
        add(&mut links, LinkKind::HostDown, host_links, h2d_bytes_per_s);
        let nics = nodes as u64 * nics_per_node as u64;
        add(&mut links, LinkKind::NicUp, nics, nic_bytes_per_s);
        add(&mut links, LinkKind::NicDown, nics, nic_bytes_per_s);
        let mut tree_level_bases = Vec::new();
        if let Some(fat_tree) = tree {
            // The NIC ports the rail-optimized placement numbers: rails × leaves × a.
            let endpoints = u64::from(nics_per_node) * leaves_per_rail * fat_tree.arity;
            for level in 0..fat_tree.cable_levels() {
                let cables = fat_tree.cables_used(level, endpoints);
                let up_base = links.len() as u64;
                add(
                    &mut links,
                    LinkKind::TreeUp { level },
                    cables,
                    nic_bytes_per_s,
                );
                add(
                    &mut links,
                    LinkKind::TreeDown { level },
                    cables,
                    nic_bytes_per_s,
                );
                tree_level_bases.push((up_base, up_base + cables));
            }
        }
        if u32::try_from(links.len()).is_err() {
            return Err(FabricError::TooManyLinks { links: links.len() });
        }
        Ok(Fabric {
            nodes,
            gpus_per_node,
            nics_per_node,
            gpus_per_host_link,
            host_links_per_node,
            links,
            tree,
            leaves_per_rail,
            tree_level_bases,
            nvlink_latency_ns: topology.node.nvlink_latency_ns,
            nic_latency_ns: topology.fabric.nic_latency_ns,
            switch_hop_latency_ns: topology.fabric.switch_hop_latency_ns,
            pcie_latency_ns: topology.pcie.latency_ns,
            intra_node_nvlink: topology.node.nvlink_bandwidth_bytes_per_s > 0.0,
        })
    }

    pub fn gpu_count(&self) -> u32 {
        self.nodes * self.gpus_per_node
    }

    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.index()]
    }

    /// Capacity of every link, indexed by `LinkId` (what the flow models take).
    pub fn capacities_bytes_per_s(&self) -> Vec<f64> {
        self.links
            .iter()
            .map(|link| link.capacity_bytes_per_s)
            .collect()
    }

    /// NIC `nic` (global index) carrying 1/`factor` of its capacity in
    /// each direction: a slow NIC (`factor` ≥ 1, checked by the caller). A
    /// one-node fabric builds no NIC links (nothing crosses them), and a NIC
    /// past the fabric's has none: then nothing changes.
    pub fn slow_nic(&mut self, nic: u32, factor: f64) {
        if u64::from(nic) >= u64::from(self.nodes) * u64::from(self.nics_per_node) {
            return;
        }
        for kind in [LinkKind::NicUp, LinkKind::NicDown] {
            let id = self.id(kind, u64::from(nic));
            self.links[id.index()].capacity_bytes_per_s /= factor;
        }
    }

    /// GPU `gpu`'s NVLink links carrying 1/`factor` of their capacity in
    /// each direction: a slow NVLink (`factor` ≥ 1, checked by the caller).
    /// A GPU past the fabric's has none: then nothing changes.
    pub fn slow_nvlink(&mut self, gpu: u32, factor: f64) {
        if gpu >= self.gpu_count() {
            return;
        }
        for kind in [LinkKind::NvlinkUp, LinkKind::NvlinkDown] {
            let id = self.id(kind, u64::from(gpu));
            self.links[id.index()].capacity_bytes_per_s /= factor;
        }
    }

    /// GPU `gpu`'s PCIe link carrying 1/`factor` of its capacity in each
    /// direction: a slow PCIe link (`factor` ≥ 1, checked by the caller). On
    /// a node without NVLink its links to its peers are that PCIe link too,
    /// and carry at most the slowed capacity. A GPU past the fabric's has
    /// none: then nothing changes.
    pub fn slow_pcie(&mut self, gpu: u32, factor: f64) {
        if gpu >= self.gpu_count() {
            return;
        }
        let mut slowest = f64::INFINITY;
        for kind in [LinkKind::GpuPcieUp, LinkKind::GpuPcieDown] {
            let id = self.id(kind, u64::from(gpu));
            self.links[id.index()].capacity_bytes_per_s /= factor;
            slowest = slowest.min(self.links[id.index()].capacity_bytes_per_s);
        }
        if !self.intra_node_nvlink {
            for kind in [LinkKind::NvlinkUp, LinkKind::NvlinkDown] {
                let id = self.id(kind, u64::from(gpu));
                let link = &mut self.links[id.index()];
                link.capacity_bytes_per_s = link.capacity_bytes_per_s.min(slowest);
            }
        }
    }

    /// The up and down cables between leaf `leaf` and the level above
    /// carrying 1/`factor` of their capacity: a leaf's slow uplinks
    /// (`factor` ≥ 1, checked by the caller). Leaf ℓ's a up cables are
    /// numbered ℓ·a..(ℓ+1)·a at level 0, and the down cables into it alike
    /// ([`FatTree`]). A fabric without such cables (no tree, or one level)
    /// changes nothing.
    pub fn slow_leaf_uplinks(&mut self, leaf: u64, factor: f64) {
        let (Some(tree), Some(&(up_base, down_base))) = (self.tree, self.tree_level_bases.first())
        else {
            return;
        };
        let cables = down_base - up_base;
        for cable in (leaf * tree.arity..(leaf + 1) * tree.arity).take_while(|&c| c < cables) {
            for kind in [
                LinkKind::TreeUp { level: 0 },
                LinkKind::TreeDown { level: 0 },
            ] {
                let id = self.id(kind, cable);
                self.links[id.index()].capacity_bytes_per_s /= factor;
            }
        }
    }

    /// e.g. `nic_up[17]` or `tree_down[level 1][42]`.
    pub fn describe(&self, id: LinkId) -> String {
        let link = self.link(id);
        let name = match link.kind {
            LinkKind::NvlinkUp => "nvlink_up".to_string(),
            LinkKind::NvlinkDown => "nvlink_down".to_string(),
            LinkKind::GpuPcieUp => "gpu_pcie_up".to_string(),
            LinkKind::GpuPcieDown => "gpu_pcie_down".to_string(),
            LinkKind::HostUp => "host_up".to_string(),
            LinkKind::HostDown => "host_down".to_string(),
            LinkKind::NicUp => "nic_up".to_string(),
            LinkKind::NicDown => "nic_down".to_string(),
            LinkKind::TreeUp { level } => format!("tree_up[level {level}]"),
            LinkKind::TreeDown { level } => format!("tree_down[level {level}]"),
        };
        format!("{name}[{}]", link.index)
    }

    /// The first `LinkId` of a kind; links of one kind are contiguous.
    fn base(&self, kind: LinkKind) -> u64 {
        let gpus = self.gpu_count() as u64;
        let hosts = self.nodes as u64 * self.host_links_per_node as u64;
        let nics = self.nodes as u64 * self.nics_per_node as u64;
        match kind {
            LinkKind::NvlinkUp => 0,
            LinkKind::NvlinkDown => gpus,
            LinkKind::GpuPcieUp => 2 * gpus,
            LinkKind::GpuPcieDown => 3 * gpus,
            LinkKind::HostUp => 4 * gpus,
            LinkKind::HostDown => 4 * gpus + hosts,
            LinkKind::NicUp => 4 * gpus + 2 * hosts,
            LinkKind::NicDown => 4 * gpus + 2 * hosts + nics,
            LinkKind::TreeUp { level } => self.tree_level_bases[level as usize].0,
            LinkKind::TreeDown { level } => self.tree_level_bases[level as usize].1,
        }
    }

    fn id(&self, kind: LinkKind, index: u64) -> LinkId {
        let id = LinkId((self.base(kind) + index) as u32);
        debug_assert_eq!(self.links[id.index()].kind, kind);
        id
    }

    /// The NIC (global index) GPU `gpu` sends through.
    pub fn nic_of(&self, gpu: u32) -> u32 {
        let node = gpu / self.gpus_per_node;
        let local = gpu % self.gpus_per_node;
        node * self.nics_per_node + local * self.nics_per_node / self.gpus_per_node
    }

    /// The fat-tree endpoint of a NIC under rail-optimized placement.
    fn endpoint_of_nic(&self, nic: u32) -> u64 {
        let tree = self.tree.expect("NICs exist only with a fat tree");
        let node = (nic / self.nics_per_node) as u64;
        let rail = (nic % self.nics_per_node) as u64;
        (rail * self.leaves_per_rail + node / tree.arity) * tree.arity + node % tree.arity
    }

    /// Deterministic route from one GPU to another (global GPU indices).
    pub fn route(&self, src_gpu: u32, dst_gpu: u32) -> Route {
        let mut links = Vec::new();
        let latency_ns = self.route_into(src_gpu, dst_gpu, &mut links);
        Route { links, latency_ns }
    }

    /// [`Fabric::route`]'s links written into `links` (cleared first; the
    /// engine reuses one buffer for every flow); returns its latency.
    pub fn route_into(&self, src_gpu: u32, dst_gpu: u32, links: &mut Vec<LinkId>) -> u64 {
        assert!(
            src_gpu < self.gpu_count() && dst_gpu < self.gpu_count(),
            "GPU {src_gpu} or {dst_gpu} is outside the fabric's {} GPUs",
            self.gpu_count()
        );
        links.clear();
        if src_gpu == dst_gpu {
            return 0;
        }
        if src_gpu / self.gpus_per_node == dst_gpu / self.gpus_per_node {
            links.push(self.id(LinkKind::NvlinkUp, src_gpu as u64));
            links.push(self.id(LinkKind::NvlinkDown, dst_gpu as u64));
            return self.nvlink_latency_ns;
        }
        let tree = self.tree.expect("GPUs on different nodes imply a fabric");
        let (src_nic, dst_nic) = (self.nic_of(src_gpu), self.nic_of(dst_gpu));
        let (src_end, dst_end) = (self.endpoint_of_nic(src_nic), self.endpoint_of_nic(dst_nic));
        let ecmp_key = ((src_gpu as u64) << 32) | dst_gpu as u64;
        let hops = tree.route(src_end, dst_end, ecmp_key);
        links.reserve(4 + hops.len());
        links.push(self.id(LinkKind::GpuPcieUp, src_gpu as u64));
        links.push(self.id(LinkKind::NicUp, src_nic as u64));
        for hop in &hops {
            let kind = if hop.up {
                LinkKind::TreeUp { level: hop.level }
            } else {
                LinkKind::TreeDown { level: hop.level }
            };
            links.push(self.id(kind, hop.cable));
        }
        links.push(self.id(LinkKind::NicDown, dst_nic as u64));
        links.push(self.id(LinkKind::GpuPcieDown, dst_gpu as u64));
        let switches = hops.len() as u64 + 1;
        2 * self.nic_latency_ns + switches * self.switch_hop_latency_ns
    }

    fn host_link_of(&self, gpu: u32) -> u64 {
        let node = (gpu / self.gpus_per_node) as u64;
        let local = gpu % self.gpus_per_node;
        node * self.host_links_per_node as u64 + (local / self.gpus_per_host_link) as u64
    }

    /// Device-to-host copy path: the GPU's PCIe link, then its switch's uplink.
    pub fn route_to_host(&self, gpu: u32) -> Route {
        Route {
            links: vec![
                self.id(LinkKind::GpuPcieUp, gpu as u64),
                self.id(LinkKind::HostUp, self.host_link_of(gpu)),
            ],
            latency_ns: self.pcie_latency_ns,
        }
    }

    /// Host-to-device copy path.
    pub fn route_from_host(&self, gpu: u32) -> Route {
        Route {
            links: vec![
                self.id(LinkKind::HostDown, self.host_link_of(gpu)),
                self.id(LinkKind::GpuPcieDown, gpu as u64),
            ],
            latency_ns: self.pcie_latency_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selene() -> Fabric {
        let topology = topologies::preset("selene").unwrap();
        Fabric::new(&topology, &Profile::builtin("a100-80gb").unwrap()).unwrap()
    }

    #[test]
    fn selene_has_the_expected_links_and_capacities() {
        let fabric = selene();
        assert_eq!(fabric.gpu_count(), 4480);
        // 4 per GPU, 2 per host link (4 per node), 2 per NIC, and both directions
        // of the cables its 4480 NIC ports (8 rails × 28 leaves of 20) can reach:
        // 4480 above the leaves, 12 pods of 400 ports = 4800 above the pods
        // (of the 8000 per level a 3-level radix-40 tree has).
        assert_eq!(
            fabric.link_count(),
            4 * 4480 + 2 * 560 * 4 + 2 * 4480 + 2 * (4480 + 4800)
        );
        let route = fabric.route(0, 1);
        assert_eq!(fabric.link(route.links[0]).capacity_bytes_per_s, 230e9);
        let across = fabric.route(0, 8);
        let nic = across.links[1];
        assert_eq!(fabric.link(nic).kind, LinkKind::NicUp);
        assert_eq!(fabric.link(nic).capacity_bytes_per_s, 24e9);
        assert_eq!(fabric.link(across.links[0]).capacity_bytes_per_s, 25e9);
    }

    #[test]
    fn routes_inside_a_node_go_through_the_nvswitch() {
        let fabric = selene();
        let route = fabric.route(3, 5);
        let kinds: Vec<_> = route.links.iter().map(|&l| fabric.link(l).kind).collect();
        assert_eq!(kinds, [LinkKind::NvlinkUp, LinkKind::NvlinkDown]);
        assert_eq!(fabric.describe(route.links[0]), "nvlink_up[3]");
        assert!(fabric.route(7, 7).links.is_empty());
    }

    #[test]
    fn same_rail_neighbours_share_a_leaf_and_other_rails_meet_higher() {
        let fabric = selene();
        // GPU 0 of node 0 to GPU 0 of node 1: rail 0, same leaf: PCIe, NIC, NIC, PCIe.
        let leaf = fabric.route(0, 8);
        assert_eq!(leaf.links.len(), 4);
        assert_eq!(leaf.latency_ns, 2 * 600 + 130);
        // Node 0 to node 20 on rail 0: the next leaf of the rail, through a spine.
        let spine = fabric.route(0, 20 * 8);
        assert_eq!(spine.links.len(), 6);
        // Rail 0 to rail 3: rails meet at the core of selene's tree.
        let core = fabric.route(0, 8 + 3);
        assert_eq!(core.links.len(), 8);
        assert_eq!(core.latency_ns, 2 * 600 + 5 * 130);
        // Every link on a route is distinct.
        let mut ids = core.links.clone();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), core.links.len());
    }

    #[test]
    fn routes_are_deterministic_and_ecmp_uses_several_spines() {
        let fabric = selene();
        assert_eq!(fabric.route(0, 400), fabric.route(0, 400));
        let first_up: std::collections::BTreeSet<LinkId> = (0..40)
            .map(|n| fabric.route(0, (20 + n) * 8).links[2])
            .collect();
        assert!(first_up.len() > 10, "{}", first_up.len());
    }

    #[test]
    fn host_links_are_shared_by_two_gpus_on_dgx_a100() {
        let fabric = selene();
        assert_eq!(
            fabric.route_to_host(0).links[1],
            fabric.route_to_host(1).links[1]
        );
        assert_ne!(
            fabric.route_to_host(1).links[1],
            fabric.route_to_host(2).links[1]
        );
        // Host copies and NIC traffic share the GPU's own PCIe link.
        let into_gpu_9 = fabric.route(1, 9);
        assert_eq!(
            fabric.route_from_host(9).links[1],
            *into_gpu_9.links.last().unwrap()
        );
    }

    #[test]
    fn a_tree_too_small_for_the_cluster_is_reported() {
        let mut topology = topologies::preset("selene").unwrap();
        topology.fabric.fat_tree_levels = 2;
        let err = Fabric::new(&topology, &Profile::builtin("a100-80gb").unwrap()).unwrap_err();
        assert!(err.to_string().contains("holds 400 NIC ports"), "{err}");
    }
}
