//! ZeRO-Offload output of `clustersim simulate`: the offload summary lines and
//! `--max-model-size` (the largest model that fits, from the memory model).

use sim::scenario::Scenario;
use sim::task::TaskKind;
use sim::SimulationReport;
use std::io::Write;

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Prints the largest model that fits (or why none does).
pub fn run(scenario: &Scenario, json: bool) -> anyhow::Result<()> {
    if scenario.layout.pipeline_split.layout.is_some() {
        // A layout fixes every stage's layers; the search varies the model's.
        return Err(crate::exit::user_error(
            "max-model-size: a pipeline_layout fixes the layers of every stage; the search grows the model and needs the even split (drop --pipeline-layout)",
        ));
    }
    let found = studies::max_model::largest_model(scenario);
    // Written whole at the end (exit 2 naming standard output if it fails).
    let mut out = Vec::new();
    if json {
        let value = serde_json::json!({
            "schema_version": crate::schema_versions::MAX_MODEL,
            "scenario": scenario.title(),
            "hidden": scenario.model.hidden,
            "heads": scenario.model.heads,
            "largest_model": found,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
        return crate::stdout::write_all(&out);
    }
    writeln!(out, "clustersim · largest model · {}", scenario.title())?;
    match found {
        None => writeln!(
            out,
            "  nothing fits: even {} layer(s) exceed the memory",
            scenario.layout.virtual_stages()
        )?,
        Some(found) => {
            let peak = &found.peak;
            writeln!(
                out,
                "  layers              {} (hidden {}, heads {}, seq {}, vocab {})",
                found.layers,
                scenario.model.hidden,
                scenario.model.heads,
                scenario.model.seq_len,
                scenario.model.vocab
            )?;
            writeln!(
                out,
                "  parameters          {:.2} B (Megatron Eq. 2)",
                found.parameters as f64 / 1e9
            )?;
            writeln!(
                out,
                "  GPU memory          {:.1} of {:.1} GiB (stage {}: weights {:.1}, gradients {:.1}, optimizer {:.1}, activations {:.1})",
                gib(peak.total_bytes),
                gib(peak.capacity_bytes),
                peak.stage,
                gib(peak.weight_bytes),
                gib(peak.gradient_bytes),
                gib(peak.optimizer_state_bytes),
                gib(peak.activation_bytes)
            )?;
            writeln!(
                out,
                "  CPU memory          {:.1} of {:.1} GiB (this GPU's share of the host)",
                gib(peak.cpu_bytes),
                gib(peak.cpu_capacity_bytes)
            )?;
        }
    }
    crate::stdout::write_all(&out)
}

/// The offload lines of the human-readable summary.
pub fn write_offload_summary(
    out: &mut impl Write,
    report: &SimulationReport,
) -> anyhow::Result<()> {
    let m = &report.metrics;
    let timeline = report.timeline();
    // Bytes over PCIe per step of rank 0 (every rank moves the same).
    let rank_zero_bytes = |kind: TaskKind| -> u64 {
        timeline
            .tasks
            .iter()
            .filter(|t| t.kind == kind && timeline.header.groups[t.group as usize].contains(&0))
            .map(|t| t.bytes)
            .sum::<u64>()
            / m.iterations.max(1) as u64
    };
    writeln!(
        out,
        "  offload             PCIe per step per GPU: D2H {:.2} GB, H2D {:.2} GB; exposed offload {:.3} s (compute idle while PCIe/CPU run)",
        rank_zero_bytes(TaskKind::PcieDeviceToHost) as f64 / 1e9,
        rank_zero_bytes(TaskKind::PcieHostToDevice) as f64 / 1e9,
        m.exposed_communication.offload_s
    )?;
    let peak = report.peak_memory();
    writeln!(
        out,
        "  CPU memory / GPU    {:.1} GiB of {:.1} GiB (fp16 gradients + fp32 Adam states of this GPU's shard)",
        gib(peak.cpu_bytes),
        gib(peak.cpu_capacity_bytes)
    )?;
    if m.iterations > 1 {
        let spans: Vec<String> = m
            .iteration_times_s
            .iter()
            .map(|s| format!("{s:.3}"))
            .collect();
        writeln!(
            out,
            "  iterations          {} simulated, spans {} s; iteration time above is the steady state",
            m.iterations,
            spans.join(" · ")
        )?;
    }
    Ok(())
}
