//! `clustersim simulate`: one iteration of a scenario through the event engine.

use super::defaults_note::DefaultsNote;
use super::expected_range::ExpectedRange;
use super::scenario_args::ScenarioArgs;
use super::simulate_summary::{write_summary, WhatRan};
use clap::Args;
use sim::scenario::Scenario;
use sim::SimulationReport;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  clustersim simulate\n  clustersim simulate --model gpt-1t --tp 8 --pp 64 --dp 6 --global-batch 3072\n  clustersim simulate --model gpt3-175b --pp 8 --dp 1 --schedule interleaved --chunks 3 --global-batch 64 --json\n  clustersim simulate scenario.json --timeline run.timeline.json\n  clustersim simulate --model gpt2-10b --topology dgx2-v100 --tp 1 --pp 1 --dp 1 --microbatch-size 10 --global-batch 10 --zero-offload --delayed-update\n  clustersim simulate --model gpt2-10b --topology dgx2-v100 --tp 1 --pp 1 --dp 1 --microbatch-size 10 --global-batch 10 --zero-offload --max-model-size\n\nA run that takes over a second (every rank of a large cluster: --no-symmetry, --contention, a spread) shows its tasks done on standard error when it is a terminal."
)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Print one JSON object instead of the human-readable summary.
    #[arg(long)]
    pub json: bool,
    /// Write the Timeline (every task's start and end) to FILE (.json, or .jsonl for JSON lines).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub timeline: Option<PathBuf>,
    /// Keep only the records of these ranks in --timeline, --plot and --trace
    /// (a task is kept when its group holds one), e.g. 0,5,100-107; under
    /// symmetry only those ranks' records are built, so a 100k-GPU run's
    /// few ranks cost little. Record ids, groups and the header stay full
    /// expansion's.
    #[arg(long, value_name = "LIST", value_parser = super::pictures::parse_ranks)]
    pub timeline_ranks: Option<super::pictures::RankList>,
    /// Keep only the tasks overlapping this window of simulated time in
    /// --timeline, --plot and --trace, in milliseconds: START:END, START:
    /// (to the end) or :END; tasks are kept whole.
    #[arg(long, value_name = "START_MS:END_MS", value_parser = parse_window)]
    pub timeline_window: Option<(u64, u64)>,
    /// Also print the rank placement, stage 0's schedule and one layer's kernels with their modeled times.
    #[arg(long)]
    pub explain: bool,
    /// Instead of simulating, find the largest model that fits in memory: the most
    /// layers at the scenario's hidden size, heads, sequence, layout and placement
    /// (GPU memory, and host memory under --zero-offload).
    #[arg(long)]
    pub max_model_size: bool,
    /// Lower and simulate every data-parallel replica, even where one
    /// representative replica gives the same result (symmetry: no
    /// --contention, ZeRO-Offload or HSDP, replicas placed alike).
    #[arg(long)]
    pub no_symmetry: bool,
    /// Apply the factors a `clustersim fit` learned from measured runs
    /// (FIT.json): the summary names the fit, and the expected range comes
    /// from its runs, each predicted without its own case.
    #[arg(long, value_name = "FIT.json")]
    pub fit: Option<PathBuf>,
    /// A slow GPU: rank R's compute kernels take F times as long (3:1.2 for a
    /// GPU throttled to 1/1.2 of its peers); repeat for several. Every rank is
    /// then simulated, and the summary and --json say what they cost the step.
    #[arg(long = "slow-rank", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_rank)]
    pub slow_ranks: Vec<sim::straggler::SlowRank>,
    /// A slow link: the NIC rank R sends through delivers 1/F of its
    /// bandwidth (3:2 for a port running at half speed); every collective
    /// and pipeline transfer that crosses it runs at that rate, as NCCL's
    /// rings wait for their slowest hop. Repeat for several NICs; with
    /// --contention the fabric's links of that NIC are slowed instead.
    #[arg(long = "slow-nic", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_nic)]
    pub slow_nics: Vec<sim::slow_link::SlowNic>,
    /// A slow NVLink: rank R's GPU reaches the NVSwitches at 1/F of its
    /// NVLink bandwidth (2 for half its links down); every collective and
    /// transfer with it as a member whose ring hops inside a node runs at
    /// that rate. Repeat for several GPUs; with --contention that GPU's
    /// NVLink links are slowed instead.
    #[arg(long = "slow-nvlink", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_nvlink)]
    pub slow_nvlinks: Vec<sim::slow_link::SlowNvlink>,
    /// A slow PCIe link: rank R's GPU reaches its PCIe switch at 1/F of its
    /// bandwidth (2 for a card trained at x8, or one generation down). Its
    /// traffic across nodes (GPUDirect through that link to the NIC) runs at
    /// most at the PCIe line rate ÷ F, on nodes without NVLink so do its hops
    /// inside the node, and its host copies (ZeRO-Offload, offloaded
    /// activations) at the slower of its measured copy rate ÷ F and its share
    /// of the switch's uplink. Repeat for several GPUs; with --contention that
    /// GPU's PCIe links carry 1/F, and its transfers that become flows slow
    /// through them.
    #[arg(long = "slow-pcie", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_pcie)]
    pub slow_pcies: Vec<sim::slow_link::SlowPcie>,
    /// Slow switch uplinks: the cables from the leaf switch above rank R's
    /// NIC up to the next level of the fat tree run at 1/F of their
    /// bandwidth (2 for optics trained at half speed). A leaf serves one NIC
    /// rail of a block of nodes (a = switch radix ÷ 2 of them); every
    /// collective or transfer whose nodes span several blocks and that has a
    /// member on that rail in that block runs its network tier at the NIC's
    /// rate ÷ F. Every replica is then simulated. Repeat for several leaves;
    /// with --contention the leaf's up and down cables carry 1/F instead.
    #[arg(long = "slow-uplink", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_uplink)]
    pub slow_uplinks: Vec<sim::slow_uplink::SlowUplink>,
    /// A spread of GPU speeds: every rank's compute kernels take the
    /// profile's time × e^(SIGMA·Z), Z a standard normal drawn per rank from
    /// --seed (lognormal:0.05 for a spread of about ±5 %; the profile's GPU is
    /// the median one). Every rank is then simulated, and the summary and
    /// --json name the slowest rank and what the spread costs the step.
    #[arg(long = "rank-spread", value_name = "lognormal:SIGMA", value_parser = super::slow_ranks::parse_rank_spread)]
    pub rank_spread: Option<sim::rank_spread::RankSpread>,
    /// A mixture-of-experts run's routing, iteration by iteration: a file
    /// with one line per iteration of E token counts (tokens each expert
    /// received, as a router counts them; `#` starts a comment). Each line
    /// is simulated with its routing, and the summary and --json add the
    /// distribution of iteration times (mean, p50, p90, max), throughput
    /// over the trace and the peak memory of the fullest iteration.
    #[arg(
        long = "routing-trace",
        value_name = "FILE",
        conflicts_with = "max_model_size"
    )]
    pub routing_trace: Option<PathBuf>,
    /// Sequence lengths, iteration by iteration: a file with one line per
    /// iteration of its tokens per sample (length-bucketed batches, each
    /// padded to its longest sample, or a sequence-length warm-up; `#`
    /// starts a comment). Each distinct length is simulated once, and the
    /// summary and --json add the distribution of iteration times over the
    /// trace, tokens/s over it and the peak memory of the fullest length.
    /// Lengths that vary within an iteration are not modeled.
    #[arg(
        long = "seq-len-trace",
        value_name = "FILE",
        conflicts_with = "max_model_size"
    )]
    pub seq_len_trace: Option<PathBuf>,
    #[command(flatten)]
    pub pictures: super::pictures::PictureArgs,
}

pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let fit = args.fit.as_deref().map(super::fit::load).transpose()?;
    let mut scenario = args.scenario.resolve()?;
    if let Some(record) = &fit {
        record.values().apply(&mut scenario);
    }
    let defaults = DefaultsNote::of(
        &scenario,
        args.scenario
            .takes_todays_recompute(Some(scenario.defaults.era)),
    );
    let range = match (&args.fit, &fit) {
        (Some(path), Some(record)) => ExpectedRange::of_fit(&path.display().to_string(), record),
        _ => ExpectedRange::of(&scenario),
    };
    let fit_json = args
        .fit
        .as_ref()
        .zip(fit.as_ref())
        .map(|(path, record)| super::fit::applied_json(&path.display().to_string(), record));
    if args.max_model_size {
        return super::max_model::run(&scenario, args.json);
    }
    // The Timeline (--timeline, --plot, --trace) is a view of the run:
    // under symmetry the representative's twins, renumbered as full
    // expansion numbers them (`sim::TimelineSelection`).
    let expansion = if args.no_symmetry {
        sim::Expansion::Full
    } else {
        sim::Expansion::Auto
    };
    let selection = timeline_selection(&args, &scenario)?;
    let stragglers = super::slow_ranks::stragglers_of(
        &scenario,
        super::slow_ranks::SlowFlags {
            ranks: &args.slow_ranks,
            nics: &args.slow_nics,
            nvlinks: &args.slow_nvlinks,
            pcies: &args.slow_pcies,
            uplinks: &args.slow_uplinks,
        },
        args.rank_spread,
    )?;
    crate::exit::check_host_memory_of(&scenario, expansion, &stragglers)?;
    let footprint = sim::host_memory::Footprint::of(&scenario, expansion, &stragglers);
    let progress = super::task_progress::TaskProgress::start(footprint.engine_tasks(&scenario));
    let started = Instant::now();
    let report = sim::simulate_with_stragglers(&scenario, expansion, &stragglers)
        .map_err(crate::exit::simulation_error)?;
    progress.finish();
    let slow_cost = super::slow_ranks::SlowRankCost::measured(
        &scenario,
        &stragglers,
        report.metrics.iteration_time_s,
    )?;
    let elapsed_s = started.elapsed().as_secs_f64();
    let additions = super::simulate_additions::Additions::of(
        &args,
        fit.as_ref(),
        &scenario,
        expansion,
        &stragglers,
        WhatRan::of(&scenario, &report.metrics).tokens_per_iteration,
        slow_cost,
    )?;
    let notes = write_timeline_and_pictures(&args, &report, &selection)?;
    // Written whole at the end (exit 2 naming standard output if it fails).
    let mut out = Vec::new();
    if args.json {
        let mut summary = json_summary(&scenario, &report, &range);
        summary["defaults"] = defaults.json();
        if let Some(fit) = fit_json {
            summary["fit"] = fit;
        }
        additions.add_json(&mut summary);
        serde_json::to_writer_pretty(&mut out, &summary)?;
        writeln!(out)?;
    } else {
        write_summary(
            &mut out,
            &scenario,
            &report,
            elapsed_s,
            &range,
            &defaults,
            &stragglers,
        )?;
        additions.write(&mut out)?;
        if let (Some(path), Some(record)) = (&args.fit, &fit) {
            write_fit(&mut out, path, record, &scenario)?;
        }
        if args.explain {
            super::explain::write_explain(&mut out, &scenario)?;
        }
        for note in notes {
            writeln!(out, "  {note}")?;
        }
    }
    crate::stdout::write_all(&out)
}

/// The Timeline (`--timeline`) and pictures (`--plot`, `--trace`) asked
/// for, built once with the chosen records only; the pictures' notes.
fn write_timeline_and_pictures(
    args: &SimulateArgs,
    report: &SimulationReport,
    selection: &sim::TimelineSelection,
) -> anyhow::Result<Vec<String>> {
    let pictures = args.pictures.plot.is_some() || args.pictures.trace.is_some();
    if args.timeline.is_none() && !pictures {
        return Ok(Vec::new());
    }
    let timeline = report.timeline_of(selection);
    if let Some(path) = &args.timeline {
        write_timeline(&timeline, path)?;
    }
    match pictures {
        true => args.pictures.write(&timeline),
        false => Ok(Vec::new()),
    }
}

fn write_timeline(timeline: &timeline::Timeline, path: &std::path::Path) -> anyhow::Result<()> {
    let lines = path.extension().is_some_and(|ext| ext == "jsonl");
    crate::output_file::write_output(path, |writer| {
        if lines {
            timeline.write_json_lines(writer)
        } else {
            timeline.write_json(writer)
        }
    })
}

/// `START_MS:END_MS` (either side may be empty) as a nanosecond window:
/// the start rounded down, the end up, so the window covers what was asked.
fn parse_window(text: &str) -> Result<(u64, u64), String> {
    let (start, end) = text
        .split_once(':')
        .ok_or_else(|| format!("'{text}' is not START_MS:END_MS"))?;
    let bound = |s: &str, round: fn(f64) -> f64, default: u64| -> Result<u64, String> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(default);
        }
        let ms: f64 = s
            .parse()
            .map_err(|_| format!("'{s}' is not a number of milliseconds"))?;
        let ns = round(ms * 1e6);
        if !ns.is_finite() || ns < 0.0 || ns >= u64::MAX as f64 {
            return Err(format!("'{s}' ms is not a time from 0 to 2^64 ns"));
        }
        Ok(ns as u64)
    };
    let window = (
        bound(start, f64::floor, 0)?,
        bound(end, f64::ceil, u64::MAX)?,
    );
    if window.0 > window.1 {
        return Err(format!("window {text} ends before it starts"));
    }
    Ok(window)
}

/// The `--json` object (stable keys, each documented in `schemas/simulate.schema.json`).
pub fn json_summary(
    scenario: &Scenario,
    report: &SimulationReport,
    range: &ExpectedRange,
) -> serde_json::Value {
    let m = &report.metrics;
    let peak = report.peak_memory();
    let mut summary = serde_json::json!({
        "schema_version": crate::schema_versions::SIMULATE,
        "scenario": scenario.title(),
        "iteration_time_s": m.iteration_time_s,
        "samples_per_s": m.samples_per_s,
        "tflops_per_gpu": m.tflops_per_gpu,
        "model_tflops_per_gpu": m.model_tflops_per_gpu,
        "percent_of_peak": m.percent_of_peak,
        "bubble_fraction": m.bubble_fraction,
        "bubble_fraction_per_stage": m.bubble_fraction_per_stage,
        "compute_time_s": m.compute_time_s,
        "exposed_communication_s": m.exposed_communication,
        "communication_s": m.communication,
        "busiest_links": report.busiest_links,
        "peak_memory_bytes": peak.total_bytes,
        "peak_memory_stage": peak.stage,
        "memory_capacity_bytes": peak.capacity_bytes,
        "fits_in_memory": report.memory.iter().all(|s| s.fits),
        "memory_per_stage": report.memory,
        "gpus": scenario.layout.gpus(),
        "tasks": report.n_tasks,
        "edges": report.n_edges,
        "events": report.n_events,
        "profile": scenario.profile.id,
        "stack": scenario.stack.name,
        "stack_is_default": scenario.stack_is_default,
        "zero_offload": scenario.options.offload.is_some(),
        "delayed_update": scenario.options.offload.is_some_and(|o| o.delayed_update),
        "iterations": m.iterations,
        "iteration_times_s": m.iteration_times_s,
        "cpu_memory_bytes": peak.cpu_bytes,
        "cpu_memory_capacity_bytes": peak.cpu_capacity_bytes,
    });
    let what = WhatRan::of(scenario, m);
    summary["parameters"] = what.parameters.into();
    if let Some(active) = what.active_parameters {
        summary["active_parameters"] = active.into();
    }
    summary["seq_len"] = scenario.model.seq_len.into();
    summary["tokens_per_iteration"] = what.tokens_per_iteration.into();
    summary["tokens_per_s_per_gpu"] = what.tokens_per_s_per_gpu.into();
    summary["mfu_percent"] = what.mfu_percent.into();
    // Only where published runs of the kind say something (other outputs keep their bytes).
    if let Some(accuracy) = super::accuracy::accuracy_line(scenario) {
        summary["accuracy"] = accuracy.into();
    }
    // What the validation runs of the same regime say about this prediction.
    summary["expected_range"] = range.json(m);
    // Full expansion, or one representative replica standing for d·cp.
    summary["simulation_mode"] = report.mode.describe().into();
    // Named only when used, so outputs without context parallelism keep their bytes.
    if scenario.layout.context_parallel.get() > 1 {
        summary["context_parallel"] = scenario.layout.context_parallel.get().into();
    }
    // Sharded data parallelism, only when on (earlier outputs stay byte-identical).
    let options = &scenario.options;
    if options.sharding != sim::scenario::ZeroStage::None {
        summary["zero_stage"] = options.sharding.stage().into();
        summary["shard_group_size"] = options.shard_group(scenario.layout.replicas()).into();
    }
    // PowerSGD's rank, only when on.
    if let Some(rank) = options.powersgd_rank {
        summary["powersgd_rank"] = rank.get().into();
    }
    // ZeRO++, only when on: its scenario keys as it uses them.
    if options.zeropp.is_on() {
        summary["zeropp"] = serde_json::to_value(options.zeropp).unwrap_or_default();
    }
    // The optimizer, only when not Adam (earlier outputs stay byte-identical).
    if !options.optimizer.is_default() {
        summary["optimizer"] = options.optimizer.name().into();
    }
    // Mixtures of experts: ep and the routing (its busiest expert-parallel rank).
    if let Some(routing) = &scenario.experts {
        summary["expert_parallel"] = scenario.layout.expert_parallel.get().into();
        summary["experts"] = serde_json::to_value(routing).unwrap_or_default();
        summary["moe_dispatcher"] = options.moe_dispatcher.name().into();
        summary["pair_overlap"] = options.pair_overlap.into();
    }
    // Zero-bubble optimizer post-validation, only when on.
    if let Some(validation) = super::post_validation::json(scenario, report) {
        summary["optimizer_post_validation"] = validation;
    }
    summary
}

/// The records `--timeline-ranks` and `--timeline-window` keep; exit 2
/// for a rank outside the layout.
fn timeline_selection(
    args: &SimulateArgs,
    scenario: &Scenario,
) -> anyhow::Result<sim::TimelineSelection> {
    let selection = sim::TimelineSelection {
        ranks: args.timeline_ranks.as_ref().map(|list| list.0.clone()),
        window_ns: args.timeline_window,
    };
    if let Some(rank) = selection
        .ranks
        .iter()
        .flatten()
        .find(|&&rank| rank >= scenario.layout.gpus())
    {
        return Err(crate::exit::user_error(format!(
            "--timeline-ranks: rank {rank} is outside this layout's 0..{} ranks",
            scenario.layout.gpus()
        )));
    }
    Ok(selection)
}

/// The summary's `fit` line (and its regime note) for the fit at `path`.
fn write_fit(
    out: &mut impl Write,
    path: &std::path::Path,
    record: &studies::fit::fit_file::FitRecord,
    scenario: &Scenario,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "  fit                 {}",
        super::fit::applied_line(&path.display().to_string(), record)
    )?;
    if let Some(note) = super::fit::regime_note(record, scenario) {
        writeln!(out, "                      note: {note}")?;
    }
    Ok(())
}
