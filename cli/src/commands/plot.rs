//! `clustersim plot bubble`: simulated pipeline-bubble fractions vs the number
//! of microbatches for every schedule of `studies::bubble_chart::CURVES`
//! (GPipe, 1F1B, interleaved v = 2, 4 with flexible microbatch groups where
//! p does not divide m or `--microbatch-group-size` asks, ZB-H1, ZB-H2 with optimizer post-validation in its steady state,
//! looped BFS v = 2, ZB-V, DualPipeV, DualPipe), over their analytical curves;
//! a point the scenario refuses is skipped with the reason.

use super::scenario_args::ScenarioArgs;
use crate::exit::user_error;
use crate::stdout::outln;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use studies::bubble_chart;

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
    /// Microbatch counts m to simulate (interleaved: where pp does not divide
    /// m, the smallest valid microbatch group size N, or --microbatch-group-size
    /// for every m (m mod N must be 0 or at least pp); DualPipe and DualPipeV:
    /// m ≥ 2·pp).
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32,64")]
    pub microbatches: Vec<u32>,
    /// Output image (.svg or .png).
    #[arg(long, default_value = "bubble.svg", value_parser = crate::output_file::image_path)]
    pub out: PathBuf,
    /// Print the chart's table as one JSON document (each schedule's points:
    /// m, the simulated bubble over ideal compute, the formula's value; the
    /// points skipped and why) instead of the text table.
    #[arg(long)]
    pub json: bool,
    /// Also write the table as CSV to FILE (schedule, m, simulated, formula).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub csv: Option<PathBuf>,
}

pub fn run(args: PlotArgs) -> anyhow::Result<()> {
    match args.chart {
        Chart::Bubble(args) => bubble(args),
    }
}

fn bubble(args: BubbleArgs) -> anyhow::Result<()> {
    let file = args.scenario.file()?;
    // The group size is the interleaved points' alone (`bubble_chart::group_size`).
    let base = sim::scenario::ScenarioFile {
        microbatch_group_size: None,
        ..file.clone()
    }
    .resolve()
    .map_err(user_error)?;
    let p = base.layout.pipeline_parallel.get();
    if p < 2 {
        return Err(user_error("plot bubble needs --pp ≥ 2"));
    }
    let samples_per_microbatch =
        base.layout.microbatch_size.get() * base.layout.data_parallel.get();
    let mut series = Vec::new();
    let mut skipped = Vec::new();
    let mut groups = Vec::new();
    for curve in &bubble_chart::CURVES {
        let label = curve.label;
        let mut points = Vec::new();
        for &m in &args.microbatches {
            let candidate = bubble_chart::point_file(&file, curve, m, samples_per_microbatch, p);
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
            if let Some(n) = candidate.microbatch_group_size {
                groups.push(format!("{label} m={m}: microbatch groups of N = {n}"));
            }
            points.push((
                m,
                bubble_chart::over_ideal(
                    report.metrics.bubble_fraction,
                    report.metrics.iteration_time_s,
                ),
            ));
        }
        if !points.is_empty() {
            series.push(reports::BubbleSeries {
                label: label.into(),
                formula: curve.formula,
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
    if let Some(path) = &args.csv {
        crate::output_file::write_output(path, |out| {
            use std::io::Write;
            writeln!(out, "schedule,microbatches,simulated,formula")?;
            for s in &series {
                for (m, y) in &s.points {
                    writeln!(out, "{},{m},{y},{}", s.label, s.formula.fraction(p, *m))?;
                }
            }
            Ok(())
        })?;
    }
    if args.json {
        let document = serde_json::json!({
            "schema_version": crate::schema_versions::PLOT_BUBBLE,
            "pipeline_parallel": p,
            "chart": args.out.display().to_string(),
            "series": series.iter().map(|s| serde_json::json!({
                "schedule": s.label,
                "points": s.points.iter().map(|(m, y)| serde_json::json!({
                    "microbatches": m,
                    "simulated": y,
                    "formula": s.formula.fraction(p, *m),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "microbatch_groups": groups,
            "skipped": skipped,
        });
        return outln!("{}", serde_json::to_string_pretty(&document)?);
    }
    for s in &series {
        let cells: Vec<String> = s
            .points
            .iter()
            .map(|(m, y)| format!("m={m}: {y:.4} (formula {:.4})", s.formula.fraction(p, *m)))
            .collect();
        outln!("{:<16} {}", s.label, cells.join(", "))?;
    }
    for line in &groups {
        outln!("{line}")?;
    }
    outln!("bubble chart: {}", args.out.display())?;
    Ok(())
}
