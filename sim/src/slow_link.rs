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
//! A GPU's NVLink can be slow too (issue 35, item 4): links that trained
//! at fewer lanes or went down (`nvidia-smi nvlink --status` shows them
//! inactive) leave it 1/`factor` of its NVLink bandwidth to the NVSwitches,
//! in each direction. Every communication with that GPU as a member whose
//! ring hops inside a node (the tensor-parallel collectives, intra-node
//! pipeline transfers and expert all-to-alls, the intra-node hops of a
//! hierarchical ring) runs at the NVLink rate divided by the largest such
//! factor among its members; a group with one rank per node never uses
//! NVLink and keeps its time. Under `--contention` that GPU's two NVLink
//! links carry 1/factor of their capacity. A task with members behind both
//! a slow NIC and a slow NVLink takes both rates.
//!
//! A GPU's PCIe link can be slow too (a card that trained at x8 instead of
//! x16, or at the previous generation: `nvidia-smi -q` shows "Link Width"
//! and "PCIe Generation" below their maximum): it delivers 1/`factor` of
//! its bandwidth in each direction. Three paths cross it:
//! - GPUDirect RDMA: a GPU's network traffic goes through its PCIe link to
//!   the NIC, so every communication with that GPU as a member that
//!   crosses nodes gets at most the PCIe line rate ÷ factor of its NICs
//!   (the line rate: RDMA reads and writes run near it, unlike copies
//!   through host memory; a GPU sharing a NIC slows only once the link
//!   falls below its share);
//! - on nodes whose GPUs talk over PCIe (no NVLink), its intra-node hops
//!   run at min(intra-node rate, PCIe line rate ÷ factor);
//! - its host copies (ZeRO-Offload's gradient and parameter transfers, and
//!   offloaded activations) run at the slower of its own link (the profile's
//!   measured copy rate ÷ factor) and its share of the PCIe switch's uplink
//!   (that rate ÷ the GPUs copying through it).
//!
//! Under `--contention` that GPU's PCIe links carry 1/factor of their
//! capacity (and, on PCIe nodes, its links to its peers at most that). The
//! fabric's PCIe links carry the measured copy rate, not the line rate, so
//! there GPUDirect traffic through a slow link is capped lower than in the
//! closed form (DGX A100, factor 4: a 2.3 MB all-reduce takes 310 µs in
//! flows against 266 µs closed form; `tests/tests/it/slow_pcie.rs`).
//!
//! A pipeline transfer's task runs on its sender's tensor group; it takes the
//! factors of its receiver's group too ([`SlowLinkCosts`]), so a slow link
//! slows the transfers its GPU receives as well as those it sends.
//!
//! A slow NIC, NVLink or PCIe link makes its replicas differ from the others: they are
//! lowered beside the representative ([`crate::symmetry_exceptions`]), or,
//! where that does not apply, every replica is.

use std::fmt;

use scenario::Scenario;
use taskgraph::ids::TaskId;
use taskgraph::task_graph::{TaskGraph, Work};
use timeline::time::SimDuration;

use crate::cost::{cost_works, ClosedFormNetwork, WorkCost};
use crate::slow_uplink::ResolvedSlowUplink;
use crate::straggler::{check_slow, SlowPart, StragglerError};

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

/// One GPU whose NVLink delivers 1/`factor` of its bandwidth, named by rank.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SlowNvlink {
    pub rank: u32,
    /// The NVLink's nominal bandwidth ÷ what it delivers (≥ 1).
    pub factor: f64,
}

/// A checked slow NVLink: its GPU's node.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ResolvedSlowNvlink {
    pub rank: u32,
    pub node: u32,
    pub factor: f64,
}

/// One GPU whose PCIe link delivers 1/`factor` of its bandwidth, named by rank.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SlowPcie {
    pub rank: u32,
    /// The PCIe link's achieved bandwidth ÷ what it delivers (≥ 1).
    pub factor: f64,
}

/// A checked slow PCIe link: its GPU's node.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ResolvedSlowPcie {
    pub rank: u32,
    pub node: u32,
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
        check_slow(SlowPart::Nic, slow.rank, slow.factor, gpus)?;
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
            return Err(StragglerError::GivenTwice {
                part: SlowPart::Nic,
                rank: pair[0].rank,
            });
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

/// Checks `given` against a layout of `gpus` ranks on nodes of
/// `gpus_per_node` GPUs joined by NVLink or not (`nvlink`): each rank in
/// range and named once, each factor finite and in [1, 100]. Sorted by rank.
pub fn resolve_nvlinks(
    given: &[SlowNvlink],
    gpus: u32,
    gpus_per_node: u32,
    nvlink: bool,
) -> Result<Vec<ResolvedSlowNvlink>, StragglerError> {
    let has_nvlink = nvlink && gpus_per_node > 1;
    if !given.is_empty() && !has_nvlink {
        return Err(StragglerError::NoNvlink { gpus_per_node });
    }
    let given = given.iter().map(|slow| (slow.rank, slow.factor));
    let links = checked_per_gpu(SlowPart::Nvlink, given, gpus, gpus_per_node)?;
    Ok(links
        .into_iter()
        .map(|(rank, node, factor)| ResolvedSlowNvlink { rank, node, factor })
        .collect())
}

/// Checks `given` against a layout of `gpus` ranks on nodes of
/// `gpus_per_node` GPUs: each rank in range and named once, each factor
/// finite and in [1, 100]. Sorted by rank.
pub fn resolve_pcies(
    given: &[SlowPcie],
    gpus: u32,
    gpus_per_node: u32,
) -> Result<Vec<ResolvedSlowPcie>, StragglerError> {
    let given = given.iter().map(|slow| (slow.rank, slow.factor));
    let links = checked_per_gpu(SlowPart::Pcie, given, gpus, gpus_per_node)?;
    Ok(links
        .into_iter()
        .map(|(rank, node, factor)| ResolvedSlowPcie { rank, node, factor })
        .collect())
}

/// A GPU's own slow `part` (its NVLink, its PCIe link) for each (rank,
/// factor) of `given`, checked against a layout of `gpus` ranks
/// ([`check_slow`]) and each rank named once: (rank, its node on nodes of
/// `gpus_per_node` GPUs, factor), sorted by rank.
fn checked_per_gpu(
    part: SlowPart,
    given: impl Iterator<Item = (u32, f64)>,
    gpus: u32,
    gpus_per_node: u32,
) -> Result<Vec<(u32, u32, f64)>, StragglerError> {
    let mut links = Vec::new();
    for (rank, factor) in given {
        check_slow(part, rank, factor, gpus)?;
        links.push((rank, rank / gpus_per_node, factor));
    }
    links.sort_by_key(|&(rank, ..)| rank);
    if let Some(pair) = links.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(StragglerError::GivenTwice {
            part,
            rank: pair[0].0,
        });
    }
    Ok(links)
}

/// The slow NICs, NVLinks, PCIe links and switch uplinks of a run, checked.
#[derive(Debug, Clone, Copy)]
pub struct SlowLinks<'a> {
    pub nics: &'a [ResolvedSlowNic],
    pub nvlinks: &'a [ResolvedSlowNvlink],
    pub pcies: &'a [ResolvedSlowPcie],
    pub uplinks: &'a [ResolvedSlowUplink],
}

impl SlowLinks<'_> {
    pub fn is_empty(&self) -> bool {
        self.nics.is_empty()
            && self.nvlinks.is_empty()
            && self.pcies.is_empty()
            && self.uplinks.is_empty()
    }

    /// The factors that slow a group of `ranks`: the largest of its
    /// members' NICs, NVLinks and PCIe links (1 where none is slow), the
    /// NIC's also the largest of the slow uplinks it climbs through
    /// ([`crate::slow_uplink::uplink_factor`]).
    /// Whether one of these slow links is `rank`'s own: its NIC, NVLink or
    /// PCIe link, or the leaf above its NIC. A group none of whose members
    /// is touched has nominal factors ([`SlowLinks::factors_of`]).
    pub(crate) fn touches(&self, rank: u32, scenario: &Scenario) -> bool {
        let nic = nic_of(
            rank,
            scenario.topology.node.gpus_per_node,
            scenario.topology.fabric.nics_per_node,
        );
        self.nics.iter().any(|slow| slow.nic == nic)
            || self.nvlinks.iter().any(|slow| slow.rank == rank)
            || self.pcies.iter().any(|slow| slow.rank == rank)
            || self
                .uplinks
                .iter()
                .any(|leaf| crate::slow_uplink::under_leaf(leaf, rank))
    }

    pub(crate) fn factors_of(
        &self,
        ranks: &[taskgraph::ids::Rank],
        scenario: &Scenario,
    ) -> LinkFactors {
        let gpus_per_node = scenario.topology.node.gpus_per_node;
        let nics_per_node = scenario.topology.fabric.nics_per_node;
        let mut factors = LinkFactors::NOMINAL;
        factors.nic = crate::slow_uplink::uplink_factor(self.uplinks, ranks);
        for rank in ranks {
            let nic = nic_of(rank.0, gpus_per_node, nics_per_node);
            if let Some(slow) = self.nics.iter().find(|slow| slow.nic == nic) {
                factors.nic = factors.nic.max(slow.factor);
            }
            if let Some(slow) = self.nvlinks.iter().find(|slow| slow.rank == rank.0) {
                factors.nvlink = factors.nvlink.max(slow.factor);
            }
            if let Some(slow) = self.pcies.iter().find(|slow| slow.rank == rank.0) {
                factors.pcie = factors.pcie.max(slow.factor);
            }
        }
        factors
    }
}

/// What slows one group's communication: its NIC, NVLink and PCIe factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinkFactors {
    nic: f64,
    nvlink: f64,
    pcie: f64,
}

impl LinkFactors {
    pub(crate) const NOMINAL: LinkFactors = LinkFactors {
        nic: 1.0,
        nvlink: 1.0,
        pcie: 1.0,
    };

    pub(crate) fn is_nominal(&self) -> bool {
        *self == LinkFactors::NOMINAL
    }
}

/// Closed-form costs of every work with slow links: one table per distinct
/// set of NIC, NVLink and PCIe factors, and for each of the graph's groups
/// the table its tasks take. A pipeline transfer's group is its sender's
/// tensor group, so a transfer takes the factors of its sender's and its
/// receiver's groups together (the group of the pass it feeds).
#[derive(Debug, Clone)]
pub struct SlowLinkCosts {
    /// Per group: the index into `tables`, or `None` where no member's link is slow.
    group_table: Vec<Option<usize>>,
    /// Pipeline transfers whose receiver changes their factors, by task
    /// id: (task, its table).
    transfer_table: Vec<(u32, Option<usize>)>,
    tables: Vec<Vec<WorkCost>>,
}

impl SlowLinkCosts {
    /// The costs of `graph`'s works under each set of factors of `links`.
    pub fn new(scenario: &Scenario, graph: &TaskGraph, links: SlowLinks<'_>) -> SlowLinkCosts {
        let group_factors: Vec<LinkFactors> = graph
            .groups()
            .iter()
            .map(|ranks| links.factors_of(ranks, scenario))
            .collect();
        let transfer_factors = receivers_factors(scenario, graph, links, &group_factors);
        let every = group_factors
            .iter()
            .chain(transfer_factors.iter().map(|(_, f)| f));
        let (distinct, tables) = factor_tables(scenario, graph.works(), every);
        let table_of = |f: &LinkFactors| distinct.iter().position(|d| d == f);
        SlowLinkCosts {
            group_table: group_factors.iter().map(table_of).collect(),
            transfer_table: transfer_factors
                .iter()
                .map(|(task, f)| (*task, table_of(f)))
                .collect(),
            tables,
        }
    }

    /// Task `id`'s closed-form duration: its slow table's where a member's
    /// NIC, NVLink, PCIe link or uplink is slow, else `nominal`.
    #[inline]
    pub fn duration(&self, graph: &TaskGraph, id: TaskId, nominal: SimDuration) -> SimDuration {
        let table = match self
            .transfer_table
            .binary_search_by_key(&(id.index() as u32), |(task, _)| *task)
        {
            Ok(at) => self.transfer_table[at].1,
            Err(_) => self.group_table[graph.group_of(id).0 as usize],
        };
        match table {
            Some(table) => self.tables[table][graph.work_of(id).index()].duration,
            None => nominal,
        }
    }
}

/// The distinct slowed sets among `factors`, in a fixed order, and for each
/// the closed-form costs of `works` at its rates.
pub(crate) fn factor_tables<'f>(
    scenario: &Scenario,
    works: &[Work],
    factors: impl Iterator<Item = &'f LinkFactors>,
) -> (Vec<LinkFactors>, Vec<Vec<WorkCost>>) {
    let mut distinct: Vec<LinkFactors> = Vec::new();
    for factors in factors.filter(|f| !f.is_nominal()) {
        if !distinct.contains(factors) {
            distinct.push(*factors);
        }
    }
    distinct.sort_by(|a, b| {
        a.nic
            .total_cmp(&b.nic)
            .then(a.nvlink.total_cmp(&b.nvlink))
            .then(a.pcie.total_cmp(&b.pcie))
    });
    let network = ClosedFormNetwork::for_scenario(scenario);
    let tables = distinct
        .iter()
        .map(|f| {
            let slowed = network
                .with_nic_slowed(f.nic)
                .with_nvlink_slowed(f.nvlink)
                .with_pcie_slowed(f.pcie);
            cost_works(scenario, works, &slowed)
        })
        .collect();
    (distinct, tables)
}

/// The pipeline transfers of `graph` whose factors differ from their
/// sender's group's once their receivers are counted (the ranks of the
/// tasks they feed outside the sender's group: the receiving pass's
/// kernels), by task id: (task, factors).
fn receivers_factors(
    scenario: &Scenario,
    graph: &TaskGraph,
    links: SlowLinks<'_>,
    group_factors: &[LinkFactors],
) -> Vec<(u32, LinkFactors)> {
    let mut transfers = Vec::new();
    for index in 0..graph.task_count() {
        let id = TaskId(index as u32);
        if !matches!(graph.work(graph.work_of(id)), Work::PipelineTransfer { .. }) {
            continue;
        }
        let own = graph.group_of(id);
        let senders = graph.group_ranks(own);
        let mut ranks = senders.to_vec();
        for next in graph.successors(id) {
            let group = graph.group_ranks(graph.group_of(next));
            if group.iter().all(|rank| !senders.contains(rank)) {
                ranks.extend_from_slice(group);
            }
        }
        ranks.sort_unstable();
        ranks.dedup();
        let factors = links.factors_of(&ranks, scenario);
        if factors != group_factors[own.0 as usize] {
            transfers.push((index as u32, factors));
        }
    }
    transfers
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

impl fmt::Display for ResolvedSlowNvlink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NVLink of rank {} (node {}) at 1/{} of its bandwidth",
            self.rank, self.node, self.factor
        )
    }
}

impl fmt::Display for ResolvedSlowPcie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "PCIe link of rank {} (node {}) at 1/{} of its bandwidth",
            self.rank, self.node, self.factor
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
            Err(StragglerError::RankOutOfRange {
                part: SlowPart::Nic,
                rank: 16,
                gpus: 16
            })
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

    #[test]
    fn slow_nvlinks_are_checked() {
        let link = |rank, factor| SlowNvlink { rank, factor };
        let links = resolve_nvlinks(&[link(9, 2.0), link(2, 1.5)], 16, 8, true).unwrap();
        assert_eq!(
            links.iter().map(|l| (l.rank, l.node)).collect::<Vec<_>>(),
            [(2, 0), (9, 1)]
        );
        assert_eq!(
            resolve_nvlinks(&[link(16, 2.0)], 16, 8, true),
            Err(StragglerError::RankOutOfRange {
                part: SlowPart::Nvlink,
                rank: 16,
                gpus: 16
            })
        );
        for factor in [0.9, f64::NAN, 101.0] {
            assert!(resolve_nvlinks(&[link(1, factor)], 16, 8, true).is_err());
        }
        assert_eq!(
            resolve_nvlinks(&[link(3, 2.0), link(3, 3.0)], 16, 8, true),
            Err(StragglerError::GivenTwice {
                part: SlowPart::Nvlink,
                rank: 3
            })
        );
        // PCIe nodes, and nodes of one GPU, have no NVLink to slow.
        assert_eq!(
            resolve_nvlinks(&[link(0, 2.0)], 8, 8, false),
            Err(StragglerError::NoNvlink { gpus_per_node: 8 })
        );
        assert!(resolve_nvlinks(&[link(0, 2.0)], 8, 1, true).is_err());
        assert_eq!(resolve_nvlinks(&[], 8, 1, false), Ok(Vec::new()));
    }

    #[test]
    fn slow_pcie_links_are_checked() {
        let link = |rank, factor| SlowPcie { rank, factor };
        let links = resolve_pcies(&[link(9, 2.0), link(2, 1.5)], 16, 8).unwrap();
        assert_eq!(
            links.iter().map(|l| (l.rank, l.node)).collect::<Vec<_>>(),
            [(2, 0), (9, 1)]
        );
        assert_eq!(
            resolve_pcies(&[link(16, 2.0)], 16, 8),
            Err(StragglerError::RankOutOfRange {
                part: SlowPart::Pcie,
                rank: 16,
                gpus: 16
            })
        );
        for factor in [0.9, f64::NAN, f64::INFINITY, 101.0] {
            assert!(resolve_pcies(&[link(1, factor)], 16, 8).is_err());
        }
        assert_eq!(
            resolve_pcies(&[link(3, 2.0), link(3, 3.0)], 16, 8),
            Err(StragglerError::GivenTwice {
                part: SlowPart::Pcie,
                rank: 3
            })
        );
        // Every GPU has a PCIe link, nodes of one GPU included.
        assert_eq!(resolve_pcies(&[link(0, 2.0)], 1, 1).unwrap().len(), 1);
    }
}
