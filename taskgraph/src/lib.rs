//! # taskgraph — one training iteration as a task DAG
//!
//! The intermediate representation lowering builds (`sim::lowering`), the
//! event engine replays (`sim::engine`) and the GPU executor runs: tasks
//! ([`task`]) with dense integer ids ([`ids`]), stored as columns with CSR
//! successor rows ([`task_columns`]) in a sealed [`task_graph::TaskGraph`]
//! with its rank groups and interned works; and, for a graph of one
//! representative replica, the map to full expansion's ids
//! ([`replica_map`]) and as arithmetic on its ids ([`replica_ids`]). Knows no scenario, cost or time.

pub mod ids;
pub mod replica_ids;
pub mod replica_map;
pub mod representative;
pub mod task;
pub mod task_columns;
pub mod task_graph;
