//! `clustersim plot bubble`: simulated pipeline-bubble fractions vs the number
//! of microbatches for GPipe, 1F1B, interleaved (v = 2, 4), ZB-H1 and looped
//! BFS (v = 2), over the analytical curves (p−1)/m, (p−1)/(v·m) (looped BFS's
//! too, once m ≥ p) and ZB-H1's (p−1)/(3·m) (its (p−1)(F+I−W) bubble when
//! F = I = W).

use super::scenario_args::ScenarioArgs;
use crate::exit::user_error;
use clap::{Args, Subcommand};
use sim::scenario::{ScenarioFile, ScheduleKind};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PlotArgs {
    #[command(subcommand)]
    pub chart: Chart,
}

#[derive(Debug, Subcommand)]
pub enum Chart {
    /// Bubble time ÷ ideal compute time vs microbatches, simulated with the full
    /// cost model (so communication and embedding/head imbalance show) over the formulas.
    #[command(after_help = "Example:\n  clustersim plot bubble --pp 4 --out bubble.png")]
    Bubble(BubbleArgs),
}

#[derive(Debug, Args)]
pub struct BubbleArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Microbatch counts m to simulate (multiples of pp for interleaved).
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32,64")]
    pub microbatches: Vec<u32>,
    /// Output image (.svg or .png).
    #[arg(long, default_value = "bubble.svg", value_parser = crate::output_file::image_path)]
    pub out: PathBuf,
}

pub fn run(args: PlotArgs) -> anyhow::Result<()> {
    match args.chart {
        Chart::Bubble(args) => bubble(args),
    }
}

fn bubble(args: BubbleArgs) -> anyhow::Result<()> {
    let file = args.scenario.file()?;
    let base = file.resolve().map_err(user_error)?;
    let p = base.layout.pipeline_parallel;
    if p < 2 {
        return Err(user_error("plot bubble needs --pp ≥ 2"));
    }
    let samples_per_microbatch = base.layout.microbatch_size * base.layout.data_parallel;
    let mut series = Vec::new();
    let mut skipped = Vec::new();
    for (schedule, chunks, label) in [
        (ScheduleKind::Gpipe, 1, "GPipe"),
        (ScheduleKind::OneFOneB, 1, "1F1B"),
        (ScheduleKind::Interleaved, 2, "interleaved v=2"),
        (ScheduleKind::Interleaved, 4, "interleaved v=4"),
        (ScheduleKind::ZbH1, 1, "ZB-H1"),
        (ScheduleKind::LoopedBfs, 2, "looped BFS v=2"),
        (ScheduleKind::ZbV, 2, "ZB-V"),
        (ScheduleKind::DualPipeV, 2, "DualPipeV"),
        (ScheduleKind::DualPipe, 2, "DualPipe"),
    ] {
        let mut points = Vec::new();
        for &m in &args.microbatches {
            let candidate = ScenarioFile {
                schedule: Some(schedule),
                chunks: Some(chunks),
                global_batch: Some(m.saturating_mul(samples_per_microbatch)),
                ..file.clone()
            };
            let scenario = match candidate.resolve() {
                Ok(scenario) => scenario,
                Err(error) => {
                    skipped.push(format!(
                        "{label} m={m}: {}",
                        error.to_string().replace('\n', " ")
                    ));
                    continue;
                }
            };
            let report = sim::simulate(&scenario).map_err(crate::exit::simulation_error)?;
            let idle = report.metrics.bubble_fraction * report.metrics.iteration_time_s;
            points.push((m, idle / (report.metrics.iteration_time_s - idle)));
        }
        if !points.is_empty() {
            series.push(reports::BubbleSeries {
                label: label.into(),
                // With F = I = W (and F&B = F+B) over the ideal 2m(F+I+W)
                // per chunk: ZB-H1's (p−1)F is (p−1)/(3·m), ZB-V's start
                // skew (p−1)F is (p−1)/(6·m), DualPipeV's (p−1)(F&B+B−3W)
                // = (p−1)·2F is (p−1)/(3·m).
                chunks: match schedule {
                    // DualPipe: (p/2−1)(F&B+B−3W) = (p−2)F over m(F+I+W)
                    // = 3mF: (p−2)/(3·m), one stage fewer.
                    ScheduleKind::ZbH1 | ScheduleKind::DualPipeV | ScheduleKind::DualPipe => 3,
                    ScheduleKind::ZbV => 6,
                    _ => chunks,
                },
                fewer_stages: u32::from(schedule == ScheduleKind::DualPipe),
                points,
            });
        }
    }
    for line in &skipped {
        eprintln!("skipped {line}");
    }
    if series.is_empty() {
        return Err(user_error(
            "no (schedule, microbatches) combination is valid for this scenario",
        ));
    }
    reports::render_bubble_chart(&series, p, &args.out).map_err(user_error)?;
    for s in &series {
        let cells: Vec<String> = s
            .points
            .iter()
            .map(|(m, y)| {
                format!(
                    "m={m}: {y:.4} (formula {:.4})",
                    reports::analytical_bubble_fraction(p - s.fewer_stages, s.chunks, *m)
                )
            })
            .collect();
        println!("{:<16} {}", s.label, cells.join(", "));
    }
    println!("bubble chart: {}", args.out.display());
    Ok(())
}
