//! Host-clock timing of work that blocks the host (pageable PCIe copies, the
//! CPU optimizer). CUDA-event timing and the [`Summary`](gpu::timing::Summary)
//! every measured entry reports are in [`gpu::timing`], shared with the
//! executor.

/// Runs `work(i)` for `warmup` untimed and `repeats` timed iterations,
/// timing each with the host's monotonic clock (for work that blocks the
/// host: pageable copies, the CPU optimizer). Returns nanoseconds (≥ 1).
pub fn time_on_host<E>(
    warmup: u32,
    repeats: u32,
    mut work: impl FnMut(usize) -> Result<(), E>,
) -> Result<Vec<u64>, E> {
    for i in 0..warmup as usize {
        work(i)?;
    }
    (0..repeats as usize)
        .map(|r| {
            let start = std::time::Instant::now();
            work(warmup as usize + r)?;
            Ok((start.elapsed().as_nanos() as u64).max(1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_timing_returns_one_positive_sample_per_repeat() {
        let mut calls = Vec::new();
        let samples = time_on_host::<()>(2, 3, |i| {
            calls.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, vec![0, 1, 2, 3, 4]);
        assert_eq!(samples.len(), 3);
        assert!(samples.iter().all(|&ns| ns >= 1));
    }
}
