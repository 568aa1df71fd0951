//! The pending completions of [`super::FairShareNetwork`]'s flows: one entry
//! per flow slot that has a completion time, in a binary min-heap ordered by
//! (time, `FlowId`) that knows where each slot's entry is, so a new time
//! moves the entry instead of adding one (no stale entries to pop, and the
//! heap never holds more than the flows running).
//!
//! Keys are distinct (a `FlowId` names one flow), so the order entries come
//! out in is the order of their keys, whatever the heap's shape.

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

    fn key(&self, at: usize) -> (SimTime, FlowId) {
        let (due, id, _) = self.entries[at];
        (due, id)
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.entries.swap(a, b);
        self.position[self.entries[a].2 as usize] = a as u32;
        self.position[self.entries[b].2 as usize] = b as u32;
    }

    /// Moves the entry at `at` towards the root while it is smaller than
    /// its parent; returns where it ends.
    fn sift_up(&mut self, mut at: usize) -> usize {
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.key(at) >= self.key(parent) {
                break;
            }
            self.swap(at, parent);
            at = parent;
        }
        at
    }

    fn sift_down(&mut self, mut at: usize) {
        let len = self.entries.len();
        loop {
            let left = 2 * at + 1;
            if left >= len {
                return;
            }
            let right = left + 1;
            let child = if right < len && self.key(right) < self.key(left) {
                right
            } else {
                left
            };
            if self.key(at) <= self.key(child) {
                return;
            }
            self.swap(at, child);
            at = child;
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
}
