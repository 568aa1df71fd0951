//! How a mixture of experts' dispatch and combine communicate: the token
//! dispatcher's transport (`moe_dispatcher`) and DualPipe's overlap of an
//! F&B pair's all-to-alls with computation (`pair_overlap`), and what each
//! requires of a scenario.
//!
//! Sources: DeepSeek-V3 Technical Report (arXiv 2412.19437v2) Sec. 3.2.1
//! (the overlapped pair) and 3.2.2 (node-limited dispatch over IB then
//! NVLink); deepseek-ai/DualPipe at 3da1bbe (`dualpipe.py`
//! `_forward_backward_chunk`: both receives waited for, the pair computed,
//! then both sends); deepseek-ai/DeepEP V1 at 567632d (`deep_ep/buffer.py`).

use crate::kinds::Recompute;
pub use crate::moe_dispatcher::MoeDispatcher;
use crate::options::TrainingOptions;
use crate::problem::Problem;
use schedules::ScheduleKind;

/// Appends every problem of `pair_overlap` and `moe_dispatcher` in this
/// scenario, naming the key.
pub(super) fn check(
    options: &TrainingOptions,
    schedule: ScheduleKind,
    ep: u32,
    recompute: Recompute,
    problems: &mut Vec<Problem>,
) {
    if options.pair_overlap {
        if !matches!(schedule, ScheduleKind::DualPipe | ScheduleKind::DualPipeV) {
            problems.push(Problem::new(
                "pair_overlap",
                format!(
                    "only with the schedules that run F&B pairs, dualpipe and dualpipev, not {}",
                    schedule.name()
                ),
            ));
        }
        if ep <= 1 {
            problems.push(Problem::new("pair_overlap", "needs ep > 1 (what a pair overlaps is its expert all-to-alls; the pipeline sends follow the pair, as in DualPipe's _forward_backward_chunk)"));
        }
        if recompute != Recompute::None {
            problems.push(Problem::new("pair_overlap", "not modeled with recompute (the recompute pass of a pair's backward is not cut at its all-to-alls)"));
        }
        if options.network_contention {
            problems.push(Problem::new("pair_overlap", "not modeled under network_contention (the pieces' all-to-alls are costed in closed form)"));
        }
    }
    if options.moe_dispatcher == MoeDispatcher::Deepep {
        if ep <= 1 {
            problems.push(Problem::new(
                "moe_dispatcher",
                "deepep needs ep > 1 (it is the expert-parallel dispatch)",
            ));
        }
        if options.network_contention {
            problems.push(Problem::new("moe_dispatcher", "deepep is not modeled under network_contention (its IB-then-NVLink forwarding is not built as flows); run without --contention"));
        }
    }
}
