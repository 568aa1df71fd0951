//! Routes computed once per run: the engine asks for a flow's route at every
//! flow start (7.8 M times for the 1T model on 3,072 GPUs under
//! `--contention`), while the pairs of endpoints that exchange data are few
//! (pipeline peers, ring neighbours: tens of thousands). Each pair's route is
//! computed by [`Fabric`] the first time and then read from a flat buffer.
//!
//! Memory is one entry and the route's links per distinct pair.

use super::fabric::Fabric;
use super::flow_plan::FlowEnds;
use super::ids::LinkId;

/// Routes by flow ends, as ranges of one buffer of links.
#[derive(Debug, Default)]
pub struct RouteCache {
    /// Per source GPU: (destination, first link in `links`, link count) of
    /// each destination it has sent to. A GPU sends to a handful of peers
    /// (its ring neighbours, pipeline peers, its host), so a scan of its
    /// short list is cheaper than hashing.
    by_source: Vec<Vec<(u32, u32, u32)>>,
    links: Vec<LinkId>,
}

/// Destinations standing for the GPU's host, in a source's list.
const TO_HOST: u32 = u32::MAX;
const FROM_HOST: u32 = u32::MAX - 1;

impl RouteCache {
    /// The links of a flow between `ends` on `fabric`.
    pub fn route(&mut self, fabric: &Fabric, ends: FlowEnds) -> &[LinkId] {
        let (source, destination) = match ends {
            FlowEnds::Gpus(source, destination) => (source, destination),
            FlowEnds::ToHost(gpu) => (gpu, TO_HOST),
            FlowEnds::FromHost(gpu) => (gpu, FROM_HOST),
        };
        let source_index = source as usize;
        if self.by_source.len() <= source_index {
            self.by_source.resize_with(source_index + 1, Vec::new);
        }
        let known = self.by_source[source_index]
            .iter()
            .find(|entry| entry.0 == destination)
            .copied();
        let (_, first, count) = match known {
            Some(entry) => entry,
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
                let entry = (
                    destination,
                    u32::try_from(first).expect("fewer than 2^32 cached links"),
                    (self.links.len() - first) as u32,
                );
                self.by_source[source_index].push(entry);
                entry
            }
        };
        &self.links[first as usize..(first + count) as usize]
    }

    /// Distinct pairs of ends cached.
    pub fn len(&self) -> usize {
        self.by_source.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        assert_eq!(cache.len(), 7);
    }
}
