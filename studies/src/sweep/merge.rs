//! Merging shard documents: the shards of one sweep (same space, same
//! counts, shard indices exactly 0..n of the same n) combine into the
//! document the unsharded sweep writes — results re-ranked with the same
//! total order, dropped layouts in candidate order, no shard field.

use super::output::{SweepCounts, SweepOutput};
use super::ranking::rank;
use super::SweepError;

/// Combines the documents of shards 0..n of one sweep (in any order). Every
/// shard's `i/n` is checked first (n ≥ 1, i < n), and the set of shards is
/// compared with 0..n without building it, so nothing is sized by a count.
pub fn merge(mut shards: Vec<SweepOutput>) -> Result<SweepOutput, SweepError> {
    let error = |message: String| SweepError::Merge(message);
    let first = shards
        .first()
        .ok_or_else(|| error("no shard files given".to_string()))?
        .clone();
    let mut seen = Vec::new();
    for (position, doc) in shards.iter().enumerate() {
        let Some(shard) = doc.shard else {
            return Err(error(format!(
                "file {} is a whole sweep, not a shard (it has no \"shard\" key)",
                position + 1
            )));
        };
        if doc.sweep != first.sweep {
            return Err(error(format!(
                "file {} comes from a different sweep (model, topology, GPUs, batch or constraints differ)",
                position + 1
            )));
        }
        let global = |c: &SweepCounts| (c.examined, c.rejected, c.valid);
        if global(&doc.counts) != global(&first.counts) || doc.rejections != first.rejections {
            return Err(error(format!(
                "file {} enumerated a different candidate list (another build or input files?)",
                position + 1
            )));
        }
        // Checked first: nothing is ever sized by a shard count (n files
        // can hold at most n shards, so a larger count is refused below
        // without allocating).
        if shard.count == 0 || shard.index >= shard.count {
            return Err(error(format!(
                "file {} names shard {shard}: a shard is i/n with n ≥ 1 and 0 ≤ i < n",
                position + 1
            )));
        }
        if !doc.pruned.is_empty() {
            return Err(error(format!(
                "file {} was pruned (--prune keeps its own shard's top k, not the sweep's); merge shards run without --prune",
                position + 1
            )));
        }
        seen.push(shard);
    }
    seen.sort();
    let count = seen[0].count;
    let complete = seen.iter().all(|s| s.count == count)
        && seen.len() == count as usize
        && (0u32..).zip(&seen).all(|(expected, s)| s.index == expected);
    if !complete {
        let listed: Vec<String> = seen.iter().map(|s| s.to_string()).collect();
        let files = match shards.len() {
            1 => "1 file given".to_string(),
            n => format!("{n} files given"),
        };
        return Err(error(format!(
            "need shards 0/{count} … {}/{count} exactly once each, got {} ({files})",
            count - 1,
            listed.join(", ")
        )));
    }
    let mut results = Vec::new();
    let mut dropped = Vec::new();
    for doc in shards.iter_mut() {
        results.append(&mut doc.results);
        dropped.append(&mut doc.dropped);
    }
    if results.len() + dropped.len() != first.counts.valid {
        return Err(error(format!(
            "the shards hold {} layouts but the sweep has {} valid ones",
            results.len() + dropped.len(),
            first.counts.valid
        )));
    }
    rank(&mut results);
    dropped.sort_by_key(|d| d.index);
    Ok(SweepOutput {
        schema_version: first.schema_version,
        sweep: first.sweep,
        shard: None,
        counts: SweepCounts {
            dropped_out_of_memory: dropped.len(),
            simulated: results.len(),
            pruned: 0,
            ..first.counts
        },
        rejections: first.rejections,
        results,
        dropped,
        pruned: Vec::new(),
    })
}
