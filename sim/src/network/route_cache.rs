//! Routes computed once per run: the engine asks for a flow's route at every
//! flow start (7.8 M times for the 1T model on 3,072 GPUs under
//! `--contention`), while the pairs of endpoints that exchange data are few
//! (pipeline peers, ring neighbours: tens of thousands). Each pair's route is
//! computed by [`Fabric`] the first time and then read from a flat buffer.
//!
//! The map is only looked up, never iterated, so its order never reaches
//! output; memory is one entry and the route's links per distinct pair.

use super::{Fabric, FlowEnds, LinkId};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Routes by flow ends, as ranges of one buffer of links.
#[derive(Debug, Default)]
pub struct RouteCache {
    /// Key of the flow ends → (first link in `links`, link count).
    index: HashMap<u64, (u32, u32), BuildHasherDefault<PairHasher>>,
    links: Vec<LinkId>,
}

/// GPU index standing for the host in a key.
const HOST: u64 = u32::MAX as u64;

impl RouteCache {
    /// The links of a flow between `ends` on `fabric`.
    pub fn route(&mut self, fabric: &Fabric, ends: FlowEnds) -> &[LinkId] {
        let key = match ends {
            FlowEnds::Gpus(source, destination) => (source as u64) << 32 | destination as u64,
            FlowEnds::ToHost(gpu) => (gpu as u64) << 32 | HOST,
            FlowEnds::FromHost(gpu) => HOST << 32 | gpu as u64,
        };
        let (first, count) = match self.index.get(&key) {
            Some(&range) => range,
            None => {
                let first = self.links.len();
                match ends {
                    FlowEnds::Gpus(source, destination) => {
                        let mut route = Vec::new();
                        fabric.route_into(source, destination, &mut route);
                        self.links.extend_from_slice(&route);
                    }
                    FlowEnds::ToHost(gpu) => {
                        self.links.extend(fabric.route_to_host(gpu).links);
                    }
                    FlowEnds::FromHost(gpu) => {
                        self.links.extend(fabric.route_from_host(gpu).links);
                    }
                }
                let range = (
                    u32::try_from(first).expect("fewer than 2^32 cached links"),
                    (self.links.len() - first) as u32,
                );
                self.index.insert(key, range);
                range
            }
        };
        &self.links[first as usize..(first + count) as usize]
    }
}

/// SplitMix64 of the one `u64` a key writes: a fast, well-mixed hash for
/// integer keys (the standard SipHash costs more than the lookup saves).
#[derive(Debug, Default)]
pub struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        super::splitmix64(self.0)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8) ^ byte as u64;
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_routes_equal_the_fabrics_own() {
        let topology = topologies::preset("selene").unwrap();
        let profile = profile::Profile::builtin("a100-80gb").unwrap();
        let fabric = Fabric::new(&topology, &profile).unwrap();
        let mut cache = RouteCache::default();
        let pairs = [(0, 1), (0, 8), (8, 0), (3, 4000), (0, 8), (0, 1), (5, 5)];
        for _ in 0..2 {
            for &(source, destination) in &pairs {
                assert_eq!(
                    cache.route(&fabric, FlowEnds::Gpus(source, destination)),
                    fabric.route(source, destination).links.as_slice()
                );
            }
            assert_eq!(
                cache.route(&fabric, FlowEnds::ToHost(9)),
                fabric.route_to_host(9).links.as_slice()
            );
            assert_eq!(
                cache.route(&fabric, FlowEnds::FromHost(9)),
                fabric.route_from_host(9).links.as_slice()
            );
        }
        // Each distinct pair once: 5 GPU pairs and 2 host copies.
        assert_eq!(cache.index.len(), 7);
    }
}
