//! What `clustersim run-plan` prints and draws: the summary (time to train,
//! goodput, interruptions, where the time goes, energy, cost, and every value
//! used with its source) and the charts of expected time against the
//! checkpoint interval and against the GPU count.

use crate::exit::user_error;
use crate::stdout::outln;
use clap::Args;
use goodput::failure_distribution::FailureDistribution;
use goodput::sweep::{by_gpu_count, by_interval, ScaleInput};
use goodput::{RunPlan, RunPlanReport};
use sim::scenario::Scenario;
use std::path::PathBuf;

/// The charts `run-plan` can draw.
#[derive(Debug, Clone, Args)]
pub struct Charts {
    /// Draw expected days to train against the checkpoint interval to FILE
    /// (.svg or .png), the chosen interval marked.
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::image_path)]
    pub plot_interval: Option<PathBuf>,
    /// Draw expected days to train against the GPU count to FILE (.svg or
    /// .png): the scenario simulated again at d/4, d/2, 2d and 4d data-parallel
    /// replicas, the global batch kept (counts it does not divide are
    /// skipped) and a preset topology grown to the nodes each count needs.
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::image_path)]
    pub plot_gpus: Option<PathBuf>,
}

impl Charts {
    /// Refuses bad chart paths before the simulation runs.
    pub fn check(&self) -> anyhow::Result<()> {
        for path in self.plot_interval.iter().chain(&self.plot_gpus) {
            reports::check_image_path(path).map_err(user_error)?;
        }
        Ok(())
    }
}

/// Intervals of the chart: 1/16 to 16 times the chosen one, on a log scale.
fn chart_intervals_s(chosen_s: f64) -> Vec<f64> {
    (-8..=8)
        .map(|step| chosen_s * 2f64.powf(f64::from(step) / 2.0))
        .collect()
}

/// Draws the charts asked for; returns a line per chart written.
pub fn write_charts(
    charts: &Charts,
    plan: &RunPlan,
    report: &RunPlanReport,
    scenario: &Scenario,
    scale: &[ScaleInput],
) -> anyhow::Result<Vec<String>> {
    let mut notes = Vec::new();
    if let Some(path) = &charts.plot_interval {
        let points =
            by_interval(plan, &chart_intervals_s(report.interval.chosen_s)).map_err(user_error)?;
        let chart = reports::LineChart {
            title: format!("{} · expected days to train", short_title(scenario)),
            x_label: "checkpoint interval (minutes of work)".into(),
            y_label: "expected wall-clock (days)".into(),
            points: points
                .iter()
                .map(|p| (p.interval_s / 60.0, p.expected_wall_clock_s / 86_400.0))
                .collect(),
            marked: Some((
                (
                    report.interval.chosen_s / 60.0,
                    report.expected_wall_clock_days,
                ),
                format!(
                    "chosen: {:.1} min, {:.1} days",
                    report.interval.chosen_s / 60.0,
                    report.expected_wall_clock_days
                ),
            )),
            log_x: true,
        };
        reports::render_line_chart(&chart, path).map_err(user_error)?;
        notes.push(format!("interval chart written to {}", path.display()));
    }
    if let Some(path) = &charts.plot_gpus {
        let points = by_gpu_count(plan, scale).map_err(user_error)?;
        let chart = reports::LineChart {
            title: format!(
                "{} · expected days to train by GPU count",
                short_title(scenario)
            ),
            x_label: "GPUs".into(),
            y_label: "expected wall-clock (days)".into(),
            points: points
                .iter()
                .map(|p| (p.gpus as f64, p.expected_wall_clock_s / 86_400.0))
                .collect(),
            marked: Some((
                (plan.gpus as f64, report.expected_wall_clock_days),
                format!(
                    "{} GPUs: {:.1} days",
                    plan.gpus, report.expected_wall_clock_days
                ),
            )),
            log_x: true,
        };
        reports::render_line_chart(&chart, path).map_err(user_error)?;
        notes.push(format!("GPU-count chart written to {}", path.display()));
    }
    Ok(notes)
}

/// "llama3.1-405b on dgx-h100-superpod:2048, 16384 GPUs".
fn short_title(scenario: &Scenario) -> String {
    format!(
        "{} on {}, {} GPUs",
        scenario.model.name,
        scenario.topology.name,
        scenario.layout.gpus()
    )
}

fn days(seconds: f64) -> String {
    format!("{:.2} days", seconds / 86_400.0)
}

fn hours(seconds: f64) -> String {
    format!("{:.1} h", seconds / 3600.0)
}

/// The human-readable report.
pub fn write_summary(
    scenario: &Scenario,
    plan: &RunPlan,
    report: &RunPlanReport,
    sources: &[super::run_plan::SourcedInput],
    notes: &[String],
    trace: Option<&super::run_plan_trace::PlannedTrace>,
    slow_parts: Option<&str>,
) -> anyhow::Result<()> {
    let e = &report.expected;
    outln!("clustersim run-plan · {}", scenario.title())?;
    outln!(
        "  run                 {} iterations of {:.3} s ({} tokens each) on {} GPUs ({} nodes)",
        report.iterations,
        plan.iteration_time_s,
        plan.tokens_per_iteration,
        plan.gpus,
        report.nodes
    )?;
    if let Some(slow) = slow_parts {
        outln!("  slow parts          {slow}: every iteration at their pace")?;
    }
    if let Some(trace) = trace {
        let (label, [times, second]) = trace.summary();
        outln!("  {label:<20}{times} (the run at its mean)")?;
        outln!("                      {second}")?;
    }
    outln!("  failure-free        {}", days(report.useful_time_s))?;
    let mttf = report
        .failure_rate
        .mttf_hours
        .map_or("no failures".to_string(), |h| {
            format!("a failure every {h:.2} h")
        });
    outln!("  failures            {mttf} across the job")?;
    let c = &report.storage_checkpoint;
    outln!(
        "  checkpoint          {:.1} GB per rank, {:.2e} bytes in all: save {:.1} s, restore {:.1} s{}",
        plan.checkpoint_bytes_per_rank as f64 / 1e9,
        c.total_bytes as f64,
        c.persist_s,
        c.restore_s,
        if c.asynchronous {
            format!(" (asynchronous: training waits {:.1} s)", c.copy_block_s)
        } else {
            String::new()
        }
    )?;
    let i = &report.interval;
    let estimate = |v: Option<f64>| v.map_or("—".to_string(), |s| format!("{:.0} s", s));
    outln!(
        "  checkpoint every    {:.0} s of work ({:.1} iterations, {}; Young {}, Daly {})",
        i.chosen_s,
        i.chosen_iterations,
        i.choice,
        estimate(i.young_s),
        estimate(i.daly_s)
    )?;
    let downtime_s = report.recovery.downtime.immune_s + report.recovery.downtime.exposed_s;
    match plan.recovery {
        goodput::recovery::RecoveryPolicy::FewerReplicas {
            repair_s,
            degraded_work_rate,
        } => outln!(
            "  recovery            fewer_replicas: {:.1} % of the throughput for {} after each failure, then a regrow: {downtime_s:.0} s of downtime-equivalent per failure",
            100.0 * degraded_work_rate,
            hours(repair_s),
        )?,
        _ => outln!(
            "  recovery            {}: {downtime_s:.0} s down per failure before work resumes",
            report.recovery.policy,
        )?,
    }
    outln!()?;
    outln!(
        "  expected time       {} (goodput {:.1} %), {:.1} interruptions expected",
        days(e.wall_clock_s),
        100.0 * report.goodput,
        e.interruptions
    )?;
    if let Some(mc) = &report.monte_carlo {
        let distribution = match mc.failure_distribution {
            FailureDistribution::Exponential => String::new(),
            other => format!(", {} times between failures", other.label()),
        };
        outln!(
            "  Monte-Carlo         {} trials (seed {}{distribution}): mean {}, 10–90 % {} – {}, {}–{} interruptions",
            mc.trials,
            mc.seed,
            days(mc.mean_wall_clock_s),
            days(mc.p10_wall_clock_s),
            days(mc.p90_wall_clock_s),
            mc.min_interruptions,
            mc.max_interruptions
        )?;
    }
    outln!(
        "  time lost           checkpoints {}, recomputed work {}, restarts {}",
        hours(e.checkpoint_s),
        hours(e.lost_work_s),
        hours(e.restart_s)
    )?;
    let energy = &report.energy;
    outln!(
        "  GPU-hours           {:.3e}{}",
        energy.gpu_hours,
        energy.cost.map_or(
            " (no --price-per-gpu-hour: no cost)".to_string(),
            |cost| format!(", cost {cost:.3e}")
        )
    )?;
    outln!(
        "  energy              {:.0} MWh at the facility ({:.0} MWh IT), {:.0} t CO2e",
        energy.facility_energy_mwh,
        energy.it_energy_mwh,
        energy.emissions_t_co2e
    )?;
    outln!("\n  values used:")?;
    for share in &report.failure_rate.shares {
        outln!(
            "    {} failures: {} × {:.3e}/h — {}",
            share.component.name(),
            share.count,
            share.job_failures_per_hour / share.count.max(1) as f64,
            share.source
        )?;
    }
    for value in sources {
        outln!("    {} = {} — {}", value.name, value.value, value.source)?;
    }
    for value in &energy.values {
        outln!("    {} = {} — {}", value.name, value.value, value.source)?;
    }
    for note in notes {
        outln!("{note}")?;
    }
    Ok(())
}
