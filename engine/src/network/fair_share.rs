//! The fast flow-level model: flows over routes share link bandwidth max-min
//! fairly; rates change only when a flow starts or ends, and only for the flows
//! connected to it.
//!
//! - Max-min fair rates decompose over connected components of the flow–link graph,
//!   so a start or an end re-runs water-filling (`water_fill.rs`) only on the
//!   component of the changed flow; every other flow keeps its rate, its remaining
//!   bytes as of its last rate change, and its pending completion.
//! - Each flow has one pending completion in a binary heap ordered by (time,
//!   `FlowId`) (`pending.rs`): re-arming a flow leaves its older entry stale, to
//!   be dropped when it surfaces (lazy cancellation). The flows of one group
//!   ([`FairShareNetwork::begin_group`]: the engine's flows of one task) that all
//!   start alone and end together share one entry.
//! - A flow that starts on links no other flow uses is its own component: it
//!   takes its slowest link's capacity without a search. One the caller
//!   knows will keep its links to itself until it ends
//!   ([`FairShareNetwork::run_alone`], a planner's `FlowPlan::alone`) is
//!   timed at its start and never enters the sharing (debug builds check
//!   the promise). Which flows cross each
//!   link is kept in `link_flows.rs`.
//! - A flow names its route, interned once (`route_table.rs`), which keeps
//!   the route's slowest capacity and the bytes completed over it (the
//!   per-link traffic is summed from the routes at the end).
//! - Nothing is kept per flow ever started, only per running flow (slots reused),
//!   and the caller's tag for each flow (the engine's task entry) rides in its slot.
//! - Remaining bytes are `f64`; a completion time is `last change + ceil(remaining ÷
//!   rate)` via `SimDuration::from_seconds_ceil`. A flow holds its rate until that
//!   rounded instant. Flows due at the instant of a recomputation are finishing: they
//!   take no share, and keep their completion time.
//!
//! Contract: calls come in non-decreasing time, and no later than
//! [`FairShareNetwork::next_completion`]'s time; complete due flows (e.g. with
//! [`FairShareNetwork::advance`]) before starting new ones at a later instant.
//! Propagation latency (`Route::latency_ns`) is not added here.

use super::ids::{FlowId, LinkId};
use super::link_flows::LinkFlows;
use super::pending::PendingCompletions;
use super::route_table::{RouteId, RouteTable};
use super::utilization::LinkUtilization;
use super::water_fill::WaterFill;
use timeline::time::{SimDuration, SimTime};

/// A completion that never comes (no flow is ever due then).
const NEVER: SimTime = SimTime(u64::MAX);

/// A running flow, in a slot that the next flow reuses once it completes:
/// memory follows the flows running, not the flows ever started.
#[derive(Debug, Clone)]
struct Flow {
    /// Start order: completion ties and the water-filling order.
    id: FlowId,
    route: RouteId,
    bytes: u64,
    remaining_bytes: f64,
    rate_bytes_per_s: f64,
    /// When `remaining_bytes` was last brought up to date.
    updated: SimTime,
    due: SimTime,
    /// Visit mark for component search: visited iff mark == epoch.
    mark: u64,
    /// What the caller named the flow for (the engine: its task's entry).
    owner: u32,
    /// Running (false once completed: the slot is free).
    active: bool,
}

/// How long a flow of `bytes` alone on its links takes: at its route's
/// slowest capacity, rounded up to a nanosecond. A lone start,
/// [`FairShareNetwork::run_alone`] and tasks timed once before a run
/// (`engine::lone_twins`) all take it, so they agree.
pub fn time_alone(bytes: f64, rate_bytes_per_s: f64) -> SimDuration {
    SimDuration::from_seconds_ceil(bytes / rate_bytes_per_s)
}

/// When a flow of `bytes` starting at `now` alone on its links ends.
fn end_alone(now: SimTime, bytes: f64, rate_bytes_per_s: f64) -> SimTime {
    now + time_alone(bytes, rate_bytes_per_s)
}

/// Max-min fair sharing of link bandwidth among flows, updated incrementally.
#[derive(Debug, Clone)]
pub struct FairShareNetwork {
    capacities_bytes_per_s: Vec<f64>,
    /// Running flows by slot; free slots are listed in `free_slots`.
    slots: Vec<Flow>,
    free_slots: Vec<u32>,
    /// Flows ever started: the next `FlowId`. Nothing is kept per flow
    /// ever started, only per slot, so memory follows the flows running.
    started: u32,
    /// Slots of the active flows on each link.
    flows_on_link: LinkFlows,
    pending: PendingCompletions,
    /// Every route a flow ran on, with the bytes completed over it.
    routes: RouteTable,
    water_fill: WaterFill,
    link_mark: Vec<u64>,
    epoch: u64,
    now: SimTime,
    active: usize,
    /// Buffers reused by every recomputation.
    component: Vec<(FlowId, u32)>,
    stack: Vec<u32>,
    sharing: Vec<u32>,
    rates: Vec<f64>,
    neighbours: Vec<u32>,
    /// Between [`FairShareNetwork::begin_group`] and
    /// [`FairShareNetwork::end_group`] while every flow started alone:
    /// those flows' (slot, id, due), not yet pending.
    grouping: bool,
    deferred: Vec<(u32, FlowId, SimTime)>,
    group_slots: Vec<u32>,
    /// Debug builds: by link, when the last flow run alone on it
    /// ([`FairShareNetwork::run_alone`]) ends; a flow starting on the link
    /// before then breaks the caller's promise.
    #[cfg(debug_assertions)]
    lone_until: Vec<SimTime>,
}

impl FairShareNetwork {
    /// A network of links with these capacities, indexed by `LinkId`.
    pub fn new(capacities_bytes_per_s: Vec<f64>) -> FairShareNetwork {
        let links = capacities_bytes_per_s.len();
        FairShareNetwork {
            capacities_bytes_per_s,
            slots: Vec::new(),
            free_slots: Vec::new(),
            started: 0,
            flows_on_link: LinkFlows::new(links),
            pending: PendingCompletions::default(),
            routes: RouteTable::default(),
            water_fill: WaterFill::new(links),
            link_mark: vec![0; links],
            epoch: 0,
            now: SimTime::ZERO,
            active: 0,
            component: Vec::new(),
            stack: Vec::new(),
            sharing: Vec::new(),
            rates: Vec::new(),
            neighbours: Vec::new(),
            grouping: false,
            deferred: Vec::new(),
            group_slots: Vec::new(),
            #[cfg(debug_assertions)]
            lone_until: vec![SimTime::ZERO; links],
        }
    }

    /// Starts a flow of `bytes` over `route` (distinct links) at `now`.
    pub fn start_flow(&mut self, now: SimTime, route: &[LinkId], bytes: u64) -> FlowId {
        self.start_flow_for(now, route, bytes, 0)
    }

    /// [`FairShareNetwork::start_flow`] for `owner`, which
    /// [`FairShareNetwork::complete_next`] gives back when the flow ends.
    /// (Interns `route` anew: a caller starting many flows on few routes
    /// interns each once, [`FairShareNetwork::intern_route`], and starts
    /// them with [`FairShareNetwork::start_flow_on`].)
    pub fn start_flow_for(
        &mut self,
        now: SimTime,
        route: &[LinkId],
        bytes: u64,
        owner: u32,
    ) -> FlowId {
        let route = self.intern_route(route);
        self.start_flow_on(now, route, bytes, owner)
    }

    /// Interns `route` (distinct links) for [`FairShareNetwork::start_flow_on`].
    pub fn intern_route(&mut self, route: &[LinkId]) -> RouteId {
        debug_assert!(
            {
                let mut links = route.to_vec();
                links.sort();
                links.dedup();
                links.len() == route.len()
            },
            "a route crosses each link once"
        );
        self.routes.intern(route, &self.capacities_bytes_per_s)
    }

    /// The links of interned `route`.
    pub fn route_links(&self, route: RouteId) -> &[LinkId] {
        self.routes.links(route)
    }

    /// Starts a flow of `bytes` over interned `route` at `now` for `owner`.
    pub fn start_flow_on(
        &mut self,
        now: SimTime,
        route: RouteId,
        bytes: u64,
        owner: u32,
    ) -> FlowId {
        self.set_now(now);
        let id = FlowId(self.started);
        self.started = self
            .started
            .checked_add(1)
            .expect("fewer than 2^32 flows in one run");
        let slot = match self.free_slots.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(Flow {
                    id,
                    route,
                    bytes: 0,
                    remaining_bytes: 0.0,
                    rate_bytes_per_s: 0.0,
                    updated: now,
                    due: NEVER,
                    mark: 0,
                    owner,
                    active: false,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let flow = &mut self.slots[slot as usize];
        flow.id = id;
        flow.route = route;
        flow.bytes = bytes;
        flow.remaining_bytes = bytes as f64;
        flow.rate_bytes_per_s = 0.0;
        flow.updated = now;
        flow.due = NEVER;
        flow.owner = owner;
        flow.active = true;
        self.active += 1;
        #[cfg(debug_assertions)]
        for &link in self.routes.links(route) {
            assert!(
                self.lone_until[link.index()] <= now,
                "a flow starts beside one said to run alone on link {}",
                link.index()
            );
        }
        let mut alone = true;
        for &link in self.routes.links(route) {
            alone &= self.flows_on_link.is_empty(link.index());
            self.flows_on_link.add(link.index(), slot);
        }
        let rate_bytes_per_s = self.routes.slowest_bytes_per_s(route);
        if alone {
            // Its own component: what `recompute` would do, without the
            // search (a lone flow takes its slowest link's capacity).
            let flow = &mut self.slots[slot as usize];
            flow.rate_bytes_per_s = rate_bytes_per_s;
            let due = end_alone(now, flow.remaining_bytes, rate_bytes_per_s);
            if due != flow.due {
                flow.due = due;
                if self.grouping {
                    self.deferred.push((slot, id, due));
                } else {
                    self.pending.set(slot, id, due);
                }
            }
            return id;
        }
        self.flush_deferred();
        let mut seeds = std::mem::take(&mut self.neighbours);
        seeds.clear();
        seeds.push(slot);
        self.recompute(now, &seeds);
        self.neighbours = seeds;
        id
    }

    /// A flow of `bytes` over interned `route` from `now` that the caller
    /// knows has the route's links to itself until it ends
    /// ([`super::FlowPlan::alone`]): its end, as [`FairShareNetwork::start_flow_on`]
    /// gives a flow that starts alone and is never re-shared, and its bytes
    /// carried over the route. It takes no slot, no `FlowId` and no pending
    /// entry: the flows that do keep their order among themselves.
    pub fn run_alone(&mut self, now: SimTime, route: RouteId, bytes: u64) -> SimTime {
        self.routes.carry(route, bytes);
        let end = end_alone(now, bytes as f64, self.routes.slowest_bytes_per_s(route));
        #[cfg(debug_assertions)]
        for &link in self.routes.links(route) {
            let link = link.index();
            assert!(
                self.flows_on_link.is_empty(link) && self.lone_until[link] <= now,
                "a flow said to run alone starts beside another on link {link}"
            );
            self.lone_until[link] = end;
        }
        end
    }

    /// The capacity of `route`'s slowest link: the rate of a flow alone on
    /// it (+∞ with no link).
    pub fn slowest_bytes_per_s(&self, route: RouteId) -> f64 {
        self.routes.slowest_bytes_per_s(route)
    }

    /// Counts `bytes` completed over `route` by flows that ran alone
    /// without being started here (`engine::lone_twins`): the same
    /// per-link traffic as [`FairShareNetwork::run_alone`] adds for them.
    pub fn carry_alone(&mut self, route: RouteId, bytes: u64) {
        self.routes.carry(route, bytes);
    }

    /// Starts a group: the flows started until [`FairShareNetwork::end_group`]
    /// (at one instant: one task's flows) share one pending entry if every
    /// one of them starts alone on its links and all end at one time. The
    /// outcome is the same as without the group; only the bookkeeping is
    /// lighter (see `pending.rs`).
    pub fn begin_group(&mut self) {
        debug_assert!(!self.grouping && self.deferred.is_empty());
        self.grouping = true;
    }

    /// Ends the group begun by [`FairShareNetwork::begin_group`].
    pub fn end_group(&mut self) {
        if self.grouping && self.deferred.len() >= 2 {
            let due = self.deferred[0].2;
            if self.deferred.iter().all(|&(_, _, other)| other == due) {
                let first_id = self.deferred[0].1;
                self.group_slots.clear();
                self.group_slots
                    .extend(self.deferred.iter().map(|&(slot, ..)| slot));
                self.pending.set_group(&self.group_slots, first_id, due);
                self.deferred.clear();
            }
        }
        self.flush_deferred();
    }

    /// Gives the group's flows started so far their own pending entries, and
    /// ends the group (a flow that does not start alone re-shares others).
    fn flush_deferred(&mut self) {
        self.grouping = false;
        for (slot, id, due) in self.deferred.drain(..) {
            self.pending.set(slot, id, due);
        }
    }

    /// The earliest pending completion (ties: lowest `FlowId`).
    pub fn next_completion(&mut self) -> Option<(SimTime, FlowId)> {
        self.pending.peek().map(|(due, id, _)| (due, id))
    }

    /// The time of the earliest pending completion, without looking for
    /// which flow it is.
    pub fn next_due(&mut self) -> Option<SimTime> {
        self.pending.peek_due()
    }

    /// Ends the earliest pending flow at its completion time; returns that
    /// time and the flow's owner (see [`FairShareNetwork::start_flow_for`]).
    pub fn complete_next(&mut self) -> Option<(SimTime, u32)> {
        let (due, _, slot) = self.pending.peek()?;
        let owner = self.slots[slot as usize].owner;
        self.complete_slot(due, slot);
        Some((due, owner))
    }

    /// [`FairShareNetwork::complete_next`], then every flow of the same
    /// owner due at the same time that is next in line, one after another
    /// (a group's members, `pending.rs`): the same completions, in the same
    /// order, as calling it once per flow, since nothing the caller does
    /// between them for one owner touches the network. Returns the time,
    /// the owner and how many flows ended.
    pub fn complete_next_of_owner(&mut self) -> Option<(SimTime, u32, u32)> {
        let (due, _, mut slot) = self.pending.peek()?;
        let owner = self.slots[slot as usize].owner;
        let mut ended = 0;
        loop {
            self.complete_slot(due, slot);
            ended += 1;
            match self.pending.peek() {
                Some((next_due, _, next))
                    if next_due == due && self.slots[next as usize].owner == owner =>
                {
                    slot = next;
                }
                _ => return Some((due, owner, ended)),
            }
        }
    }

    /// The slot of running flow `id`, by a search of the slots (the engine
    /// completes flows by [`FairShareNetwork::complete_next`]).
    fn slot_of(&self, id: FlowId) -> Option<u32> {
        self.slots
            .iter()
            .position(|flow| flow.active && flow.id == id)
            .map(|slot| slot as u32)
    }

    /// Ends flow `id` at `now`, its completion time; re-shares its links.
    pub fn complete(&mut self, now: SimTime, id: FlowId) {
        let slot = match self.pending.peek() {
            Some((_, first, slot)) if first == id => Some(slot),
            _ => self.slot_of(id),
        }
        .unwrap_or_else(|| panic!("flow {id:?} is not running (completed twice?)"));
        self.complete_slot(now, slot);
    }

    fn complete_slot(&mut self, now: SimTime, slot: u32) {
        self.set_now(now);
        debug_assert!(
            self.slots[slot as usize].due <= now,
            "flow {:?} completed before it was due",
            self.slots[slot as usize].id
        );
        self.slots[slot as usize].active = false;
        self.active -= 1;
        self.pending.remove(slot);
        let flow = &self.slots[slot as usize];
        let (route, bytes) = (flow.route, flow.bytes);
        self.routes.carry(route, bytes);
        let mut neighbours = std::mem::take(&mut self.neighbours);
        neighbours.clear();
        for &link in self.routes.links(route) {
            self.flows_on_link.remove(link.index(), slot);
            neighbours.extend_from_slice(self.flows_on_link.on(link.index()));
        }
        self.free_slots.push(slot);
        self.recompute(now, &neighbours);
        self.neighbours = neighbours;
    }

    /// Completes every flow due at or before `now`, in (time, `FlowId`) order.
    pub fn advance(&mut self, now: SimTime) -> Vec<(SimTime, FlowId)> {
        let mut done = Vec::new();
        while let Some((due, id)) = self.next_completion() {
            if due > now {
                break;
            }
            self.complete(due, id);
            done.push((due, id));
        }
        done
    }

    /// Current rate of a flow (0 once it has completed).
    pub fn rate_bytes_per_s(&self, id: FlowId) -> f64 {
        self.slot_of(id)
            .map_or(0.0, |slot| self.slots[slot as usize].rate_bytes_per_s)
    }

    /// Flows started and not yet completed.
    pub fn active_flows(&self) -> usize {
        self.active
    }

    /// Bytes per link of the completed flows.
    pub fn link_utilization(&self) -> LinkUtilization {
        LinkUtilization {
            carried_bytes: self
                .routes
                .carried_per_link(self.capacities_bytes_per_s.len()),
            capacity_bytes_per_s: self.capacities_bytes_per_s.clone(),
        }
    }

    fn set_now(&mut self, now: SimTime) {
        debug_assert!(
            now >= self.now,
            "time went backwards: {now:?} < {:?}",
            self.now
        );
        self.now = now;
    }

    /// Re-shares the connected component(s) of the running flows in slots
    /// `seeds` at `now`.
    fn recompute(&mut self, now: SimTime, seeds: &[u32]) {
        // A flow that ended alone on its links leaves nothing to re-share.
        if seeds.is_empty() {
            return;
        }
        self.find_component(seeds);
        // Bring every flow of the component up to `now`; split off those finishing now.
        self.sharing.clear();
        for &(_, slot) in &self.component {
            let flow = &mut self.slots[slot as usize];
            if flow.updated < now && flow.rate_bytes_per_s.is_finite() {
                let elapsed_s = (now.0 - flow.updated.0) as f64 * 1e-9;
                flow.remaining_bytes -= flow.rate_bytes_per_s * elapsed_s;
            }
            flow.updated = now;
            if flow.due > now {
                self.sharing.push(slot);
            }
        }
        if let [only] = self.sharing[..] {
            // One flow alone: water-filling freezes it at its first
            // bottleneck's share, capacity ÷ 1, i.e. its slowest link's
            // capacity (+∞ with no link), exactly as `rates_into` computes.
            let rate_bytes_per_s = self
                .routes
                .slowest_bytes_per_s(self.slots[only as usize].route);
            self.rates.clear();
            self.rates.push(rate_bytes_per_s);
        } else {
            let (slots, sharing, routes) = (&self.slots, &self.sharing, &self.routes);
            self.water_fill.rates_into(
                sharing.len(),
                |index| routes.links(slots[sharing[index] as usize].route),
                &self.capacities_bytes_per_s,
                &mut self.rates,
            );
        }
        for (&slot, &rate_bytes_per_s) in self.sharing.iter().zip(&self.rates) {
            let flow = &mut self.slots[slot as usize];
            flow.rate_bytes_per_s = rate_bytes_per_s;
            let due = now + SimDuration::from_seconds_ceil(flow.remaining_bytes / rate_bytes_per_s);
            if due != flow.due {
                flow.due = due;
                self.pending.set(slot, flow.id, due);
            }
        }
    }

    /// Into `self.component`: the running flows connected to the slots
    /// `seeds` through shared links, as (id, slot), sorted by id.
    fn find_component(&mut self, seeds: &[u32]) {
        self.epoch += 1;
        let epoch = self.epoch;
        self.component.clear();
        self.stack.clear();
        for &seed in seeds {
            let flow = &mut self.slots[seed as usize];
            if flow.mark != epoch {
                flow.mark = epoch;
                self.stack.push(seed);
            }
        }
        while let Some(slot) = self.stack.pop() {
            self.component.push((self.slots[slot as usize].id, slot));
            let route = self.slots[slot as usize].route;
            for &link in self.routes.links(route) {
                if self.link_mark[link.index()] == epoch {
                    continue;
                }
                self.link_mark[link.index()] = epoch;
                for &other in self.flows_on_link.on(link.index()) {
                    let other_flow = &mut self.slots[other as usize];
                    if other_flow.mark != epoch {
                        other_flow.mark = epoch;
                        self.stack.push(other);
                    }
                }
            }
        }
        self.component.sort_unstable();
    }
}

#[cfg(test)]
#[path = "fair_share_tests.rs"]
mod tests;
