//! `clustersim`: simulate GPU clusters training large transformers before
//! buying time on them. This binary only parses arguments and wires crates
//! together; every subcommand lives in `commands/`.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

mod commands;
mod exit;
mod malloc_tuning;
mod output_file;
mod stdout;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Discrete-event simulator of GPU clusters training large transformer models.
///
/// Start with `clustersim simulate` (GPT-3 175B on 1024 Selene GPUs), then vary
/// the model, topology, layout and schedule with flags or a scenario file.
#[derive(Debug, Parser)]
#[command(name = "clustersim", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate one training iteration and report time, TFLOP/s, bubble, communication and memory.
    Simulate(commands::simulate::SimulateArgs),
    /// Predicted time and bus bandwidth of a collective over a size range (nccl-tests columns).
    ///
    /// Each row runs the (algorithm, protocol) pair NCCL's tuner picks (NVIDIA/nccl v2.12.12-1,
    /// src/graph/tuning.cc): time = latency + bytes / bandwidth for ring and tree with the LL,
    /// LL128 and Simple protocols; the least time wins. 'latency' is that pair's latency term
    /// (NCCL's per-call base latency plus its per-hop latencies); the rest of 'time' moves the
    /// bytes at the profile's achieved bus bandwidth times the protocol's factor (LL about 1/4,
    /// LL128 0.92, Simple 1). send_recv is not tuned by NCCL: it runs Simple at the profile's
    /// step latency.
    Collective(commands::collective::CollectiveArgs),
    /// Draw or trace a saved Timeline (Gantt chart SVG/PNG, Perfetto trace).
    Timeline(commands::timeline::TimelineArgs),
    /// Every valid layout for N GPUs, memory-checked, simulated in parallel and ranked; shardable.
    Sweep(commands::sweep::SweepArgs),
    /// Charts over many simulations (bubble fraction vs microbatches).
    Plot(commands::plot::PlotArgs),
    /// Compare two timelines (simulated vs measured): iteration, bubble, per-kind medians, worst tasks.
    Compare(commands::compare::CompareArgs),
    /// Run the scenario's task graph on a real GPU (real kernels or calibrated spins) and record a Timeline.
    Execute(commands::execute::ExecuteArgs),
    /// Time GEMMs, HBM, PCIe, NCCL and CPU Adam on this machine and write a calibration profile.
    Calibrate(commands::calibrate::CalibrateArgs),
    /// Which cuBLAS, NVRTC and NCCL files calibrate and execute load, and where they were found.
    CudaLibs(commands::cuda_libs::CudaLibsArgs),
    /// Run published measurements (e.g. validation/dev-set.json) through the simulator.
    Validate(commands::validate::ValidateArgs),
    /// Learn the cluster's GEMM rate, host costs and bandwidths from measured runs (FIT.json).
    Fit(commands::fit::FitArgs),
    /// Read a PyTorch profiler trace of rank 0 as kernel-class times: a case for fit and validate.
    ImportTrace(commands::import_trace::ImportTraceArgs),
    /// List the built-in models, topologies, profiles and stacks; --show NAME prints one as JSON.
    Presets(commands::presets::PresetsArgs),
}

fn main() -> ExitCode {
    // Like every Unix tool, end quietly when the reader of stdout goes away
    // (`clustersim compare a b | head`) instead of panicking on the write.
    // SAFETY: restores the default disposition of one signal before any
    // thread exists; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Usage errors: clap's message on stderr, exit 2.
        Err(error) if error.use_stderr() => error.exit(),
        // `--help`, `help`, `--version`: on stdout, through the same check
        // as every other output (clap's own exit ignores a failed write).
        Err(help) => return exit::report(print_help(&help)),
    };
    if matches!(cli.command, Command::Sweep(_)) {
        malloc_tuning::keep_freed_memory_for_reuse();
    }
    if matches!(cli.command, Command::Execute(_)) {
        // The driver reads CUDA_DEVICE_MAX_CONNECTIONS when it initialises:
        // set it (unless the user did) while this is the only thread and
        // before any CUDA call. `execute` then checks what is in effect.
        executor::queues::request_in_environment();
    }
    // Every output file waits for the command to succeed: a run that fails
    // changes none of them (the `output_file` crate's batch).
    let outputs = ::output_file::Batch::begin();
    let result = match cli.command {
        Command::Simulate(args) => commands::simulate::run(args),
        Command::Collective(args) => commands::collective::run(args),
        Command::Timeline(args) => commands::timeline::run(args),
        Command::Sweep(args) => commands::sweep::run(args),
        Command::Plot(args) => commands::plot::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::Execute(args) => commands::execute::run(args),
        Command::Calibrate(args) => commands::calibrate::run(args),
        Command::CudaLibs(args) => commands::cuda_libs::run(args),
        Command::Validate(args) => commands::validate::run(args),
        Command::Fit(args) => commands::fit::run(args),
        Command::ImportTrace(args) => commands::import_trace::run(args),
        Command::Presets(args) => commands::presets::run(args),
    };
    let result = result.and_then(|()| outputs.commit().map_err(exit::user_error));
    exit::report(result)
}

/// Prints clap's help or version text to stdout, as `Cli::parse` would.
fn print_help(help: &clap::Error) -> anyhow::Result<()> {
    use std::io::Write;
    help.print()
        .and_then(|()| std::io::stdout().flush())
        .map_err(stdout::error)
}
