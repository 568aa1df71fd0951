//! The slow, obviously correct flow model, kept as a test oracle for
//! [`super::FairShareNetwork`]: at every event it brings every flow up to date,
//! drops the flows due now, and recomputes every rate from scratch with textbook
//! water-filling over all links (scan for the link with the least fair share, ties to
//! the lower `LinkId`; freeze its flows in `FlowId` order). No heaps, no components,
//! no generations.

use super::ids::{FlowId, LinkId};
use timeline::time::{SimDuration, SimTime};

#[derive(Debug, Clone)]
struct Flow {
    route: Vec<LinkId>,
    remaining_bytes: f64,
    rate_bytes_per_s: f64,
    due: SimTime,
    active: bool,
}

/// Max-min fair sharing recomputed from scratch at every event.
#[derive(Debug, Clone)]
pub struct ReferenceNetwork {
    capacities_bytes_per_s: Vec<f64>,
    flows: Vec<Flow>,
    now: SimTime,
}

impl ReferenceNetwork {
    pub fn new(capacities_bytes_per_s: Vec<f64>) -> ReferenceNetwork {
        ReferenceNetwork {
            capacities_bytes_per_s,
            flows: Vec::new(),
            now: SimTime::ZERO,
        }
    }

    pub fn start_flow(&mut self, now: SimTime, route: &[LinkId], bytes: u64) -> FlowId {
        self.catch_up(now);
        self.flows.push(Flow {
            route: route.to_vec(),
            remaining_bytes: bytes as f64,
            rate_bytes_per_s: 0.0,
            due: SimTime(u64::MAX),
            active: true,
        });
        self.reshare();
        FlowId(self.flows.len() as u32 - 1)
    }

    /// The earliest due active flow (ties: lowest id).
    pub fn next_completion(&self) -> Option<(SimTime, FlowId)> {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, flow)| flow.active)
            .map(|(index, flow)| (flow.due, FlowId(index as u32)))
            .min()
    }

    pub fn complete(&mut self, now: SimTime, id: FlowId) {
        self.catch_up(now);
        self.flows[id.index()].active = false;
        self.reshare();
    }

    pub fn rate_bytes_per_s(&self, id: FlowId) -> f64 {
        let flow = &self.flows[id.index()];
        if flow.active {
            flow.rate_bytes_per_s
        } else {
            0.0
        }
    }

    /// Moves every active flow forward to `now` at its current rate.
    fn catch_up(&mut self, now: SimTime) {
        assert!(now >= self.now);
        let elapsed_s = (now.0 - self.now.0) as f64 * 1e-9;
        for flow in self.flows.iter_mut().filter(|flow| flow.active) {
            if elapsed_s > 0.0 && flow.rate_bytes_per_s.is_finite() {
                flow.remaining_bytes -= flow.rate_bytes_per_s * elapsed_s;
            }
        }
        self.now = now;
    }

    /// Textbook water-filling over every link, then every completion time anew.
    fn reshare(&mut self) {
        let now = self.now;
        // Flows due now are finishing: they take no bandwidth.
        let sharing: Vec<usize> = (0..self.flows.len())
            .filter(|&f| self.flows[f].active && self.flows[f].due > now)
            .collect();
        let mut remaining_capacity = self.capacities_bytes_per_s.clone();
        let mut unfrozen = vec![0usize; remaining_capacity.len()];
        for &f in &sharing {
            for link in &self.flows[f].route {
                unfrozen[link.index()] += 1;
            }
        }
        let mut frozen = vec![false; self.flows.len()];
        loop {
            let mut bottleneck: Option<(f64, usize)> = None;
            for link in 0..remaining_capacity.len() {
                if unfrozen[link] == 0 {
                    continue;
                }
                let share = remaining_capacity[link] / unfrozen[link] as f64;
                if bottleneck.is_none_or(|(best, _)| share < best) {
                    bottleneck = Some((share, link));
                }
            }
            let Some((share, link)) = bottleneck else {
                break;
            };
            for &f in &sharing {
                if frozen[f] || !self.flows[f].route.contains(&LinkId(link as u32)) {
                    continue;
                }
                frozen[f] = true;
                self.flows[f].rate_bytes_per_s = share;
                for other in &self.flows[f].route {
                    let capacity = &mut remaining_capacity[other.index()];
                    *capacity = (*capacity - share).max(0.0);
                    unfrozen[other.index()] -= 1;
                }
            }
        }
        for &f in &sharing {
            let flow = &mut self.flows[f];
            if !frozen[f] {
                flow.rate_bytes_per_s = f64::INFINITY; // crosses no link
            }
            flow.due =
                now + SimDuration::from_seconds_ceil(flow.remaining_bytes / flow.rate_bytes_per_s);
        }
    }
}
