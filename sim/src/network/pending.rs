//! The pending completions of [`super::FairShareNetwork`]'s flows: one entry
//! per flow slot that has a completion time, in a binary min-heap ordered by
//! (time, `FlowId`) that knows where each slot's entry is, so a new time
//! moves the entry instead of adding one (no stale entries to pop, and the
//! heap never holds more than the flows running).
//!
//! Keys are distinct (a `FlowId` names one flow), so the order entries come
//! out in is the order of their keys, whatever the heap's shape. Four
//! children a node (half the levels of a binary heap), and an entry moved
//! through a hole: each level costs one write and one position update.

use super::FlowId;
use crate::time::SimTime;

const ABSENT: u32 = u32::MAX;

/// Min-heap of (due, flow, slot) with each slot's position.
#[derive(Debug, Clone, Default)]
pub struct PendingCompletions {
    entries: Vec<(SimTime, FlowId, u32)>,
    /// Per slot: its entry's index in `entries`, or `ABSENT`.
    position: Vec<u32>,
}

impl PendingCompletions {
    /// The earliest (due, flow, slot).
    pub fn peek(&self) -> Option<(SimTime, FlowId, u32)> {
        self.entries.first().copied()
    }

    /// Gives `slot` (running flow `id`) the completion time `due`: a new
    /// entry, or its entry moved.
    pub fn set(&mut self, slot: u32, id: FlowId, due: SimTime) {
        let index = slot as usize;
        if self.position.len() <= index {
            self.position.resize(index + 1, ABSENT);
        }
        match self.position[index] {
            ABSENT => {
                self.entries.push((due, id, slot));
                let at = self.entries.len() - 1;
                self.position[index] = at as u32;
                self.sift_up(at);
            }
            at => {
                let at = at as usize;
                self.entries[at] = (due, id, slot);
                let at = self.sift_up(at);
                self.sift_down(at);
            }
        }
    }

    /// Drops `slot`'s entry, if it has one.
    pub fn remove(&mut self, slot: u32) {
        let Some(&at) = self.position.get(slot as usize) else {
            return;
        };
        if at == ABSENT {
            return;
        }
        self.position[slot as usize] = ABSENT;
        let at = at as usize;
        let last = self.entries.pop().expect("an entry is present");
        if at < self.entries.len() {
            self.entries[at] = last;
            self.position[last.2 as usize] = at as u32;
            let at = self.sift_up(at);
            self.sift_down(at);
        }
    }

    fn key(entry: (SimTime, FlowId, u32)) -> (SimTime, FlowId) {
        (entry.0, entry.1)
    }

    fn place(&mut self, at: usize, entry: (SimTime, FlowId, u32)) {
        self.entries[at] = entry;
        self.position[entry.2 as usize] = at as u32;
    }

    /// Moves the entry at `at` towards the root while it is smaller than
    /// its parent; returns where it ends.
    fn sift_up(&mut self, mut at: usize) -> usize {
        let entry = self.entries[at];
        while at > 0 {
            let parent = (at - 1) / ARITY;
            if Self::key(entry) >= Self::key(self.entries[parent]) {
                break;
            }
            self.place(at, self.entries[parent]);
            at = parent;
        }
        self.place(at, entry);
        at
    }

    fn sift_down(&mut self, mut at: usize) {
        let len = self.entries.len();
        let entry = self.entries[at];
        loop {
            let first = ARITY * at + 1;
            if first >= len {
                break;
            }
            let mut child = first;
            for other in first + 1..(first + ARITY).min(len) {
                if Self::key(self.entries[other]) < Self::key(self.entries[child]) {
                    child = other;
                }
            }
            if Self::key(entry) <= Self::key(self.entries[child]) {
                break;
            }
            self.place(at, self.entries[child]);
            at = child;
        }
        self.place(at, entry);
    }
}

/// Children per node.
const ARITY: usize = 4;

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
        pending.set(2, FlowId(9), SimTime(60));
        assert_eq!(pending.peek(), Some((SimTime(50), FlowId(3), 1)));
        pending.remove(1);
        pending.remove(1);
        assert_eq!(pending.peek(), Some((SimTime(50), FlowId(7), 0)));
        pending.set(0, FlowId(7), SimTime(70));
        assert_eq!(pending.peek(), Some((SimTime(60), FlowId(9), 2)));
        pending.remove(2);
        pending.remove(0);
        assert_eq!(pending.peek(), None);
    }

    #[test]
    fn a_thousand_moves_and_removals_match_a_sorted_set() {
        // A linear congruential sequence drives sets, moves and removals; a
        // BTreeSet of the same keys says what must come out first.
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        let mut pending = PendingCompletions::default();
        let mut expected = std::collections::BTreeSet::new();
        let mut due_of = vec![None; 300];
        for _ in 0..1000 {
            let slot = (next() % 300) as u32;
            let id = FlowId(slot * 7);
            if let Some(old) = due_of[slot as usize].take() {
                expected.remove(&(old, id, slot));
            }
            if next() % 4 == 0 {
                pending.remove(slot);
            } else {
                let due = SimTime(next() % 50);
                pending.set(slot, id, due);
                expected.insert((due, id, slot));
                due_of[slot as usize] = Some(due);
            }
            assert_eq!(pending.peek(), expected.first().copied());
        }
        while let Some(first) = expected.pop_first() {
            assert_eq!(pending.peek(), Some(first));
            pending.remove(first.2);
        }
        assert_eq!(pending.peek(), None);
    }
}
