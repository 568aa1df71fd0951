//! Slow ranks (issue 35, item 4): a GPU whose kernels run `factor` times
//! longer than its peers' — throttled by heat or power, or a degraded part.
//! Each compute kernel of that rank (forward, recompute, backward and its
//! halves, the optimizer step, gradient copies) takes `factor` × its cost,
//! rounded up to whole nanoseconds; its communication is priced as before
//! and waits for it, so the event engine carries the delay to every rank
//! that depends on it (its tensor-parallel peers at their next collective,
//! the next pipeline stage, every replica at the data-parallel reduction).
//! A slow rank makes its replica differ from the others: the replicas that
//! hold slow ranks (or slow links) are lowered beside the representative
//! ([`crate::symmetry_exceptions`]), or, where that does not apply, every
//! replica is.

use crate::rank_spread::{DrawnSpread, RankSpread, MAX_SIGMA};
use crate::slow_link::{
    ResolvedSlowNic, ResolvedSlowNvlink, ResolvedSlowPcie, SlowLinks, SlowNic, SlowNvlink, SlowPcie,
};
use crate::slow_uplink::{ResolvedSlowUplink, SlowUplink};
use scenario::Scenario;
use std::fmt;
use taskgraph::ids::TaskId;
use taskgraph::task_graph::TaskGraph;
use timeline::time::SimDuration;

/// The largest slow-down accepted: a GPU more than 100× slower is broken,
/// not slow.
pub const MAX_FACTOR: f64 = 100.0;

/// One slow rank.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SlowRank {
    pub rank: u32,
    /// Kernel time ÷ its peers' (≥ 1).
    pub factor: f64,
}

/// The slow ranks, slow NICs, NVLinks and PCIe links ([`crate::slow_link`])
/// and switch uplinks ([`crate::slow_uplink`]) of a run (none: the run as
/// priced).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stragglers {
    slow: Vec<SlowRank>,
    nics: Vec<ResolvedSlowNic>,
    nvlinks: Vec<ResolvedSlowNvlink>,
    pcies: Vec<ResolvedSlowPcie>,
    uplinks: Vec<ResolvedSlowUplink>,
    spread: Option<DrawnSpread>,
}

/// What a slow-down is applied to, as errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowPart {
    /// A GPU's kernels and copies (`--slow-rank`).
    Gpu,
    /// The NIC a rank sends through (`--slow-nic`).
    Nic,
    /// A GPU's NVLink (`--slow-nvlink`).
    Nvlink,
    /// A GPU's PCIe link (`--slow-pcie`).
    Pcie,
    /// The uplinks of the leaf switch above a rank's NIC (`--slow-uplink`).
    Uplink,
}

impl std::fmt::Display for SlowPart {
    /// What follows "slow" in a message, up to the rank's number.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SlowPart::Gpu => "rank",
            SlowPart::Nic => "NIC of rank",
            SlowPart::Nvlink => "NVLink of rank",
            SlowPart::Pcie => "PCIe link of rank",
            SlowPart::Uplink => "uplinks of the leaf switch of rank",
        })
    }
}

/// Why a list of slow ranks cannot be simulated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StragglerError {
    #[error("slow {part} {rank}: the layout has ranks 0..{gpus}")]
    RankOutOfRange {
        part: SlowPart,
        rank: u32,
        gpus: u32,
    },
    #[error("slow {part} {rank}: factor {factor} is not a slow-down from 1 to {MAX_FACTOR}")]
    Factor {
        part: SlowPart,
        rank: u32,
        factor: f64,
    },
    #[error("slow {part} {rank} is given twice")]
    GivenTwice { part: SlowPart, rank: u32 },
    #[error(
        "slow NIC: ranks {first} and {second} send through the same NIC ({nic}); name it once"
    )]
    NicRepeated { first: u32, second: u32, nic: u32 },
    #[error("slow NIC: the topology's nodes have no NICs (fabric.nics_per_node = 0)")]
    NoNics,
    #[error("slow NVLink: the topology's nodes of {gpus_per_node} GPU(s) have no NVLink between GPUs (its GPUs talk over PCIe, or a node holds one)")]
    NoNvlink { gpus_per_node: u32 },
    #[error("slow uplink: the topology has no switch uplinks to slow: {why}")]
    NoUplinks { why: String },
    #[error("slow uplink: ranks {first} and {second} sit under the same leaf switch ({leaf}); name it once")]
    LeafRepeated { first: u32, second: u32, leaf: u64 },
    #[error("rank spread: log-scale sigma {sigma} is not in (0, {MAX_SIGMA}] (0.05 spreads kernel times by about ±5 %)")]
    Spread { sigma: f64 },
}

/// Checks one slow `part` of `rank` against a layout of `gpus` ranks: the
/// rank in range, the factor finite and in [1, [`MAX_FACTOR`]].
pub(crate) fn check_slow(
    part: SlowPart,
    rank: u32,
    factor: f64,
    gpus: u32,
) -> Result<(), StragglerError> {
    if rank >= gpus {
        return Err(StragglerError::RankOutOfRange { part, rank, gpus });
    }
    if !(factor.is_finite() && (1.0..=MAX_FACTOR).contains(&factor)) {
        return Err(StragglerError::Factor { part, rank, factor });
    }
    Ok(())
}

impl Stragglers {
    /// No slow rank.
    pub fn none() -> Stragglers {
        Stragglers::default()
    }

    /// The slow ranks of a layout of `gpus` ranks, checked: each rank in
    /// range and given once, each factor finite and in [1, 100].
    pub fn new(mut slow: Vec<SlowRank>, gpus: u32) -> Result<Stragglers, StragglerError> {
        slow.sort_by_key(|s| s.rank);
        for (i, s) in slow.iter().enumerate() {
            check_slow(SlowPart::Gpu, s.rank, s.factor, gpus)?;
            if i > 0 && slow[i - 1].rank == s.rank {
                return Err(StragglerError::GivenTwice {
                    part: SlowPart::Gpu,
                    rank: s.rank,
                });
            }
        }
        Ok(Stragglers {
            slow,
            ..Stragglers::default()
        })
    }

    /// Stragglers moved onto other ranks of the same layout (checked where
    /// they came from: [`crate::symmetry_exceptions`] renumbers replicas).
    pub(crate) fn moved(
        mut slow: Vec<SlowRank>,
        nics: Vec<ResolvedSlowNic>,
        mut nvlinks: Vec<ResolvedSlowNvlink>,
        mut pcies: Vec<ResolvedSlowPcie>,
    ) -> Stragglers {
        slow.sort_by_key(|s| s.rank);
        nvlinks.sort_by_key(|s| s.rank);
        pcies.sort_by_key(|s| s.rank);
        Stragglers {
            slow,
            nics,
            nvlinks,
            pcies,
            uplinks: Vec::new(),
            spread: None,
        }
    }

    /// These slow ranks and the NICs of `slow_nics` slowed, checked against
    /// `scenario`'s ranks and its topology's NICs ([`crate::slow_link::resolve`]).
    pub fn with_slow_nics(
        self,
        slow_nics: &[SlowNic],
        scenario: &Scenario,
    ) -> Result<Stragglers, StragglerError> {
        let nics = crate::slow_link::resolve(
            slow_nics,
            scenario.layout.gpus(),
            scenario.topology.node.gpus_per_node,
            scenario.topology.fabric.nics_per_node,
        )?;
        Ok(Stragglers { nics, ..self })
    }

    /// These stragglers and the NVLinks of `slow_nvlinks` slowed, checked
    /// against `scenario`'s ranks and its nodes ([`crate::slow_link::resolve_nvlinks`]).
    pub fn with_slow_nvlinks(
        self,
        slow_nvlinks: &[SlowNvlink],
        scenario: &Scenario,
    ) -> Result<Stragglers, StragglerError> {
        let nvlinks = crate::slow_link::resolve_nvlinks(
            slow_nvlinks,
            scenario.layout.gpus(),
            scenario.topology.node.gpus_per_node,
            collectives::LinkRates::from(&scenario.topology, &scenario.profile).intra_node_nvlink,
        )?;
        Ok(Stragglers { nvlinks, ..self })
    }

    /// These stragglers and the PCIe links of `slow_pcies` slowed, checked
    /// against `scenario`'s ranks ([`crate::slow_link::resolve_pcies`]).
    pub fn with_slow_pcies(
        self,
        slow_pcies: &[SlowPcie],
        scenario: &Scenario,
    ) -> Result<Stragglers, StragglerError> {
        let pcies = crate::slow_link::resolve_pcies(
            slow_pcies,
            scenario.layout.gpus(),
            scenario.topology.node.gpus_per_node,
        )?;
        Ok(Stragglers { pcies, ..self })
    }

    /// These stragglers and the leaf uplinks of `slow_uplinks` slowed,
    /// checked against `scenario`'s ranks and fat tree
    /// ([`crate::slow_uplink::resolve_uplinks`]).
    pub fn with_slow_uplinks(
        self,
        slow_uplinks: &[SlowUplink],
        scenario: &Scenario,
    ) -> Result<Stragglers, StragglerError> {
        let uplinks = crate::slow_uplink::resolve_uplinks(slow_uplinks, scenario)?;
        Ok(Stragglers { uplinks, ..self })
    }

    /// These stragglers with every rank's kernel time also multiplied by
    /// its draw from `spread` (seeded by `seed`; [`crate::rank_spread`]).
    pub fn with_spread(self, spread: Option<RankSpread>, seed: u64, gpus: u32) -> Stragglers {
        Stragglers {
            spread: spread.map(|spread| spread.draw(gpus, seed)),
            ..self
        }
    }

    /// No slow rank, NIC, NVLink, PCIe link or uplink, and no spread of GPU speeds.
    pub fn is_empty(&self) -> bool {
        self.slow.is_empty() && self.links().is_empty() && self.spread.is_none()
    }

    /// The spread of GPU speeds, as drawn.
    pub fn spread(&self) -> Option<&DrawnSpread> {
        self.spread.as_ref()
    }

    /// Rank `rank`'s kernel-time factor: its spread's draw times its slow
    /// factor (1 for what it lacks).
    pub fn rank_factor(&self, rank: u32) -> f64 {
        let slow = self
            .slow
            .binary_search_by_key(&rank, |s| s.rank)
            .map_or(1.0, |at| self.slow[at].factor);
        match &self.spread {
            Some(spread) => spread.factor(rank) * slow,
            None => slow,
        }
    }

    /// The slow NICs, NVLinks, PCIe links and uplinks.
    pub fn links(&self) -> SlowLinks<'_> {
        SlowLinks {
            nics: &self.nics,
            nvlinks: &self.nvlinks,
            pcies: &self.pcies,
            uplinks: &self.uplinks,
        }
    }

    /// The largest factor of a rank, NIC, NVLink, PCIe link or uplink (1 without any, a rank's
    /// spread included): no task takes more than that many times its priced
    /// duration.
    pub fn max_factor(&self) -> f64 {
        let spread = self.spread.as_ref().map_or(1.0, |s| s.slowest().1);
        self.slow
            .iter()
            .map(|s| s.factor * spread)
            .chain(self.nics.iter().map(|n| n.factor))
            .chain(self.nvlinks.iter().map(|n| n.factor))
            .chain(self.pcies.iter().map(|n| n.factor))
            .chain(self.uplinks.iter().map(|n| n.factor))
            .fold(spread, f64::max)
    }

    /// The slow ranks, by rank.
    pub fn ranks(&self) -> &[SlowRank] {
        &self.slow
    }

    /// The slow NICs, by NIC.
    pub fn nics(&self) -> &[ResolvedSlowNic] {
        &self.nics
    }

    /// The slow NVLinks, by rank.
    pub fn nvlinks(&self) -> &[ResolvedSlowNvlink] {
        &self.nvlinks
    }

    /// The slow PCIe links, by rank.
    pub fn pcies(&self) -> &[ResolvedSlowPcie] {
        &self.pcies
    }

    /// The slow leaf uplinks, by leaf.
    pub fn uplinks(&self) -> &[ResolvedSlowUplink] {
        &self.uplinks
    }

    /// The factor of each of `graph`'s groups: a rank's own group (a group
    /// of that rank alone, where its kernels run) takes its
    /// [`Stragglers::rank_factor`], every other group 1; empty without slow
    /// ranks or a spread.
    pub fn group_factors(&self, graph: &TaskGraph) -> Vec<f64> {
        if self.slow.is_empty() && self.spread.is_none() {
            return Vec::new();
        }
        graph
            .groups()
            .iter()
            .map(|ranks| match ranks.as_slice() {
                [rank] => self.rank_factor(rank.0),
                _ => 1.0,
            })
            .collect()
    }
}

/// `base`, the priced duration of task `id`, stretched by its rank's factor
/// when it is a compute kernel of a slow rank (`factors` from
/// [`Stragglers::group_factors`]; empty: no slow rank).
#[inline]
pub fn stretched(graph: &TaskGraph, factors: &[f64], id: TaskId, base: SimDuration) -> SimDuration {
    if factors.is_empty() {
        return base;
    }
    let factor = factors[graph.group_of(id).0 as usize];
    if factor == 1.0 || !graph.kind_of(id).is_compute() {
        return base;
    }
    SimDuration((base.0 as f64 * factor).ceil() as u64)
}

impl fmt::Display for SlowRank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} ×{}", self.rank, self.factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_ranks_are_checked_and_sorted() {
        let ok = Stragglers::new(
            vec![
                SlowRank {
                    rank: 5,
                    factor: 1.5,
                },
                SlowRank {
                    rank: 2,
                    factor: 2.0,
                },
            ],
            8,
        )
        .unwrap();
        assert_eq!(
            ok.ranks().iter().map(|s| s.rank).collect::<Vec<_>>(),
            [2, 5]
        );
        let out = Stragglers::new(
            vec![SlowRank {
                rank: 8,
                factor: 1.5,
            }],
            8,
        );
        assert_eq!(
            out,
            Err(StragglerError::RankOutOfRange {
                part: SlowPart::Gpu,
                rank: 8,
                gpus: 8
            })
        );
        for factor in [0.5, f64::NAN, f64::INFINITY, 101.0] {
            assert!(Stragglers::new(vec![SlowRank { rank: 1, factor }], 8).is_err());
        }
        let twice = vec![
            SlowRank {
                rank: 1,
                factor: 1.5,
            },
            SlowRank {
                rank: 1,
                factor: 2.0,
            },
        ];
        assert_eq!(
            Stragglers::new(twice, 8),
            Err(StragglerError::GivenTwice {
                part: SlowPart::Gpu,
                rank: 1
            })
        );
    }
}
