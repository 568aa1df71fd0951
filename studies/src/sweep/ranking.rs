//! Ranking: results ordered by iteration time (integer nanoseconds; with a
//! fixed global batch that is throughput, best first), ties broken by
//! candidate index, so the order is total and reproducible. And a sentence on
//! why the best layout beats the runner-up: how their layouts differ and
//! where the time goes (per GPU: bubble idle time, which includes waiting on
//! pipeline and data-parallel transfers, tensor-parallel all-reduces, compute).

use super::run::SweepRecord;
use super::space::Candidate;

/// Sorts best first: expected time to train ascending where the sweep has
/// one (`--tokens`), else iteration time ascending; then candidate index.
pub fn rank(results: &mut [SweepRecord]) {
    results.sort_by(|a, b| {
        let by_time_to_train = match (a.expected_time_to_train_s, b.expected_time_to_train_s) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => std::cmp::Ordering::Equal,
        };
        by_time_to_train
            .then(a.iteration_time_ns.cmp(&b.iteration_time_ns))
            .then(a.index.cmp(&b.index))
    });
}

/// Why `results[0]` (ranked) beats the runner-up (the first layout with a
/// strictly longer iteration; exact ties are named); `None` when empty.
pub fn explain_best(results: &[SweepRecord]) -> Option<String> {
    let best = results.first()?;
    if results.len() == 1 {
        return Some(format!(
            "{} is the only layout that fits, at {:.2} samples/s.",
            best.layout.label(),
            best.samples_per_s
        ));
    }
    // Layouts with exactly the best iteration time are ties (e.g. GPipe and
    // 1F1B with one stage); the comparison is with the first strictly slower one.
    let ties: Vec<&SweepRecord> = results[1..]
        .iter()
        .take_while(|r| r.iteration_time_ns == best.iteration_time_ns)
        .collect();
    let tie_note = if ties.is_empty() {
        String::new()
    } else {
        let labels: Vec<String> = ties.iter().take(3).map(|r| r.layout.label()).collect();
        format!(
            " It ties with {}{} (same iteration time to the nanosecond; listed first by enumeration order).",
            labels.join(", "),
            if ties.len() > 3 {
                format!(" and {} more", ties.len() - 3)
            } else {
                String::new()
            }
        )
    };
    let Some(runner_up) = results.get(1 + ties.len()) else {
        return Some(format!(
            "Best: {} at {:.2} samples/s.{tie_note}",
            best.layout.label(),
            best.samples_per_s
        ));
    };
    let ahead_percent = 100.0 * (best.samples_per_s / runner_up.samples_per_s - 1.0);
    let differences = layout_differences(&best.layout, &runner_up.layout);
    let idle = |r: &SweepRecord| r.bubble_fraction * r.iteration_time_s;
    // (name, runner-up minus best) per GPU, in seconds.
    let mut terms = [
        ("bubble", idle(runner_up) - idle(best)),
        (
            "TP communication",
            runner_up.exposed_communication_s.tensor_s - best.exposed_communication_s.tensor_s,
        ),
        ("compute", runner_up.compute_time_s - best.compute_time_s),
    ];
    terms.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()).then(a.0.cmp(b.0)));
    let threshold_s = 1e-3 * best.iteration_time_s;
    let parts: Vec<String> = terms
        .iter()
        .filter(|(_, delta)| delta.abs() > threshold_s)
        .map(|(name, delta)| {
            let word = if *delta > 0.0 { "less" } else { "more" };
            format!("{} {word} {name}", duration(delta.abs()))
        })
        .collect();
    let breakdown = if parts.is_empty() {
        "the same time in bubble, TP communication and compute".to_string()
    } else {
        parts.join(", ")
    };
    let mut pp_dp = String::new();
    let exposed_pp_dp = |r: &SweepRecord| {
        r.exposed_communication_s.pipeline_s + r.exposed_communication_s.data_parallel_s
    };
    let delta_pp_dp = exposed_pp_dp(runner_up) - exposed_pp_dp(best);
    if delta_pp_dp.abs() > threshold_s {
        pp_dp = format!(
            " (of the bubble, exposed PP+DP communication: {} {})",
            duration(delta_pp_dp.abs()),
            if delta_pp_dp > 0.0 { "less" } else { "more" }
        );
    }
    Some(format!(
        "Best: {} at {:.2} samples/s, {:.1}% ahead of the runner-up {} ({}); per GPU per iteration the best spends {}{}.{tie_note}",
        best.layout.label(),
        best.samples_per_s,
        ahead_percent,
        runner_up.layout.label(),
        if differences.is_empty() {
            "same layout".to_string()
        } else {
            format!("differs in {}", differences.join(", "))
        },
        breakdown,
        pp_dp
    ))
}

/// A duration with a readable unit (s, ms or µs).
fn duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.3} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// "field best vs runner-up" for every field that differs.
fn layout_differences(best: &Candidate, other: &Candidate) -> Vec<String> {
    let mut out = Vec::new();
    let mut compare = |name: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{name} {a} vs {b}"));
        }
    };
    compare(
        "t",
        best.tensor_parallel.to_string(),
        other.tensor_parallel.to_string(),
    );
    compare(
        "cp",
        best.context_parallel.to_string(),
        other.context_parallel.to_string(),
    );
    compare(
        "ep",
        best.expert_parallel.to_string(),
        other.expert_parallel.to_string(),
    );
    compare(
        "etp",
        etp_label(best.expert_tensor_parallel),
        etp_label(other.expert_tensor_parallel),
    );
    compare(
        "p",
        best.pipeline_parallel.to_string(),
        other.pipeline_parallel.to_string(),
    );
    compare(
        "d",
        best.data_parallel.to_string(),
        other.data_parallel.to_string(),
    );
    compare(
        "b",
        best.microbatch_size.to_string(),
        other.microbatch_size.to_string(),
    );
    compare("schedule", best.schedule_label(), other.schedule_label());
    compare(
        "recompute",
        best.recompute.name().to_string(),
        other.recompute.name().to_string(),
    );
    let stage = |c: &Candidate| c.zero_stage.map_or("-".to_string(), |s| s.to_string());
    compare("ZeRO stage", stage(best), stage(other));
    let precision = |c: &Candidate| c.precision.map_or("-", |p| p.name()).to_string();
    compare("precision", precision(best), precision(other));
    let optimizer = |c: &Candidate| c.optimizer.map_or("-", |o| o.name()).to_string();
    compare("optimizer", optimizer(best), optimizer(other));
    out
}

/// A layout's etp as the comparison sentence names it: "t" where it takes
/// Megatron-Core's default (etp = t).
fn etp_label(etp: Option<u32>) -> String {
    etp.map_or_else(|| "t".to_string(), |etp| etp.to_string())
}
