//! The engine's event queue: a radix heap of task finishes keyed by time,
//! lowest task id first among equal times.
//!
//! A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for
//! the shortest path problem", J. ACM 37(2), 1990) holds keys no smaller than
//! the last one popped, which a discrete-event simulation guarantees (nothing
//! finishes before now). This one takes a time's digits a byte at a time:
//! bucket (ℓ, d) holds the keys whose highest byte differing from that last
//! key is byte ℓ, of value d (greater than the last key's byte ℓ); keys
//! equal to it wait apart, in task order. A lower level holds smaller keys,
//! and so does a lower digit within a level, so the smallest key is in the
//! lowest non-empty bucket (two bitmaps find it). A pop takes the waiting
//! keys first; when none is left, the lowest non-empty bucket is emptied:
//! at level 0 its keys are all one time, which becomes the last one, and
//! they wait as they are; at a higher level they move, around their
//! smallest key, into lower levels. Moving the last key to the smallest
//! key of the lowest bucket keeps every other key's bucket, so a key moves
//! at most once per level: a task finishing 2²⁰ ns ahead moves twice (it
//! moved about six times a bit at a time, 29 M pushes and 175 M moves on
//! the 1T model on 12,288 GPUs under `--contention`). No comparisons
//! between entries but the sort of equal times by task.
//!
//! **Equal times leave in task-id order**, exactly as a binary heap keyed by
//! (time, task) would give them: entries of one time always share a bucket
//! (the bucket is a function of the time and the last time, and moving the
//! last time keeps every other time's bucket), so when a bucket is emptied
//! every entry of the new last time is among its entries, and the waiting
//! entries are sorted by task; an entry pushed at the last time itself (a
//! task of no duration) is inserted in task order among those not yet
//! popped. The order is a function of the times alone, not of the order
//! events were pushed in: a run of full expansion from one replica's graph
//! (`engine::replicated`), which meets the same events in another order,
//! pops them exactly as the run of the built graph does. (It was first in,
//! first out until the replicated run under `--contention` needed an order
//! both could give; it took a bit at a time until the moves showed in
//! profiles.)

use timeline::time::SimTime;

/// Bits of a digit: a byte.
const DIGIT_BITS: u32 = 8;
/// Values of a digit.
const DIGITS: usize = 1 << DIGIT_BITS;
/// Digits of a `u64` time.
const LEVELS: usize = (u64::BITS / DIGIT_BITS) as usize;
/// Words of one level's bitmap of non-empty digits.
const WORDS: usize = DIGITS / 64;

/// A monotone min-queue of (time, task), lowest task first among equal times.
#[derive(Debug)]
pub struct EventQueue {
    /// Every entry's time is at least this (the last time popped).
    last: u64,
    /// The entries at time `last` not yet popped (from `front` on), in task order.
    waiting: Vec<(u64, u64)>,
    front: usize,
    /// `LEVELS · DIGITS` buckets, level-major.
    buckets: Vec<Vec<(u64, u64)>>,
    /// The smallest time in each bucket (`u64::MAX` when empty).
    minimum: Vec<u64>,
    /// Bit ℓ set iff some bucket of level ℓ is non-empty.
    levels: u32,
    /// Per level, bit d set iff bucket (ℓ, d) is non-empty.
    digits: [[u64; WORDS]; LEVELS],
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
        EventQueue {
            last: 0,
            waiting: Vec::with_capacity(capacity),
            front: 0,
            buckets: (0..LEVELS * DIGITS).map(|_| Vec::new()).collect(),
            minimum: vec![u64::MAX; LEVELS * DIGITS],
            levels: 0,
            digits: [[0; WORDS]; LEVELS],
            len: 0,
            spare: Vec::new(),
        }
    }

    /// The bucket of `time`, which is greater than the last time: its
    /// highest byte differing from the last time's, and that byte's value.
    #[inline]
    fn bucket_of(&self, time: u64) -> (usize, usize) {
        let highest_bit = u64::BITS - 1 - (time ^ self.last).leading_zeros();
        let level = (highest_bit / DIGIT_BITS) as usize;
        let digit = (time >> (level as u32 * DIGIT_BITS)) as usize & (DIGITS - 1);
        (level, digit)
    }

    /// Queues `task` finishing at `time`, which must not precede the last
    /// time popped (debug builds check). `task` is the caller's key: equal
    /// times pop lowest key first (the engine's keys hold the task id in
    /// their high bits, whatever locates the task in their low bits).
    #[inline]
    pub fn push(&mut self, time: SimTime, task: u64) {
        let time = time.as_nanos();
        debug_assert!(time >= self.last, "event at {time} before {}", self.last);
        self.len += 1;
        if time == self.last {
            // Among the entries of this time not yet popped, in task order.
            let waiting = &self.waiting[self.front..];
            let at = self.front + waiting.partition_point(|&(_, other)| other < task);
            self.waiting.insert(at, (time, task));
            return;
        }
        self.push_later(time, task);
    }

    /// Files an entry later than the last time into its bucket.
    #[inline]
    fn push_later(&mut self, time: u64, task: u64) {
        let (level, digit) = self.bucket_of(time);
        let bucket = level * DIGITS + digit;
        self.buckets[bucket].push((time, task));
        if time < self.minimum[bucket] {
            self.minimum[bucket] = time;
        }
        self.levels |= 1 << level;
        self.digits[level][digit / 64] |= 1 << (digit % 64);
    }

    /// The earliest entry, the lowest task among equal times.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, u64)> {
        if self.front == self.waiting.len() {
            self.refill()?;
        }
        let (time, task) = self.waiting[self.front];
        self.front += 1;
        self.len -= 1;
        Some((SimTime(time), task))
    }

    /// The lowest non-empty bucket: (level, digit).
    #[inline]
    fn lowest_occupied(&self) -> Option<(usize, usize)> {
        if self.levels == 0 {
            return None;
        }
        let level = self.levels.trailing_zeros() as usize;
        let words = &self.digits[level];
        let word = words
            .iter()
            .position(|&w| w != 0)
            .expect("a level marked non-empty has a digit");
        Some((level, word * 64 + words[word].trailing_zeros() as usize))
    }

    /// Empties the lowest non-empty bucket around its smallest time, which
    /// becomes the last time; `None` when empty.
    fn refill(&mut self) -> Option<()> {
        self.waiting.clear();
        self.front = 0;
        let (level, digit) = self.lowest_occupied()?;
        let bucket = level * DIGITS + digit;
        self.last = self.minimum[bucket];
        self.minimum[bucket] = u64::MAX;
        self.digits[level][digit / 64] &= !(1 << (digit % 64));
        if self.digits[level].iter().all(|&w| w == 0) {
            self.levels &= !(1 << level);
        }
        if level == 0 {
            // Every entry of a level-0 bucket has one time: the new last.
            std::mem::swap(&mut self.waiting, &mut self.buckets[bucket]);
        } else {
            std::mem::swap(&mut self.spare, &mut self.buckets[bucket]);
            for index in 0..self.spare.len() {
                let (time, task) = self.spare[index];
                if time == self.last {
                    self.waiting.push((time, task));
                } else {
                    self.push_later(time, task);
                }
            }
            self.spare.clear();
        }
        if !self.waiting.is_sorted_by_key(|&(_, task)| task) {
            self.waiting.sort_unstable_by_key(|&(_, task)| task);
        }
        Some(())
    }

    /// The earliest time queued, without popping (nor moving anything, so
    /// pushes at any time from the last one popped stay valid).
    pub fn peek_time(&self) -> Option<SimTime> {
        if self.front < self.waiting.len() {
            return Some(SimTime(self.last));
        }
        self.lowest_occupied()
            .map(|(level, digit)| SimTime(self.minimum[level * DIGITS + digit]))
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
