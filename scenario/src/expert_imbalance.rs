//! `expert_imbalance` parsed once into what it says: a uniform routing, a
//! geometric skew, or a histogram file of token counts per expert (or
//! counts already read, one iteration of a routing trace). Rules
//! read the variant, never the text; the text as written is what outputs
//! name (its `Display` and serialization).

use serde::{Serialize, Serializer};
use std::fmt;
use std::path::PathBuf;

/// Largest expert histogram file read (bytes): a number per expert.
const MAX_HISTOGRAM_BYTES: u64 = 1 << 20;

/// How the routed token copies spread over the experts.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpertImbalance {
    /// 1/E each (the default).
    Uniform,
    /// `skew:X` (X ≥ 1): geometric from expert 0 down to expert E−1, the
    /// first getting X times the last's share.
    Skew { factor: f64, written: String },
    /// A file of E token counts (whitespace or commas between them).
    Histogram(PathBuf),
    /// E token counts already read, named by where they came from (one
    /// iteration of a routing trace: `FILE:LINE`); never parsed from text.
    Counts { counts: Vec<f64>, written: String },
}

impl ExpertImbalance {
    /// `uniform`, `skew:X`, or else a histogram file's path (read by
    /// [`ExpertImbalance::shares`]).
    pub fn parse(text: &str) -> Result<ExpertImbalance, String> {
        if text == "uniform" {
            return Ok(ExpertImbalance::Uniform);
        }
        let Some(x) = text.strip_prefix("skew:") else {
            return Ok(ExpertImbalance::Histogram(PathBuf::from(text)));
        };
        let factor: f64 = x
            .trim()
            .parse()
            .map_err(|_| format!("'{text}': skew:X needs a number X ≥ 1"))?;
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(format!("'{text}': skew:X needs a finite X ≥ 1"));
        }
        Ok(ExpertImbalance::Skew {
            factor,
            written: text.to_string(),
        })
    }

    pub fn is_uniform(&self) -> bool {
        *self == ExpertImbalance::Uniform
    }

    /// Each of the `experts` experts' share of the routed copies (sums to
    /// 1); a histogram is read here.
    pub fn shares(&self, experts: u64) -> Result<Vec<f64>, String> {
        let e = experts as usize;
        let weights: Vec<f64> = match self {
            ExpertImbalance::Uniform => return Ok(vec![1.0 / experts as f64; e]),
            ExpertImbalance::Skew { factor, .. } => {
                let last = (e.max(2) - 1) as f64;
                (0..e).map(|i| factor.powf(-(i as f64) / last)).collect()
            }
            ExpertImbalance::Histogram(path) => self.histogram(path)?,
            ExpertImbalance::Counts { counts, .. } => counts.clone(),
        };
        if weights.len() as u64 != experts {
            return Err(format!(
                "'{self}' has {} counts; the model has {experts} experts",
                weights.len()
            ));
        }
        let total: f64 = weights.iter().sum();
        if !(total > 0.0 && total.is_finite()) {
            return Err(format!("'{self}': the counts sum to zero"));
        }
        Ok(weights.iter().map(|w| w / total).collect())
    }

    /// The routing's shares, read once: one set for every MoE layer, or,
    /// when `self` is a histogram file of one line of `experts` counts per
    /// MoE layer (`moe_layers` lines; lines that start with `#` are
    /// comments), one set per layer. A file of `experts` counts in all keeps
    /// one routing for every layer.
    pub fn routing_shares(&self, experts: u64, moe_layers: u64) -> Result<RoutingShares, String> {
        let ExpertImbalance::Histogram(path) = self else {
            return self.shares(experts).map(RoutingShares::Alike);
        };
        let text = self.histogram_text(path)?;
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(index, line)| (index + 1, line.trim()))
            .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
            .collect();
        let all: usize = lines
            .iter()
            .map(|(_, line)| token_counts(line).map_or(0, |counts| counts.len()))
            .sum();
        if all as u64 == experts || lines.len() < 2 {
            let counts: Vec<&str> = lines.iter().map(|(_, line)| *line).collect();
            let counts =
                token_counts(&counts.join("\n")).map_err(|error| format!("'{self}': {error}"))?;
            let alike = ExpertImbalance::Counts {
                counts,
                written: self.to_string(),
            };
            return alike.shares(experts).map(RoutingShares::Alike);
        }
        if lines.len() as u64 != moe_layers {
            return Err(format!(
                "'{self}' has {all} counts on {} lines; the model has {experts} experts and \
                 {moe_layers} MoE layers: give {experts} counts (one routing for every layer) or \
                 one line of {experts} counts per MoE layer ({moe_layers} lines)",
                lines.len()
            ));
        }
        let mut layers = Vec::with_capacity(lines.len());
        for (number, line) in lines {
            let counts =
                token_counts(line).map_err(|error| format!("'{self}' line {number}: {error}"))?;
            let layer = ExpertImbalance::Counts {
                counts,
                written: format!("{self}:{number}"),
            };
            layers.push(layer.shares(experts)?);
        }
        Ok(RoutingShares::PerLayer(layers))
    }

    /// The histogram file's text, read once.
    fn histogram_text(&self, path: &std::path::Path) -> Result<String, String> {
        input_file::read_to_string_capped(path, MAX_HISTOGRAM_BYTES).map_err(|error| {
            format!("'{self}' is neither uniform, skew:X nor a readable histogram file: {error}")
        })
    }

    /// The histogram file's counts (one per expert, checked by the caller).
    fn histogram(&self, path: &std::path::Path) -> Result<Vec<f64>, String> {
        let text = self.histogram_text(path)?;
        token_counts(&text).map_err(|error| format!("'{self}': {error}"))
    }
}

/// What a routing gives each expert.
#[derive(Debug, Clone, PartialEq)]
pub enum RoutingShares {
    /// The same shares in every MoE layer.
    Alike(Vec<f64>),
    /// Each MoE layer's shares, in layer order.
    PerLayer(Vec<Vec<f64>>),
}

/// The token counts `text` lists (whitespace or commas between them), each
/// a finite non-negative number, or the first word that is not.
pub fn token_counts(text: &str) -> Result<Vec<f64>, String> {
    let mut values = Vec::new();
    for word in text
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
    {
        let value: f64 = word
            .parse()
            .map_err(|_| format!("'{word}' is not a token count"))?;
        if !(value.is_finite() && value >= 0.0) {
            return Err(format!("'{word}' is not a non-negative count"));
        }
        values.push(value);
    }
    Ok(values)
}

impl fmt::Display for ExpertImbalance {
    /// As written: `uniform`, `skew:X`, the file's path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpertImbalance::Uniform => f.write_str("uniform"),
            ExpertImbalance::Skew { written, .. } => f.write_str(written),
            ExpertImbalance::Histogram(path) => write!(f, "{}", path.display()),
            ExpertImbalance::Counts { written, .. } => f.write_str(written),
        }
    }
}

impl Serialize for ExpertImbalance {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
