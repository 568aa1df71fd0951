//! Property tests: on random flow sets (seeded, deterministic), the incremental
//! [`FairShareNetwork`] finishes every flow when the from-scratch
//! [`ReferenceNetwork`] does.
//!
//! Exact equality is expected almost always: both water-fill each link's flows with
//! the same arithmetic in the same order. The fast model advances a flow's remaining
//! bytes only when its rate changes, the reference at every event, so the two f64
//! remainders may differ in the last bits, and a completion that lands within that
//! noise of a whole nanosecond may round one way in one model and the other way in the
//! other. The test therefore allows 1 ns per event of difference, and reports how
//! many flows differed at all.

use profile::Profile;
use sim::network::*;
use sim::time::SimTime;

/// xorshift64* (Marsaglia; Vigna): small, seeded, good enough for test inputs.
struct XorShift64(u64);

impl XorShift64 {
    fn new(seed: u64) -> XorShift64 {
        XorShift64(splitmix64(seed) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, bound).
    fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

/// What the driver needs from a flow model.
trait FlowModel {
    fn start(&mut self, now: SimTime, route: &[LinkId], bytes: u64) -> FlowId;
    fn next(&mut self) -> Option<(SimTime, FlowId)>;
    fn finish(&mut self, now: SimTime, id: FlowId);
}

impl FlowModel for FairShareNetwork {
    fn start(&mut self, now: SimTime, route: &[LinkId], bytes: u64) -> FlowId {
        self.start_flow(now, route, bytes)
    }
    fn next(&mut self) -> Option<(SimTime, FlowId)> {
        self.next_completion()
    }
    fn finish(&mut self, now: SimTime, id: FlowId) {
        self.complete(now, id)
    }
}

impl FlowModel for ReferenceNetwork {
    fn start(&mut self, now: SimTime, route: &[LinkId], bytes: u64) -> FlowId {
        self.start_flow(now, route, bytes)
    }
    fn next(&mut self) -> Option<(SimTime, FlowId)> {
        self.next_completion()
    }
    fn finish(&mut self, now: SimTime, id: FlowId) {
        self.complete(now, id)
    }
}

struct FlowSpec {
    start: SimTime,
    route: Vec<LinkId>,
    bytes: u64,
}

/// Runs the flows (sorted by start) to the end; completions at an instant come
/// before starts at the same instant. Returns each flow's completion time, and
/// the number of events.
fn run(model: &mut impl FlowModel, flows: &[FlowSpec]) -> (Vec<SimTime>, usize) {
    let mut finished = vec![SimTime(u64::MAX); flows.len()];
    let mut next_start = 0;
    let mut events = 0;
    loop {
        let completion = model.next();
        let start = flows.get(next_start).map(|flow| flow.start);
        match (completion, start) {
            (Some((due, id)), start) if start.is_none_or(|s| due <= s) => {
                model.finish(due, id);
                finished[id.index()] = due;
            }
            (_, Some(start)) => {
                let flow = &flows[next_start];
                let id = model.start(start, &flow.route, flow.bytes);
                assert_eq!(id.index(), next_start);
                next_start += 1;
            }
            (None, None) => break,
            (Some(_), None) => unreachable!(),
        }
        events += 1;
    }
    (finished, events)
}

fn random_links(rng: &mut XorShift64) -> Vec<f64> {
    const CAPACITIES: [f64; 6] = [1e9, 2e9, 5e9, 12.5e9, 24e9, 230e9];
    let count = 2 + rng.below(10);
    (0..count)
        .map(|_| {
            CAPACITIES[rng.below(CAPACITIES.len() as u64) as usize]
                * (1.0 + rng.below(7) as f64 / 10.0)
        })
        .collect()
}

fn random_flows(rng: &mut XorShift64, link_count: usize) -> Vec<FlowSpec> {
    let count = 1 + rng.below(60);
    let mut now = 0u64;
    (0..count)
        .map(|_| {
            if rng.below(3) != 0 {
                now += rng.below(2_000_000);
            }
            let mut route: Vec<LinkId> = (0..link_count as u32).map(LinkId).collect();
            // Fisher–Yates, then keep 0..=4 links (0 rarely: a local copy).
            for i in (1..route.len()).rev() {
                route.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let hops = if rng.below(20) == 0 {
                0
            } else {
                1 + rng.below(4) as usize
            };
            route.truncate(hops.min(link_count));
            let bytes = if rng.below(15) == 0 {
                0
            } else {
                rng.below(50_000_000)
            };
            FlowSpec {
                start: SimTime(now),
                route,
                bytes,
            }
        })
        .collect()
}

fn compare(capacities: Vec<f64>, flows: &[FlowSpec]) -> (u64, usize, usize) {
    let (fast, events) = run(&mut FairShareNetwork::new(capacities.clone()), flows);
    let (slow, _) = run(&mut ReferenceNetwork::new(capacities), flows);
    let mut max_difference_ns = 0;
    let mut differing = 0;
    for (f, s) in fast.iter().zip(&slow) {
        assert!(f.0 != u64::MAX && s.0 != u64::MAX, "a flow never finished");
        let difference = f.0.abs_diff(s.0);
        max_difference_ns = max_difference_ns.max(difference);
        differing += usize::from(difference > 0);
    }
    assert!(
        max_difference_ns <= events as u64,
        "fast and reference differ by {max_difference_ns} ns over {events} events"
    );
    (max_difference_ns, differing, fast.len())
}

#[test]
fn fast_model_matches_the_reference_on_random_flow_sets() {
    let (mut worst_ns, mut differing, mut total) = (0, 0, 0);
    for seed in 0..300 {
        let mut rng = XorShift64::new(seed);
        let capacities = random_links(&mut rng);
        let flows = random_flows(&mut rng, capacities.len());
        let (max_ns, count, flows_run) = compare(capacities, &flows);
        worst_ns = worst_ns.max(max_ns);
        differing += count;
        total += flows_run;
    }
    println!("{differing} of {total} flows differ; largest difference {worst_ns} ns");
    assert!(
        differing * 100 <= total,
        "{differing} of {total} flows differ"
    );
}

#[test]
fn fast_model_matches_the_reference_on_a_real_fabric() {
    let mut topology = topologies::preset("selene").unwrap();
    // 8 DGX A100 nodes on radix-8 switches (a = 4): 2 leaves per rail, flows meet at
    // leaves, spines and cores, and the reference's full scans stay affordable.
    topology.nodes = 8;
    topology.fabric.switch_radix = 8;
    let fabric = Fabric::new(&topology, &Profile::builtin("a100-80gb").unwrap()).unwrap();
    let gpus = fabric.gpu_count() as u64;
    let (mut worst_ns, mut differing, mut total) = (0, 0, 0);
    for seed in 0..20 {
        let mut rng = XorShift64::new(1000 + seed);
        let mut now = 0;
        let flows: Vec<FlowSpec> = (0..200)
            .map(|_| {
                now += rng.below(50_000);
                let (src, dst) = (rng.below(gpus) as u32, rng.below(gpus) as u32);
                let route = match rng.below(10) {
                    0 => fabric.route_to_host(src),
                    1 => fabric.route_from_host(dst),
                    _ => fabric.route(src, dst),
                };
                FlowSpec {
                    start: SimTime(now),
                    route: route.links,
                    bytes: rng.below(64 << 20),
                }
            })
            .collect();
        let (max_ns, count, flows_run) = compare(fabric.capacities_bytes_per_s(), &flows);
        worst_ns = worst_ns.max(max_ns);
        differing += count;
        total += flows_run;
    }
    println!("{differing} of {total} flows differ; largest difference {worst_ns} ns");
}

#[test]
fn the_same_flows_give_the_same_completions_twice() {
    let mut rng = XorShift64::new(7);
    let capacities = random_links(&mut rng);
    let flows = random_flows(&mut rng, capacities.len());
    let first = run(&mut FairShareNetwork::new(capacities.clone()), &flows);
    let second = run(&mut FairShareNetwork::new(capacities), &flows);
    assert_eq!(first, second);
}
