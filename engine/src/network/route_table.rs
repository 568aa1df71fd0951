//! Routes interned once, for [`super::FairShareNetwork`]: a running flow
//! names its route by [`RouteId`] instead of keeping its own copy of the
//! links (the engine starts millions of flows over tens of thousands of
//! distinct routes, `route_cache.rs`), each route with its slowest link's
//! capacity (what a flow alone on its links runs at) worked out once, and
//! the bytes completed over it, which the per-link traffic sums at the end
//! (`u64` sums: the same as adding each flow's bytes to every link it
//! crossed, without touching every link at every completion).

use super::ids::LinkId;

/// A route interned in a [`RouteTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteId(pub u32);

/// Interned routes: their links in one buffer.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    links: Vec<LinkId>,
    /// Per route, what a flow start reads, in one cache line's quarter.
    spans: Vec<Span>,
    /// Per route: bytes of the flows completed over it.
    carried_bytes: Vec<u64>,
}

/// A route's links in [`RouteTable::links`] and its slowest capacity.
#[derive(Debug, Clone, Copy)]
struct Span {
    first: u32,
    count: u32,
    /// +∞ with no link.
    slowest_bytes_per_s: f64,
}

impl RouteTable {
    /// Interns `route` (distinct links) over links of these capacities.
    ///
    /// # Panics
    /// Past 2^32 routes or links kept (far beyond any fabric's distinct
    /// pairs of ends).
    pub fn intern(&mut self, route: &[LinkId], capacities_bytes_per_s: &[f64]) -> RouteId {
        let id = u32::try_from(self.spans.len()).expect("fewer than 2^32 routes");
        let first = u32::try_from(self.links.len()).expect("fewer than 2^32 route links");
        self.links.extend_from_slice(route);
        self.spans.push(Span {
            first,
            count: route.len() as u32,
            slowest_bytes_per_s: route
                .iter()
                .map(|link| capacities_bytes_per_s[link.index()])
                .fold(f64::INFINITY, f64::min),
        });
        self.carried_bytes.push(0);
        RouteId(id)
    }

    /// The route's links.
    #[inline]
    pub fn links(&self, route: RouteId) -> &[LinkId] {
        let span = self.spans[route.0 as usize];
        &self.links[span.first as usize..(span.first + span.count) as usize]
    }

    /// The capacity of the route's slowest link (+∞ with no link).
    #[inline]
    pub fn slowest_bytes_per_s(&self, route: RouteId) -> f64 {
        self.spans[route.0 as usize].slowest_bytes_per_s
    }

    /// Counts a completed flow's `bytes` over `route`.
    #[inline]
    pub fn carry(&mut self, route: RouteId, bytes: u64) {
        self.carried_bytes[route.0 as usize] += bytes;
    }

    /// Bytes carried per link (`links` of them): each route's completed
    /// bytes on every link it crosses.
    pub fn carried_per_link(&self, links: usize) -> Vec<u64> {
        let mut carried = vec![0u64; links];
        for (route, &bytes) in self.carried_bytes.iter().enumerate() {
            if bytes > 0 {
                for link in self.links(RouteId(route as u32)) {
                    carried[link.index()] += bytes;
                }
            }
        }
        carried
    }
}
