//! The recompute choice of a scenario, with its names (the schedule's kind
//! is the schedule module's: [`schedules::ScheduleKind`]).

use serde::{Deserialize, Serialize};

/// Activation recomputation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recompute {
    /// Keep every activation.
    None,
    /// Recompute only the attention core (scores, softmax, dropout, attention
    /// over values) before each backward (Korthikanti et al. 2022, Sec. 5).
    Selective,
    /// Keep only each layer's input; recompute the forward before each backward.
    Full,
}

impl Recompute {
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }

    pub fn parse(text: &str) -> Option<Recompute> {
        match text {
            "none" => Some(Recompute::None),
            "selective" => Some(Recompute::Selective),
            "full" => Some(Recompute::Full),
            _ => None,
        }
    }
}
