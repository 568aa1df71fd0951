//! # topologies — the hardware a training job runs on
//!
//! A [`TopologySpec`] describes a homogeneous cluster: the GPU type, the node
//! (GPUs per node and their NVLink/NVSwitch domain), the inter-node fabric
//! (NICs per node, a fat tree with per-hop latency), the PCIe link between each
//! GPU and its host, and the host CPU. Every quantity carries its unit in its
//! key (`_bytes`, `_bytes_per_s`, `_ns`, `_flops_per_s`). Figures are datasheet
//! line rates; what the hardware *achieves* belongs to the calibration profile
//! (see the `sim` crate), not here.
//!
//! Every GPU comes from a catalogue of datasheets ([`datasheets`]), each
//! number with its source, which also maps a driver's device name ("NVIDIA
//! H100 80GB HBM3") to its datasheet.
//!
//! This crate knows nothing of time or events.
//!
//! ```
//! let selene = topologies::preset("selene").unwrap();
//! assert!(selene.total_gpus() >= 4480);
//! ```

pub mod datasheets;
pub mod fat_tree;
mod named;
mod presets;
mod spec;

pub use datasheets::{datasheet, datasheet_for_device, Datasheet};
pub use presets::{preset, preset_names};
pub use spec::{
    FabricKind, FabricSpec, GpuSpec, HostCpuSpec, NodeSpec, PcieSpec, PeakFlops, TopologyError,
    TopologySpec, MAX_FABRIC_PATH_LATENCY_NS,
};
