//! Max-min fair rates by progressive filling, in its bottleneck form
//! (Bertsekas & Gallager, *Data Networks*, §6.5.2): repeatedly take the link whose
//! fair share `remaining capacity ÷ unfrozen flows` is smallest (ties: lower
//! `LinkId`), freeze its unfrozen flows at that share (in the order given),
//! subtract their rates from every link they cross, until every flow is frozen.
//!
//! Shares only grow as flows freeze (a frozen flow took at most the share of each of
//! its other links), so a min-heap with lazy re-insertion finds the bottleneck in
//! O(log links). A flow that crosses no link is unconstrained: rate +∞.

use super::ids::LinkId;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A heap entry: (share, link), smallest share first, then smallest link.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Candidate {
    share_bytes_per_s: f64,
    link: LinkId,
}

impl Eq for Candidate {}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        other
            .share_bytes_per_s
            .total_cmp(&self.share_bytes_per_s)
            .then(other.link.cmp(&self.link))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Scratch space reused across calls (sized to the fabric's links): a call
/// allocates nothing once the buffers have grown to the largest component.
#[derive(Debug, Clone, Default)]
pub struct WaterFill {
    /// Position of a link in the current call's tables, `u32::MAX` when absent.
    local_of_link: Vec<u32>,
    /// The call's links, in first-crossed order.
    links: Vec<LinkId>,
    /// The flows on each of the call's links, in flow order, as CSR rows.
    member_offsets: Vec<u32>,
    members: Vec<u32>,
    cursor: Vec<u32>,
    remaining_bytes_per_s: Vec<f64>,
    unfrozen: Vec<usize>,
    frozen: Vec<bool>,
    heap: Vec<Candidate>,
}

impl WaterFill {
    pub fn new(link_count: usize) -> WaterFill {
        WaterFill {
            local_of_link: vec![u32::MAX; link_count],
            ..WaterFill::default()
        }
    }

    /// Max-min fair rates of `routes` (one per flow, in freezing-tie order) over
    /// links of the given capacities. Returns one rate per route.
    pub fn rates(&mut self, routes: &[&[LinkId]], capacities_bytes_per_s: &[f64]) -> Vec<f64> {
        let mut rates = Vec::new();
        self.rates_into(
            routes.len(),
            |flow| routes[flow],
            capacities_bytes_per_s,
            &mut rates,
        );
        rates
    }

    /// [`WaterFill::rates`] of `flows` flows whose routes `route(flow)`
    /// gives, written into `rates` (cleared first): the same arithmetic in
    /// the same order, without building the list of routes.
    pub fn rates_into<'r>(
        &mut self,
        flows: usize,
        route: impl Fn(usize) -> &'r [LinkId],
        capacities_bytes_per_s: &[f64],
        rates: &mut Vec<f64>,
    ) {
        if self.local_of_link.len() < capacities_bytes_per_s.len() {
            self.local_of_link
                .resize(capacities_bytes_per_s.len(), u32::MAX);
        }
        let links = &mut self.links;
        let unfrozen = &mut self.unfrozen;
        links.clear();
        unfrozen.clear();
        for flow in 0..flows {
            for &link in route(flow) {
                let slot = &mut self.local_of_link[link.index()];
                if *slot == u32::MAX {
                    *slot = links.len() as u32;
                    links.push(link);
                    unfrozen.push(0);
                }
                unfrozen[*slot as usize] += 1;
            }
        }
        // Each link's flows in flow order (CSR rows from the counts).
        self.member_offsets.clear();
        self.member_offsets.push(0);
        let mut total = 0u32;
        for &count in unfrozen.iter() {
            total += count as u32;
            self.member_offsets.push(total);
        }
        self.cursor.clear();
        self.cursor
            .extend_from_slice(&self.member_offsets[..links.len()]);
        self.members.clear();
        self.members.resize(total as usize, 0);
        for flow in 0..flows {
            for &link in route(flow) {
                let local = self.local_of_link[link.index()] as usize;
                self.members[self.cursor[local] as usize] = flow as u32;
                self.cursor[local] += 1;
            }
        }
        self.remaining_bytes_per_s.clear();
        self.remaining_bytes_per_s.extend(
            links
                .iter()
                .map(|link| capacities_bytes_per_s[link.index()]),
        );
        let remaining_bytes_per_s = &mut self.remaining_bytes_per_s;
        rates.clear();
        rates.resize(flows, f64::INFINITY);
        let frozen = &mut self.frozen;
        frozen.clear();
        frozen.resize(flows, false);
        let share = |remaining: f64, count: usize| remaining / count as f64;
        let mut heap_entries = std::mem::take(&mut self.heap);
        heap_entries.clear();
        heap_entries.extend((0..links.len()).map(|local| Candidate {
            share_bytes_per_s: share(remaining_bytes_per_s[local], unfrozen[local]),
            link: links[local],
        }));
        let mut heap = BinaryHeap::from(heap_entries);
        while let Some(candidate) = heap.pop() {
            let local = self.local_of_link[candidate.link.index()] as usize;
            if unfrozen[local] == 0 {
                continue;
            }
            let current = share(remaining_bytes_per_s[local], unfrozen[local]);
            if current != candidate.share_bytes_per_s {
                heap.push(Candidate {
                    share_bytes_per_s: current,
                    link: candidate.link,
                });
                continue;
            }
            let row = self.member_offsets[local] as usize..self.member_offsets[local + 1] as usize;
            for &flow in &self.members[row] {
                let flow = flow as usize;
                if frozen[flow] {
                    continue;
                }
                frozen[flow] = true;
                rates[flow] = current;
                for &link in route(flow) {
                    let other = self.local_of_link[link.index()] as usize;
                    remaining_bytes_per_s[other] =
                        (remaining_bytes_per_s[other] - current).max(0.0);
                    unfrozen[other] -= 1;
                }
            }
        }
        self.heap = heap.into_vec();
        for link in links.iter() {
            self.local_of_link[link.index()] = u32::MAX;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(routes: &[&[u32]], capacities: &[f64]) -> Vec<f64> {
        let owned: Vec<Vec<LinkId>> = routes
            .iter()
            .map(|r| r.iter().map(|&l| LinkId(l)).collect())
            .collect();
        let borrowed: Vec<&[LinkId]> = owned.iter().map(Vec::as_slice).collect();
        WaterFill::new(capacities.len()).rates(&borrowed, capacities)
    }

    #[test]
    fn two_flows_on_one_link_get_half_each() {
        assert_eq!(rates(&[&[0], &[0]], &[10.0]), [5.0, 5.0]);
    }

    #[test]
    fn a_flow_bottlenecked_elsewhere_leaves_capacity_to_the_others() {
        // Link 0 (cap 10) carries A and B; B also crosses link 1 (cap 2).
        // B is held to 2 by link 1; A gets the remaining 8 of link 0.
        assert_eq!(rates(&[&[0], &[0, 1]], &[10.0, 2.0]), [8.0, 2.0]);
    }

    #[test]
    fn classic_parking_lot() {
        // Three unit links in a line; one long flow crosses all, one short flow
        // per link: everyone gets 1/2.
        let got = rates(&[&[0, 1, 2], &[0], &[1], &[2]], &[1.0, 1.0, 1.0]);
        assert_eq!(got, [0.5, 0.5, 0.5, 0.5]);
        // Bertsekas–Gallager example shape: link 0 cap 1 shared by 3 flows,
        // one of which also shares link 1 (cap 1) with one more.
        let got = rates(&[&[0], &[0], &[0, 1], &[1]], &[1.0, 1.0]);
        let third = 1.0 / 3.0;
        assert_eq!(got, [third, third, third, 1.0 - third]);
    }

    #[test]
    fn a_flow_on_no_link_is_unconstrained() {
        assert_eq!(rates(&[&[]], &[1.0]), [f64::INFINITY]);
    }
}
