//! `simulate --explain`: what the simulation assumed, written out — the
//! software stack's defaults with their sources and what it does not model,
//! the fabric, the rank placement, sharding and context parallelism, the
//! pipeline program and its shape, one transformer layer's kernels with their
//! modeled times, FP8 casts, and the overlap rules (the asynchronous tensor
//! all-reduce's SMs, Transformer Engine userbuffers' SMs).

use sim::placement::Placement;
use sim::scenario::Scenario;
use sim::task_graph::ComputePass;
use std::io::Write;

pub fn write_explain(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    let stack = &scenario.stack;
    writeln!(out, "\nsoftware stack {}: {}", stack.name, stack.summary)?;
    for (key, source) in &stack.sources {
        writeln!(out, "  default {key}: {source}")?;
    }
    for item in &stack.not_modeled {
        writeln!(out, "  not modeled: {} ({})", item.feature, item.source)?;
    }
    write_fabric(out, &scenario.topology)?;
    let plan = sim::plan::Plan::of(scenario);
    let placement = &plan.placement;
    if scenario.layout.context_parallel.get() > 1 {
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
    if scenario.layout.context_parallel.get() > 1 {
        write_context_parallel(out, scenario)?;
    }
    if let Some(sharding) = sim::lowering::sharded::explain(scenario) {
        write!(out, "{sharding}")?;
    }
    let schedule = &plan.schedule;
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
    write_pipeline_shape(out, scenario, schedule)?;
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
    if let Some(text) = sim::lowering::post_validation::explain(scenario, schedule) {
        write!(out, "{text}")?;
    }
    if let Some(text) = sim::cost::pair_overlap::explain(scenario) {
        write!(out, "{text}")?;
    }
    // Peak chunk-microbatches of activations per stage, for the two-chunk maps.
    let in_flight = || -> String {
        let per_stage: Vec<String> = (0..scenario.layout.pipeline_parallel.get())
            .map(|stage| schedule.peak_in_flight(stage).to_string())
            .collect();
        per_stage.join(" ")
    };
    if scenario.layout.stage_map == models::sharding::StageMap::V {
        let p = scenario.layout.pipeline_parallel.get();
        writeln!(
            out,
            "V map ({}): stage r holds virtual stages r and 2p−1−r (embedding and loss on stage 0, \
             the turn local on stage {}). Peak chunk-microbatches of activations per stage: {}",
            scenario.schedule.name(),
            p - 1,
            in_flight()
        )?;
        if scenario.schedule == sim::scenario::ScheduleKind::DualPipeV
            && !scenario.options.pair_overlap
        {
            writeln!(out, "{SEQUENTIAL_PAIRS}")?;
        }
    }
    if scenario.layout.stage_map == models::sharding::StageMap::DualPipe {
        let p = scenario.layout.pipeline_parallel.get();
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
            in_flight()
        )?;
        if !scenario.options.pair_overlap {
            writeln!(out, "{SEQUENTIAL_PAIRS}")?;
        }
    }
    write_layer_kernels(out, scenario, placement)?;
    super::explain_offload::write_offload(out, scenario)?;
    super::explain_offload::write_compression(out, scenario)?;
    super::explain_optimizer::write_optimizer(out, scenario, &plan)
}

/// DualPipe's and DualPipeV's F&B pairs without `--pair-overlap`.
const SEQUENTIAL_PAIRS: &str = "F&B pairs (F…&B…): overlap of the pair not modeled: costed as \
     sequential, the forward's output sent when the pair ends (--pair-overlap models it with ep > 1)";

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
            layout.chunks.get() - 1
        )?;
        let sharding = layout.sharding();
        let last = layout.virtual_stages() - 1;
        for rank in 0..layout.pipeline_parallel.get() {
            let cells: Vec<String> = (0..layout.chunks.get())
                .map(|chunk| {
                    let virtual_stage = chunk * layout.pipeline_parallel.get() + rank;
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
        let m = layout.microbatches.get();
        writeln!(
            out,
            "microbatch groups of {n} (Megatron-Core's microbatch_group_size_per_vp_stage):              {} groups, the last of {}; each group runs through all {} chunks; rank r warms up              2(p−r−1)+(v−1)·{n} forwards",
            m.div_ceil(n),
            m - n * (m.div_ceil(n) - 1),
            layout.chunks.get()
        )?;
    }
    if scenario.schedule == sim::scenario::ScheduleKind::LoopedBfs {
        writeln!(
            out,
            "looped BFS: each rank runs all {} forwards of each of its {} chunks, then the              backwards in reverse; peak microbatch-chunks of activations per rank: {}",
            layout.microbatches.get(),
            layout.chunks.get(),
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
    let cp = layout.context_parallel.get();
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
fn write_layer_kernels(
    out: &mut impl Write,
    scenario: &Scenario,
    placement: &Placement,
) -> anyhow::Result<()> {
    let rows = sim::cost::layer_kernel_costs(scenario, placement);
    writeln!(
        out,
        "\none transformer layer on one rank (t={}, b={}), as the simulation costs it \
         (GB/s: HBM bytes for kernels, bytes per rank ÷ time for all-reduces):",
        scenario.layout.tensor_parallel.get(),
        scenario.layout.microbatch_size.get()
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
            let tflops = if row.is_gemm() {
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
    write_gemm_tiles(out, scenario, &rows)?;
    write_fused_attention(out, scenario, &rows)?;
    write_fp8_weight_casts(out, scenario)?;
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

/// How the fused attention kernel is priced, when the layer runs one.
fn write_fused_attention(
    out: &mut impl Write,
    scenario: &Scenario,
    rows: &[sim::cost::KernelCost],
) -> anyhow::Result<()> {
    let fused = rows
        .iter()
        .any(|row| row.name.starts_with("fused_attention"));
    let Some(attention) = scenario.profile.attention.as_ref().filter(|_| fused) else {
        return Ok(());
    };
    let share = sim::cost::attention_sustained_share(&scenario.profile);
    let clock = match attention.clock {
        profile::AttentionClock::Burst => format!(
            "timed in bursts, priced at x{share:.3}, the GEMMs' sustained ratio ({})",
            attention.clock_source
        ),
        profile::AttentionClock::Sustained => {
            format!("timed at the power limit ({})", attention.clock_source)
        }
    };
    writeln!(
        out,
        "
fused attention: the profile's rates of {} by head dimension and sequence length, {clock}; \
         a head dimension without rates is costed as its score and value GEMMs",
        attention.implementation
    )?;
    Ok(())
}

/// The FP8 note and the once-per-iteration weight casts, for an FP8 run.
fn write_fp8_weight_casts(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    let casts = sim::cost::layer_fp8_weight_casts(scenario);
    if casts.is_empty() {
        return Ok(());
    }
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
    Ok(())
}

/// The layer's GEMMs as the tile model runs them: tile, split-K, waves,
/// burst and sustained efficiency (of the precision's datasheet peak), and
/// whether a measured entry set the price (then stretched to sustained).
fn write_gemm_tiles(
    out: &mut impl Write,
    scenario: &Scenario,
    rows: &[sim::cost::KernelCost],
) -> anyhow::Result<()> {
    let Some(constants) = &scenario.profile.gemm.tile_model else {
        writeln!(
            out,
            "\nGEMMs: the profile has no tile model (gemm.tile_model): priced at \
             large_gemm_efficiency x tile quantization, at burst rates"
        )?;
        return Ok(());
    };
    writeln!(
        out,
        "\nGEMMs by tiles and waves on {} SMs (main loop {:.1}% of peak in a burst, x{:.3} sustained; \
         {:.0} ns per kernel and {:.0} ns per wave; the model's tile, split and waves at the sustained \
         clock, its efficiency = FLOPs / (time x peak) without the launch gap; a measured GEMM's price \
         is in the table above):",
        scenario.topology.gpu.sm_count,
        100.0 * constants.mainloop_efficiency.value,
        constants.sustained_ratio.value,
        constants.kernel_latency_ns.value,
        constants.wave_latency_ns.value,
    )?;
    writeln!(
        out,
        "  {:<10} {:<30} {:>24} {:>8} {:>5} {:>6} {:>6} {:>6}  priced by",
        "pass", "kernel", "batch x m x n x k", "tile", "split", "waves", "burst", "sust."
    )?;
    for row in rows {
        let Some(detail) = row.gemm else {
            continue;
        };
        let Some(estimate) = detail.estimate else {
            continue;
        };
        let efficiency = |seconds: f64| 100.0 * row.flops / (seconds * detail.peak_flops_per_s);
        let shape = detail.shape;
        writeln!(
            out,
            "  {:<10} {:<30} {:>24} {:>8} {:>5} {:>6} {:>5.1}% {:>5.1}%  {}",
            row.pass.name(),
            row.name,
            format!("{} x {} x {} x {}", shape.batch, shape.m, shape.n, shape.k),
            format!("{}x{}", estimate.tile[0], estimate.tile[1]),
            estimate.split_k,
            estimate.waves,
            efficiency(estimate.burst_s),
            efficiency(estimate.seconds),
            if detail.measured {
                "measured (stretched to sustained)"
            } else {
                "model"
            }
        )?;
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
