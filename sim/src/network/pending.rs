//! The pending completions of [`super::FairShareNetwork`]'s flows: a binary
//! min-heap of one integer per entry, (due, `FlowId`, slot) packed high to
//! low (due in the top 64 bits, the flow id and slot in 32 each), so the
//! integer order is the (time, `FlowId`) order the network completes flows
//! in, with lazy cancellation.
//!
//! - A flow's time can change (a re-share) or its flow leave: the slot's
//!   current entry is recorded, and an entry that is not its slot's current
//!   one is dropped when it reaches the top. The fair-share network re-arms
//!   a flow only when a re-share changes its time, which is rare (most flows
//!   run alone on their links), so stale entries are few. (A flow re-armed
//!   back to an earlier time has two equal entries: the first completes the
//!   flow, which leaves the slot, and the second is then stale.)
//! - A binary heap's pop sifts one hole to the bottom with one comparison
//!   per level (the standard library's `BinaryHeap`), here of 16-byte
//!   integers: cheaper than the indexed 4-ary heap it replaced, which kept
//!   every slot's position up to date, and than a radix heap, whose entries
//!   moved down many buckets each before their time came (completion times
//!   lie micro- to milliseconds ahead).

use super::FlowId;
use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// `current` of a slot without an entry (no entry packs to it: a slot
/// index is below `u32::MAX`).
const NONE: u128 = u128::MAX;

/// Min-heap of packed (due, flow, slot) entries.
#[derive(Debug, Clone, Default)]
pub struct PendingCompletions {
    heap: BinaryHeap<Reverse<u128>>,
    /// Per slot: its live entry, or `NONE`.
    current: Vec<u128>,
}

#[inline]
fn pack(due: SimTime, id: FlowId, slot: u32) -> u128 {
    ((due.0 as u128) << 64) | ((id.0 as u128) << 32) | slot as u128
}

#[inline]
fn unpack(entry: u128) -> (SimTime, FlowId, u32) {
    (
        SimTime((entry >> 64) as u64),
        FlowId((entry >> 32) as u32),
        entry as u32,
    )
}

impl PendingCompletions {
    /// Drops stale entries from the top; the live earliest, if any.
    #[inline]
    fn top(&mut self) -> Option<u128> {
        while let Some(&Reverse(entry)) = self.heap.peek() {
            if self.current[entry as u32 as usize] == entry {
                return Some(entry);
            }
            self.heap.pop();
        }
        None
    }

    /// The earliest time pending.
    #[inline]
    pub fn peek_due(&mut self) -> Option<SimTime> {
        self.top().map(|entry| unpack(entry).0)
    }

    /// The earliest (due, flow, slot).
    pub fn peek(&mut self) -> Option<(SimTime, FlowId, u32)> {
        self.top().map(unpack)
    }

    /// The earliest (due, flow, slot), as [`PendingCompletions::peek`] (the
    /// name says the caller completes it now).
    pub fn first(&mut self) -> Option<(SimTime, FlowId, u32)> {
        self.peek()
    }

    /// Gives `slot` (running flow `id`) the completion time `due`: its
    /// earlier entry, if any, goes stale.
    pub fn set(&mut self, slot: u32, id: FlowId, due: SimTime) {
        let index = slot as usize;
        if self.current.len() <= index {
            self.current.resize(index + 1, NONE);
        }
        let entry = pack(due, id, slot);
        self.current[index] = entry;
        self.heap.push(Reverse(entry));
    }

    /// Drops `slot`'s entry, if it has one.
    pub fn remove(&mut self, slot: u32) {
        if let Some(current) = self.current.get_mut(slot as usize) {
            *current = NONE;
        }
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
        assert_eq!(pending.first(), Some((SimTime(50), FlowId(3), 1)));
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
        assert_eq!(pending.first(), None);
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
                    let first = pending.first();
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
