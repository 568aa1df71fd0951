//! `clustersim compare REFERENCE OTHER`: regression-check two timelines of the
//! same scenario (simulated vs measured, or before vs after a change).

use crate::exit::user_error;
use crate::stdout::outln;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 within --max-error, 1 above it, 2 on bad input.\n\nExample:\n  clustersim compare sim.json measured.json --max-error 5 --plot compare.png"
)]
pub struct CompareArgs {
    /// Reference timeline (usually the simulation; .json or .jsonl, at most 4 GiB).
    pub reference: PathBuf,
    /// Timeline to check against it (usually measured by the executor; at most 4 GiB).
    pub other: PathBuf,
    /// Fail (exit 1) when the iteration-time error exceeds PCT percent (a
    /// finite number ≥ 0).
    #[arg(long, value_name = "PCT")]
    pub max_error: Option<f64>,
    /// Draw per-kind medians and iteration times side by side to FILE (.svg or .png).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::image_path)]
    pub plot: Option<PathBuf>,
    /// How many most-different tasks to list.
    #[arg(long, default_value_t = 5)]
    pub worst: usize,
    /// Print the comparison as one JSON document (iteration times and their
    /// error, bubbles, the most different tasks, whether the task lists
    /// matched) instead of the tables; --max-error still sets the exit status.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: CompareArgs) -> anyhow::Result<()> {
    if let Some(limit) = args.max_error {
        if !(limit.is_finite() && limit >= 0.0) {
            return Err(user_error(format!(
                "--max-error must be a finite percentage of at least 0, got {limit}"
            )));
        }
    }
    let read = |path: &PathBuf| timeline::Timeline::read(path).map_err(user_error);
    let (reference, other) = (read(&args.reference)?, read(&args.other)?);
    let labels = [label(&reference), label(&other)];
    let labels = [labels[0].as_str(), labels[1].as_str()];
    let result = timeline::compare::compare(&reference, &other, args.worst).map_err(user_error)?;
    if args.json {
        let mut document = serde_json::to_value(&result)?;
        document["schema_version"] = crate::schema_versions::COMPARE.into();
        document["reference"] = labels[0].into();
        document["other"] = labels[1].into();
        outln!("{}", serde_json::to_string_pretty(&document)?)?;
        if let Some(path) = &args.plot {
            reports::render_comparison(&reference, &other, labels, path).map_err(user_error)?;
        }
        return check_max_error(args.max_error, result.iteration_error_percent);
    }
    outln!(
        "iteration time  {:.6} s vs {:.6} s ({:+.2}%)",
        result.reference_iteration_time_s,
        result.other_iteration_time_s,
        result.iteration_error_percent
    )?;
    outln!(
        "bubble fraction {:.4} vs {:.4} ({:+.4})",
        result.reference_bubble_fraction,
        result.other_bubble_fraction,
        result.other_bubble_fraction - result.reference_bubble_fraction
    )?;
    outln!(
        "\n{}",
        reports::format_comparison_table(&reports::comparison_table(&reference, &other, labels))
    )?;
    if let Some(why) = &result.unmatched {
        outln!("{why}")?;
    }
    if !result.worst_tasks.is_empty() {
        outln!("most different tasks:")?;
        for task in &result.worst_tasks {
            outln!(
                "  #{:<8} {:<26} stage {:<3} mb {:<5} {:>12} ns vs {:>12} ns ({:+.1}%)",
                task.id,
                task.kind,
                task.stage,
                task.microbatch.map(|m| m.to_string()).unwrap_or("-".into()),
                task.reference_ns,
                task.other_ns,
                task.error_percent
            )?;
        }
    }
    if let Some(path) = &args.plot {
        reports::render_comparison(&reference, &other, labels, path).map_err(user_error)?;
        outln!("comparison chart: {}", path.display())?;
    }
    check_max_error(args.max_error, result.iteration_error_percent)
}

/// Exit 1 (an error that is not the input's) when the iteration-time error
/// is above `--max-error`.
fn check_max_error(limit: Option<f64>, error_percent: f64) -> anyhow::Result<()> {
    match limit {
        Some(limit) if error_percent.abs() > limit => {
            anyhow::bail!("iteration-time error {error_percent:+.2}% exceeds --max-error {limit}%")
        }
        _ => Ok(()),
    }
}

fn label(timeline: &timeline::Timeline) -> String {
    match (&timeline.header.producer, &timeline.header.executor_mode) {
        (timeline::Producer::Sim, _) => "sim".into(),
        (timeline::Producer::Executor, Some(mode)) => format!("executor ({mode})"),
        (timeline::Producer::Executor, None) => "executor".into(),
    }
}
