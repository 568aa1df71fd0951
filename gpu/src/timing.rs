//! Timing: CUDA-event timing of repeated launches on one stream, and the
//! summary statistic every measured entry reports (median, with the
//! interquartile range as its spread). Calibrate times its GPU stages with
//! these; the executor times its tasks.
//!
//! Events are created with timing enabled (`CU_EVENT_DEFAULT`; cudarc's
//! default is `CU_EVENT_DISABLE_TIMING`), one start/end pair per repeat,
//! all created before the timed launches and recorded behind a gate kernel
//! ([`crate::gate`]), so that each pair spans only GPU work.

use crate::error::{CudaContextExt, GpuError};
use crate::gate::{initial_gate_ns, GateKernels, MAX_GATE_NS};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// Median and spread of repeated timings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Median of the samples (the mean of the two middle ones when even).
    pub median_ns: u64,
    /// Interquartile range (75th − 25th percentile, nearest-rank).
    pub spread_ns: u64,
    /// Fastest sample.
    pub min_ns: u64,
}

impl Summary {
    /// Summarises samples; `None` when there are none.
    pub fn from_samples(samples: &[u64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let median_ns = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2
        };
        let rank = |q: f64| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Some(Summary {
            median_ns,
            spread_ns: rank(0.75) - rank(0.25),
            min_ns: sorted[0],
        })
    }
}

/// How many buffer slots of `slot_bytes` a timed repeat rotates through so
/// that together they reach `target_bytes` (a multiple of the L2, so each
/// repeat reads what the previous ones evicted): at least 1, at most
/// `max_slots`; 1 for empty slots.
pub fn slots_covering(target_bytes: u64, slot_bytes: u64, max_slots: u64) -> u64 {
    if slot_bytes == 0 {
        return 1;
    }
    target_bytes.div_ceil(slot_bytes).clamp(1, max_slots.max(1))
}

/// Milliseconds from `cuEventElapsedTime` to whole nanoseconds (≥ 1).
pub fn ms_to_ns(elapsed_ms: f32) -> u64 {
    ((elapsed_ms as f64) * 1e6).round().max(1.0) as u64
}

/// A timing-enabled event.
pub fn timing_event(ctx: &Arc<CudaContext>, what: &str) -> Result<CudaEvent, GpuError> {
    ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .cuda(|| format!("creating a timing event for {what}"))
}

/// Runs `launch(i)` for `warmup` untimed and then `repeats` timed iterations
/// (i counts on across both, so callers can rotate buffers with `i % sets`),
/// each timed by its own event pair on `stream`; returns one sample per
/// timed repeat in nanoseconds.
///
/// The events are created before anything is enqueued, and the timed
/// repeats are enqueued behind a gate ([`GateKernels::wait`]) so the GPU
/// runs them back to back: a sample is what the GPU spent, not the host's
/// issue time. If the host was still enqueueing when the gate opened, the
/// samples are discarded and the repeats run again behind a gate four times
/// longer; after [`MAX_GATE_NS`] it is an error.
pub fn time_launches(
    stream: &Arc<CudaStream>,
    warmup: u32,
    repeats: u32,
    what: &str,
    mut launch: impl FnMut(usize) -> Result<(), GpuError>,
) -> Result<Vec<u64>, GpuError> {
    let ctx = stream.context();
    let gate = GateKernels::for_context(ctx)?;
    for i in 0..warmup as usize {
        launch(i)?;
    }
    stream
        .synchronize()
        .cuda(|| format!("waiting for the warm-up of {what}"))?;
    let pairs = (0..repeats)
        .map(|_| Ok((timing_event(ctx, what)?, timing_event(ctx, what)?)))
        .collect::<Result<Vec<_>, GpuError>>()?;
    let gate_open = ctx
        .new_event(None)
        .cuda(|| format!("creating the gate event for {what}"))?;
    let mut gate_ns = initial_gate_ns(repeats);
    // Indices count on across attempts, so a retry rotates to buffers the
    // failed attempt did not just leave in L2.
    let mut first_index = warmup as usize;
    loop {
        gate.wait(stream, gate_ns)?;
        gate_open
            .record(stream)
            .cuda(|| format!("recording the gate of {what}"))?;
        for (r, (start, end)) in pairs.iter().enumerate() {
            start
                .record(stream)
                .cuda(|| format!("recording the start event of {what}"))?;
            launch(first_index + r)?;
            end.record(stream)
                .cuda(|| format!("recording the end event of {what}"))?;
        }
        let host_outran_gate = gate_open
            .try_is_complete()
            .cuda(|| format!("asking whether the gate of {what} had opened"))?;
        stream
            .synchronize()
            .cuda(|| format!("waiting for {what} to finish"))?;
        if !host_outran_gate {
            break;
        }
        if gate_ns >= MAX_GATE_NS {
            return Err(GpuError::HostTooSlow {
                what: what.into(),
                gate_ns,
            });
        }
        gate_ns = (gate_ns * 4).min(MAX_GATE_NS);
        first_index += repeats as usize;
    }
    pairs
        .iter()
        .map(|(start, end)| {
            start
                .elapsed_ms(end)
                .map(ms_to_ns)
                .cuda(|| format!("reading the elapsed time of {what}"))
        })
        .collect()
}

/// The launch-to-launch gap as the GPU sees it: `launches` empty kernels
/// back to back behind the gate, per event pair, divided by their number;
/// the median of `repeats` such spans.
pub fn launch_gap_ns(
    stream: &Arc<CudaStream>,
    launches: u32,
    repeats: u32,
) -> Result<u64, GpuError> {
    let gate = GateKernels::for_context(stream.context())?;
    let launches = launches.max(1);
    let what = format!("{launches} back-to-back empty kernels");
    let samples = time_launches(stream, 1, repeats.max(1), &what, |_| {
        (0..launches).try_for_each(|_| gate.empty(stream))
    })?;
    let summary = Summary::from_samples(&samples).expect("at least one repeat");
    Ok((summary.median_ns / launches as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reports_median_and_interquartile_range() {
        let s = Summary::from_samples(&[50, 10, 40, 20, 30]).unwrap();
        assert_eq!(s.median_ns, 30);
        assert_eq!(s.min_ns, 10);
        // Nearest rank: p25 = 2nd of 5 = 20, p75 = 4th of 5 = 40.
        assert_eq!(s.spread_ns, 20);
        let even = Summary::from_samples(&[4, 1, 3, 2]).unwrap();
        assert_eq!(even.median_ns, 2); // (2 + 3) / 2, integer
        assert_eq!(Summary::from_samples(&[7]).unwrap().spread_ns, 0);
        assert!(Summary::from_samples(&[]).is_none());
    }

    #[test]
    fn slots_reach_the_target_within_their_bounds() {
        assert_eq!(slots_covering(100, 30, 10), 4);
        assert_eq!(slots_covering(100, 30, 3), 3);
        assert_eq!(slots_covering(1, 1000, 10), 1);
        assert_eq!(slots_covering(100, 0, 10), 1);
        assert_eq!(slots_covering(100, 1, 0), 1);
    }

    #[test]
    fn elapsed_milliseconds_become_at_least_one_nanosecond() {
        assert_eq!(ms_to_ns(1.5), 1_500_000);
        assert_eq!(ms_to_ns(0.0), 1);
    }
}
