//! What `simulate` says of the defaults a scenario took by its era
//! (`sim::scenario::era`): the summary's `defaults` line and `--json`'s
//! `defaults` object, naming each default and why it applied.

use sim::scenario::era::{Era, EraDefault};
use sim::scenario::Scenario;

/// The era defaults one run took, as the summary and `--json` state them.
pub struct DefaultsNote {
    era: Era,
    why: String,
    /// Each default's name (`bf16`, `stack megatron-core-2024`, …).
    applied: Vec<String>,
    /// The flags that choose otherwise.
    flags: Vec<&'static str>,
}

impl DefaultsNote {
    /// `todays_recompute`: the command line dropped its embedded scenario's
    /// full recompute for today's era (`ScenarioArgs::takes_todays_recompute`).
    pub fn of(scenario: &Scenario, todays_recompute: bool) -> DefaultsNote {
        let defaults = &scenario.defaults;
        let mut applied = Vec::new();
        let mut flags = Vec::new();
        for default in &defaults.applied {
            applied.push(default.describe(&scenario.stack.name));
            flags.push(match default {
                EraDefault::Stack => "--stack",
                EraDefault::Precision(_) => "--precision",
                EraDefault::SequenceParallel => "--sequence-parallel=false",
                EraDefault::DistributedOptimizer => "--distributed-optimizer=false",
            });
        }
        if todays_recompute {
            applied.push("no recompute".to_string());
            flags.push("--recompute");
        }
        DefaultsNote {
            era: defaults.era,
            why: defaults.why.clone(),
            applied,
            flags,
        }
    }

    /// The summary's line, where any default applied.
    pub fn line(&self) -> Option<String> {
        (!self.applied.is_empty()).then(|| {
            format!(
                "{}, as {}; {} to choose",
                self.applied.join(", "),
                self.why,
                self.flags.join(", ")
            )
        })
    }

    /// `--json`'s `defaults`: `era` (`paper` or `today`), `why`, `applied`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "era": match self.era {
                Era::Paper => "paper",
                Era::Today => "today",
            },
            "why": self.why,
            "applied": self.applied,
        })
    }
}
