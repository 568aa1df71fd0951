//! `clustersim execute`: run the simulator's task graph of a scenario on a
//! real GPU and record the measured Timeline (producer = executor), to be
//! compared with `clustersim simulate --timeline` by `clustersim compare`.

use super::scenario_args::ScenarioArgs;
use crate::exit::user_error;
use crate::stdout::outln;
use clap::Args;
use executor::{ExecuteError, ExecuteOptions, ExecutionMode, ExecutionPlan};
use sim::scenario::Scenario;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
#[command(
    after_help = "Modes:\n  real       every task runs its real kernels (cuBLAS GEMMs, memory-bound kernels as copies of\n             their bytes); ranks folded onto one GPU contend for it; communication between them\n             is a device-to-device copy of the same bytes\n  synthetic  every task is a single-block spin on the GPU's nanosecond timer (%globaltimer) of its\n             simulated duration (from the scenario's --profile): checks schedule, dependency and\n             overlap semantics\n\nThe timed iteration is held behind a start gate while the host issues it; a host that needs\nlonger than the gate fails the run (exit 2). CUDA_DEVICE_MAX_CONNECTIONS is set to 32 unless set.\n\nExamples:\n  clustersim execute examples/pipeline-1f1b-p4-synthetic.json --mode synthetic --out measured.json\n  clustersim simulate examples/pipeline-1f1b-p4-synthetic.json --timeline simulated.json\n  clustersim compare simulated.json measured.json --max-error 2\n  clustersim execute examples/gpt-layers-p1-real.json --mode real --dry-run --plan plan.json   # no GPU needed"
)]
pub struct ExecuteArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// real: the tasks' own kernels; synthetic: spins of the simulated durations.
    #[arg(long, value_parser = ["real", "synthetic"])]
    pub mode: String,
    /// Where to write the measured Timeline (.json, or .jsonl for JSON lines).
    #[arg(long, value_name = "FILE", default_value = "measured.json", value_parser = crate::output_file::output_path)]
    pub out: PathBuf,
    /// GPUs to spread ranks over; 1 folds every rank onto GPU 0 (only 1 runs today).
    #[arg(long, default_value_t = 1)]
    pub gpus: u32,
    /// Untimed iterations before the timed one.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Build and check the execution plan, print its summary, and stop (no GPU needed).
    #[arg(long)]
    pub dry_run: bool,
    /// Also write the execution plan (streams, waits, launches per task) as JSON to FILE.
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub plan: Option<PathBuf>,
    #[command(flatten)]
    pub libs: super::cuda_libs::CudaLibArgs,
}

pub fn run(args: ExecuteArgs) -> anyhow::Result<()> {
    if !args.dry_run {
        use gpu::detect::CudaLibrary::{Cublas, Nvrtc};
        let required: &'static [gpu::detect::CudaLibrary] = if args.mode == "real" {
            &[Nvrtc, Cublas]
        } else {
            &[Nvrtc]
        };
        super::cuda_libs::prepare(
            &args.libs,
            &super::cuda_libs::Needs {
                required,
                optional: &[],
            },
        )?;
    }
    let scenario = args.scenario.resolve()?;
    let mode = ExecutionMode::parse(&args.mode)
        .ok_or_else(|| user_error(format!("--mode: '{}' is not real or synthetic", args.mode)))?;
    if args.gpus == 0 {
        return Err(user_error("--gpus: must be at least 1"));
    }
    let options = ExecuteOptions {
        mode,
        gpus: args.gpus,
        warmup_iterations: args.warmup,
    };
    if scenario.options.network_contention {
        eprintln!("note: the executor plans with closed-form communication costs; --contention changes the simulation only");
    }
    if args.dry_run {
        let prepared = executor::prepare(&scenario, &options).map_err(execute_error)?;
        if let Some(path) = &args.plan {
            write_plan(&prepared.plan, path)?;
        }
        print_plan(&scenario, &prepared.plan, prepared.check.waits)?;
        outln!("  dry run: nothing was executed")?;
        return Ok(());
    }
    let execution = executor::execute(&scenario, &options).map_err(execute_error)?;
    if let Some(path) = &args.plan {
        write_plan(&execution.plan, path)?;
    }
    write_timeline(&execution.timeline, &args.out)?;
    print_plan(&scenario, &execution.plan, execution.check.waits)?;
    // Every rank's records: full expansion.
    let simulated = sim::simulate_with(&scenario, sim::Expansion::Full)
        .map_err(crate::exit::simulation_error)?
        .into_timeline();
    let comparison = timeline::compare::compare(&simulated, &execution.timeline, 0)
        .map_err(|e| anyhow::anyhow!(e))?;
    outln!(
        "  device              {} ({} ranks per GPU)",
        execution.notes["device"].as_str().unwrap_or("?"),
        execution.plan.ranks_per_gpu()
    )?;
    outln!(
        "  iteration time      {:.6} s measured vs {:.6} s simulated ({:+.2}%)",
        comparison.other_iteration_time_s,
        comparison.reference_iteration_time_s,
        comparison.iteration_error_percent
    )?;
    outln!(
        "  bubble fraction     {:.4} measured vs {:.4} simulated",
        comparison.other_bubble_fraction,
        comparison.reference_bubble_fraction
    )?;
    for warning in &execution.warnings {
        outln!("  warning: {warning}")?;
    }
    outln!("  measured timeline   {}", args.out.display())?;
    Ok(())
}

/// Machine and input problems exit 2; GPU call failures and bugs exit 1.
fn execute_error(error: ExecuteError) -> anyhow::Error {
    if error.is_user_error() {
        user_error(error)
    } else {
        anyhow::anyhow!(error)
    }
}

fn print_plan(scenario: &Scenario, plan: &ExecutionPlan, waits: usize) -> anyhow::Result<()> {
    let counts = plan.launch_counts();
    outln!(
        "clustersim execute · {} · {}",
        plan.mode.name(),
        scenario.title()
    )?;
    outln!(
        "  plan                {} tasks on {} streams, {} ranks on {} GPU(s), {} cross-stream waits",
        plan.tasks.len(),
        plan.streams.len(),
        plan.rank_gpu.len(),
        plan.gpu_count,
        waits
    )?;
    outln!(
        "  launches            {} GEMMs, {} copies, {} spins, {} NCCL calls",
        counts.gemms,
        counts.copies,
        counts.spins,
        counts.collectives
    )?;
    outln!(
        "  simulated iteration {:.6} s (profile {})",
        plan.simulated_iteration_ns as f64 * 1e-9,
        scenario.profile.id
    )?;
    Ok(())
}

fn write_plan(plan: &ExecutionPlan, path: &Path) -> anyhow::Result<()> {
    crate::output_file::write_output(path, |writer| {
        serde_json::to_writer_pretty(writer, plan).map_err(std::io::Error::other)
    })
}

fn write_timeline(timeline: &timeline::Timeline, path: &Path) -> anyhow::Result<()> {
    let lines = path.extension().is_some_and(|ext| ext == "jsonl");
    crate::output_file::write_output(path, |writer| {
        if lines {
            timeline.write_json_lines(writer)
        } else {
            timeline.write_json(writer)
        }
    })
}
