//! How far the engine has got, for a progress bar: a process-wide count of
//! the tasks its runs have finished, added in steps of [`STEP`] tasks.
//!
//! A binary that runs one simulation at a time (the CLI's `simulate`) reads
//! it from another thread, against the count when the run began;
//! simulations running at once (a sweep's) add to the same count, so it
//! means nothing to them. No result depends on it: the runs only add.

use std::sync::atomic::{AtomicU64, Ordering};

static FINISHED: AtomicU64 = AtomicU64::new(0);

/// Tasks between two additions (a power of two): the count lags a run by
/// less than this.
pub const STEP: u64 = 1 << 16;

/// Tasks finished by every run of this process so far, to within [`STEP`]
/// per run.
pub fn finished_tasks() -> u64 {
    FINISHED.load(Ordering::Relaxed)
}

/// Called with a run's count of finished tasks after each finish: adds a
/// step each time that count reaches a multiple of [`STEP`].
#[inline]
pub(crate) fn finished(count: u64) {
    if count.is_multiple_of(STEP) {
        FINISHED.fetch_add(STEP, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_added_at_each_multiple_of_step() {
        // Other tests' runs may add to the count meanwhile, never take.
        let before = finished_tasks();
        for count in 1..=3 * STEP + 5 {
            finished(count);
        }
        assert!(finished_tasks() >= before + 3 * STEP);
    }
}
