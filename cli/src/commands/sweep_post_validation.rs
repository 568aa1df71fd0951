//! `clustersim sweep --optimizer-post-validation`: zero-bubble optimizer
//! post-validation (`sim::scenario::post_validation`) on every layout of
//! the sweep. It means something only for the zero-bubble schedules (the
//! source, sail-sg/zero-bubble-pipeline-parallelism at 39f2c18, turns it off
//! without `--enable-zero-bubble`), so a sweep that would also run another
//! schedule is refused with one message, before anything is simulated; the
//! table's title line, the JSON and the CSV name it
//! (`TrainingOptions::title_suffix`, the shared options).

use crate::exit::user_error;
use sim::scenario::ScheduleKind;
use studies::sweep::SweepSpace;

/// The schedules post-validation applies to.
const ZERO_BUBBLE: [ScheduleKind; 3] = [ScheduleKind::ZbH1, ScheduleKind::ZbH2, ScheduleKind::ZbV];

/// Refuses post-validation with a schedule it does not apply to.
pub fn check(space: &SweepSpace) -> anyhow::Result<()> {
    if space.options.optimizer_post_validation != Some(true) {
        return Ok(());
    }
    let others: Vec<&str> = space
        .schedules
        .iter()
        .filter(|schedule| !ZERO_BUBBLE.contains(schedule))
        .map(|schedule| schedule.name())
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    Err(user_error(format!(
        "--optimizer-post-validation applies only to the zero-bubble schedules zb-h1, zb-h2 and zb-v \
         (the source turns it off without --enable-zero-bubble), but this sweep also runs {}; \
         pass --schedule with zero-bubble schedules only, e.g. --schedule zb-h1,zb-h2,zb-v",
        others.join(", ")
    )))
}
