//! Metrics of a run that lists each rank's tasks itself: a run of every
//! replica kept as one replica's graph (`sim::replicated_run`), whose
//! per-rank task lists come from the representative's, so no per-rank index
//! over every task (about 14 bytes a task) is built.
//!
//! The arithmetic is [`super::compute_spans_weighted`]'s without weights:
//! the FLOP total adds every compute task's term in id order, each rank's
//! integer sums come from the same per-rank pass ([`RankPass`]), and the
//! same [`RankTotals::metrics`] divides them. A view that gives the same
//! tasks, intervals and order as a Timeline therefore gives the same
//! metrics, bit for bit.
//!
//! The ranks are measured in parallel (rayon), beside the FLOP total, when
//! the caller is not already one of the pool's workers: the per-rank sums
//! are integers, so adding them in any grouping gives the same totals; the
//! FLOP total, a floating-point sum, stays one chain in id order on one
//! thread.

use super::rank_pass::RankPass;
use super::steady_window_ns;
use super::totals::{FlopTotals, RankTotals};
use crate::kinds::{StreamKind, TaskKind};
use crate::TimelineHeader;
use rayon::prelude::*;

/// One task as the per-rank pass reads it: kind, stream, start and end (ns).
pub type Interval = (TaskKind, StreamKind, u64, u64);

/// A run as [`compute_rank_view`] reads it.
pub trait RankView {
    fn header(&self) -> &TimelineHeader;
    /// Each iteration's latest end, in iteration order (one entry, 0, for
    /// an empty run), as [`super::iteration_ends_ns`] gives them.
    fn iteration_ends_ns(&self) -> Vec<u64>;
    /// Visits every compute task in id order with its kind and FLOPs (per
    /// rank times its group's size).
    fn for_each_compute_flops(&self, visit: impl FnMut(TaskKind, f64));
    /// Rank `rank`'s tasks' intervals into `out` (cleared first), in an
    /// order that is the same for two ranks whose tasks run alike.
    fn rank_intervals(&self, rank: u32, out: &mut Vec<Interval>);
}

/// The metrics of `view`; `peak_flops_per_s` is the GPU's dense peak.
pub fn compute_rank_view(
    view: &(impl RankView + Sync),
    peak_flops_per_s: f64,
) -> crate::metrics::Metrics {
    let header = view.header();
    let ends = view.iteration_ends_ns();
    let window = steady_window_ns(&ends);
    // Called from a pool's worker (a sweep's layouts, a validation's
    // cases, already in parallel) it stays on that thread: a worker waiting
    // on its halves could take another job of the pool meanwhile, and a
    // sweep's job may block on host memory the waiting one holds.
    let (flops, totals) = match rayon::current_thread_index() {
        Some(_) => (flop_totals(view), rank_totals_in_turn(view, window)),
        None => rayon::join(|| flop_totals(view), || rank_totals(view, window)),
    };
    totals.metrics(header, &ends, flops, peak_flops_per_s)
}

/// What one thread keeps while it measures ranks one after another: the
/// sums so far, its pass (which reuses the previous rank's sums when the
/// next one runs alike) and an interval buffer.
struct RankTurn<'a> {
    totals: RankTotals,
    pass: RankPass<'a>,
    intervals: Vec<Interval>,
    ranks_per_stage: usize,
}

impl RankTurn<'_> {
    /// `window` is the steady-state window (start, end) in ns.
    fn new(header: &TimelineHeader, window: (u64, u64)) -> Self {
        RankTurn {
            totals: RankTotals::new(header.layout.pipeline_parallel as usize),
            pass: RankPass::new(window.0, window.1),
            intervals: Vec::new(),
            ranks_per_stage: header.layout.ranks_per_stage() as usize,
        }
    }

    /// Adds rank `rank`'s sums.
    fn measure(mut self, view: &impl RankView, rank: u32) -> Self {
        view.rank_intervals(rank, &mut self.intervals);
        let sums = self.pass.sums_of_intervals(&self.intervals);
        self.totals
            .add(&sums, rank as usize / self.ranks_per_stage, 1);
        self
    }
}

/// [`rank_totals`] on this thread alone.
fn rank_totals_in_turn(view: &impl RankView, window: (u64, u64)) -> RankTotals {
    let header = view.header();
    (0..header.n_gpus)
        .fold(RankTurn::new(header, window), |turn, rank| {
            turn.measure(view, rank)
        })
        .totals
}

/// Ranks measured one after another by one thread, before a thread takes
/// the next ones (consecutive ranks often run alike: the pass then reuses
/// the previous rank's sums).
const RANKS_PER_THREAD_TURN: usize = 64;

/// Every rank's sums added over ranks, the ranks measured in parallel;
/// `window` is the steady-state window (start, end) in ns.
fn rank_totals(view: &(impl RankView + Sync), window: (u64, u64)) -> RankTotals {
    let header = view.header();
    let stages = header.layout.pipeline_parallel as usize;
    (0..header.n_gpus)
        .into_par_iter()
        .with_min_len(RANKS_PER_THREAD_TURN)
        .fold(
            || RankTurn::new(header, window),
            |turn, rank| turn.measure(view, rank),
        )
        .map(|turn| turn.totals)
        .reduce(|| RankTotals::new(stages), RankTotals::merged)
}

/// The FLOP totals: two independent chains in id order, as the Timeline's
/// computation adds them: |term| and max(term, 0), a recomputation's term
/// negated.
fn flop_totals(view: &impl RankView) -> FlopTotals {
    let mut flops = FlopTotals {
        total: 0.0,
        model: 0.0,
    };
    view.for_each_compute_flops(|kind, term| {
        let term = if kind == TaskKind::Recompute {
            -term
        } else {
            term
        };
        flops.total += term.abs();
        flops.model += term.max(0.0);
    });
    flops
}
