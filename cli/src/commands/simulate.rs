//! `clustersim simulate`: one iteration of a scenario through the event engine.

use super::scenario_args::ScenarioArgs;
use clap::Args;
use sim::placement::Placement;
use sim::scenario::Scenario;
use sim::task_graph::ComputePass;
use sim::SimulationReport;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  clustersim simulate\n  clustersim simulate --model gpt-1t --tp 8 --pp 64 --dp 6 --global-batch 3072\n  clustersim simulate --model gpt3-175b --pp 8 --dp 1 --schedule interleaved --chunks 3 --global-batch 64 --json\n  clustersim simulate scenario.json --timeline run.timeline.json\n  clustersim simulate --model gpt2-10b --topology dgx2-v100 --tp 1 --pp 1 --dp 1 --microbatch-size 10 --global-batch 10 --zero-offload --delayed-update\n  clustersim simulate --model gpt2-10b --topology dgx2-v100 --tp 1 --pp 1 --dp 1 --microbatch-size 10 --global-batch 10 --zero-offload --max-model-size"
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
    #[command(flatten)]
    pub pictures: super::pictures::PictureArgs,
}

pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let scenario = args.scenario.resolve()?;
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
    crate::exit::check_host_memory_with(&scenario, expansion)?;
    let started = Instant::now();
    let report = sim::simulate_with(&scenario, expansion).map_err(crate::exit::simulation_error)?;
    let elapsed_s = started.elapsed().as_secs_f64();
    let wants_timeline =
        args.timeline.is_some() || args.pictures.plot.is_some() || args.pictures.trace.is_some();
    // Built once, only when asked for, with the chosen records only.
    let timeline = wants_timeline.then(|| report.timeline_of(&selection));
    if let (Some(path), Some(timeline)) = (&args.timeline, &timeline) {
        write_timeline(timeline, path)?;
    }
    let notes = match &timeline {
        Some(timeline) if args.pictures.plot.is_some() || args.pictures.trace.is_some() => {
            args.pictures.write(timeline)?
        }
        _ => Vec::new(),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &json_summary(&scenario, &report))?;
        writeln!(out)?;
    } else {
        write_summary(&mut out, &scenario, &report, elapsed_s)?;
        if args.explain {
            write_explain(&mut out, &scenario)?;
        }
        for note in notes {
            writeln!(out, "  {note}")?;
        }
    }
    Ok(())
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

/// The `--json` object (stable keys).
pub fn json_summary(scenario: &Scenario, report: &SimulationReport) -> serde_json::Value {
    let m = &report.metrics;
    let peak = report.peak_memory();
    let mut summary = serde_json::json!({
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
        "n_gpus": scenario.layout.gpus(),
        "n_tasks": report.n_tasks,
        "n_edges": report.n_edges,
        "n_events": report.n_events,
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
    // Only where published runs of the kind say something (other outputs keep their bytes).
    if let Some(accuracy) = super::accuracy::accuracy_line(scenario) {
        summary["accuracy"] = accuracy.into();
    }
    // Full expansion, or one representative replica standing for d·cp.
    summary["simulation_mode"] = report.mode.describe().into();
    // Named only when used, so outputs without context parallelism keep their bytes.
    if scenario.layout.context_parallel > 1 {
        summary["context_parallel"] = scenario.layout.context_parallel.into();
    }
    // Sharded data parallelism, only when on (earlier outputs stay byte-identical).
    let options = &scenario.options;
    if options.sharding != sim::scenario::Sharding::None {
        summary["zero_stage"] = options.sharding.stage().into();
        summary["shard_group_size"] = options.shard_group(scenario.layout.replicas()).into();
    }
    // Mixtures of experts: ep and the routing (its busiest expert-parallel rank).
    if let Some(routing) = &scenario.experts {
        summary["expert_parallel"] = scenario.layout.expert_parallel.into();
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

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

fn write_summary(
    out: &mut impl Write,
    scenario: &Scenario,
    report: &SimulationReport,
    elapsed_s: f64,
) -> anyhow::Result<()> {
    let m = &report.metrics;
    let layout = &scenario.layout;
    let gpus = layout.gpus();
    let nodes = gpus.div_ceil(scenario.topology.node.gpus_per_node);
    let peak = report.peak_memory();
    let (min_stage, max_stage) = m
        .bubble_fraction_per_stage
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &b| (lo.min(b), hi.max(b)));
    writeln!(out, "clustersim · {}", scenario.title())?;
    writeln!(
        out,
        "  software stack      {}{}",
        scenario.stack.name,
        if scenario.stack_is_default {
            " (default; --stack to choose another)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "  GPUs                {gpus} ({nodes} node{} of {}), m = {} microbatches per pipeline",
        if nodes == 1 { "" } else { "s" },
        scenario.topology.node.gpus_per_node,
        layout.microbatches
    )?;
    writeln!(out, "  iteration time      {:.3} s", m.iteration_time_s)?;
    writeln!(
        out,
        "  throughput          {:.2} samples/s",
        m.samples_per_s
    )?;
    writeln!(
        out,
        "  TFLOP/s per GPU     {:.1} ({:.1}% of {:.0} peak); model TFLOP/s {:.1} (without recompute)",
        m.tflops_per_gpu,
        m.percent_of_peak,
        scenario
            .options
            .precision
            .peak_flops_per_s(&scenario.topology.gpu.peak)
            / 1e12,
        m.model_tflops_per_gpu
    )?;
    writeln!(
        out,
        "  bubble fraction     {:.4} mean (stages {:.4} … {:.4}); compute {:.3} s per GPU",
        m.bubble_fraction, min_stage, max_stage, m.compute_time_s
    )?;
    let e = &m.exposed_communication;
    // Expert all-to-alls are named only when a mixture of experts has them.
    let ep = if e.expert_parallel_s > 0.0 {
        format!(" · EP all-to-all {:.3} s", e.expert_parallel_s)
    } else {
        String::new()
    };
    writeln!(
        out,
        "  exposed comm        TP {:.3} s · PP {:.3} s · DP {:.3} s{ep} (mean per GPU)",
        e.tensor_s, e.pipeline_s, e.data_parallel_s
    )?;
    if let Some(routing) = &scenario.experts {
        writeln!(
            out,
            "  experts             {} routing; busiest expert-parallel rank {} carries {:.3}× the mean load",
            routing.imbalance, routing.busiest_rank, routing.busiest_rank_load
        )?;
    }
    if let Some(accuracy) = super::accuracy::accuracy_line(scenario) {
        writeln!(out, "  accuracy            {accuracy}")?;
    }
    if e.host_s > 0.0 {
        writeln!(
            out,
            "  host-bound          {:.3} s per GPU (compute idle while the host issues; {} issues a kernel in {:.1} µs)",
            e.host_s,
            scenario.stack.name,
            scenario.stack.host.map_or(0.0, |h| h.kernel_issue_ns as f64 / 1e3)
        )?;
    }
    writeln!(
        out,
        "  peak memory / GPU   {:.1} GiB of {:.1} GiB (stage {}: weights+grads+Adam {:.1}, activations {:.1}{}, {} microbatches in flight) — {}",
        gib(peak.total_bytes),
        gib(peak.capacity_bytes),
        peak.stage,
        gib(peak.weight_bytes + peak.gradient_bytes + peak.optimizer_state_bytes),
        gib(peak.activation_bytes),
        if peak.weight_gradient_pending_bytes > 0 {
            format!(
                " (with {:.1} of deferred weight-gradient state)",
                gib(peak.weight_gradient_pending_bytes)
            )
        } else {
            String::new()
        },
        peak.peak_microbatches_in_flight,
        if report.memory.iter().all(|s| s.fits) { "fits" } else { "DOES NOT FIT" }
    )?;
    if scenario.options.offload.is_some() {
        super::max_model::write_offload_summary(out, report)?;
    }
    if let Some(line) = super::post_validation::summary_line(scenario, report) {
        writeln!(out, "{line}")?;
    }
    writeln!(
        out,
        "  simulation          {} tasks, {} edges, {} events in {:.3} s (profile {})",
        report.n_tasks, report.n_edges, report.n_events, elapsed_s, scenario.profile.id
    )?;
    writeln!(
        out,
        "  simulation mode     {}",
        match report.mode {
            // Why: what breaks symmetry (`sim::symmetry::symmetric_replicas`),
            // or --no-symmetry where nothing does.
            sim::SimulationMode::Full => format!(
                "full (every replica): {}",
                sim::symmetry::symmetric_replicas(scenario)
                    .err()
                    .unwrap_or("--no-symmetry")
            ),
            sim::SimulationMode::Symmetric { replicas } => format!(
                "symmetric: 1 of {replicas} identical data-parallel replicas simulated ({} tasks), every rank mapped to it; --no-symmetry expands all",
                report.simulated_tasks
            ),
        }
    )?;
    Ok(())
}

fn write_explain(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    let stack = &scenario.stack;
    writeln!(out, "\nsoftware stack {}: {}", stack.name, stack.summary)?;
    for (key, source) in &stack.sources {
        writeln!(out, "  default {key}: {source}")?;
    }
    for item in &stack.not_modeled {
        writeln!(out, "  not modeled: {} ({})", item.feature, item.source)?;
    }
    write_fabric(out, &scenario.topology)?;
    let placement = Placement::new(scenario.layout, scenario.topology.node.gpus_per_node);
    if scenario.layout.context_parallel > 1 {
        writeln!(
            out,
            "\nplacement (Megatron-Core order: tensor innermost, then context, then data, then pipeline):"
        )?;
    } else {
        writeln!(
            out,
            "\nplacement (Megatron order: tensor innermost, then data, then pipeline):"
        )?;
    }
    write!(out, "{}", placement.explain(32))?;
    if scenario.layout.context_parallel > 1 {
        write_context_parallel(out, scenario)?;
    }
    if let Some(sharding) = sim::lowering::sharded::explain(scenario) {
        write!(out, "{sharding}")?;
    }
    let (schedule, _) = sim::build_graph(scenario);
    let first: Vec<String> = schedule.actions[0]
        .iter()
        .take(40)
        .map(|a| a.to_string())
        .collect();
    writeln!(
        out,
        "\nstage 0 program ({} actions): {}{}",
        schedule.actions[0].len(),
        first.join(" "),
        if schedule.actions[0].len() > 40 {
            " …"
        } else {
            ""
        }
    )?;
    write_pipeline_shape(out, scenario, &schedule)?;
    if scenario.schedule.splits_backward() {
        let stages = schedule.actions.len() as u32;
        let owed: Vec<String> = (0..stages)
            .map(|stage| schedule.peak_weight_pending(stage).to_string())
            .collect();
        writeln!(
            out,
            "split backward ({}): I = data-gradient GEMMs, the non-GEMM backward and the tensor \
             all-reduces; W = weight-gradient GEMMs (and their unfused accumulation), deferred. \
             Peak weight gradients owed per stage: {} (each keeps its linear layers' inputs and output \
             gradients, counted in memory with the activations at their joint peak)",
            scenario.schedule.name(),
            owed.join(" ")
        )?;
    }
    if let Some(text) = sim::lowering::post_validation::explain(scenario, &schedule) {
        write!(out, "{text}")?;
    }
    if let Some(text) = sim::cost::pair_overlap::explain(scenario) {
        write!(out, "{text}")?;
    }
    if scenario.layout.stage_map == models::sharding::StageMap::V {
        let p = scenario.layout.pipeline_parallel;
        let in_flight: Vec<String> = (0..p)
            .map(|stage| schedule.peak_in_flight(stage).to_string())
            .collect();
        writeln!(
            out,
            "V map ({}): stage r holds virtual stages r and 2p−1−r (embedding and loss on stage 0, \
             the turn local on stage {}). Peak chunk-microbatches of activations per stage: {}",
            scenario.schedule.name(),
            p - 1,
            in_flight.join(" ")
        )?;
        if scenario.schedule == sim::scenario::ScheduleKind::DualPipeV
            && !scenario.options.pair_overlap
        {
            writeln!(
                out,
                "F&B pairs (F…&B…): overlap of the pair not modeled: costed as sequential, \
                 the forward's output sent when the pair ends"
            )?;
        }
    }
    if scenario.layout.stage_map == models::sharding::StageMap::DualPipe {
        let p = scenario.layout.pipeline_parallel;
        let in_flight: Vec<String> = (0..p)
            .map(|stage| schedule.peak_in_flight(stage).to_string())
            .collect();
        writeln!(
            out,
            "DualPipe: two model copies of {p} stages; stage r holds stage r of copy A (chunk 0, \
             fed from stage 0) and stage {}−r of copy B (chunk 1, fed from stage {}): parameters, \
             gradients and optimizer states twice; each stage's gradients all-reduced with its \
             mirror stage {}−r's before the optimizer. Peak chunk-microbatches of activations \
             per stage: {}",
            p - 1,
            p - 1,
            p - 1,
            in_flight.join(" ")
        )?;
        if !scenario.options.pair_overlap {
            writeln!(
                out,
                "F&B pairs (F…&B…): overlap of the pair not modeled: costed as sequential, \
                 the forward's output sent when the pair ends (--pair-overlap models it with ep > 1)"
            )?;
        }
    }
    write_layer_kernels(out, scenario)
}

/// An explicit pipeline layout (layers per rank and chunk), Megatron-Core's
/// microbatch groups and looped BFS's order, when the scenario uses them.
fn write_pipeline_shape(
    out: &mut impl Write,
    scenario: &Scenario,
    schedule: &sim::schedule::PipelineSchedule,
) -> anyhow::Result<()> {
    let layout = &scenario.layout;
    if let Some(stages) = layout.pipeline_split.layout {
        writeln!(
            out,
            "pipeline layout '{}': transformer layers per rank (chunk 0 … {}), E embedding, L loss:",
            stages.source(),
            layout.chunks - 1
        )?;
        let sharding = layout.sharding();
        let last = layout.virtual_stages() - 1;
        for rank in 0..layout.pipeline_parallel {
            let cells: Vec<String> = (0..layout.chunks)
                .map(|chunk| {
                    let virtual_stage = chunk * layout.pipeline_parallel + rank;
                    format!(
                        "{}{}{}",
                        if virtual_stage == 0 { "E+" } else { "" },
                        sharding.layers_of_chunk(scenario.model.layers, rank, chunk),
                        if virtual_stage == last { "+L" } else { "" }
                    )
                })
                .collect();
            writeln!(out, "  rank {rank:>3}: {}", cells.join(" "))?;
        }
    }
    if scenario.schedule == sim::scenario::ScheduleKind::Interleaved
        && layout.microbatch_group_size.is_some()
    {
        let n = layout.microbatch_group_size();
        let m = layout.microbatches;
        writeln!(
            out,
            "microbatch groups of {n} (Megatron-Core's microbatch_group_size_per_vp_stage):              {} groups, the last of {}; each group runs through all {} chunks; rank r warms up              2(p−r−1)+(v−1)·{n} forwards",
            m.div_ceil(n),
            m - n * (m.div_ceil(n) - 1),
            layout.chunks
        )?;
    }
    if scenario.schedule == sim::scenario::ScheduleKind::LoopedBfs {
        writeln!(
            out,
            "looped BFS: each rank runs all {} forwards of each of its {} chunks, then the              backwards in reverse; peak microbatch-chunks of activations per rank: {}",
            layout.microbatches,
            layout.chunks,
            schedule.peak_in_flight(0)
        )?;
    }
    Ok(())
}

/// A declared fabric kind's latency, and a node without NVLink: printed only
/// for topologies that have them (others cost as before and print nothing).
fn write_fabric(out: &mut impl Write, topology: &topologies::TopologySpec) -> anyhow::Result<()> {
    let fabric = &topology.fabric;
    if let (Some(kind), Some(path_ns)) = (fabric.kind, fabric.path_latency_ns()) {
        writeln!(
            out,
            "
fabric {}: every network hop also pays {path_ns} ns (2 NICs × {} ns + {} switch hops × {} ns, the fat tree's farthest path), added to the time of the pair NCCL's tuner chose",
            kind.name(),
            fabric.nic_latency_ns,
            2 * fabric.fat_tree_levels.max(1) - 1,
            fabric.switch_hop_latency_ns
        )?;
    }
    if topology.node.gpus_per_node > 1 && topology.node.nvlink_bandwidth_bytes_per_s <= 0.0 {
        writeln!(
            out,
            "
node without NVLink: the {} GPUs of a node talk over PCIe ({}, {:.1} GB/s per direction line rate) with NCCL's PCI hop latencies; NVLink bridges are not used",
            topology.node.gpus_per_node,
            topology.pcie.generation,
            collectives_line_gb_per_s(topology)
        )?;
    }
    Ok(())
}

fn collectives_line_gb_per_s(topology: &topologies::TopologySpec) -> f64 {
    sim::collective::intra_node_line_bytes_per_s(topology) / 1e9
}

/// Context parallelism: the ring, its steps and what each exchange carries.
fn write_context_parallel(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    use sim::cost::context;
    let layout = &scenario.layout;
    let cp = layout.context_parallel;
    writeln!(
        out,
        "\ncontext parallelism cp={cp}: each rank holds {} of {} tokens (2 load-balanced chunks of {}); \
         gradients reduced over the dp-cp group of {} ranks",
        scenario.model.seq_len / cp as u64,
        scenario.model.seq_len,
        scenario.model.seq_len / (2 * cp as u64),
        layout.replicas()
    )?;
    writeln!(
        out,
        "  ring attention (Transformer Engine AttnFuncWithCPAndKVP2P): {cp} steps per layer pass, \
         K/V chunk {} bytes, hops {}",
        context::kv_chunk_bytes(scenario),
        if context::ring_crosses_nodes(scenario) {
            "across nodes (NIC rails)"
        } else {
            "inside a node (NVLink)"
        }
    )?;
    for pass in [ComputePass::Forward, ComputePass::Backward] {
        let bytes = context::exchange_bytes_per_step(scenario, pass);
        let listed: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
        writeln!(
            out,
            "  {:<9} exchange bytes per step: [{}] (each overlapped with that step's attention block)",
            format!("{pass:?}").to_lowercase(),
            listed.join(", ")
        )?;
    }
    Ok(())
}

/// One layer's kernels on one rank with their modeled times.
fn write_layer_kernels(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    let rows = sim::cost::layer_kernel_costs(scenario);
    writeln!(
        out,
        "\none transformer layer on one rank (t={}, b={}), as the simulation costs it \
         (GB/s: HBM bytes for kernels, bytes per rank ÷ time for all-reduces):",
        scenario.layout.tensor_parallel, scenario.layout.microbatch_size
    )?;
    writeln!(
        out,
        "  {:<10} {:<42} {:>9} {:>8} {:>8} {:>6}",
        "pass", "kernel", "time µs", "TFLOP/s", "GB/s", "share"
    )?;
    let mut passes: Vec<ComputePass> = rows.iter().map(|r| r.pass).collect();
    passes.dedup();
    for pass in passes {
        let in_pass: Vec<_> = rows.iter().filter(|r| r.pass == pass).collect();
        let total_s: f64 = in_pass.iter().map(|r| r.seconds).sum();
        let name = pass.name();
        for row in &in_pass {
            let tflops = if row.is_gemm {
                format!("{:.1}", row.flops / row.seconds * 1e-12)
            } else {
                "-".into()
            };
            let rate = if row.seconds > 0.0 {
                format!("{:.0}", row.bytes / row.seconds * 1e-9)
            } else {
                "hidden".into()
            };
            let kernel = if row.is_fp8 {
                format!("{} (fp8)", row.name)
            } else {
                row.name.to_string()
            };
            writeln!(
                out,
                "  {:<10} {:<42} {:>9.1} {:>8} {:>8} {:>5.1}%",
                name,
                kernel,
                row.seconds * 1e6,
                tflops,
                rate,
                100.0 * row.seconds / total_s
            )?;
        }
        let seconds_of = |name: &str| -> f64 {
            in_pass
                .iter()
                .filter(|r| r.is_communication && r.name == name)
                // A fold from +0.0: f64's `sum` of nothing is −0.0, printed "-0.0".
                .fold(0.0, |total, r| total + r.seconds)
        };
        let all_reduce_s = seconds_of("tensor_all_reduce");
        let all_to_all_s = seconds_of("expert_all_to_all");
        let mut line = format!(
            "  {name:<10} total {:.1} µs, of which tensor all-reduces {:.1} µs",
            total_s * 1e6,
            all_reduce_s * 1e6
        );
        if all_to_all_s > 0.0 {
            line.push_str(&format!(
                ", expert all-to-alls {:.1} µs",
                all_to_all_s * 1e6
            ));
        }
        writeln!(out, "{line}")?;
    }
    let casts = sim::cost::layer_fp8_weight_casts(scenario);
    if !casts.is_empty() {
        // A calibrated profile may hold FP8 GEMM timings (calibrate's FP8 stage).
        let fp8_timed = scenario
            .profile
            .gemm
            .measured
            .iter()
            .any(|g| g.dtype == "fp8");
        let how = if fp8_timed {
            "FP8 GEMMs timed by calibrate where the profile has the shape, else"
        } else {
            "no FP8 GEMM is calibrated:"
        };
        writeln!(
            out,
            "\nfp8: GEMMs marked (fp8) run on FP8 inputs at the {:.0} TFLOP/s FP8 peak ({how} \
             the bf16 efficiency model); the rest stays bf16. Once per iteration, before each chunk's first \
             microbatch, every layer's weights are cast to FP8 with their transposes (Transformer Engine's weight cache):",
            scenario.topology.gpu.peak.fp8_flops_per_s.unwrap_or(0.0) / 1e12
        )?;
        for row in &casts {
            writeln!(
                out,
                "  {:<10} {:<42} {:>9.1} {:>8} {:>8.0}",
                "iteration",
                row.name,
                row.seconds * 1e6,
                "-",
                row.bytes / row.seconds * 1e-9
            )?;
        }
    }
    let sm_share = sim::cost::intra_node_collective_sm_share(&scenario.topology);
    if scenario.options.async_tensor_allreduce && sm_share > 0.0 {
        let sms = scenario.topology.gpu.sm_count;
        let channels = sim::cost::NVSWITCH_NODE_COLLECTIVE_CHANNELS.min(sms);
        writeln!(
            out,
            "\nasynchronous tensor all-reduce: each backward all-reduce runs beside the kernels \
             before it (its row shows only what it adds to them); while it runs NCCL's {channels} \
             channels hold {channels} of the {sms} SMs, so those kernels run at {:.1}% of their rate",
            100.0 * (1.0 - sm_share)
        )?;
    }
    if scenario.options.tp_comm_overlap {
        write_userbuffers(out, scenario)?;
    }
    Ok(())
}

/// `--explain`'s note on `--tp-comm-overlap`: the userbuffers configuration
/// and the SMs each overlapped GEMM gives up (`sim::cost::tp_overlap`).
fn write_userbuffers(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    use sim::scenario::userbuffers::UB_GEMMS;
    let config = scenario.options.tp_comm_overlap_config;
    let sms = scenario.topology.gpu.sm_count;
    let methods: Vec<String> = UB_GEMMS
        .iter()
        .zip(config.methods())
        .map(
            |(name, method)| match (method.comm_sms, method.set_sm_margin) {
                (0, _) => format!("{name} copy engines"),
                (n, true) => format!("{name} on {} SMs", sms.saturating_sub(n)),
                (n, false) => format!("{name} shares {n}"),
            },
        )
        .collect();
    writeln!(
        out,
        "
tensor-parallel communication overlap (Transformer Engine userbuffers, {}): each \
         sequence-parallel reduce-scatter or all-gather row shows only what it adds to the GEMM \
         hiding it, including the SMs its communication takes of the {sms}: {}",
        config.name(),
        methods.join(", ")
    )?;
    Ok(())
}
