//! The engine's event queue: a radix heap of task finishes keyed by time,
//! lowest task id first among equal times.
//!
//! A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for
//! the shortest path problem", J. ACM 37(2), 1990) holds keys no smaller than
//! the last one popped, which a discrete-event simulation guarantees (nothing
//! finishes before now). Bucket `b` holds the keys whose highest bit differing
//! from that last key is bit `b − 1`; bucket 0 holds keys equal to it. A pop
//! takes bucket 0 front first; when it is empty the lowest non-empty bucket is
//! emptied, in order, into lower ones around its smallest key. Pushes and
//! pops are amortised O(bits) with no comparisons between entries.
//!
//! **Equal times leave in task-id order**, exactly as a binary heap keyed by
//! (time, task) would give them: entries of one time always share a bucket
//! (the bucket is a function of the time and the last time, and moving a
//! bucket keeps every other time's bucket), so when a bucket is emptied into
//! bucket 0 every entry of the new last time is there, and bucket 0 is
//! sorted by task; an entry pushed at the last time itself (a task of no
//! duration) is inserted in task order among those not yet popped. The
//! order is a function of the times alone, not of the order events were
//! pushed in: a run of full expansion from one replica's graph
//! (`engine::replicated`), which meets the same events in another order,
//! pops them exactly as the run of the built graph does. (It was first in,
//! first out until the replicated run under `--contention` needed an order
//! both could give.)

use timeline::time::SimTime;

/// Buckets: keys equal to the last, then one per differing bit of a `u64`.
const BUCKETS: usize = 65;

/// A monotone min-queue of (time, task), lowest task first among equal times.
#[derive(Debug)]
pub struct EventQueue {
    /// Every entry's time is at least this (the last time popped).
    last: u64,
    buckets: Vec<Vec<(u64, u64)>>,
    /// The smallest time in each bucket (`u64::MAX` when empty).
    minimum: [u64; BUCKETS],
    /// Bit `b − 1` set iff bucket `b` (1 ≤ b ≤ 64) is non-empty: the lowest
    /// one is a `trailing_zeros` away instead of a scan of 64 buckets.
    occupied: u64,
    /// Entries of bucket 0 already popped.
    front: usize,
    len: usize,
    /// Reused while a bucket is emptied into lower ones.
    spare: Vec<(u64, u64)>,
}

impl Default for EventQueue {
    fn default() -> EventQueue {
        EventQueue::with_capacity(0)
    }
}

impl EventQueue {
    pub fn with_capacity(capacity: usize) -> EventQueue {
        let mut buckets: Vec<Vec<(u64, u64)>> = (0..BUCKETS).map(|_| Vec::new()).collect();
        buckets[0].reserve(capacity);
        EventQueue {
            last: 0,
            buckets,
            minimum: [u64::MAX; BUCKETS],
            occupied: 0,
            front: 0,
            len: 0,
            spare: Vec::new(),
        }
    }

    #[inline]
    fn bucket_of(&self, time: u64) -> usize {
        if time == self.last {
            0
        } else {
            (u64::BITS - (time ^ self.last).leading_zeros()) as usize
        }
    }

    /// Queues `task` finishing at `time`, which must not precede the last
    /// time popped (debug builds check). `task` is the caller's key: equal
    /// times pop lowest key first (the engine's keys hold the task id in
    /// their high bits, whatever locates the task in their low bits).
    #[inline]
    pub fn push(&mut self, time: SimTime, task: u64) {
        let time = time.as_nanos();
        debug_assert!(time >= self.last, "event at {time} before {}", self.last);
        let bucket = self.bucket_of(time);
        if bucket == 0 {
            // Among the entries of this time not yet popped, in task order.
            let waiting = &self.buckets[0][self.front..];
            let at = self.front + waiting.partition_point(|&(_, other)| other < task);
            self.buckets[0].insert(at, (time, task));
            self.minimum[0] = time;
            self.len += 1;
            return;
        }
        self.buckets[bucket].push((time, task));
        if time < self.minimum[bucket] {
            self.minimum[bucket] = time;
        }
        self.mark_occupied(bucket);
        self.len += 1;
    }

    /// The earliest entry, the lowest task among equal times.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, u64)> {
        if self.front == self.buckets[0].len() {
            self.refill()?;
        }
        let (time, task) = self.buckets[0][self.front];
        self.front += 1;
        self.len -= 1;
        if self.front == self.buckets[0].len() {
            self.buckets[0].clear();
            self.front = 0;
            self.minimum[0] = u64::MAX;
        }
        Some((SimTime(time), task))
    }

    #[inline]
    fn mark_occupied(&mut self, bucket: usize) {
        if bucket > 0 {
            self.occupied |= 1 << (bucket - 1);
        }
    }

    /// The lowest non-empty bucket above 0.
    #[inline]
    fn lowest_occupied(&self) -> Option<usize> {
        (self.occupied != 0).then(|| self.occupied.trailing_zeros() as usize + 1)
    }

    /// Empties the lowest non-empty bucket into lower ones around its
    /// smallest time, which becomes the last time; `None` when empty.
    fn refill(&mut self) -> Option<()> {
        self.buckets[0].clear();
        self.front = 0;
        let lowest = self.lowest_occupied()?;
        self.last = self.minimum[lowest];
        self.minimum[lowest] = u64::MAX;
        self.occupied &= !(1 << (lowest - 1));
        std::mem::swap(&mut self.spare, &mut self.buckets[lowest]);
        for index in 0..self.spare.len() {
            let (time, task) = self.spare[index];
            let bucket = self.bucket_of(time);
            self.buckets[bucket].push((time, task));
            if time < self.minimum[bucket] {
                self.minimum[bucket] = time;
            }
            self.mark_occupied(bucket);
        }
        self.spare.clear();
        let equal_times = &mut self.buckets[0];
        if !equal_times.is_sorted_by_key(|&(_, task)| task) {
            equal_times.sort_unstable_by_key(|&(_, task)| task);
        }
        Some(())
    }

    /// The earliest time queued, without popping (nor moving anything, so
    /// pushes at any time from the last one popped stay valid).
    pub fn peek_time(&self) -> Option<SimTime> {
        if self.front < self.buckets[0].len() {
            return Some(SimTime(self.last));
        }
        self.lowest_occupied().map(|b| SimTime(self.minimum[b]))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn equal_times_pop_in_task_order() {
        let mut queue = EventQueue::with_capacity(4);
        for task in [7, 3, 9, 1] {
            queue.push(SimTime(5), task);
        }
        queue.push(SimTime(2), 42);
        let mut order: Vec<u64> = vec![queue.pop().unwrap().1, queue.pop().unwrap().1];
        // Pushed at the time being popped: among those left, in task order.
        queue.push(SimTime(5), 8);
        queue.push(SimTime(5), 2);
        order.extend(std::iter::from_fn(|| queue.pop()).map(|e| e.1));
        assert_eq!(order, vec![42, 1, 2, 3, 7, 8, 9]);
    }

    /// Against a binary heap keyed by (time, task), on a simulation-like
    /// stream: pops interleaved with pushes at or after the last time
    /// popped, many equal times, keys spanning all 64 bits, each task
    /// pushed once (as the engine pushes each task's finish once).
    #[test]
    fn pops_exactly_what_a_binary_heap_of_time_and_task_pops() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut random = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut queue = EventQueue::default();
        let mut heap = BinaryHeap::new();
        let mut next_task = 0u32;
        let mut now = 0u64;
        for _ in 0..200_000u32 {
            let pushes = random() % 3;
            for _ in 0..pushes {
                let delay = match random() % 4 {
                    0 => 0,
                    1 => random() % 8,
                    2 => random() % 1_000_000,
                    _ => random() >> (random() % 64).max(2),
                };
                let time = now.saturating_add(delay);
                // Task ids in scrambled order, each once.
                let task = u64::from(next_task.wrapping_mul(0x9E37_79B9)) << 32;
                next_task += 1;
                queue.push(SimTime(time), task);
                heap.push(Reverse((time, task)));
            }
            assert_eq!(
                queue.peek_time().map(|t| t.as_nanos()),
                heap.peek().map(|Reverse((t, _))| *t)
            );
            if random() % 2 == 0 {
                let expected = heap.pop().map(|Reverse((t, task))| (SimTime(t), task));
                let got = queue.pop();
                assert_eq!(got, expected);
                if let Some((time, _)) = got {
                    now = time.as_nanos();
                }
            }
            assert_eq!(queue.len(), heap.len());
        }
        while let Some(Reverse((t, task))) = heap.pop() {
            assert_eq!(queue.pop(), Some((SimTime(t), task)));
        }
        assert!(queue.pop().is_none() && queue.is_empty());
    }
}
