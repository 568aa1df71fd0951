//! Bytes each link carried, and the busiest links.

use super::ids::LinkId;
use timeline::time::SimDuration;

/// Per-link traffic of the flows completed so far.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkUtilization {
    /// Bytes carried, indexed by `LinkId` (each completed flow adds its bytes to
    /// every link of its route).
    pub carried_bytes: Vec<u64>,
    pub capacity_bytes_per_s: Vec<f64>,
}

/// One line of the busiest-links summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BusyLink {
    pub link: LinkId,
    pub carried_bytes: u64,
    /// carried ÷ (capacity × elapsed): the fraction of the period the link was busy
    /// at full rate.
    pub utilization: f64,
}

impl LinkUtilization {
    /// The `count` busiest links — the most time busy at full rate, carried
    /// bytes ÷ capacity (a PCIe link is busier than an NVLink port carrying the
    /// same bytes); ties: lower `LinkId` first — with their utilization over `elapsed`.
    pub fn busiest(&self, count: usize, elapsed: SimDuration) -> Vec<BusyLink> {
        let busy_s =
            |link: usize| self.carried_bytes[link] as f64 / self.capacity_bytes_per_s[link];
        let mut order: Vec<usize> = (0..self.carried_bytes.len())
            .filter(|&link| self.carried_bytes[link] > 0)
            .collect();
        order.sort_by(|&a, &b| busy_s(b).total_cmp(&busy_s(a)).then(a.cmp(&b)));
        order
            .into_iter()
            .take(count)
            .map(|link| BusyLink {
                link: LinkId(link as u32),
                carried_bytes: self.carried_bytes[link],
                utilization: self.carried_bytes[link] as f64
                    / (self.capacity_bytes_per_s[link] * elapsed.as_seconds()),
            })
            .collect()
    }

    /// Total bytes carried over all links (a byte crossing three links counts three times).
    pub fn total_link_bytes(&self) -> u64 {
        self.carried_bytes.iter().sum()
    }
}
