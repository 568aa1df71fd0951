//! `clustersim simulate`'s summary in text: the run's header and model,
//! its rates and expected range, communication, memory, and what the
//! simulation ran (tasks, events, its mode and why).

use super::defaults_note::DefaultsNote;
use super::expected_range::ExpectedRange;
use sim::scenario::Scenario;
use sim::SimulationReport;
use std::io::Write;

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

pub(super) fn write_summary(
    out: &mut impl Write,
    scenario: &Scenario,
    report: &SimulationReport,
    elapsed_s: f64,
    range: &ExpectedRange,
    defaults: &DefaultsNote,
    stragglers: &sim::straggler::Stragglers,
) -> anyhow::Result<()> {
    let what = WhatRan::of(scenario, &report.metrics);
    write_run_header(out, scenario, defaults, &what)?;
    write_rates(out, scenario, report, range, &what)?;
    write_communication(out, scenario, report)?;
    write_memory(out, scenario, report)?;
    write_simulation(out, scenario, report, elapsed_s, stragglers)
}

/// The summary's title, stack, defaults, GPUs and model lines.
fn write_run_header(
    out: &mut impl Write,
    scenario: &Scenario,
    defaults: &DefaultsNote,
    what: &WhatRan,
) -> anyhow::Result<()> {
    let layout = &scenario.layout;
    let gpus = layout.gpus();
    let nodes = gpus.div_ceil(scenario.topology.node.gpus_per_node);
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
    if let Some(line) = defaults.line() {
        writeln!(out, "  defaults            {line}")?;
    }
    writeln!(
        out,
        "  GPUs                {gpus} ({nodes} node{} of {}), m = {} microbatches per pipeline",
        if nodes == 1 { "" } else { "s" },
        scenario.topology.node.gpus_per_node,
        layout.microbatches.get()
    )?;
    writeln!(out, "  model               {}", what.model_line(scenario))?;
    Ok(())
}

/// Iteration time, throughput, its expected range, TFLOP/s and the bubble.
fn write_rates(
    out: &mut impl Write,
    scenario: &Scenario,
    report: &SimulationReport,
    range: &ExpectedRange,
    what: &WhatRan,
) -> anyhow::Result<()> {
    let m = &report.metrics;
    let (min_stage, max_stage) = m
        .bubble_fraction_per_stage
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &b| (lo.min(b), hi.max(b)));
    writeln!(out, "  iteration time      {:.3} s", m.iteration_time_s)?;
    writeln!(
        out,
        "  throughput          {:.2} samples/s · {:.0} tokens/s per GPU · MFU {:.1}% (model FLOPs ÷ {} dense peak)",
        m.samples_per_s,
        what.tokens_per_s_per_gpu,
        what.mfu_percent,
        scenario.options.precision.high_precision().name()
    )?;
    writeln!(out, "  expected range      {}", range.line(m))?;
    writeln!(
        out,
        "  TFLOP/s per GPU     {:.1} ({:.1}% of {:.0} peak); model TFLOP/s {:.1} (without recompute)",
        m.tflops_per_gpu,
        m.percent_of_peak,
        scenario.peak_flops_per_s() / 1e12,
        m.model_tflops_per_gpu
    )?;
    writeln!(
        out,
        "  bubble fraction     {:.4} mean (stages {:.4} … {:.4}); compute {:.3} s per GPU",
        m.bubble_fraction, min_stage, max_stage, m.compute_time_s
    )?;
    Ok(())
}

/// Exposed communication, the experts' routing, accuracy and host-bound time.
fn write_communication(
    out: &mut impl Write,
    scenario: &Scenario,
    report: &SimulationReport,
) -> anyhow::Result<()> {
    let m = &report.metrics;
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
        let loads = &routing.layer_busiest_rank_loads;
        if loads.is_empty() {
            writeln!(
                out,
                "  experts             {} routing; busiest expert-parallel rank {} carries {:.3}× the mean load",
                routing.imbalance, routing.busiest_rank, routing.busiest_rank_load
            )?;
        } else {
            // One routing per MoE layer: its busiest layer, and the mean.
            let busiest_layer = loads
                .iter()
                .position(|&load| load == routing.busiest_rank_load)
                .unwrap_or(0);
            let mean = loads.iter().sum::<f64>() / loads.len() as f64;
            writeln!(
                out,
                "  experts             {} routing, one per MoE layer; the busiest expert-parallel rank carries {mean:.3}× the mean load on average over the {} layers, {:.3}× (rank {}) in MoE layer {busiest_layer} (memory takes that layer's for every layer)",
                routing.imbalance,
                loads.len(),
                routing.busiest_rank_load,
                routing.busiest_rank,
            )?;
        }
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
    Ok(())
}

/// Peak memory, ZeRO-Offload's host memory and post-validation's line.
fn write_memory(
    out: &mut impl Write,
    scenario: &Scenario,
    report: &SimulationReport,
) -> anyhow::Result<()> {
    let peak = report.peak_memory();
    writeln!(
        out,
        "  peak memory / GPU   {:.1} GiB of {:.1} GiB (stage {}: weights+grads+{} {:.1}, activations {:.1}{}, {} microbatches in flight) — {}",
        gib(peak.total_bytes),
        gib(peak.capacity_bytes),
        peak.stage,
        scenario.options.optimizer.display_name(),
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
    Ok(())
}

/// What the simulation ran: tasks, edges, events, time and its mode.
fn write_simulation(
    out: &mut impl Write,
    scenario: &Scenario,
    report: &SimulationReport,
    elapsed_s: f64,
    stragglers: &sim::straggler::Stragglers,
) -> anyhow::Result<()> {
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
            // what keeps stragglers from exceptions, or --no-symmetry where
            // nothing does.
            sim::SimulationMode::Full => format!(
                "full (every replica): {}",
                full_reason(scenario, stragglers)
            ),
            sim::SimulationMode::Symmetric { replicas } => format!(
                "symmetric: 1 of {replicas} identical data-parallel replicas simulated ({} tasks), every rank mapped to it; --no-symmetry expands all",
                report.simulated_tasks
            ),
            sim::SimulationMode::Exceptions { replicas, exceptions } => format!(
                "symmetric with exceptions: {} of {replicas} data-parallel replicas simulated ({} tasks), one for the {} alike and {exceptions} with stragglers; --no-symmetry expands all",
                exceptions + 1,
                report.simulated_tasks,
                replicas - exceptions
            ),
        }
    )?;
    Ok(())
}

/// Why a run went in full expansion: what breaks symmetry, what keeps its
/// stragglers from being exceptions, or `--no-symmetry`.
fn full_reason(scenario: &Scenario, stragglers: &sim::straggler::Stragglers) -> &'static str {
    let symmetric = sim::symmetry::symmetric_replicas(scenario);
    if let Err(reason) = symmetric {
        return reason;
    }
    if stragglers.is_empty() {
        return "--no-symmetry";
    }
    sim::symmetry_exceptions::exception_replicas(scenario, symmetric, stragglers)
        .err()
        .unwrap_or("--no-symmetry")
}

/// What a run trained, for the summary and `--json`: the model's size as its
/// card states it, the tokens an iteration trains, and the rates per GPU.
pub(super) struct WhatRan {
    /// Parameters as a model card counts them (unpadded vocabulary, final
    /// norm; `models::formulas::published_parameter_count`).
    pub(super) parameters: u64,
    /// A mixture of experts' parameters one token passes through.
    pub(super) active_parameters: Option<u64>,
    pub(super) tokens_per_iteration: u64,
    pub(super) tokens_per_s_per_gpu: f64,
    /// Model FLOPs (no recompute) per second per GPU over the dense peak of
    /// the precision's high-precision format (bf16 under FP8, as FP8 reports
    /// quote MFU), in percent.
    pub(super) mfu_percent: f64,
}

impl WhatRan {
    pub(super) fn of(scenario: &Scenario, m: &timeline::metrics::Metrics) -> WhatRan {
        let model = &scenario.model;
        let throughput = sim::throughput::Throughput::of(scenario, m);
        WhatRan {
            parameters: models::formulas::published_parameter_count(model),
            active_parameters: model
                .moe
                .as_ref()
                .map(|_| models::formulas::published_active_parameter_count(model)),
            tokens_per_iteration: throughput.tokens_per_iteration,
            tokens_per_s_per_gpu: throughput.tokens_per_s_per_gpu,
            mfu_percent: throughput.mfu_percent,
        }
    }

    /// "llama3-70b, 70.55 B parameters; 4,096 tokens per sample, 262,144 per iteration".
    fn model_line(&self, scenario: &Scenario) -> String {
        let active = self
            .active_parameters
            .map_or(String::new(), |a| format!(" ({} B active)", billions(a)));
        format!(
            "{}, {} B parameters{active}; {} tokens per sample, {} per iteration",
            scenario.model.name,
            billions(self.parameters),
            grouped(scenario.model.seq_len),
            grouped(self.tokens_per_iteration)
        )
    }
}

/// A parameter count in billions, two decimals.
fn billions(count: u64) -> String {
    format!("{:.2}", count as f64 / 1e9)
}

/// 262144 as "262,144".
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
