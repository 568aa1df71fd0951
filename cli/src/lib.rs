//! The `clustersim` command line as a library: the binary (`main.rs`) and
//! the Python package (`python/`) run the same commands through here, so a
//! Python call prints, refuses and fails exactly as the command does.
//!
//! [`run_in_process`] parses an argument list, runs the command and commits
//! its output files (the `output_file` crate's batch) as the binary does;
//! [`run_captured`] does the same with standard output kept in memory and
//! the error returned as text, for callers that are not a terminal.

mod commands;
mod exit;
mod malloc_tuning;
mod output_file;
mod schema_versions;
mod stdout;

use clap::{CommandFactory, Parser, Subcommand};
use std::ffi::OsString;
use std::sync::Mutex;

pub use exit::report;

/// Discrete-event simulator of GPU clusters training large transformer models.
///
/// Start with `clustersim simulate` (GPT-3 175B on 1024 Selene GPUs), then vary
/// the model, topology, layout and schedule with flags or a scenario file.
#[derive(Debug, Parser)]
#[command(name = "clustersim", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate one training iteration and report time, TFLOP/s, bubble, communication and memory.
    Simulate(commands::simulate::SimulateArgs),
    /// The whole training run: expected time to train with failures, checkpoints and restarts, goodput, energy and cost.
    RunPlan(Box<commands::run_plan::RunPlanArgs>),
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
    /// Read a PyTorch profiler trace (kernel classes) or a measured Timeline (task classes) of rank 0: a case for fit and validate.
    ImportTrace(commands::import_trace::ImportTraceArgs),
    /// List the built-in models, topologies, profiles and stacks; --show NAME prints one as JSON.
    Presets(commands::presets::PresetsArgs),
}

/// Where a command runs: the binary owns its process (the allocator's
/// settings and the environment are its to set); a library caller (Python)
/// shares its process, which keeps its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// The `clustersim` binary.
    OwnProcess,
    /// A caller that loaded this library into its process.
    Library,
}

/// Parses `args` (the program's name first) and runs the command: clap's
/// usage errors are user errors (exit 2) with clap's message; `--help` and
/// `--version` print to standard output.
pub fn run_in_process<I, T>(args: I, host: Host) -> anyhow::Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) if error.use_stderr() => return Err(exit::usage_error(error)),
        Err(help) => return print_help(&help, host),
    };
    if host == Host::OwnProcess {
        prepare_own_process(&cli.command);
    }
    // Every output file waits for the command to succeed: a run that fails
    // changes none of them (the `output_file` crate's batch).
    let outputs = ::output_file::Batch::begin();
    run_command(cli.command)?;
    outputs.commit().map_err(exit::user_error)
}

/// Process-wide settings a command wants before it starts, while this is the
/// only thread: the binary's alone.
fn prepare_own_process(command: &Command) {
    if matches!(command, Command::Sweep(_)) {
        malloc_tuning::keep_freed_memory_for_reuse();
    }
    if matches!(command, Command::Execute(_)) {
        // The driver reads CUDA_DEVICE_MAX_CONNECTIONS when it initialises:
        // set it (unless the user did) while this is the only thread and
        // before any CUDA call. `execute` then checks what is in effect.
        executor::queues::request_in_environment();
    }
}

fn run_command(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Simulate(args) => commands::simulate::run(args),
        Command::RunPlan(args) => commands::run_plan::run(*args),
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
    }
}

/// Prints clap's help or version text to standard output: styled, as
/// `Cli::parse` would, where the binary owns it; plain text otherwise.
fn print_help(help: &clap::Error, host: Host) -> anyhow::Result<()> {
    match host {
        // Through the same check as every other output (clap's own exit
        // ignores a failed write).
        Host::OwnProcess => {
            use std::io::Write;
            help.print()
                .and_then(|()| std::io::stdout().flush())
                .map_err(stdout::error)
        }
        Host::Library => stdout::write_all(help.render().to_string().as_bytes()),
    }
}

/// What a command run by [`run_captured`] left: its exit code (0, 1 or 2, as
/// the binary's), what it wrote to standard output, and its error's message
/// (the binary's `error: …` line without the prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    pub exit_code: u8,
    pub stdout: Vec<u8>,
    pub error: Option<String>,
}

/// One command at a time per process: the output batch and the captured
/// standard output are process-wide.
static ONE_COMMAND: Mutex<()> = Mutex::new(());

/// Runs a command as [`run_in_process`] does for a library caller, with its
/// standard output kept in memory. Calls from several threads wait for each
/// other.
pub fn run_captured<I, T>(args: I) -> Captured
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    // A command that panicked leaves nothing the next one reads.
    let _one = ONE_COMMAND
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (result, stdout) = stdout::capture(|| run_in_process(args, Host::Library));
    match result {
        Ok(()) => Captured {
            exit_code: 0,
            stdout,
            error: None,
        },
        Err(error) => Captured {
            exit_code: exit::code_of(&error),
            stdout,
            error: Some(format!("{error:#}")),
        },
    }
}

/// The arguments a subcommand takes (`simulate`, `sweep merge`, …), as the
/// Python package names its keyword arguments; `None` for a name that is not
/// a subcommand.
pub fn arguments_of(subcommand: &[&str]) -> Option<Vec<ArgumentInfo>> {
    let mut command = Cli::command();
    command.build();
    let mut current = &command;
    for name in subcommand {
        current = current.find_subcommand(name)?;
    }
    Some(
        current
            .get_arguments()
            .filter_map(ArgumentInfo::of)
            .collect(),
    )
}

/// One argument of a subcommand, as a caller outside the command line needs
/// it: its long flag (or its place), what it takes, and its help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentInfo {
    /// The long flag without dashes (`global-batch`), or the positional's
    /// value name in lower case (`scenario`).
    pub name: String,
    pub kind: ArgumentKind,
    /// The values clap accepts, where it lists them (`1f1b`, `gpipe`, …).
    pub possible_values: Vec<String>,
    /// The value's placeholder in `--help` (`TOKENS`, `GiB|PCT%`).
    pub value_name: Option<String>,
    pub help: String,
    pub required: bool,
}

/// What an argument takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgumentKind {
    /// A switch: given or not (`--json` on `simulate`, `--explain`).
    Switch,
    /// `--flag[=true|false]`.
    Boolean,
    /// `--flag VALUE`.
    Value,
    /// A value by its place (`simulate SCENARIO`).
    Positional,
}

impl ArgumentInfo {
    fn of(arg: &clap::Arg) -> Option<ArgumentInfo> {
        if matches!(
            arg.get_action(),
            clap::ArgAction::Help | clap::ArgAction::Version
        ) {
            return None;
        }
        let possible_values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|value| !value.is_hide_set())
            .map(|value| value.get_name().to_string())
            .collect();
        let is_boolean = possible_values == ["true", "false"];
        let (name, kind) = match arg.get_long() {
            Some(long) if matches!(arg.get_action(), clap::ArgAction::SetTrue) => {
                (long.to_string(), ArgumentKind::Switch)
            }
            Some(long) if is_boolean => (long.to_string(), ArgumentKind::Boolean),
            Some(long) => (long.to_string(), ArgumentKind::Value),
            None => (
                arg.get_id().as_str().to_lowercase(),
                ArgumentKind::Positional,
            ),
        };
        Some(ArgumentInfo {
            name,
            kind,
            possible_values: if is_boolean {
                Vec::new()
            } else {
                possible_values
            },
            value_name: arg
                .get_value_names()
                .and_then(|names| names.first())
                .map(|name| name.to_string()),
            help: arg
                .get_long_help()
                .or_else(|| arg.get_help())
                .map(|help| help.to_string())
                .unwrap_or_default(),
            required: arg.is_required_set(),
        })
    }
}
