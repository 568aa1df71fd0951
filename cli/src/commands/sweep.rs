//! `clustersim sweep`: every valid layout of a model on N GPUs, memory-checked,
//! simulated in parallel and ranked (`studies::sweep`); `--shard i/n` runs 1/n of
//! the candidates and `clustersim sweep merge` combines the shard files into
//! exactly what the unsharded sweep writes. This module parses flags, draws
//! the progress bar and prints the table.

use super::sweep_base::SweepBase;
use crate::exit::user_error;
use clap::{ArgAction, ArgMatches, Args, Command, FromArgMatches, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::scenario::{Optimizer, Precision, Recompute, ScheduleKind, TrainingOptionsFile};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;
use studies::sweep::{self, Shard, SweepError, SweepOutput, SweepSpace};

const AFTER_HELP: &str = "\
Examples:
  clustersim sweep --model gpt3-175b --topology selene --gpus 1024 --global-batch 1536
  clustersim sweep examples/llama3-70b-superpod-cp2.json     (the scenario's model, batch, options and 128 GPUs)
  clustersim sweep --model gpt-22b --gpus 8 --global-batch 4 --top 5 --csv sweep.csv --plot sweep.svg
  clustersim sweep --model gpt-1t --gpus 512 --global-batch 512 --tp 8 --schedule 1f1b,interleaved --json sweep.json

Today's dimensions: context parallelism, ZeRO stages and precisions as lists (each layout runs
with one value of each; every combination scenario validation refuses, e.g. cp > 1 with ZeRO-2/3,
is counted under \"rejected\"):

  clustersim sweep --model llama3-8b --topology dgx-h100-superpod --gpus 64 --global-batch 128 \\
      --stack megatron-core-2024 --cp 1,2,4 --zero-stage 1,3 --precision bf16,fp8 --schedule 1f1b

  --max-cp 8 tries cp = 1, 2, 4, 8; a single --zero-stage, --precision or --optimizer value is the
  option every layout shares, as in `simulate`. Optimizers with smaller states fit layouts Adam
  cannot (70B on 64 H100s, each layout with each optimizer):

  clustersim sweep --model llama3-70b --topology dgx-h100-superpod --gpus 64 --global-batch 128 \\
      --optimizer adam,adam8bit,adafactor --schedule 1f1b --max-microbatch 1

Sharding: candidate k (valid layouts numbered in enumeration order) belongs to shard k mod n.
`sweep merge` checks that shards 0..n-1 of one sweep are all there and writes exactly what the
unsharded sweep writes (same bytes). A Slurm job array of 16 shards:

  #!/bin/bash
  #SBATCH --array=0-15 --cpus-per-task=32
  clustersim sweep --model gpt3-175b --gpus 3072 --global-batch 1536 \\
      --shard ${SLURM_ARRAY_TASK_ID}/16 --json shard-${SLURM_ARRAY_TASK_ID}.json

  # then, once the array is done (sbatch --dependency=afterok:<array job id>):
  clustersim sweep merge shard-*.json --json sweep.json --csv sweep.csv --plot sweep.svg

Threads: one simulation per core (rayon); set RAYON_NUM_THREADS to change it.";

/// `--zero-stage` and `--precision` of the sweep: the shared options' flags
/// (`TrainingOptionsFile`), made to take lists.
const ZERO_STAGE_HELP: &str = "ZeRO stages tried, comma-separated (e.g. 1,3: each layout once with \
     each; 0 none, 1 the distributed optimizer, 2 and the gradients, 3 and the parameters as FSDP). \
     One value: the stage every layout runs with. Default: 0, unless the stack sets it";
const OPTIMIZER_HELP: &str = "Optimizers tried, comma-separated (e.g. adam,adam8bit,adafactor: \
     each layout once with each). One value: the optimizer every layout runs with. Default: adam";
const PRECISION_HELP: &str = "Precisions tried, comma-separated (e.g. bf16,fp8: each layout once \
     with each; fp8 only on GPUs with FP8 tensor cores). One value: the precision every layout \
     runs with. Default: fp16, unless the stack sets it";

/// `clustersim sweep`'s arguments: [`SweepFlags`] with `--zero-stage` and
/// `--precision` taking comma-separated lists (the flags themselves are
/// declared once, in `TrainingOptionsFile`).
#[derive(Debug)]
pub struct SweepArgs {
    pub flags: SweepFlags,
    /// Every `--zero-stage` value, in the order given.
    pub zero_stages: Vec<u8>,
    /// Every `--precision` value, in the order given.
    pub precisions: Vec<Precision>,
    /// Every `--optimizer` value, in the order given.
    pub optimizers: Vec<Optimizer>,
}

impl Args for SweepArgs {
    fn augment_args(command: Command) -> Command {
        as_lists(SweepFlags::augment_args(command))
    }
    fn augment_args_for_update(command: Command) -> Command {
        as_lists(SweepFlags::augment_args_for_update(command))
    }
}

fn as_lists(command: Command) -> Command {
    command
        .mut_arg("zero_stage", |arg| {
            arg.value_delimiter(',')
                .action(ArgAction::Append)
                .value_name("STAGES")
                .help(ZERO_STAGE_HELP)
        })
        .mut_arg("precision", |arg| {
            arg.value_delimiter(',')
                .action(ArgAction::Append)
                .value_name("FORMATS")
                .help(PRECISION_HELP)
        })
        .mut_arg("optimizer", |arg| {
            arg.value_delimiter(',')
                .action(ArgAction::Append)
                .value_name("OPTIMIZERS")
                .help(OPTIMIZER_HELP)
        })
}

impl FromArgMatches for SweepArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }
    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        // Read the lists before the derived parser takes the first value of each.
        let zero_stages = many::<u8>(matches, "zero_stage");
        let precisions = many::<Precision>(matches, "precision");
        let optimizers = many::<Optimizer>(matches, "optimizer");
        Ok(SweepArgs {
            flags: SweepFlags::from_arg_matches_mut(matches)?,
            zero_stages,
            precisions,
            optimizers,
        })
    }
    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        self.update_from_arg_matches_mut(&mut matches.clone())
    }
    fn update_from_arg_matches_mut(&mut self, matches: &mut ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches_mut(matches)?;
        Ok(())
    }
}

/// Every value of a list flag (none when absent, e.g. under `sweep merge`).
fn many<T: Clone + Send + Sync + 'static>(matches: &ArgMatches, id: &str) -> Vec<T> {
    matches
        .try_get_many::<T>(id)
        .ok()
        .flatten()
        .map(|values| values.cloned().collect())
        .unwrap_or_default()
}

#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = AFTER_HELP
)]
pub struct SweepFlags {
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// A scenario file as the base (as `simulate` reads it, ≤ 256 MiB): its
    /// model, topology, profile, stack, global batch, sequence length and
    /// training options, each overridden by its flag; its GPU count t·cp·p·d
    /// is the default --gpus. Its layout is what the sweep searches.
    #[arg(value_name = "SCENARIO")]
    pub scenario: Option<PathBuf>,
    /// Model: a preset (see `clustersim presets`) or a model JSON file (≤ 256 MiB).
    /// Default: the scenario's, else gpt3-175b.
    #[arg(long)]
    pub model: Option<String>,
    /// Topology preset or file (see `clustersim presets`). Default: the scenario's, else selene.
    #[arg(long)]
    pub topology: Option<String>,
    /// Calibration profile: a built-in or a file (≤ 256 MiB). Default: the built-in
    /// for the topology's GPU.
    #[arg(long)]
    pub profile: Option<String>,
    /// GPUs N: every layout has tp × cp × pp × dp = N (default: the
    /// scenario's t·cp·p·d; needed without a scenario that sets them).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus: Option<u32>,
    /// Global batch size B (B must be a multiple of microbatch size × dp;
    /// default: the scenario's; needed without one).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub global_batch: Option<u32>,
    /// Largest microbatch size b; powers of two up to it are tried.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_microbatch: u32,
    /// Largest number of model chunks v tried for the interleaved and looped-bfs schedules.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_chunks: u32,
    /// Also try tensor parallelism across nodes (t a multiple of the GPUs per node).
    #[arg(long)]
    pub allow_cross_node_tp: bool,
    /// Also try interleaved where pp does not divide the microbatches m, with
    /// Megatron-Core's smallest valid microbatch group size N (p < N ≤ m,
    /// m mod N = 0 or ≥ p). Larger N only hold more activations (warm-up
    /// 2(p−r−1)+(v−1)N) for the same bubble under uniform costs, so they are not tried.
    #[arg(long)]
    pub microbatch_groups: bool,
    /// Only these schedules (comma-separated; default gpipe,1f1b,interleaved; zb-h1, zb-h2, zb-v
    /// and dualpipev (v = 2, the V map), dualpipe (v = 2, two model copies), and looped-bfs
    /// (v from 2 to --max-chunks) on request).
    #[arg(long, value_delimiter = ',', value_parser = super::registry_help::schedule_values())]
    pub schedule: Vec<String>,
    /// Only these recompute modes (comma-separated; default none,full).
    #[arg(long, value_delimiter = ',', value_parser = ["none", "selective", "full"])]
    pub recompute: Vec<String>,
    /// Simulate layouts that do not fit in GPU memory too (marked `*` in the table) instead of dropping them.
    #[arg(long)]
    pub ignore_memory: bool,
    /// GPU memory every layout must leave free, in GiB (`6`) or as a percent
    /// of the GPU's (`8%`): what the allocator's fragmentation, NCCL's
    /// buffers and the CUDA context take beside the model. Default 0.
    #[arg(long, value_name = "GiB|PCT%", value_parser = parse_headroom)]
    pub memory_headroom: Option<Headroom>,
    /// Rank layouts by their expected time to train on this many tokens
    /// (15T), failures, checkpoints and restarts included at `run-plan`'s
    /// defaults, instead of by iteration time.
    #[arg(long, value_name = "N", value_parser = super::run_plan_parse::parse_count)]
    pub tokens: Option<u64>,
    /// Training sequence length every layout runs at (default: the model's).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub seq_len: Option<u64>,
    /// Simulate every data-parallel replica of each layout, even where one
    /// representative replica gives the same records (symmetry).
    #[arg(long)]
    pub no_symmetry: bool,
    /// Simulate only the layouts that could rank in the top --top: each
    /// layout's exact lower bound (its schedule's critical path with every
    /// pass at its kernels' time plus its blocking tensor all-reduces, all
    /// other communication free) is computed first,
    /// layouts are simulated from the lowest bound up, and those whose bound
    /// exceeds the top's slowest time are listed as pruned, unsimulated. The
    /// ranked top equals the full sweep's. Not with --shard or --tokens.
    #[arg(long, conflicts_with_all = ["shard", "tokens"])]
    pub prune: bool,
    /// Simulate every layout with the factors a `clustersim fit` learned
    /// (FIT.json); the sweep's header names the fit and its factors.
    #[arg(long, value_name = "FIT.json")]
    pub fit: Option<PathBuf>,
    /// Only this tensor-parallel degree.
    #[arg(long)]
    pub tp: Option<u32>,
    /// Only this pipeline-parallel degree.
    #[arg(long)]
    pub pp: Option<u32>,
    /// Context-parallel degrees tried, comma-separated (e.g. 1,2,4; default 1:
    /// none). Each must divide N/tp; scenario validation refuses the rest
    /// (seq_len divisible by 2·cp, tp × cp within or across whole nodes, …).
    #[arg(long, value_name = "DEGREES", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub cp: Vec<u32>,
    /// Expert-parallel degrees tried for a mixture-of-experts model,
    /// comma-separated (e.g. 1,2,8; default 1). Scenario validation refuses
    /// the degrees that do not divide the experts or dp × cp; the memory
    /// check applies to every layout.
    #[arg(long, value_name = "DEGREES", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub ep: Vec<u32>,
    /// Expert tensor-parallel degrees tried for a mixture of experts,
    /// comma-separated (e.g. 1,2); default: each layout's t, as Megatron-Core
    /// defaults etp. Scenario validation refuses the degrees that do not fit
    /// (etp must divide the experts' FFN size, ep × etp the stage's t × cp × d).
    #[arg(long, value_name = "DEGREES", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    pub etp: Vec<u32>,
    /// Try cp = 1, 2, 4, … up to N (instead of listing them with --cp).
    #[arg(long, value_name = "N", conflicts_with = "cp", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_cp: Option<u32>,
    /// Run shard i of n (0 ≤ i < n): the candidates k with k mod n = i.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Software stack every layout runs under (default megatron-2021; see `simulate --help`).
    #[arg(long, value_name = "NAME|FILE")]
    pub stack: Option<String>,
    /// Training options every layout runs with (the scenario file's keys).
    #[command(flatten)]
    pub options: TrainingOptionsFile,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// Combine shard files (`--shard i/n --json FILE`) into the unsharded sweep's output.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard files, one per shard 0..n-1, in any order (each at most 256 MiB; n files
    /// hold at most n shards).
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Rows of the ranked table.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Write every result (ranked) as JSON to FILE (`-`: stdout, and the table goes to stderr).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub json: Option<PathBuf>,
    /// Write every result as CSV to FILE (simulated ranked, then dropped).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub csv: Option<PathBuf>,
    /// Draw throughput per layout, coloured by schedule, to FILE (.svg or .png).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::image_path)]
    pub plot: Option<PathBuf>,
}

pub fn run(mut all: SweepArgs) -> anyhow::Result<()> {
    if let Some(SweepCommand::Merge(merge)) = all.flags.command.take() {
        return run_merge(merge);
    }
    let space = space_from(&all)?;
    let args = &all.flags;
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(user_error)?;
    let started = Instant::now();
    let enumeration = sweep::enumerate(&space).map_err(sweep_error)?;
    let candidates = match shard {
        Some(shard) => shard.select(&enumeration.candidates),
        None => enumeration.candidates.clone(),
    };
    let bar = progress_bar();
    let expansion = if args.no_symmetry {
        sim::Expansion::Full
    } else {
        sim::Expansion::Auto
    };
    let on_simulated = |_, total| {
        bar.set_length(total as u64);
        bar.inc(1);
    };
    let memory = sweep::MemoryRule::of(&space);
    let outcome = if args.prune {
        sweep::run_candidates_pruned(
            &candidates,
            memory,
            expansion,
            // The best and its runner-up at least: the summary explains the
            // best against the runner-up.
            args.output.top.max(2),
            &on_simulated,
        )
    } else {
        sweep::run_candidates_with(&candidates, memory, expansion, &on_simulated)
    }
    .map_err(sweep_error)?;
    bar.finish_and_clear();
    let elapsed_s = started.elapsed().as_secs_f64();
    let output = SweepOutput::new(&space, &enumeration, shard, outcome);
    let pruned = match output.counts.pruned {
        0 => String::new(),
        n => format!(", {n} pruned by their lower bound"),
    };
    let timing = format!(
        "{} simulated{pruned} in {elapsed_s:.1} s ({:.1} layouts/s, {} threads)",
        output.counts.simulated,
        output.counts.simulated as f64 / elapsed_s.max(1e-9),
        rayon::current_num_threads()
    );
    present(&output, &args.output, Some(&timing))
}

fn run_merge(args: MergeArgs) -> anyhow::Result<()> {
    let shards = args
        .files
        .iter()
        .map(|path| SweepOutput::read(path))
        .collect::<Result<Vec<_>, _>>()
        .map_err(user_error)?;
    let output = sweep::merge(shards).map_err(user_error)?;
    present(&output, &args.output, None)
}

/// Flags → the sweep space (flag errors exit 2).
fn space_from(all: &SweepArgs) -> anyhow::Result<SweepSpace> {
    let args = &all.flags;
    let base = args.scenario.as_deref().map(SweepBase::read).transpose()?;
    let file = base.as_ref().map(|b| &b.file);
    let gpus = match args.gpus {
        Some(gpus) => gpus,
        None => base
            .as_ref()
            .map(SweepBase::gpus)
            .transpose()?
            .flatten()
            .ok_or_else(|| {
                user_error(
                    "--gpus N is needed (or a scenario file whose tp, cp, pp, dp give the count)",
                )
            })?,
    };
    let global_batch = args
        .global_batch
        .or(file.and_then(|f| f.global_batch))
        .ok_or_else(|| {
            user_error("--global-batch B is needed (or a scenario file that sets global_batch)")
        })?;
    let mut space = SweepSpace::new("gpt3-175b", "selene", gpus, global_batch);
    if let Some(model) = args
        .model
        .clone()
        .map(Into::into)
        .or(file.and_then(|f| f.model.clone()))
    {
        space.model = model;
    }
    if let Some(topology) = args
        .topology
        .clone()
        .map(Into::into)
        .or(file.and_then(|f| f.topology.clone()))
    {
        space.topology = topology;
    }
    space.profile = args
        .profile
        .clone()
        .or(file.and_then(|f| f.profile.clone()));
    space.max_microbatch = args.max_microbatch;
    space.max_chunks = args.max_chunks;
    space.allow_cross_node_tp = args.allow_cross_node_tp;
    space.microbatch_groups = args.microbatch_groups;
    space.ignore_memory = args.ignore_memory;
    space.seq_len = args.seq_len.or(file.and_then(|f| f.seq_len));
    space.train_tokens = args.tokens;
    space.options = match file {
        Some(f) => args.options.clone().or(f.options.clone()),
        None => args.options.clone(),
    };
    space.stack = args.stack.clone().or(file.and_then(|f| f.stack.clone()));
    space.tensor_parallel = args.tp;
    space.pipeline_parallel = args.pp;
    if let Some(max) = args.max_cp {
        space.context_parallel = sweep::space::powers_of_two_up_to(max);
    } else if !args.cp.is_empty() {
        space.context_parallel = args.cp.clone();
    }
    if !args.ep.is_empty() {
        space.expert_parallel = args.ep.clone();
    }
    space.expert_tensor_parallel = args.etp.clone();
    space.zero_stages = all.zero_stages.clone();
    space.precisions = all.precisions.clone();
    space.optimizers = all.optimizers.clone();
    if !args.schedule.is_empty() {
        space.schedules = args
            .schedule
            .iter()
            .filter_map(|s| ScheduleKind::parse(s))
            .collect();
    }
    if !args.recompute.is_empty() {
        space.recompute = args
            .recompute
            .iter()
            .filter_map(|s| Recompute::parse(s))
            .collect();
    }
    if let Some(path) = &args.fit {
        let record = super::fit::load(path)?;
        space.fit = Some(sweep::space::SweepFit {
            file: path.display().to_string(),
            factors: record
                .parameters
                .iter()
                .map(|p| (p.name, p.value))
                .collect(),
        });
    }
    if let Some(headroom) = args.memory_headroom {
        let base = space.base_check_file().resolve().map_err(user_error)?;
        space.memory_headroom_bytes = Some(headroom.bytes(base.topology.gpu.hbm_bytes));
    }
    let space = space.normalized();
    super::sweep_post_validation::check(&space)?;
    Ok(space)
}

/// Every sweep error comes from the user's flags or files except a deadlock (a bug).
fn sweep_error(error: SweepError) -> anyhow::Error {
    match error {
        SweepError::Deadlock { .. } => anyhow::Error::new(error),
        other => user_error(other),
    }
}

fn progress_bar() -> ProgressBar {
    // Hidden when stderr is not a terminal.
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "simulating [{bar:40}] {pos}/{len} layouts · {per_sec} · ETA {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// Writes the files and prints the summary, table and explanation.
fn present(output: &SweepOutput, args: &OutputArgs, timing: Option<&str>) -> anyhow::Result<()> {
    let json_to_stdout = args.json.as_deref() == Some(Path::new("-"));
    if let Some(path) = &args.json {
        if json_to_stdout {
            crate::stdout::write_all(output.to_json_string().as_bytes())?;
        } else {
            write_file(path, &output.to_json_string())?;
        }
    }
    if let Some(path) = &args.csv {
        write_file(path, &output.to_csv_string())?;
    }
    let mut notes = Vec::new();
    if let Some(path) = &args.plot {
        if !output.results.is_empty() {
            let s = &output.sweep;
            let title = format!(
                "{} on {} · {} GPUs · B = {}",
                sweep::space::label(&s.model),
                sweep::space::label(&s.topology),
                s.gpus,
                s.global_batch
            );
            reports::render_sweep_chart(&output.results, &title, path).map_err(user_error)?;
            notes.push(format!("chart written to {}", path.display()));
        }
    }
    let mut text = Vec::new();
    super::sweep_report::write_report(&mut text, output, args.top, timing)?;
    for note in notes {
        writeln!(text, "{note}")?;
    }
    if json_to_stdout {
        std::io::stderr().write_all(&text)?;
    } else {
        crate::stdout::write_all(&text)?;
    }
    if output.shard.is_none() && output.results.is_empty() {
        return Err(user_error(format!(
            "none of the {} valid layouts fits in GPU memory; try more GPUs, a larger --max-chunks or recompute",
            output.counts.valid
        )));
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> anyhow::Result<()> {
    crate::output_file::write_output(path, |writer| {
        std::io::Write::write_all(writer, text.as_bytes())
    })
}

/// `--memory-headroom`: GiB, or a percent of the GPU's memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Headroom {
    Gib(f64),
    Percent(f64),
}

impl Headroom {
    /// The bytes it leaves free on a GPU of `gpu_memory_bytes`.
    fn bytes(self, gpu_memory_bytes: u64) -> u64 {
        match self {
            Headroom::Gib(gib) => (gib * (1u64 << 30) as f64).round() as u64,
            Headroom::Percent(percent) => {
                (gpu_memory_bytes as f64 * percent / 100.0).round() as u64
            }
        }
    }
}

fn parse_headroom(text: &str) -> Result<Headroom, String> {
    let (number, percent) = match text.trim().strip_suffix('%') {
        Some(number) => (number, true),
        None => (
            text.trim().trim_end_matches("GiB").trim_end_matches("gib"),
            false,
        ),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not GiB (e.g. 6) or a percent (e.g. 8%)"))?;
    match (percent, value) {
        (true, v) if (0.0..100.0).contains(&v) => Ok(Headroom::Percent(v)),
        (false, v) if v.is_finite() && (0.0..=1e6).contains(&v) => Ok(Headroom::Gib(v)),
        _ => Err(format!(
            "'{text}' is out of range (0–1e6 GiB, or 0–100% of the GPU)"
        )),
    }
}
