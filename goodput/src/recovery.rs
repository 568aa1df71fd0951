//! Recovery policies: what a failure costs under each, as the downtime and
//! the checkpoint level that bounds lost work.
//!
//! Built, in the closed form and the Monte-Carlo alike (both take the
//! resolved [`crate::closed_form::RunModel`]):
//!
//! - **Full restart** (the default): detect the failure, wait for the
//!   scheduler to give the job a replacement node, initialize, load the last
//!   checkpoint from storage.
//! - **Hot spares**: as a full restart, but a spare already allocated to the
//!   job replaces the failed node in `swap_s` instead of the scheduler's
//!   wait.
//! - **In-memory (peer) checkpoints**: each rank copies its shard to a peer's
//!   memory at `peer_bytes_per_s` (training blocks for the copy); a failure
//!   restores from the peer at the same rate and loses work back to the last
//!   in-memory snapshot, whose interval is the plan's checkpoint interval.
//!   Assumed: every failure is recoverable from a peer copy. Failures that
//!   lose a shard and its copy together, and the persistent checkpoints to
//!   storage a run would still write for them, are not modeled.
//!
//! - **Fewer replicas**: the job restarts at once without the failed node's
//!   data-parallel replicas (detection, initialization, checkpoint load; no
//!   wait for a replacement) and trains at `degraded_work_rate` r of its
//!   throughput until the node is repaired, `repair_s` later; then it saves
//!   a checkpoint and restarts at full size (a planned regrow: the save,
//!   initialization and load). The degraded stretch is counted as r·repair
//!   of work — failed and redone as any work — plus (1 − r)·repair of
//!   deficit, which with the regrow joins the downtime a failure restarts
//!   (a failure while degraded starts the repair wait again). Assumed: one
//!   node down at a time at rate r (a second failure before the repair does
//!   not shrink the job further), the work lost back to the last checkpoint
//!   as under a full restart (the distributed optimizer's shards of the lost
//!   replicas are not recovered from peers).

use serde::Serialize;

use crate::checkpoint::CheckpointCost;
use crate::closed_form::Downtime;
use crate::error::{GoodputError, Problems};

/// The parts of a restart that do not depend on the policy, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RestartSpec {
    /// From the failure to the job knowing of it (health checks, NCCL
    /// timeouts).
    pub detection_s: f64,
    /// The scheduler's wait for a replacement node (full restart only).
    pub reschedule_s: f64,
    /// Process start, framework and communicator initialization, before the
    /// checkpoint load.
    pub initialization_s: f64,
}

/// How the job recovers from a failure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RecoveryPolicy {
    /// Reschedule, initialize, load the last checkpoint from storage.
    FullRestart,
    /// A spare node replaces the failed one in `swap_s`.
    HotSpares {
        /// Time to bring a spare into the job, seconds.
        swap_s: f64,
    },
    /// Snapshots in peers' memory bound the lost work and the restore.
    InMemory {
        /// Bytes per second one rank copies to or from its peer.
        peer_bytes_per_s: f64,
        /// Time to get a replacement node (a spare's swap or the
        /// scheduler's wait), seconds.
        replacement_s: f64,
    },
    /// Continue on fewer data-parallel replicas until the failed node is
    /// repaired, then grow back.
    FewerReplicas {
        /// From the failure to the repaired node's return, seconds.
        repair_s: f64,
        /// Work done per second while degraded ÷ at full size (0 < r ≤ 1).
        degraded_work_rate: f64,
    },
}

impl RecoveryPolicy {
    /// The policy's name as written in a report.
    pub fn name(&self) -> &'static str {
        match self {
            RecoveryPolicy::FullRestart => "full_restart",
            RecoveryPolicy::HotSpares { .. } => "hot_spares",
            RecoveryPolicy::InMemory { .. } => "in_memory",
            RecoveryPolicy::FewerReplicas { .. } => "fewer_replicas",
        }
    }
}

/// A policy resolved to the numbers the run model takes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ResolvedRecovery {
    /// The policy's name.
    pub policy: &'static str,
    /// The downtime after each failure.
    pub downtime: Downtime,
    /// The checkpoint whose interval bounds the lost work (storage, or the
    /// peer snapshot).
    pub checkpoint: CheckpointCost,
}

/// Resolves `policy` given the storage checkpoint's cost and the bytes each
/// rank holds.
pub fn resolve(
    policy: &RecoveryPolicy,
    restart: &RestartSpec,
    storage_checkpoint: &CheckpointCost,
    bytes_per_rank: u64,
) -> Result<ResolvedRecovery, GoodputError> {
    let mut problems = Problems::new();
    problems.non_negative("restart.detection_s", restart.detection_s);
    problems.non_negative("restart.reschedule_s", restart.reschedule_s);
    problems.non_negative("restart.initialization_s", restart.initialization_s);
    match policy {
        RecoveryPolicy::HotSpares { swap_s } => {
            problems.non_negative("recovery.swap_s", *swap_s);
        }
        RecoveryPolicy::InMemory {
            peer_bytes_per_s,
            replacement_s,
        } => {
            problems.positive("recovery.peer_bytes_per_s", *peer_bytes_per_s);
            problems.non_negative("recovery.replacement_s", *replacement_s);
        }
        RecoveryPolicy::FewerReplicas {
            repair_s,
            degraded_work_rate,
        } => {
            problems.non_negative("recovery.repair_s", *repair_s);
            if !(*degraded_work_rate > 0.0 && *degraded_work_rate <= 1.0) {
                problems.push(
                    "recovery.degraded_work_rate",
                    format!("must be in (0, 1], got {degraded_work_rate}"),
                );
            }
        }
        RecoveryPolicy::FullRestart => {}
    }
    problems.finish()?;
    let from_storage = |wait_s: f64| Downtime {
        immune_s: restart.detection_s + wait_s,
        exposed_s: restart.initialization_s + storage_checkpoint.restore_s,
    };
    let (downtime, checkpoint) = match *policy {
        RecoveryPolicy::FullRestart => (from_storage(restart.reschedule_s), *storage_checkpoint),
        RecoveryPolicy::HotSpares { swap_s } => (from_storage(swap_s), *storage_checkpoint),
        RecoveryPolicy::InMemory {
            peer_bytes_per_s,
            replacement_s,
        } => {
            let copy_s = bytes_per_rank as f64 / peer_bytes_per_s;
            let snapshot = CheckpointCost {
                persist_s: copy_s,
                restore_s: copy_s,
                copy_block_s: copy_s,
                asynchronous: false,
                total_bytes: storage_checkpoint.total_bytes,
            };
            let downtime = Downtime {
                immune_s: restart.detection_s + replacement_s,
                exposed_s: restart.initialization_s + copy_s,
            };
            (downtime, snapshot)
        }
        RecoveryPolicy::FewerReplicas {
            repair_s,
            degraded_work_rate,
        } => {
            let restart_s = restart.initialization_s + storage_checkpoint.restore_s;
            let regrow_s = storage_checkpoint.persist_s + restart_s;
            let downtime = Downtime {
                immune_s: restart.detection_s,
                exposed_s: restart_s + (1.0 - degraded_work_rate) * repair_s + regrow_s,
            };
            (downtime, *storage_checkpoint)
        }
    };
    Ok(ResolvedRecovery {
        policy: policy.name(),
        downtime,
        checkpoint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESTART: RestartSpec = RestartSpec {
        detection_s: 60.0,
        reschedule_s: 600.0,
        initialization_s: 120.0,
    };

    fn storage() -> CheckpointCost {
        CheckpointCost {
            persist_s: 50.0,
            restore_s: 40.0,
            copy_block_s: 50.0,
            asynchronous: false,
            total_bytes: 1,
        }
    }

    #[test]
    fn hot_spares_shorten_only_the_wait() {
        let full = resolve(&RecoveryPolicy::FullRestart, &RESTART, &storage(), 1).unwrap();
        let spares = resolve(
            &RecoveryPolicy::HotSpares { swap_s: 30.0 },
            &RESTART,
            &storage(),
            1,
        )
        .unwrap();
        assert_eq!(full.downtime.immune_s, 660.0);
        assert_eq!(spares.downtime.immune_s, 90.0);
        assert_eq!(full.downtime.exposed_s, spares.downtime.exposed_s);
    }

    #[test]
    fn in_memory_restores_from_peers() {
        let policy = RecoveryPolicy::InMemory {
            peer_bytes_per_s: 1e10,
            replacement_s: 30.0,
        };
        let resolved = resolve(&policy, &RESTART, &storage(), 20_000_000_000).unwrap();
        assert_eq!(resolved.checkpoint.copy_block_s, 2.0);
        assert_eq!(resolved.downtime.exposed_s, 122.0);
    }

    #[test]
    fn fewer_replicas_trade_the_wait_for_a_degraded_stretch_and_a_regrow() {
        let policy = RecoveryPolicy::FewerReplicas {
            repair_s: 3600.0,
            degraded_work_rate: 0.75,
        };
        let resolved = resolve(&policy, &RESTART, &storage(), 1).unwrap();
        // Detection 60 s, no reschedule; restart 120 + 40, deficit
        // 0.25 × 3600, regrow 50 + 120 + 40.
        assert_eq!(resolved.downtime.immune_s, 60.0);
        assert_eq!(resolved.downtime.exposed_s, 160.0 + 900.0 + 210.0);
        for rate in [0.0, 1.5, f64::NAN] {
            let bad = RecoveryPolicy::FewerReplicas {
                repair_s: 3600.0,
                degraded_work_rate: rate,
            };
            let text = resolve(&bad, &RESTART, &storage(), 1)
                .unwrap_err()
                .to_string();
            assert!(text.contains("recovery.degraded_work_rate"), "{text}");
        }
    }
}
