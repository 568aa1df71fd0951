//! `simulate --explain`'s CPU-offloading section (`cpu_offloading_num_layers`):
//! the copy of one layer's activations each way against the layers' forward
//! and backward, and what TE's windows leave stalled per microbatch
//! (`sim::cost::activation_offload`).

use sim::cost::activation_offload::{overlapped_layers, stage_stalls};
use sim::scenario::Scenario;
use std::io::Write;

/// Nothing without offloading; else the copies, the windows and the stalls.
pub fn write_offload(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    let offloaded = scenario.options.activation_offload_layers;
    if offloaded == 0 {
        return Ok(());
    }
    let layers = scenario.model.layers as u32;
    let stalls = stage_stalls(scenario);
    let bytes = sim::memory::layer_activation_bytes(scenario, models::memory::RecomputeKind::None);
    let overlaps = overlapped_layers(layers, offloaded);
    let ms = |seconds: f64| seconds * 1e3;
    writeln!(
        out,
        "\ncpu offloading: the activations of {offloaded} of {layers} layers ({:.1} MB each per microbatch) to host memory",
        bytes / 1e6
    )?;
    writeln!(
        out,
        "  copy to host {:.3} ms against a layer's forward {:.3} ms; back {:.3} ms against its backward {:.3} ms",
        ms(stalls.copy_to_host_s),
        ms(stalls.layer_forward_s),
        ms(stalls.copy_from_host_s),
        ms(stalls.layer_backward_s)
    )?;
    let smallest = overlaps.iter().min().copied().unwrap_or(0);
    let largest = overlaps.iter().max().copied().unwrap_or(0);
    writeln!(
        out,
        "  each copy overlaps {smallest}–{largest} layers (Transformer Engine's layer windows); stalls per microbatch: forward {:.3} ms, backward {:.3} ms",
        ms(stalls.forward_stall_s),
        ms(stalls.backward_stall_s)
    )?;
    Ok(())
}
