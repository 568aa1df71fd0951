//! A counting semaphore over bytes: sweep workers reserve what their
//! simulation will hold ([`sim::host_memory::simulation_bytes`]) before they
//! build it, so parallel simulations never together exceed what the machine
//! had free when the sweep started. Every reservation fits the budget on its
//! own (larger layouts are refused before the sweep runs), so a waiting
//! worker always proceeds once the others release theirs (a simulation runs
//! no parallel work of its own on a pool's worker, so no worker waits while
//! holding one: `timeline::metrics::compute_rank_view` stays on the thread).

use std::sync::{Condvar, Mutex};

/// Bytes left to reserve (`None`: unlimited).
pub struct MemoryBudget {
    left: Mutex<Option<u64>>,
    released: Condvar,
}

/// A reservation, returned to the budget when dropped.
pub struct Reservation<'a> {
    budget: &'a MemoryBudget,
    bytes: u64,
}

impl MemoryBudget {
    pub fn new(bytes: Option<u64>) -> MemoryBudget {
        MemoryBudget {
            left: Mutex::new(bytes),
            released: Condvar::new(),
        }
    }

    /// Waits until `bytes` are free and takes them (at most the whole budget).
    pub fn reserve(&self, bytes: u64) -> Reservation<'_> {
        let mut left = self
            .left
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let taken = loop {
            match *left {
                None => break 0,
                Some(free) if free >= bytes => {
                    *left = Some(free - bytes);
                    break bytes;
                }
                Some(_) => {
                    left = self
                        .released
                        .wait(left)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                }
            }
        };
        Reservation {
            budget: self,
            bytes: taken,
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut left = self
            .budget
            .left
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(free) = left.as_mut() {
            *free += self.bytes;
        }
        self.budget.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_wait_for_each_other_and_return_their_bytes() {
        let budget = MemoryBudget::new(Some(100));
        let first = budget.reserve(60);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let second = budget.reserve(60);
                let left = *budget.left.lock().unwrap();
                drop(second);
                left
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(*budget.left.lock().unwrap(), Some(40));
            drop(first);
            assert_eq!(waiter.join().unwrap(), Some(40));
        });
        assert_eq!(*budget.left.lock().unwrap(), Some(100));
        let unlimited = MemoryBudget::new(None);
        let _any = unlimited.reserve(u64::MAX);
    }
}
