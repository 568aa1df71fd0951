//! The flow-level network behind `--contention`: the links of a cluster
//! ([`Fabric`]), routes between GPUs, what the engine asks of a task that
//! becomes flows ([`FlowPlanner`]; the simulator's planner is
//! `sim::network::FabricFlowPlanner`), and the sharing of link bandwidth
//! among concurrent transfers.
//!
//! A transfer is a *flow*: bytes over a [`Route`] (a list of directed links). Every
//! active flow gets its max-min fair share of bandwidth (progressive filling: no
//! flow can go faster without slowing one that is no faster than it), recomputed when
//! a flow starts or ends. [`FairShareNetwork`] does this incrementally (only the
//! flows connected to the change) with one lazily cancelled pending completion per
//! flow; [`ReferenceNetwork`] does it from scratch at every event and is the oracle
//! the property test compares against.
//!
//! ```
//! use engine::network::{Fabric, FairShareNetwork};
//! use timeline::time::SimTime;
//! let topology = topologies::preset("selene").unwrap();
//! let profile = profile::Profile::builtin("a100-80gb").unwrap();
//! let fabric = Fabric::new(&topology, &profile).unwrap();
//! let mut net = FairShareNetwork::new(fabric.capacities_bytes_per_s());
//! // Two GPUs of node 0 send 24 MB each to GPU 0 of node 1: they share its NIC rail.
//! net.start_flow(SimTime::ZERO, &fabric.route(0, 8).links, 24_000_000);
//! net.start_flow(SimTime::ZERO, &fabric.route(1, 8).links, 24_000_000);
//! let done = net.advance(SimTime(u64::MAX - 1));
//! assert_eq!(done.last().unwrap().0, SimTime(2_000_000)); // 48 MB at 24 GB/s
//! ```

mod fabric;
mod fair_share;
mod flow_plan;
mod ids;
mod link_flows;
mod pending;
mod reference;
mod route_cache;
mod route_table;
mod utilization;
mod water_fill;

pub use fabric::{Fabric, FabricError, Link, LinkKind, Route};
pub use fair_share::{time_alone, FairShareNetwork};
pub use flow_plan::{FlowEnds, FlowPlan, FlowPlanner, SharedFabric};
pub use ids::{FlowId, LinkId};
pub use reference::ReferenceNetwork;
pub use route_cache::RouteCache;
pub use route_table::{RouteId, RouteTable};
pub use topologies::fat_tree::{splitmix64, FatTree, TreeHop};
pub use utilization::{BusyLink, LinkUtilization};
pub use water_fill::WaterFill;
