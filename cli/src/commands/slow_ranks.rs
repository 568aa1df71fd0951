//! `--slow-rank R:F`, `--slow-nic R:F`, `--slow-nvlink R:F`,
//! `--slow-pcie R:F` and `--slow-uplink R:F` (simulate, run-plan): a GPU
//! whose compute kernels take F times as long as its peers'
//! ([`sim::straggler`]), the NIC rank R sends through at 1/F of its
//! bandwidth, rank R's NVLink or PCIe link at 1/F of its own
//! ([`sim::slow_link`]), and the uplinks of the leaf switch above rank R's
//! NIC at 1/F of theirs ([`sim::slow_uplink`]). `simulate` runs the scenario with and without them
//! and reports what they cost the step. `--rank-spread lognormal:SIGMA`
//! draws every GPU's speed from a spread ([`sim::rank_spread`]).

use crate::exit::user_error;
use sim::rank_spread::{DrawnSpread, RankSpread};
use sim::scenario::Scenario;
use sim::slow_link::{
    ResolvedSlowNic, ResolvedSlowNvlink, ResolvedSlowPcie, SlowNic, SlowNvlink, SlowPcie,
};
use sim::slow_uplink::{ResolvedSlowUplink, SlowUplink};
use sim::straggler::{SlowRank, Stragglers};

/// "3:1.2" → (3, 1.2); `what` says what the factor slows, for the message.
fn parse_rank_factor(text: &str, what: &str) -> Result<(u32, f64), String> {
    let (rank, factor) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}': RANK:FACTOR, e.g. 3:1.2 ({what})"))?;
    let rank = rank
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("'{text}': the rank '{rank}' is not a rank number"))?;
    let factor = factor
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("'{text}': the factor '{factor}' is not a number"))?;
    Ok((rank, factor))
}

/// "3:1.2" → rank 3, factor 1.2.
pub fn parse_slow_rank(text: &str) -> Result<SlowRank, String> {
    let (rank, factor) = parse_rank_factor(text, "rank 3's kernels 1.2 times as long")?;
    Ok(SlowRank { rank, factor })
}

/// "3:2" → the NIC rank 3 sends through, at half its bandwidth.
pub fn parse_slow_nic(text: &str) -> Result<SlowNic, String> {
    let (rank, factor) = parse_rank_factor(text, "rank 3's NIC at 1/1.2 of its bandwidth")?;
    Ok(SlowNic { rank, factor })
}

/// "3:2" → rank 3's NVLink at half its bandwidth.
pub fn parse_slow_nvlink(text: &str) -> Result<SlowNvlink, String> {
    let (rank, factor) = parse_rank_factor(text, "rank 3's NVLink at 1/1.2 of its bandwidth")?;
    Ok(SlowNvlink { rank, factor })
}

/// "3:2" → rank 3's PCIe link at half its bandwidth.
pub fn parse_slow_pcie(text: &str) -> Result<SlowPcie, String> {
    let (rank, factor) = parse_rank_factor(text, "rank 3's PCIe link at 1/1.2 of its bandwidth")?;
    Ok(SlowPcie { rank, factor })
}

/// "3:2" → the uplinks of the leaf switch above rank 3's NIC at half their bandwidth.
pub fn parse_slow_uplink(text: &str) -> Result<SlowUplink, String> {
    let (rank, factor) = parse_rank_factor(
        text,
        "the uplinks of rank 3's leaf switch at 1/1.2 of their bandwidth",
    )?;
    Ok(SlowUplink { rank, factor })
}

/// "lognormal:0.05" → each GPU's kernel time × e^(0.05·Z), Z standard normal.
pub fn parse_rank_spread(text: &str) -> Result<RankSpread, String> {
    let sigma = text.strip_prefix("lognormal:").ok_or_else(|| {
        format!("'{text}': lognormal:SIGMA, e.g. lognormal:0.05 (the only spread built)")
    })?;
    let sigma = sigma
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("'{text}': sigma '{sigma}' is not a number"))?;
    RankSpread::lognormal(sigma).map_err(|e| e.to_string())
}

/// The flags' slow parts: `--slow-rank`, `--slow-nic`, `--slow-nvlink`,
/// `--slow-pcie`, `--slow-uplink`.
#[derive(Debug, Clone, Copy)]
pub struct SlowFlags<'a> {
    pub ranks: &'a [SlowRank],
    pub nics: &'a [SlowNic],
    pub nvlinks: &'a [SlowNvlink],
    pub pcies: &'a [SlowPcie],
    pub uplinks: &'a [SlowUplink],
}

/// The flags' slow ranks, NICs, NVLinks, PCIe links and uplinks, checked
/// against the scenario's ranks, NICs, nodes and fat tree (exit 2), and the
/// spread of GPU speeds drawn with the scenario's seed.
pub fn stragglers_of(
    scenario: &Scenario,
    flags: SlowFlags<'_>,
    spread: Option<RankSpread>,
) -> anyhow::Result<Stragglers> {
    let SlowFlags {
        ranks: slow,
        nics,
        nvlinks,
        pcies,
        uplinks,
    } = flags;
    let gpus = scenario.layout.gpus();
    Ok(Stragglers::new(slow.to_vec(), gpus)
        .map_err(|e| user_error(format!("--slow-rank: {e}")))?
        .with_slow_nics(nics, scenario)
        .map_err(|e| user_error(format!("--slow-nic: {e}")))?
        .with_slow_nvlinks(nvlinks, scenario)
        .map_err(|e| user_error(format!("--slow-nvlink: {e}")))?
        .with_slow_pcies(pcies, scenario)
        .map_err(|e| user_error(format!("--slow-pcie: {e}")))?
        .with_slow_uplinks(uplinks, scenario)
        .map_err(|e| user_error(format!("--slow-uplink: {e}")))?
        .with_spread(spread, scenario.seed, gpus))
}

/// The summary of a drawn spread: its width and seed, its slowest and
/// fastest ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct SpreadSummary {
    pub sigma: f64,
    pub seed: u64,
    pub slowest: (u32, f64),
    pub fastest: (u32, f64),
}

impl SpreadSummary {
    /// The summary of `drawn`.
    pub fn of(drawn: &DrawnSpread) -> SpreadSummary {
        SpreadSummary {
            sigma: drawn.spread.sigma,
            seed: drawn.seed,
            slowest: drawn.slowest(),
            fastest: drawn.fastest(),
        }
    }

    /// `{distribution, sigma, seed, slowest, fastest}` of `--json`.
    pub fn json(&self) -> serde_json::Value {
        let rank_factor =
            |(rank, factor): (u32, f64)| serde_json::json!({"rank": rank, "factor": factor});
        serde_json::json!({
            "distribution": "lognormal",
            "sigma": self.sigma,
            "seed": self.seed,
            "slowest": rank_factor(self.slowest),
            "fastest": rank_factor(self.fastest),
        })
    }
}

impl std::fmt::Display for SpreadSummary {
    /// "GPU speeds log-normal σ 0.05 (seed 0), ×0.842 (rank 12) to ×1.187 (rank 3)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GPU speeds log-normal σ {} (seed {}), ×{:.3} (rank {}) to ×{:.3} (rank {})",
            self.sigma, self.seed, self.fastest.1, self.fastest.0, self.slowest.1, self.slowest.0
        )
    }
}

/// Every slow part of `stragglers`, as the summaries name them ("rank 3
/// ×1.2, NIC 3 (node 0, rank 3's) at 1/2 of its bandwidth"); `None`
/// without any.
pub fn slow_parts(stragglers: &Stragglers) -> Option<String> {
    let items: Vec<String> = stragglers
        .ranks()
        .iter()
        .map(ToString::to_string)
        .chain(stragglers.nics().iter().map(ToString::to_string))
        .chain(stragglers.nvlinks().iter().map(ToString::to_string))
        .chain(stragglers.pcies().iter().map(ToString::to_string))
        .chain(stragglers.uplinks().iter().map(ToString::to_string))
        .chain(
            stragglers
                .spread()
                .map(|drawn| SpreadSummary::of(drawn).to_string()),
        )
        .collect();
    (!items.is_empty()).then(|| items.join(", "))
}

/// What slow ranks, NICs, NVLinks, PCIe links and uplinks cost one iteration: the same scenario's
/// iteration time without them, and the difference.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowRankCost {
    pub slow: Vec<SlowRank>,
    pub nics: Vec<ResolvedSlowNic>,
    pub nvlinks: Vec<ResolvedSlowNvlink>,
    pub pcies: Vec<ResolvedSlowPcie>,
    pub uplinks: Vec<ResolvedSlowUplink>,
    pub spread: Option<SpreadSummary>,
    pub without_s: f64,
    pub with_s: f64,
}

impl SlowRankCost {
    /// What `stragglers` cost a run of `scenario` that took `with_s`: the
    /// same scenario simulated without them; `None` without stragglers.
    pub fn measured(
        scenario: &sim::scenario::Scenario,
        stragglers: &Stragglers,
        with_s: f64,
    ) -> anyhow::Result<Option<SlowRankCost>> {
        if stragglers.is_empty() {
            return Ok(None);
        }
        let without_s = sim::simulate(scenario)
            .map_err(crate::exit::simulation_error)?
            .metrics
            .iteration_time_s;
        Ok(Some(SlowRankCost::of(stragglers, without_s, with_s)))
    }

    /// What `stragglers` cost: `with_s` against `without_s`.
    pub fn of(stragglers: &Stragglers, without_s: f64, with_s: f64) -> SlowRankCost {
        SlowRankCost {
            slow: stragglers.ranks().to_vec(),
            nics: stragglers.nics().to_vec(),
            nvlinks: stragglers.nvlinks().to_vec(),
            pcies: stragglers.pcies().to_vec(),
            uplinks: stragglers.uplinks().to_vec(),
            spread: stragglers.spread().map(SpreadSummary::of),
            without_s,
            with_s,
        }
    }

    /// The summary's label: "slow ranks", "slow NICs", "slow NVLinks", or
    /// what of them are slow ("slow ranks, NICs"); "rank spread" for a
    /// spread alone, "+ spread" after the others.
    pub fn label(&self) -> String {
        let kinds: Vec<&str> = [
            ("ranks", !self.slow.is_empty()),
            ("NICs", !self.nics.is_empty()),
            ("NVLinks", !self.nvlinks.is_empty()),
            ("PCIe links", !self.pcies.is_empty()),
            ("uplinks", !self.uplinks.is_empty()),
        ]
        .iter()
        .filter(|(_, slow)| *slow)
        .map(|(kind, _)| *kind)
        .collect();
        match (kinds.is_empty(), self.spread.is_some()) {
            (true, _) => "rank spread".to_string(),
            (false, true) => format!("slow {} + spread", kinds.join(", ")),
            (false, false) => format!("slow {}", kinds.join(", ")),
        }
    }

    /// "rank 3 ×1.2: the iteration takes 12.3 ms (+4.1 %) more than without it".
    pub fn line(&self) -> String {
        let items: Vec<String> = self
            .slow
            .iter()
            .map(ToString::to_string)
            .chain(self.nics.iter().map(ToString::to_string))
            .chain(self.nvlinks.iter().map(ToString::to_string))
            .chain(self.pcies.iter().map(ToString::to_string))
            .chain(self.uplinks.iter().map(ToString::to_string))
            .chain(self.spread.iter().map(ToString::to_string))
            .collect();
        let extra_s = self.with_s - self.without_s;
        format!(
            "{}: the iteration takes {:.1} ms ({:+.1} %) more than without {}",
            items.join(", "),
            extra_s * 1e3,
            100.0 * extra_s / self.without_s,
            if items.len() == 1 { "it" } else { "them" }
        )
    }

    /// The `slow_ranks` object of `--json` (with `nics`, `nvlinks`,
    /// `pcies` and `uplinks` when those are slow).
    pub fn json(&self) -> serde_json::Value {
        let mut value = serde_json::json!({
            "ranks": self.slow,
            "iteration_time_without_s": self.without_s,
            "cost_s": self.with_s - self.without_s,
        });
        if !self.nics.is_empty() {
            value["nics"] = serde_json::json!(self.nics);
        }
        if !self.nvlinks.is_empty() {
            value["nvlinks"] = serde_json::json!(self.nvlinks);
        }
        if !self.pcies.is_empty() {
            value["pcies"] = serde_json::json!(self.pcies);
        }
        if !self.uplinks.is_empty() {
            value["uplinks"] = serde_json::json!(self.uplinks);
        }
        if let Some(spread) = &self.spread {
            value["spread"] = spread.json();
        }
        value
    }
}
