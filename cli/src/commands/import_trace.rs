//! `clustersim import-trace TRACE --scenario S --out CASES.json`: a PyTorch
//! profiler (Kineto) trace of rank 0 read as the simulator's kernel classes
//! (`studies::kineto`) and written as a case `fit` and `validate` read: the
//! scenario it ran, its iteration time and its GPU seconds per iteration in
//! GEMMs, fused attention and memory-bound kernels. A clustersim Timeline
//! (what `clustersim execute` measured) is read as rank 0's busy seconds per
//! iteration in each class of task instead ([`timeline::RankClassSeconds`]):
//! compute, tensor-parallel, pipeline and data-parallel communication.

use crate::exit::user_error;
use crate::stdout::outln;
use clap::Args;
use std::num::NonZeroU32;
use std::path::PathBuf;
use studies::kineto::{self, TraceSummary};

#[derive(Debug, Args)]
#[command(after_help = "\
The trace is what torch.profiler exports (prof.export_chrome_trace, or the tensorboard
handler's *.pt.trace.json) for rank 0, with ProfilerActivity.CUDA and a schedule whose active
steps are whole iterations. Kernels are classed by name: FlashAttention/cuDNN attention,
cuBLAS/CUTLASS/nvjet GEMMs, NCCL communication (reported, not fitted); every other kernel
counts as memory-bound. The summary lists the longest kernels with their class to check.

Or TRACE is a clustersim Timeline (JSON with `header` and `tasks`, or `.jsonl`), such as the
one `clustersim execute SCENARIO --timeline measured.json` records on a GPU: the case then
holds rank 0's mean iteration time and its busy seconds per iteration in compute tasks
(compute_s) and in tensor-parallel, pipeline and data-parallel communication (tensor_comm_s,
pipeline_comm_s, data_parallel_comm_s), which `validate` predicts from the simulated run's
rank 0 and `fit` learns from, class by class. --scenario is the file that was executed.

Examples:
  clustersim import-trace rank0.pt.trace.json --scenario my-run.json --out my-cases.json
  clustersim import-trace measured.json --scenario my-run.json --out my-cases.json
  clustersim validate my-cases.json          (each kernel class predicted against the trace)
  clustersim fit my-cases.json --out fit.json")]
pub struct ImportTraceArgs {
    /// The trace (Chrome trace JSON with `traceEvents`; at most 256 MiB), or a
    /// clustersim Timeline (at most 4 GiB).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// The scenario the traced run trained (a scenario file as `simulate`
    /// reads it), written into the case.
    #[arg(long, value_name = "FILE")]
    pub scenario: PathBuf,
    /// Where to write the case file.
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub out: PathBuf,
    /// The case's id (default: the trace's file name).
    #[arg(long)]
    pub id: Option<String>,
    /// Iterations the trace holds, when it has no `ProfilerStep#N` annotations
    /// (then the case has kernel-class times but no iteration time); a
    /// Timeline numbers its own iterations.
    #[arg(long, value_name = "N")]
    pub iterations: Option<NonZeroU32>,
}

pub fn run(args: ImportTraceArgs) -> anyhow::Result<()> {
    if is_timeline(&args.trace)? {
        return import_timeline(&args);
    }
    let text = input_file::read_to_string(&args.trace)
        .map_err(|e| user_error(format!("cannot read {}: {e}", args.trace.display())))?;
    let summary = kineto::summarize(&text, args.iterations)
        .map_err(|e| user_error(format!("{}: {e}", args.trace.display())))?;
    if let Some(rank) = summary.rank.filter(|&rank| rank != 0) {
        return Err(user_error(format!(
            "{}: the trace is rank {rank}'s; the simulator's kernel classes are rank 0's: \
             import rank 0's trace",
            args.trace.display()
        )));
    }
    let scenario = read_scenario(&args.scenario)?;
    let case = serde_json::json!({
        "cases": [{
            "id": case_id(&args),
            "source": format!("clustersim import-trace of {}", args.trace.display()),
            "scenario": scenario,
            "measured": measured(&summary),
        }]
    });
    write_case(&args, &case)?;
    print_summary(&summary)?;
    print_written(&args)
}

/// Whether `path` is a clustersim Timeline: a `.jsonl` file, or JSON whose
/// first key is `header` (as `Timeline::write_json` writes it) or, as JSON
/// lines, `format_version`; not a trace.
fn is_timeline(path: &std::path::Path) -> anyhow::Result<bool> {
    if path.extension().is_some_and(|ext| ext == "jsonl") {
        return Ok(true);
    }
    let mut reader = input_file::open_capped(path, input_file::MAX_TIMELINE_BYTES)
        .map_err(|e| user_error(format!("cannot read {}: {e}", path.display())))?;
    let mut start = [0u8; 64];
    let read = std::io::Read::read(&mut reader, &mut start)
        .map_err(|e| user_error(format!("cannot read {}: {e}", path.display())))?;
    let text = String::from_utf8_lossy(&start[..read]);
    let opening: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    // A pretty or compact Timeline, or JSON lines whose first line is the
    // bare header (`Timeline::read` takes both).
    Ok(opening.starts_with("{\"header\"") || opening.starts_with("{\"format_version\""))
}

/// A Timeline as a case: rank 0's mean iteration time and busy seconds per
/// iteration in each class of task.
fn import_timeline(args: &ImportTraceArgs) -> anyhow::Result<()> {
    let timeline = timeline::Timeline::read(&args.trace).map_err(|e| user_error(e.to_string()))?;
    let scenario = read_scenario(&args.scenario)?;
    let classes = timeline.rank_class_seconds(0);
    let iteration_s = timeline.steady_iteration_s();
    if iteration_s <= 0.0 {
        return Err(user_error(format!(
            "{}: the Timeline's tasks all end at 0 ns: nothing was timed",
            args.trace.display()
        )));
    }
    let mut measured = serde_json::Map::new();
    measured.insert("iteration_time_s".into(), iteration_s.into());
    for (key, seconds) in class_times(&classes) {
        if seconds > 0.0 {
            measured.insert(key.into(), seconds.into());
        }
    }
    let producer = match (&timeline.header.producer, &timeline.header.executor_mode) {
        (timeline::Producer::Executor, Some(mode)) => format!("clustersim execute ({mode} mode)"),
        (timeline::Producer::Executor, None) => "clustersim execute".into(),
        (timeline::Producer::Sim, _) => "clustersim simulate".into(),
    };
    let case = serde_json::json!({
        "cases": [{
            "id": case_id(args),
            "source": format!("clustersim import-trace of {}, a Timeline from {producer}", args.trace.display()),
            "scenario": scenario,
            "measured": measured,
        }]
    });
    write_case(args, &case)?;
    outln!(
        "{} iterations of {} ({:.4} s an iteration, steady state); rank 0's busy seconds per iteration by class:",
        timeline.iteration_ends_ns().len(),
        producer,
        iteration_s
    )?;
    for (key, seconds) in class_times(&classes) {
        outln!("  {key:<22} {seconds:>9.4} s")?;
    }
    print_written(args)
}

/// The last line: where the case went and what to do with it.
fn print_written(args: &ImportTraceArgs) -> anyhow::Result<()> {
    outln!(
        "\nwrote {} (use it with: clustersim fit {} --out FIT.json)",
        args.out.display(),
        args.out.display()
    )?;
    Ok(())
}

/// The measured keys of a Timeline's classes, in order.
fn class_times(classes: &timeline::RankClassSeconds) -> [(&'static str, f64); 4] {
    [
        ("compute_s", classes.compute),
        ("tensor_comm_s", classes.tensor),
        ("pipeline_comm_s", classes.pipeline),
        ("data_parallel_comm_s", classes.data_parallel),
    ]
}

/// The case's id: `--id`, else the trace's file name.
fn case_id(args: &ImportTraceArgs) -> String {
    args.id.clone().unwrap_or_else(|| {
        args.trace
            .file_name()
            .map_or("trace".into(), |name| name.to_string_lossy().into_owned())
    })
}

/// Writes the case file whole (or not at all).
fn write_case(args: &ImportTraceArgs, case: &serde_json::Value) -> anyhow::Result<()> {
    let written = serde_json::to_string_pretty(case)? + "\n";
    crate::output_file::write_output(&args.out, |writer| {
        std::io::Write::write_all(writer, written.as_bytes())
    })?;
    Ok(())
}

/// The scenario file's JSON, checked to resolve (exit 2 otherwise).
fn read_scenario(path: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let text = input_file::read_to_string(path)
        .map_err(|e| user_error(format!("cannot read {}: {e}", path.display())))?;
    let file: sim::scenario::ScenarioFile = serde_json::from_str(&text)
        .map_err(|e| user_error(format!("{} is not a valid scenario: {e}", path.display())))?;
    file.resolve()
        .map_err(|e| user_error(format!("{}: {e}", path.display())))?;
    Ok(serde_json::from_str(&text)?)
}

/// The case's `measured` object: the iteration time where the trace has
/// steps, and each kernel class that ran.
fn measured(summary: &TraceSummary) -> serde_json::Value {
    let mut measured = serde_json::Map::new();
    if let Some(seconds) = summary.iteration_time_s {
        measured.insert("iteration_time_s".into(), seconds.into());
    }
    for (key, seconds) in [
        ("gemm_s", summary.gemm_s),
        ("attention_s", summary.attention_s),
        ("memory_bound_s", summary.memory_bound_s),
    ] {
        if seconds > 0.0 {
            measured.insert(key.into(), seconds.into());
        }
    }
    measured.into()
}

fn print_summary(summary: &TraceSummary) -> anyhow::Result<()> {
    let iteration = summary
        .iteration_time_s
        .map_or("no ProfilerStep annotations".into(), |s| {
            format!("iteration {:.3} s", s)
        });
    outln!(
        "{} iterations ({iteration}); GPU seconds per iteration by class:",
        summary.iterations
    )?;
    for (class, seconds) in [
        ("GEMM", summary.gemm_s),
        ("attention", summary.attention_s),
        ("memory-bound", summary.memory_bound_s),
        ("NCCL (not fitted)", summary.communication_s),
    ] {
        outln!("  {class:<18} {seconds:>9.4} s")?;
    }
    outln!("\nlongest kernels (all iterations):")?;
    for kernel in summary.kernels.iter().take(12) {
        let name: String = kernel.name.chars().take(80).collect();
        outln!(
            "  {:>9.4} s {:>7} × {:<13} {name}",
            kernel.total_s,
            kernel.launches,
            format!("{:?}", kernel.class)
        )?;
    }
    Ok(())
}
