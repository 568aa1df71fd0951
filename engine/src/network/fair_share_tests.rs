//! [`super::FairShareNetwork`]'s unit tests: rates, completions, groups
//! and their bookkeeping on hand-built links.

use super::*;

fn links(ids: &[u32]) -> Vec<LinkId> {
    ids.iter().map(|&l| LinkId(l)).collect()
}

#[test]
fn two_flows_sharing_a_link_each_get_half_and_finish_together() {
    let mut net = FairShareNetwork::new(vec![1e9]);
    let a = net.start_flow(SimTime(0), &links(&[0]), 1_000_000);
    let b = net.start_flow(SimTime(0), &links(&[0]), 1_000_000);
    assert_eq!(net.rate_bytes_per_s(a), 0.5e9);
    assert_eq!(net.rate_bytes_per_s(b), 0.5e9);
    let done = net.advance(SimTime(u64::MAX - 1));
    assert_eq!(done, [(SimTime(2_000_000), a), (SimTime(2_000_000), b)]);
}

#[test]
fn a_finished_flow_releases_its_share() {
    // 1 GB/s link: A (1 MB) and B (3 MB) share it until A ends at 2 ms,
    // then B alone: 2 MB left at 1 GB/s → done at 4 ms.
    let mut net = FairShareNetwork::new(vec![1e9]);
    let a = net.start_flow(SimTime(0), &links(&[0]), 1_000_000);
    let b = net.start_flow(SimTime(0), &links(&[0]), 3_000_000);
    assert_eq!(net.next_completion(), Some((SimTime(2_000_000), a)));
    net.complete(SimTime(2_000_000), a);
    assert_eq!(net.rate_bytes_per_s(b), 1e9);
    assert_eq!(net.advance(SimTime(10_000_000)), [(SimTime(4_000_000), b)]);
}

#[test]
fn a_flow_bottlenecked_elsewhere_releases_capacity_to_others() {
    // Link 0: 10 GB/s, shared by A and B. Link 1: 2 GB/s, B only.
    // Max-min: B = 2 (its bottleneck is link 1), A = 8, not 5.
    let mut net = FairShareNetwork::new(vec![10e9, 2e9]);
    let a = net.start_flow(SimTime(0), &links(&[0]), 8_000_000);
    let b = net.start_flow(SimTime(0), &links(&[0, 1]), 8_000_000);
    assert_eq!(net.rate_bytes_per_s(a), 8e9);
    assert_eq!(net.rate_bytes_per_s(b), 2e9);
    // A: 8 MB at 8 GB/s = 1 ms; B: 8 MB at 2 GB/s = 4 ms.
    let done = net.advance(SimTime(u64::MAX - 1));
    assert_eq!(done, [(SimTime(1_000_000), a), (SimTime(4_000_000), b)]);
}

#[test]
fn unconnected_flows_keep_their_pending_completion() {
    let mut net = FairShareNetwork::new(vec![1e9, 1e9]);
    let a = net.start_flow(SimTime(0), &links(&[0]), 1_000_000);
    let slot = net.slot_of(a).unwrap() as usize;
    let due = net.slots[slot].due;
    net.start_flow(SimTime(10), &links(&[1]), 1_000_000);
    assert_eq!(net.slots[slot].due, due);
    assert_eq!(net.slots[slot].updated, SimTime(0));
}

/// The same flows started one by one and in groups (a ring's hops
/// alone on their links, a group broken by a later flow on one of its
/// links, a group whose second flow is not alone) end at the same times
/// in the same order.
#[test]
fn groups_change_nothing_but_the_bookkeeping() {
    let capacities = vec![1e9, 1e9, 1e9, 2e9, 1e9, 1e9];
    // (start ns, route, bytes, group): flows of one group start together.
    let flows: [(u64, &[u32], u64, u32); 10] = [
        (0, &[0], 1_000_000, 0),
        (0, &[1], 1_000_000, 0),
        (0, &[2], 1_000_000, 0),
        (10, &[3], 4_000_000, 1),
        (10, &[4], 2_000_000, 1),
        (500_000, &[1, 5], 1_000_000, 2),
        (500_000, &[4], 500_000, 2),
        (600_000, &[5], 700_000, 3),
        (600_000, &[0], 300_000, 3),
        (600_000, &[3, 5], 100_000, 3),
    ];
    let run = |grouped: bool| {
        let mut net = FairShareNetwork::new(capacities.clone());
        let mut done = Vec::new();
        let mut index = 0;
        while index < flows.len() {
            let (start, _, _, group) = flows[index];
            done.extend(net.advance(SimTime(start)));
            if grouped {
                net.begin_group();
            }
            while index < flows.len() && flows[index].3 == group {
                let (_, route, bytes, _) = flows[index];
                net.start_flow(SimTime(start), &links(route), bytes);
                index += 1;
            }
            if grouped {
                net.end_group();
            }
        }
        done.extend(net.advance(SimTime(u64::MAX - 1)));
        (done, net.pending.groups_made())
    };
    let (one_by_one, none) = run(false);
    assert_eq!(one_by_one.len(), flows.len());
    assert_eq!(none, 0);
    let (grouped, made) = run(true);
    assert_eq!(grouped, one_by_one);
    // Only groups whose every flow starts alone are made: 0 and 1 (group
    // 2's first flow shares link 1 with group 0's, group 3's first link 5
    // with group 2's).
    assert_eq!(made, 2);
}

/// Completing an owner's flows due together in one call gives the
/// same completions as one call per flow: a grouped task's flows in a
/// row, another owner's flow due at the same time apart, and a flow
/// whose end re-shares a link with another owner's.
#[test]
fn an_owners_flows_due_together_end_in_one_call() {
    let start = |net: &mut FairShareNetwork| {
        net.begin_group();
        for link in 0..3 {
            net.start_flow_for(SimTime(0), &links(&[link]), 1_000_000, 7);
        }
        net.end_group();
        net.start_flow_for(SimTime(0), &links(&[3]), 1_000_000, 8);
        net.start_flow_for(SimTime(0), &links(&[4]), 500_000, 9);
        net.start_flow_for(SimTime(0), &links(&[4]), 2_000_000, 9);
        net.start_flow_for(SimTime(0), &links(&[4, 5]), 2_000_000, 10);
    };
    let mut one_by_one = FairShareNetwork::new(vec![1e9; 6]);
    start(&mut one_by_one);
    let mut singles = Vec::new();
    while let Some((due, owner)) = one_by_one.complete_next() {
        match singles.last_mut() {
            Some((last_due, last_owner, ended)) if *last_due == due && *last_owner == owner => {
                *ended += 1;
            }
            _ => singles.push((due, owner, 1)),
        }
    }
    let mut batched = FairShareNetwork::new(vec![1e9; 6]);
    start(&mut batched);
    let mut batches = Vec::new();
    while let Some(batch) = batched.complete_next_of_owner() {
        batches.push(batch);
    }
    assert_eq!(batches, singles);
    // The three grouped flows in one call, then owner 8's apart.
    assert_eq!(batches[0], (SimTime(1_000_000), 7, 3));
    assert_eq!(batches[1], (SimTime(1_000_000), 8, 1));
    assert_eq!(batches.iter().map(|b| b.2).sum::<u32>(), 7);
    assert_eq!(
        batched.link_utilization().carried_bytes,
        one_by_one.link_utilization().carried_bytes
    );
}

#[test]
fn empty_routes_and_empty_flows_finish_at_once() {
    let mut net = FairShareNetwork::new(vec![1e9]);
    let local = net.start_flow(SimTime(5), &[], 1_000);
    let empty = net.start_flow(SimTime(5), &links(&[0]), 0);
    assert_eq!(
        net.advance(SimTime(5)),
        [(SimTime(5), local), (SimTime(5), empty)]
    );
    assert_eq!(net.active_flows(), 0);
}

#[test]
fn utilization_counts_completed_bytes_per_link() {
    let mut net = FairShareNetwork::new(vec![1e9, 2e9, 1e9]);
    net.start_flow(SimTime(0), &links(&[0, 1]), 1_000);
    net.start_flow(SimTime(0), &links(&[1, 2]), 3_000);
    net.advance(SimTime(u64::MAX - 1));
    let utilization = net.link_utilization();
    assert_eq!(utilization.carried_bytes, [1_000, 4_000, 3_000]);
    // Ranked by busy time: link 2 carried 3 µs of traffic at 1 GB/s, link 1
    // 2 µs at 2 GB/s (though more bytes).
    let busiest = utilization.busiest(2, SimDuration(4_000));
    assert_eq!(busiest[0].link, LinkId(2));
    assert!((busiest[0].utilization - 0.75).abs() < 1e-12);
    assert_eq!(busiest[1].link, LinkId(1));
    assert!((busiest[1].utilization - 0.5).abs() < 1e-12);
}
