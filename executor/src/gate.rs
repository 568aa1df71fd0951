//! The start gate: how long the GPU is held while the host issues the timed
//! iteration, and what happens when the host needs longer.
//!
//! Before the first task a single-block spin on a gate stream holds every
//! stream back (each waits on the gate's event), so the whole iteration is
//! queued before any of it runs and the host's issue time does not show up
//! as GPU idle time. The gate must outlast the host's issuing: if it opens
//! early, part of the iteration runs while the host is still issuing, and
//! the measured times include host issue time the simulator does not have.
//! That is a failed measurement, not a remark: [`crate::execute`] returns
//! [`crate::ExecuteError::HostOutranGate`] before reading any timing (see
//! below for how it is detected).
//!
//! The gate is sized from what the host actually needed: each warm-up
//! iteration is issued without a gate and timed on the host
//! ([`std::time::Instant`]); the timed iteration's gate is
//! [`GATE_ISSUE_FACTOR`] × the slowest warm-up issue + [`GATE_MARGIN_NS`]
//! (at least [`GATE_MIN_NS`]). Warm-ups include first-use costs (cuBLAS
//! heuristics, module loading), so this errs long. Without a warm-up the
//! gate falls back to a fixed allowance per task and per launch.
//!
//! The gate need not cover the whole iteration: the driver queues only so
//! many launches while the GPU is held (past that the host blocks until the
//! gate opens), so a large plan keeps being issued while the GPU runs. What
//! matters is that the GPU never waits for the host: right after enqueueing
//! each task the host asks whether the task's start event has already
//! completed. If it has, the GPU reached the task before the host finished
//! issuing it, its time may include host issue time, and the run fails.

/// Gate = this × the slowest warm-up's host issue time + [`GATE_MARGIN_NS`].
pub const GATE_ISSUE_FACTOR: u64 = 2;
/// Added to the scaled warm-up issue time (scheduling noise on the host).
pub const GATE_MARGIN_NS: u64 = 5_000_000;
/// The shortest gate.
pub const GATE_MIN_NS: u64 = 10_000_000;
/// Without a warm-up: [`GATE_MIN_NS`] plus this per task …
pub const GATE_PER_TASK_NS: u64 = 30_000;
/// … and this per launch.
pub const GATE_PER_LAUNCH_NS: u64 = 15_000;

/// The timed iteration's gate length in ns, from the slowest warm-up's host
/// issue time (`None` without a warm-up: the fixed allowance for `tasks`
/// tasks and `launches` launches). Saturates instead of overflowing.
pub fn gate_ns(slowest_warmup_issue_ns: Option<u64>, tasks: usize, launches: usize) -> u64 {
    match slowest_warmup_issue_ns {
        Some(issue_ns) => issue_ns
            .saturating_mul(GATE_ISSUE_FACTOR)
            .saturating_add(GATE_MARGIN_NS)
            .max(GATE_MIN_NS),
        None => GATE_MIN_NS
            .saturating_add((tasks as u64).saturating_mul(GATE_PER_TASK_NS))
            .saturating_add((launches as u64).saturating_mul(GATE_PER_LAUNCH_NS)),
    }
}

/// The one-line reason a run fails when the GPU waited for the host: before
/// `waited` of `tasks` tasks (the first being `first_task`), the task's start
/// event had already completed when the host finished enqueueing it.
pub fn host_outran_gate_message(
    issue_ns: u64,
    gate_ns: u64,
    waited: usize,
    tasks: usize,
    first_task: u32,
) -> String {
    let ms = |ns: u64| ns as f64 * 1e-6;
    format!(
        "the GPU waited for the host before {waited} of {tasks} tasks (first: task #{first_task}): the host needed {:.1} ms to issue the timed iteration behind a {:.1} ms start gate, so those tasks' times would include host issue time; nothing was recorded. Run again on a less loaded host or with more --warmup iterations (the gate is {}× the slowest warm-up's issue time plus {:.0} ms); if it persists, the host issues this plan's kernels slower than the GPU runs them (many small kernels)",
        ms(issue_ns),
        ms(gate_ns),
        GATE_ISSUE_FACTOR,
        ms(GATE_MARGIN_NS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_is_twice_the_warm_up_issue_time_plus_a_margin() {
        // 40 ms to issue a big plan: an 85 ms gate, not the fixed allowance.
        assert_eq!(gate_ns(Some(40_000_000), 100_000, 300_000), 85_000_000);
        // A quick host still gets the minimum.
        assert_eq!(gate_ns(Some(1_000_000), 10, 10), GATE_MIN_NS);
        assert_eq!(gate_ns(Some(0), 0, 0), GATE_MIN_NS);
        // The gate always outlasts the warm-up's issue time.
        for issue_ns in [1, 2_499_999, 2_500_001, 7_000_000, 1 << 40] {
            assert!(gate_ns(Some(issue_ns), 0, 0) > issue_ns, "{issue_ns}");
        }
    }

    #[test]
    fn a_big_plan_issued_quickly_does_not_wait_for_the_fixed_allowance() {
        let (tasks, launches) = (100_000, 300_000);
        let fixed = gate_ns(None, tasks, launches);
        assert_eq!(fixed, 10_000_000 + 3_000_000_000 + 4_500_000_000);
        assert!(gate_ns(Some(200_000_000), tasks, launches) < fixed / 10);
    }

    #[test]
    fn without_a_warm_up_the_gate_grows_with_tasks_and_launches_and_never_overflows() {
        assert_eq!(gate_ns(None, 0, 0), GATE_MIN_NS);
        assert_eq!(gate_ns(None, 2, 4), GATE_MIN_NS + 60_000 + 60_000);
        assert_eq!(gate_ns(None, usize::MAX, usize::MAX), u64::MAX);
        assert_eq!(gate_ns(Some(u64::MAX), 0, 0), u64::MAX);
    }

    #[test]
    fn the_message_is_one_line_naming_both_times_and_what_to_do() {
        let message = host_outran_gate_message(31_250_000, 25_000_000, 3, 40, 17);
        assert!(message.contains("3 of 40 tasks"), "{message}");
        assert!(message.contains("task #17"), "{message}");
        assert!(!message.contains('\n'), "{message}");
        assert!(
            message.contains("31.2 ms") || message.contains("31.3 ms"),
            "{message}"
        );
        assert!(message.contains("25.0 ms"), "{message}");
        assert!(message.contains("--warmup"), "{message}");
    }
}
