//! Sourced defaults for a run plan's storage and restart, where public text
//! states a figure; the caller may override each. Quantities without a public
//! figure (rescheduling wait, hot-spare swap, idle power, price) have none.
//!
//! Storage: NVIDIA, *DGX SuperPOD Reference Architecture featuring DGX H100
//! Systems*, RA-11333-001 V11 (2023-09-22), "Storage Architecture", Table 6
//! "Guidelines for storage performance", the "Better" column (the level
//! NVIDIA's B200 reference architecture assigns to "Text Data, such as LLM
//! Training"): single-node read 8 GBps, single-node write 4 GBps, single-SU
//! aggregate read 40 GBps and write 20 GBps, an SU being 32 nodes (its 4-SU
//! row, 160 and 80 GBps, scales linearly). These are NVIDIA's guideline
//! requirements for the storage a SuperPOD is sold with, not a measured
//! system. The same section: checkpoints "are typically written synchronously
//! that blocks forward progress".
//!
//! Restart: no measured detection or initialization time was found as text;
//! the defaults are the frameworks' own timeouts, upper bounds:
//! - detection 600 s: PyTorch's default NCCL process-group timeout
//!   (`torch.distributed.init_process_group`: "Default value is 10 minutes
//!   for NCCL … the duration after which collectives will be aborted
//!   asynchronously and the process will crash"; pytorch/pytorch PR 110947):
//!   how long a hang goes unnoticed; a crash surfaces sooner.
//! - initialization 300 s: torchtitan's `init_timeout_seconds` ("Timeout for
//!   communication operations, during initialization and first train step",
//!   `torchtitan/config/configs.py` at b5bcd76c).

use crate::checkpoint::StorageSpec;
use crate::energy::Sourced;

/// Nodes per DGX SuperPOD scalable unit (the reference architecture's "SUs of
/// 32 DGX H100 systems each").
pub const NODES_PER_SU: f64 = 32.0;

const SUPERPOD_TABLE_6: &str = "NVIDIA DGX SuperPOD H100 reference architecture RA-11333-001 V11 (2023-09-22), Table 6 Guidelines for storage performance, Better";

/// One node's write bandwidth to storage.
pub const STORAGE_NODE_WRITE: Sourced = Sourced {
    name: "storage_node_write_bytes_per_s",
    value: 4e9,
    source: SUPERPOD_TABLE_6,
};
/// One node's read bandwidth from storage.
pub const STORAGE_NODE_READ: Sourced = Sourced {
    name: "storage_node_read_bytes_per_s",
    value: 8e9,
    source: SUPERPOD_TABLE_6,
};
/// Aggregate write bandwidth per 32-node SU.
pub const STORAGE_SU_WRITE: Sourced = Sourced {
    name: "storage_write_bytes_per_s_per_32_nodes",
    value: 20e9,
    source: SUPERPOD_TABLE_6,
};
/// Aggregate read bandwidth per 32-node SU.
pub const STORAGE_SU_READ: Sourced = Sourced {
    name: "storage_read_bytes_per_s_per_32_nodes",
    value: 40e9,
    source: SUPERPOD_TABLE_6,
};

/// The SuperPOD guideline storage for a job of `nodes` nodes: per-node rates
/// as given, aggregate rates scaled by nodes ÷ 32.
pub fn superpod_storage(nodes: u64) -> StorageSpec {
    let units = nodes as f64 / NODES_PER_SU;
    StorageSpec {
        per_node_write_bytes_per_s: STORAGE_NODE_WRITE.value,
        per_node_read_bytes_per_s: STORAGE_NODE_READ.value,
        aggregate_write_bytes_per_s: STORAGE_SU_WRITE.value * units,
        aggregate_read_bytes_per_s: STORAGE_SU_READ.value * units,
    }
}

/// Failure detection: PyTorch's default NCCL timeout (an upper bound).
pub const DETECTION: Sourced = Sourced {
    name: "detection_s",
    value: 600.0,
    source: "PyTorch torch.distributed.init_process_group: \"Default value is 10 minutes for NCCL\" (the time after which a hung collective aborts; pytorch/pytorch PR 110947): an upper bound, a crash surfaces sooner",
};

/// Initialization before the checkpoint load: torchtitan's init timeout (an upper bound).
pub const INITIALIZATION: Sourced = Sourced {
    name: "initialization_s",
    value: 300.0,
    source: "torchtitan init_timeout_seconds = 300, \"Timeout for communication operations, during initialization and first train step\" (torchtitan/config/configs.py at b5bcd76c): an upper bound",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superpod_storage_scales_its_aggregate_with_the_nodes() {
        let one_su = superpod_storage(32);
        assert_eq!(one_su.aggregate_write_bytes_per_s, 20e9);
        assert_eq!(one_su.aggregate_read_bytes_per_s, 40e9);
        let four = superpod_storage(128);
        assert_eq!(four.aggregate_write_bytes_per_s, 80e9);
        assert_eq!(four.per_node_write_bytes_per_s, 4e9);
    }
}
