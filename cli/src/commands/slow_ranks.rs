//! `--slow-rank R:F` (simulate, run-plan): a GPU whose compute kernels take F
//! times as long as its peers' ([`sim::straggler`]). `simulate` runs the
//! scenario with and without them and reports what they cost the step.

use crate::exit::user_error;
use sim::scenario::Scenario;
use sim::straggler::{SlowRank, Stragglers};

/// "3:1.2" → rank 3, factor 1.2.
pub fn parse_slow_rank(text: &str) -> Result<SlowRank, String> {
    let (rank, factor) = text.split_once(':').ok_or_else(|| {
        format!("'{text}': RANK:FACTOR, e.g. 3:1.2 (rank 3's kernels 1.2 times as long)")
    })?;
    let rank = rank
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("'{text}': the rank '{rank}' is not a rank number"))?;
    let factor = factor
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("'{text}': the factor '{factor}' is not a number"))?;
    Ok(SlowRank { rank, factor })
}

/// The flags' slow ranks, checked against the scenario's ranks (exit 2).
pub fn stragglers_of(scenario: &Scenario, slow: &[SlowRank]) -> anyhow::Result<Stragglers> {
    Stragglers::new(slow.to_vec(), scenario.layout.gpus())
        .map_err(|e| user_error(format!("--slow-rank: {e}")))
}

/// What slow ranks cost one iteration: the same scenario's iteration time
/// without them, and the difference.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowRankCost {
    pub slow: Vec<SlowRank>,
    pub without_s: f64,
    pub with_s: f64,
}

impl SlowRankCost {
    /// "rank 3 ×1.2: the iteration takes 12.3 ms (+4.1 %) more than without it".
    pub fn line(&self) -> String {
        let ranks: Vec<String> = self.slow.iter().map(ToString::to_string).collect();
        let extra_s = self.with_s - self.without_s;
        format!(
            "{}: the iteration takes {:.1} ms ({:+.1} %) more than without {}",
            ranks.join(", "),
            extra_s * 1e3,
            100.0 * extra_s / self.without_s,
            if ranks.len() == 1 { "it" } else { "them" }
        )
    }

    /// The `slow_ranks` object of `--json`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "ranks": self.slow,
            "iteration_time_without_s": self.without_s,
            "cost_s": self.with_s - self.without_s,
        })
    }
}
