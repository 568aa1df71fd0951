//! `clustersim import-trace TRACE --scenario S --out CASES.json`: a PyTorch
//! profiler (Kineto) trace of rank 0 read as the simulator's kernel classes
//! (`studies::kineto`) and written as a case `fit` and `validate` read: the
//! scenario it ran, its iteration time and its GPU seconds per iteration in
//! GEMMs, fused attention and memory-bound kernels.

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

Examples:
  clustersim import-trace rank0.pt.trace.json --scenario my-run.json --out my-cases.json
  clustersim validate my-cases.json          (each kernel class predicted against the trace)
  clustersim fit my-cases.json --out fit.json")]
pub struct ImportTraceArgs {
    /// The trace (Chrome trace JSON with `traceEvents`; at most 256 MiB).
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
    /// (then the case has kernel-class times but no iteration time).
    #[arg(long, value_name = "N")]
    pub iterations: Option<NonZeroU32>,
}

pub fn run(args: ImportTraceArgs) -> anyhow::Result<()> {
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
    let id = args.id.clone().unwrap_or_else(|| {
        args.trace
            .file_name()
            .map_or("trace".into(), |name| name.to_string_lossy().into_owned())
    });
    let case = serde_json::json!({
        "cases": [{
            "id": id,
            "source": format!("clustersim import-trace of {}", args.trace.display()),
            "scenario": scenario,
            "measured": measured(&summary),
        }]
    });
    let written = serde_json::to_string_pretty(&case)? + "\n";
    crate::output_file::write_output(&args.out, |writer| {
        std::io::Write::write_all(writer, written.as_bytes())
    })?;
    print_summary(&summary)?;
    outln!(
        "\nwrote {} (use it with: clustersim fit {} --out FIT.json)",
        args.out.display(),
        args.out.display()
    )?;
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
