//! The pending completions of [`super::FairShareNetwork`]'s flows: one entry
//! per running flow that has a completion time, in a radix heap keyed by
//! time (as the engine's [`crate::event_queue`]), ties broken by `FlowId`.
//!
//! - Completion times are monotone: a flow's new time is never before now,
//!   and a flow completes only when it is the earliest. So the radix heap
//!   applies: bucket `b` holds the entries whose highest bit differing from
//!   the last time taken is bit `b − 1`, bucket 0 those equal to it, and the
//!   lowest non-empty bucket is emptied into lower ones when bucket 0 runs
//!   out (Ahuja, Mehlhorn, Orlin and Tarjan, J. ACM 37(2), 1990).
//! - Ties: entries of one time always share a bucket; bucket 0 is kept
//!   sorted by `FlowId` (descending, so the next is at its end), so flows due
//!   together come out lowest id first, as the (time, `FlowId`) order wants.
//! - A flow's time can change (a re-share) and a flow can leave: each slot
//!   knows where its entry is, so an entry is moved or removed at once
//!   (no stale entries), and every bucket keeps its exact minimum time, so
//!   [`PendingCompletions::peek_due`] moves nothing and a later re-share
//!   may still set any time from now on.
//!
//! It replaced an indexed 4-ary heap whose pops sifted an entry down four
//! levels at each of the 7.8 M completions of the 1T model on 3,072 GPUs.

use super::FlowId;
use crate::time::SimTime;

/// Buckets: times equal to the last, then one per differing bit of a `u64`.
const BUCKETS: usize = 65;

/// `position` of a slot without an entry.
const ABSENT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    due: u64,
    id: u32,
    slot: u32,
}

/// A monotone min-queue of (due, flow) with each slot's entry located.
#[derive(Debug, Clone)]
pub struct PendingCompletions {
    /// Every entry's time is at least this (the last time taken).
    last: u64,
    buckets: Vec<Vec<Entry>>,
    /// The smallest time in each bucket above 0 (`u64::MAX` when empty).
    minimum: [u64; BUCKETS],
    /// Bit `b − 1` set iff bucket `b` (1 ≤ b ≤ 64) holds an entry.
    occupied: u64,
    /// Per slot: (bucket, index) of its entry; bucket `ABSENT` when none.
    position: Vec<(u32, u32)>,
    /// Reused while a bucket is emptied into lower ones.
    spare: Vec<Entry>,
}

impl Default for PendingCompletions {
    fn default() -> PendingCompletions {
        PendingCompletions {
            last: 0,
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            minimum: [u64::MAX; BUCKETS],
            occupied: 0,
            position: Vec::new(),
            spare: Vec::new(),
        }
    }
}

impl PendingCompletions {
    /// The earliest time pending, without moving anything.
    #[inline]
    pub fn peek_due(&self) -> Option<SimTime> {
        if !self.buckets[0].is_empty() {
            return Some(SimTime(self.last));
        }
        self.lowest_occupied().map(|b| SimTime(self.minimum[b]))
    }

    /// The earliest (due, flow, slot), without moving anything (a search of
    /// one bucket when the earliest time has not been taken yet).
    pub fn peek(&self) -> Option<(SimTime, FlowId, u32)> {
        let first = match self.buckets[0].last() {
            Some(&entry) => entry,
            None => *self.buckets[self.lowest_occupied()?]
                .iter()
                .min_by_key(|entry| (entry.due, entry.id))
                .expect("an occupied bucket has an entry"),
        };
        Some((SimTime(first.due), FlowId(first.id), first.slot))
    }

    /// The earliest (due, flow, slot), its time taken as the last one: every
    /// time set afterwards must be at least it (the caller completes it now).
    pub fn first(&mut self) -> Option<(SimTime, FlowId, u32)> {
        if self.buckets[0].is_empty() {
            self.refill()?;
        }
        let entry = *self.buckets[0].last().expect("refilled");
        Some((SimTime(entry.due), FlowId(entry.id), entry.slot))
    }

    /// Gives `slot` (running flow `id`) the completion time `due`, no
    /// earlier than the last time taken: a new entry, or its entry moved.
    pub fn set(&mut self, slot: u32, id: FlowId, due: SimTime) {
        debug_assert!(due.0 >= self.last, "a completion before the last taken");
        let index = slot as usize;
        if self.position.len() <= index {
            self.position.resize(index + 1, (ABSENT, 0));
        }
        self.remove(slot);
        self.insert(Entry {
            due: due.0,
            id: id.0,
            slot,
        });
    }

    /// Drops `slot`'s entry, if it has one.
    pub fn remove(&mut self, slot: u32) {
        let Some(&(bucket, index)) = self.position.get(slot as usize) else {
            return;
        };
        if bucket == ABSENT {
            return;
        }
        self.position[slot as usize] = (ABSENT, 0);
        let (bucket, index) = (bucket as usize, index as usize);
        if bucket == 0 {
            // Keep the order: the entries after it move down by one.
            self.buckets[0].remove(index);
            for at in index..self.buckets[0].len() {
                let moved = self.buckets[0][at].slot;
                self.position[moved as usize] = (0, at as u32);
            }
            return;
        }
        let removed = self.buckets[bucket].swap_remove(index);
        if let Some(moved) = self.buckets[bucket].get(index) {
            self.position[moved.slot as usize] = (bucket as u32, index as u32);
        }
        if self.buckets[bucket].is_empty() {
            self.minimum[bucket] = u64::MAX;
            self.occupied &= !(1 << (bucket - 1));
        } else if removed.due == self.minimum[bucket] {
            self.minimum[bucket] = self.buckets[bucket]
                .iter()
                .map(|entry| entry.due)
                .min()
                .expect("not empty");
        }
    }

    #[inline]
    fn bucket_of(&self, due: u64) -> usize {
        if due == self.last {
            0
        } else {
            (u64::BITS - (due ^ self.last).leading_zeros()) as usize
        }
    }

    #[inline]
    fn lowest_occupied(&self) -> Option<usize> {
        (self.occupied != 0).then(|| self.occupied.trailing_zeros() as usize + 1)
    }

    fn insert(&mut self, entry: Entry) {
        let bucket = self.bucket_of(entry.due);
        if bucket == 0 {
            // Descending ids: before the first entry with a smaller id.
            let at = self.buckets[0].partition_point(|other| other.id > entry.id);
            self.buckets[0].insert(at, entry);
            for index in at..self.buckets[0].len() {
                let moved = self.buckets[0][index].slot;
                self.position[moved as usize] = (0, index as u32);
            }
            return;
        }
        let entries = &mut self.buckets[bucket];
        self.position[entry.slot as usize] = (bucket as u32, entries.len() as u32);
        entries.push(entry);
        if entry.due < self.minimum[bucket] {
            self.minimum[bucket] = entry.due;
        }
        self.occupied |= 1 << (bucket - 1);
    }

    /// Empties the lowest non-empty bucket into lower ones around its
    /// smallest time, which becomes the last time; `None` when empty.
    fn refill(&mut self) -> Option<()> {
        debug_assert!(self.buckets[0].is_empty());
        let lowest = self.lowest_occupied()?;
        self.last = self.minimum[lowest];
        self.minimum[lowest] = u64::MAX;
        self.occupied &= !(1 << (lowest - 1));
        std::mem::swap(&mut self.spare, &mut self.buckets[lowest]);
        for index in 0..self.spare.len() {
            let entry = self.spare[index];
            let bucket = self.bucket_of(entry.due);
            if bucket == 0 {
                self.buckets[0].push(entry);
            } else {
                self.insert(entry);
            }
        }
        self.spare.clear();
        let ready = &mut self.buckets[0];
        ready.sort_unstable_by(|a, b| b.id.cmp(&a.id));
        for (index, entry) in ready.iter().enumerate() {
            self.position[entry.slot as usize] = (0, index as u32);
        }
        Some(())
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
