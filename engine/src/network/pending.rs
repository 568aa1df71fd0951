//! The pending completions of [`super::FairShareNetwork`]'s flows: a binary
//! min-heap of one integer per entry, (due, `FlowId`, tag) packed high to
//! low (due in the top 64 bits, the flow id and a tag in 32 each), so the
//! integer order is the (time, `FlowId`) order the network completes flows
//! in, with lazy cancellation.
//!
//! - A flow's time can change (a re-share) or its flow leave: each slot's
//!   current entry is recorded, and an entry that is not current is dropped
//!   when it reaches the top. The fair-share network re-arms a flow only
//!   when a re-share changes its time, which is rare (most flows run alone
//!   on their links), so stale entries are few. (A flow re-armed back to an
//!   earlier time has two equal entries: the first completes the flow,
//!   which leaves the slot, and the second is then stale.)
//! - **Groups.** The flows of one task that start together alone on their
//!   links (a ring's hops, a pipeline transfer's rails) end at one time and
//!   have consecutive ids: they share one entry, keyed by the first id, and
//!   come out one by one in id order. No other flow due then has an id
//!   between theirs, so this is the order their own entries would give. A
//!   member whose time changes dissolves its group first: every member left
//!   gets its own entry.
//! - A binary heap's pop sifts one hole to the bottom with one comparison
//!   per level (the standard library's `BinaryHeap`), here of 16-byte
//!   integers: cheaper than the indexed 4-ary heap it replaced, which kept
//!   every slot's position up to date, and than a radix heap, whose entries
//!   moved down many buckets each before their time came (completion times
//!   lie micro- to milliseconds ahead). Groups cut the entries and pops of
//!   the 1T model on 3,072 GPUs under `--contention` about eightfold.

use super::ids::FlowId;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use timeline::time::SimTime;

/// `current` of a slot without an entry, and a dead group's key (no entry
/// packs to it: a tag is below `u32::MAX`).
const NONE: u128 = u128::MAX;

/// `group_of` a slot in no group.
const NO_GROUP: u32 = u32::MAX;

/// A tag with this bit names a group (the rest its index); without, a slot.
const GROUP_TAG: u32 = 1 << 31;

/// Flows sharing one entry: their slots in id order (ids `first_id` + i),
/// the next to come out at `next`.
#[derive(Debug, Clone, Default)]
struct Group {
    /// The live entry, or `NONE` once the group is dissolved or done.
    key: u128,
    first_id: u32,
    slots: Vec<u32>,
    next: usize,
}

/// Min-heap of packed (due, flow, tag) entries.
#[derive(Debug, Clone, Default)]
pub struct PendingCompletions {
    heap: BinaryHeap<Reverse<u128>>,
    /// Per slot: its own live entry, or `NONE` (a group's member has none).
    current: Vec<u128>,
    /// Per slot: the group it is a member of, or `NO_GROUP`.
    group_of: Vec<u32>,
    groups: Vec<Group>,
    free_groups: Vec<u32>,
    /// Groups ever made (tests read it).
    #[cfg(test)]
    groups_made: u64,
}

#[inline]
fn pack(due: SimTime, id: u32, tag: u32) -> u128 {
    ((due.0 as u128) << 64) | ((id as u128) << 32) | tag as u128
}

#[inline]
fn due_of(entry: u128) -> SimTime {
    SimTime((entry >> 64) as u64)
}

impl PendingCompletions {
    /// Drops stale entries from the top; the live earliest as (due, flow,
    /// slot), if any.
    #[inline]
    fn top(&mut self) -> Option<(SimTime, FlowId, u32)> {
        while let Some(&Reverse(entry)) = self.heap.peek() {
            let tag = entry as u32;
            if tag & GROUP_TAG == 0 {
                if self.current[tag as usize] == entry {
                    return Some((due_of(entry), FlowId((entry >> 32) as u32), tag));
                }
            } else {
                let group = &self.groups[(tag & !GROUP_TAG) as usize];
                if group.key == entry {
                    let id = group.first_id + group.next as u32;
                    return Some((due_of(entry), FlowId(id), group.slots[group.next]));
                }
            }
            self.heap.pop();
        }
        None
    }

    /// The earliest time pending.
    #[inline]
    pub fn peek_due(&mut self) -> Option<SimTime> {
        self.top().map(|(due, ..)| due)
    }

    /// The earliest (due, flow, slot).
    pub fn peek(&mut self) -> Option<(SimTime, FlowId, u32)> {
        self.top()
    }

    fn grow_to(&mut self, slot: u32) {
        let index = slot as usize;
        if self.current.len() <= index {
            self.current.resize(index + 1, NONE);
            self.group_of.resize(index + 1, NO_GROUP);
        }
    }

    /// Gives `slot` (running flow `id`) the completion time `due`: its
    /// earlier entry, if any, goes stale (its group, if any, dissolves).
    pub fn set(&mut self, slot: u32, id: FlowId, due: SimTime) {
        self.grow_to(slot);
        self.dissolve_group_of(slot);
        let entry = pack(due, id.0, slot);
        self.current[slot as usize] = entry;
        self.heap.push(Reverse(entry));
    }

    /// Gives the flows in `slots`, whose ids are `first_id`, `first_id` + 1,
    /// … in that order and which have no entry, the one completion time
    /// `due`, as one entry.
    pub fn set_group(&mut self, slots: &[u32], first_id: FlowId, due: SimTime) {
        let index = match self.free_groups.pop() {
            Some(index) => index,
            None => {
                self.groups.push(Group::default());
                (self.groups.len() - 1) as u32
            }
        };
        assert!(index < GROUP_TAG, "fewer than 2^31 groups pending");
        let key = pack(due, first_id.0, GROUP_TAG | index);
        #[cfg(test)]
        {
            self.groups_made += 1;
        }
        for &slot in slots {
            self.grow_to(slot);
            debug_assert_eq!(self.current[slot as usize], NONE);
            debug_assert_eq!(self.group_of[slot as usize], NO_GROUP);
            self.group_of[slot as usize] = index;
        }
        let group = &mut self.groups[index as usize];
        group.key = key;
        group.first_id = first_id.0;
        group.slots.clear();
        group.slots.extend_from_slice(slots);
        group.next = 0;
        self.heap.push(Reverse(key));
    }

    /// Drops `slot`'s entry, if it has one: a group's next member leaves
    /// it (the group ends with its last), any other member dissolves it.
    pub fn remove(&mut self, slot: u32) {
        let Some(&group_index) = self.group_of.get(slot as usize) else {
            return;
        };
        if group_index != NO_GROUP {
            let group = &mut self.groups[group_index as usize];
            if group.slots[group.next] == slot {
                self.group_of[slot as usize] = NO_GROUP;
                group.next += 1;
                if group.next == group.slots.len() {
                    group.key = NONE;
                    self.free_groups.push(group_index);
                }
                return;
            }
            self.dissolve_group_of(slot);
        }
        self.current[slot as usize] = NONE;
    }

    /// Groups ever made.
    #[cfg(test)]
    pub fn groups_made(&self) -> u64 {
        self.groups_made
    }

    /// Every member left of `slot`'s group, if it is in one, gets its own
    /// entry at the group's time.
    fn dissolve_group_of(&mut self, slot: u32) {
        let group_index = self.group_of[slot as usize];
        if group_index == NO_GROUP {
            return;
        }
        let group = &mut self.groups[group_index as usize];
        let due = due_of(group.key);
        group.key = NONE;
        for (offset, &member) in group.slots.iter().enumerate().skip(group.next) {
            let entry = pack(due, group.first_id + offset as u32, member);
            self.current[member as usize] = entry;
            self.group_of[member as usize] = NO_GROUP;
            self.heap.push(Reverse(entry));
        }
        self.free_groups.push(group_index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_come_out_by_time_then_flow_and_move_when_their_time_changes() {
        let mut pending = PendingCompletions::default();
        pending.set(0, FlowId(7), SimTime(50));
        pending.set(1, FlowId(3), SimTime(50));
        pending.set(2, FlowId(9), SimTime(10));
        assert_eq!(pending.peek(), Some((SimTime(10), FlowId(9), 2)));
        assert_eq!(pending.peek_due(), Some(SimTime(10)));
        pending.set(2, FlowId(9), SimTime(60));
        assert_eq!(pending.peek(), Some((SimTime(50), FlowId(3), 1)));
        assert_eq!(pending.peek(), Some((SimTime(50), FlowId(3), 1)));
        pending.remove(1);
        pending.remove(1);
        assert_eq!(pending.peek(), Some((SimTime(50), FlowId(7), 0)));
        pending.set(0, FlowId(7), SimTime(70));
        assert_eq!(pending.peek(), Some((SimTime(60), FlowId(9), 2)));
        assert_eq!(pending.peek_due(), Some(SimTime(60)));
        pending.remove(2);
        pending.remove(0);
        assert_eq!(pending.peek(), None);
        assert_eq!(pending.peek_due(), None);
        assert_eq!(pending.peek(), None);
    }

    /// A group's members come out in id order among single entries of the
    /// same time; a member given a new time, or leaving out of turn,
    /// dissolves the group into single entries.
    #[test]
    fn groups_come_out_in_id_order_and_dissolve_when_a_member_changes() {
        let mut pending = PendingCompletions::default();
        pending.set(0, FlowId(2), SimTime(100));
        pending.set_group(&[5, 3, 4], FlowId(3), SimTime(100));
        pending.set(1, FlowId(6), SimTime(100));
        let mut order = Vec::new();
        while let Some((due, id, slot)) = pending.peek() {
            order.push((due.0, id.0, slot));
            pending.remove(slot);
        }
        assert_eq!(
            order,
            [
                (100, 2, 0),
                (100, 3, 5),
                (100, 4, 3),
                (100, 5, 4),
                (100, 6, 1)
            ]
        );
        assert_eq!(pending.groups_made(), 1);

        // Member 7 (slot 1) re-armed later: 6 and 8 keep the group's time.
        pending.set_group(&[0, 1, 2], FlowId(6), SimTime(200));
        pending.set(1, FlowId(7), SimTime(300));
        assert_eq!(pending.peek(), Some((SimTime(200), FlowId(6), 0)));
        pending.remove(0);
        assert_eq!(pending.peek(), Some((SimTime(200), FlowId(8), 2)));
        // Slot 2 leaves; then slot 1 is the last entry.
        pending.remove(2);
        assert_eq!(pending.peek(), Some((SimTime(300), FlowId(7), 1)));
        pending.remove(1);
        assert_eq!(pending.peek(), None);

        // A member leaving out of turn (slot 4 before slot 3).
        pending.set_group(&[3, 4, 5], FlowId(10), SimTime(400));
        pending.remove(4);
        assert_eq!(pending.peek(), Some((SimTime(400), FlowId(10), 3)));
        pending.remove(3);
        assert_eq!(pending.peek(), Some((SimTime(400), FlowId(12), 5)));
        pending.remove(5);
        assert_eq!(pending.peek_due(), None);
    }

    /// Against a sorted set on a simulation-like stream: new times from now
    /// on (many equal, keys spanning all 64 bits), moves, removals, and the
    /// earliest taken and completed, as the fair-share network does.
    #[test]
    fn two_hundred_thousand_operations_match_a_sorted_set() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut pending = PendingCompletions::default();
        let mut expected = std::collections::BTreeSet::new();
        let mut due_of: Vec<Option<(u64, u32)>> = vec![None; 300];
        let mut now = 0u64;
        let mut next_id = 0u32;
        for _ in 0..200_000 {
            let slot = (random() % 300) as u32;
            match random() % 4 {
                0 => {
                    if let Some((due, id)) = due_of[slot as usize].take() {
                        expected.remove(&(due, id, slot));
                    }
                    pending.remove(slot);
                }
                1 | 2 => {
                    let id = match due_of[slot as usize].take() {
                        Some((due, id)) => {
                            expected.remove(&(due, id, slot));
                            id
                        }
                        None => {
                            next_id += 1;
                            next_id
                        }
                    };
                    let delay = match random() % 4 {
                        0 => 0,
                        1 => random() % 8,
                        2 => random() % 1_000_000,
                        _ => random() >> (random() % 64).max(2),
                    };
                    let due = now.saturating_add(delay);
                    pending.set(slot, FlowId(id), SimTime(due));
                    expected.insert((due, id, slot));
                    due_of[slot as usize] = Some((due, id));
                }
                _ => {
                    let first = pending.peek();
                    assert_eq!(
                        first,
                        expected
                            .first()
                            .map(|&(due, id, slot)| (SimTime(due), FlowId(id), slot))
                    );
                    if let Some((due, _, slot)) = first {
                        now = due.0;
                        expected.pop_first();
                        due_of[slot as usize] = None;
                        pending.remove(slot);
                    }
                }
            }
            let want = expected
                .first()
                .map(|&(due, id, slot)| (SimTime(due), FlowId(id), slot));
            assert_eq!(pending.peek(), want);
            assert_eq!(pending.peek_due(), want.map(|w| w.0));
        }
    }
}
