//! Checkpoint save and restore times from the bytes each rank holds and the
//! storage's bandwidths.
//!
//! A checkpoint writes `bytes_per_rank` from every rank. A node writes
//! `bytes_per_rank × ranks_per_node` through its own link to storage
//! (`per_node_write_bytes_per_s`), and all nodes together share the storage's
//! aggregate bandwidth (`aggregate_write_bytes_per_s`); the time is the
//! larger of the two, the binding one winning. Restores read the same bytes
//! through the read bandwidths.
//!
//! # Synchronous and asynchronous checkpoints
//!
//! - **Synchronous**: training stops for the whole persist; the blocking
//!   cost is the write time.
//! - **Asynchronous** (copy to host, then persist): training stops only for
//!   the device-to-host copy of each rank's bytes at `host_copy_bytes_per_s`
//!   (the PCIe or host-memory rate one GPU achieves; every GPU copies its own
//!   shard in parallel); the persist then overlaps training. The next
//!   checkpoint cannot start before the previous persist finishes, so when
//!   the interval τ of work is shorter than the persist P, training stalls
//!   P − τ before the next copy. The blocking cost per checkpoint is then
//!   `copy + max(0, P − τ)` ([`CheckpointCost::blocking_s`]).
//!
//!   The checkpoint is durable only when its persist ends, P after the
//!   copy ([`CheckpointCost::durability_delay_s`]): a failure before that
//!   loses the work back to the previous checkpoint, which the closed form
//!   and the Monte-Carlo both count ([`crate::closed_form`]).

use serde::Serialize;

use crate::error::{checked_product, GoodputError, Problems};

/// The storage the checkpoints go to, bandwidths in bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StorageSpec {
    /// One node's write bandwidth to storage.
    pub per_node_write_bytes_per_s: f64,
    /// One node's read bandwidth from storage.
    pub per_node_read_bytes_per_s: f64,
    /// The storage system's total write bandwidth, all nodes together.
    pub aggregate_write_bytes_per_s: f64,
    /// The storage system's total read bandwidth, all nodes together.
    pub aggregate_read_bytes_per_s: f64,
}

/// Whether training waits for the whole persist or only the host copy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CheckpointMode {
    /// Training blocks for the whole write to storage.
    Synchronous,
    /// Training blocks for the device-to-host copy only; the persist overlaps.
    Asynchronous {
        /// One GPU's device-to-host copy bandwidth, bytes per second.
        host_copy_bytes_per_s: f64,
    },
}

/// What one checkpoint holds and where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CheckpointSpec {
    /// Bytes each rank saves (its model, optimizer and other state shard).
    pub bytes_per_rank: u64,
    /// Ranks (GPUs) per node.
    pub ranks_per_node: u64,
    /// Nodes in the job.
    pub nodes: u64,
    /// The storage.
    pub storage: StorageSpec,
    /// Synchronous or asynchronous.
    pub mode: CheckpointMode,
}

/// The times one checkpoint takes, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CheckpointCost {
    /// Time to write one checkpoint to storage (the persist).
    pub persist_s: f64,
    /// Time to read one checkpoint back on a restart.
    pub restore_s: f64,
    /// Time training stops for each checkpoint, before any stall waiting
    /// for a previous persist (the persist itself when synchronous, the
    /// host copy when asynchronous).
    pub copy_block_s: f64,
    /// Whether the persist overlaps training.
    pub asynchronous: bool,
    /// Bytes written by the whole job per checkpoint.
    pub total_bytes: u64,
}

impl CheckpointCost {
    /// Training time lost to one checkpoint when checkpoints are `interval_s`
    /// of work apart: the blocking copy plus any stall waiting for the
    /// previous persist (asynchronous), or the whole persist (synchronous).
    pub fn blocking_s(&self, interval_s: f64) -> f64 {
        if self.asynchronous {
            self.copy_block_s + (self.persist_s - interval_s).max(0.0)
        } else {
            self.persist_s
        }
    }

    /// Time from the end of the blocking part until the checkpoint is
    /// durable: the persist when it overlaps training, else 0.
    pub fn durability_delay_s(&self) -> f64 {
        if self.asynchronous {
            self.persist_s
        } else {
            0.0
        }
    }

    /// A cost with no checkpoint at all (nothing to save or restore).
    pub fn free() -> Self {
        Self {
            persist_s: 0.0,
            restore_s: 0.0,
            copy_block_s: 0.0,
            asynchronous: false,
            total_bytes: 0,
        }
    }
}

/// The save and restore times of one checkpoint.
pub fn checkpoint_cost(spec: &CheckpointSpec) -> Result<CheckpointCost, GoodputError> {
    let mut problems = Problems::new();
    problems.nonzero("checkpoint.ranks_per_node", spec.ranks_per_node);
    problems.nonzero("checkpoint.nodes", spec.nodes);
    let storage = &spec.storage;
    problems.positive(
        "storage.per_node_write_bytes_per_s",
        storage.per_node_write_bytes_per_s,
    );
    problems.positive(
        "storage.per_node_read_bytes_per_s",
        storage.per_node_read_bytes_per_s,
    );
    problems.positive(
        "storage.aggregate_write_bytes_per_s",
        storage.aggregate_write_bytes_per_s,
    );
    problems.positive(
        "storage.aggregate_read_bytes_per_s",
        storage.aggregate_read_bytes_per_s,
    );
    if let CheckpointMode::Asynchronous {
        host_copy_bytes_per_s,
    } = spec.mode
    {
        problems.positive(
            "checkpoint.mode.host_copy_bytes_per_s",
            host_copy_bytes_per_s,
        );
    }
    problems.finish()?;
    let node_bytes = checked_product(
        "checkpoint.bytes_per_rank",
        spec.bytes_per_rank,
        spec.ranks_per_node,
    )?;
    let total_bytes = checked_product("checkpoint.nodes", node_bytes, spec.nodes)?;
    let binding = |node_rate: f64, aggregate_rate: f64| {
        (node_bytes as f64 / node_rate).max(total_bytes as f64 / aggregate_rate)
    };
    let persist_s = binding(
        storage.per_node_write_bytes_per_s,
        storage.aggregate_write_bytes_per_s,
    );
    let restore_s = binding(
        storage.per_node_read_bytes_per_s,
        storage.aggregate_read_bytes_per_s,
    );
    let (copy_block_s, asynchronous) = match spec.mode {
        CheckpointMode::Synchronous => (persist_s, false),
        CheckpointMode::Asynchronous {
            host_copy_bytes_per_s,
        } => (spec.bytes_per_rank as f64 / host_copy_bytes_per_s, true),
    };
    Ok(CheckpointCost {
        persist_s,
        restore_s,
        copy_block_s,
        asynchronous,
        total_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: f64 = 1e9;

    fn spec(mode: CheckpointMode) -> CheckpointSpec {
        CheckpointSpec {
            bytes_per_rank: 10_000_000_000,
            ranks_per_node: 8,
            nodes: 100,
            storage: StorageSpec {
                per_node_write_bytes_per_s: 10.0 * GB,
                per_node_read_bytes_per_s: 20.0 * GB,
                aggregate_write_bytes_per_s: 400.0 * GB,
                aggregate_read_bytes_per_s: 4000.0 * GB,
            },
            mode,
        }
    }

    #[test]
    fn the_binding_bandwidth_wins() {
        let cost = checkpoint_cost(&spec(CheckpointMode::Synchronous)).unwrap();
        // Write: node 80 GB / 10 GB/s = 8 s; aggregate 8 TB / 400 GB/s = 20 s.
        assert!((cost.persist_s - 20.0).abs() < 1e-9);
        // Read: node 80 GB / 20 GB/s = 4 s; aggregate 8 TB / 4 TB/s = 2 s.
        assert!((cost.restore_s - 4.0).abs() < 1e-9);
        assert_eq!(cost.blocking_s(1.0), 20.0);
    }

    #[test]
    fn asynchronous_blocks_for_the_copy_and_any_stall() {
        let mode = CheckpointMode::Asynchronous {
            host_copy_bytes_per_s: 25.0 * GB,
        };
        let cost = checkpoint_cost(&spec(mode)).unwrap();
        assert!((cost.copy_block_s - 0.4).abs() < 1e-12);
        assert!((cost.blocking_s(100.0) - 0.4).abs() < 1e-12);
        // Interval 5 s < persist 20 s: stall 15 s before the next copy.
        assert!((cost.blocking_s(5.0) - 15.4).abs() < 1e-9);
    }

    #[test]
    fn bad_bandwidths_and_overflow_are_errors() {
        let mut bad = spec(CheckpointMode::Synchronous);
        bad.storage.aggregate_write_bytes_per_s = -1.0;
        bad.storage.per_node_read_bytes_per_s = f64::NAN;
        let text = checkpoint_cost(&bad).unwrap_err().to_string();
        assert!(
            text.contains("aggregate_write") && text.contains("per_node_read"),
            "{text}"
        );
        let mut huge = spec(CheckpointMode::Synchronous);
        huge.bytes_per_rank = u64::MAX / 2;
        assert!(checkpoint_cost(&huge).is_err());
    }
}
