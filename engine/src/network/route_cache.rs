//! Routes computed once per run: the engine asks for a flow's route at every
//! flow start (7.8 M times for the 1T model on 3,072 GPUs under
//! `--contention`), while the pairs of endpoints that exchange data are few
//! (pipeline peers, ring neighbours: tens of thousands). Each pair's route is
//! computed by [`Fabric`] the first time and interned in the network
//! ([`FairShareNetwork::intern_route`]); later flows between the pair name it.
//!
//! Memory is one entry per distinct pair here, and the route's links there.

use super::fabric::Fabric;
use super::fair_share::FairShareNetwork;
use super::flow_plan::FlowEnds;
use super::route_table::RouteId;

/// Routes by flow ends, interned in the network.
#[derive(Debug, Default)]
pub struct RouteCache {
    /// Per source GPU: (destination, route) of the first [`INLINE`]
    /// destinations it has sent to, in one cache line (a GPU sends to a
    /// handful of peers: its ring neighbours, pipeline peers, its host),
    /// so a lookup is one scan of one line; `EMPTY` destinations are free.
    by_source: Vec<Inline>,
    /// Per source GPU past its inline entries: the others, in a list.
    overflow: Vec<Vec<(u32, RouteId)>>,
    /// Distinct pairs cached.
    pairs: usize,
    /// The route being computed (one buffer for every new pair).
    scratch: Vec<super::ids::LinkId>,
}

/// Destinations standing for the GPU's host, in a source's list.
const TO_HOST: u32 = u32::MAX;
const FROM_HOST: u32 = u32::MAX - 1;
/// A free inline entry's destination (no GPU is numbered so).
const EMPTY: u32 = u32::MAX - 2;

/// Destinations kept inline per source: 8 × 8 bytes, one cache line.
const INLINE: usize = 8;

/// A source's inline entries, on a cache line of their own.
#[derive(Debug, Clone, Copy)]
#[repr(align(64))]
struct Inline([(u32, RouteId); INLINE]);

impl RouteCache {
    /// The route of a flow between `ends` on `fabric`, interned in `network`.
    pub fn route(
        &mut self,
        fabric: &Fabric,
        network: &mut FairShareNetwork,
        ends: FlowEnds,
    ) -> RouteId {
        let (source, destination) = match ends {
            FlowEnds::Gpus(source, destination) => (source, destination),
            FlowEnds::ToHost(gpu) => (gpu, TO_HOST),
            FlowEnds::FromHost(gpu) => (gpu, FROM_HOST),
        };
        let source_index = source as usize;
        if self.by_source.len() <= source_index {
            self.by_source
                .resize(source_index + 1, Inline([(EMPTY, RouteId(0)); INLINE]));
        }
        let inline = &self.by_source[source_index].0;
        for &(known, route) in inline {
            if known == destination {
                return route;
            }
        }
        if inline[INLINE - 1].0 != EMPTY {
            let overflow = self.overflow.get(source_index).into_iter().flatten();
            for &(known, route) in overflow {
                if known == destination {
                    return route;
                }
            }
        }
        let links = &mut self.scratch;
        links.clear();
        match ends {
            FlowEnds::Gpus(source, destination) => {
                fabric.route_into(source, destination, links);
            }
            FlowEnds::ToHost(gpu) => links.extend(fabric.route_to_host(gpu).links),
            FlowEnds::FromHost(gpu) => links.extend(fabric.route_from_host(gpu).links),
        }
        let route = network.intern_route(links);
        let inline = &mut self.by_source[source_index].0;
        match inline.iter_mut().find(|entry| entry.0 == EMPTY) {
            Some(free) => *free = (destination, route),
            None => {
                if self.overflow.len() <= source_index {
                    self.overflow.resize_with(source_index + 1, Vec::new);
                }
                self.overflow[source_index].push((destination, route));
            }
        }
        self.pairs += 1;
        route
    }

    /// Distinct pairs of ends cached.
    pub fn len(&self) -> usize {
        self.pairs
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
        let mut network = FairShareNetwork::new(fabric.capacities_bytes_per_s());
        let pairs = [(0, 1), (0, 8), (8, 0), (3, 4000), (0, 8), (0, 1), (5, 5)];
        for _ in 0..2 {
            for &(source, destination) in &pairs {
                let route = cache.route(&fabric, &mut network, FlowEnds::Gpus(source, destination));
                assert_eq!(
                    network.route_links(route),
                    fabric.route(source, destination).links.as_slice()
                );
            }
            let route = cache.route(&fabric, &mut network, FlowEnds::ToHost(9));
            assert_eq!(
                network.route_links(route),
                fabric.route_to_host(9).links.as_slice()
            );
            let route = cache.route(&fabric, &mut network, FlowEnds::FromHost(9));
            assert_eq!(
                network.route_links(route),
                fabric.route_from_host(9).links.as_slice()
            );
        }
        // Each distinct pair once: 5 GPU pairs and 2 host copies.
        assert_eq!(cache.len(), 7);
    }
}
