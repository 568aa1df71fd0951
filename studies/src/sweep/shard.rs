//! Sharding: `--shard i/n` keeps candidate k (its index among the valid
//! candidates, in generation order) when k mod n = i. Every shard enumerates
//! the whole space, so the numbering is the same everywhere, and the n shards
//! partition the candidates.

use super::enumerate::ValidCandidate;
use super::SweepError;
use serde::{Deserialize, Serialize};

/// Shard `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Parses `i/n` (0 ≤ i < n).
    pub fn parse(text: &str) -> Result<Shard, SweepError> {
        let error = || SweepError::ShardSyntax {
            text: text.to_string(),
        };
        let (index, count) = text.split_once('/').ok_or_else(error)?;
        let index: u32 = index.trim().parse().map_err(|_| error())?;
        let count: u32 = count.trim().parse().map_err(|_| error())?;
        if count == 0 || index >= count {
            return Err(error());
        }
        Ok(Shard { index, count })
    }

    /// Whether candidate `index` belongs to this shard.
    pub fn contains(&self, index: u32) -> bool {
        index % self.count == self.index
    }

    /// The candidates of this shard, in order.
    pub fn select(&self, candidates: &[ValidCandidate]) -> Vec<ValidCandidate> {
        candidates
            .iter()
            .filter(|c| self.contains(c.index))
            .cloned()
            .collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_syntax_is_checked() {
        assert_eq!(
            Shard::parse("3/16").unwrap(),
            Shard {
                index: 3,
                count: 16
            }
        );
        for bad in ["16/16", "1", "a/2", "0/0", "-1/4"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shards_partition_the_indices() {
        let shards: Vec<Shard> = (0..3).map(|index| Shard { index, count: 3 }).collect();
        for k in 0..20 {
            assert_eq!(shards.iter().filter(|s| s.contains(k)).count(), 1);
        }
    }
}
