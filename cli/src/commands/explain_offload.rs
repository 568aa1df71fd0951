//! `simulate --explain`'s sections on saving activation memory beyond
//! recomputation: CPU offloading (`cpu_offloading_num_layers`), the copy of
//! one layer's activations each way against the layers' forward and
//! backward, and what TE's windows leave stalled per microbatch
//! (`sim::cost::activation_offload`); and activation compression
//! (`activation_compression`), its bytes kept and its kernels.

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

/// Nothing without activation compression; else what a layer keeps and its
/// encode and decode kernels' bytes.
pub fn write_compression(out: &mut impl Write, scenario: &Scenario) -> anyhow::Result<()> {
    let Some(ratio) = scenario.options.activation_compression else {
        return Ok(());
    };
    let kind = sim::memory::recompute_kind(scenario.recompute);
    let saved = sim::memory::layer_activation_bytes(scenario, kind);
    let encoded = saved / ratio.get();
    let reader = if scenario.recompute == sim::scenario::Recompute::Full {
        "recomputation"
    } else {
        "backward"
    };
    writeln!(
        out,
        "
activation compression {}x: each layer keeps {:.1} MB per microbatch of its {:.1} MB of saved activations; an encode kernel after its forward and a decode before its {reader} move {:.1} MB each through HBM (costed as copies: the encoding's math is not modeled)",
        ratio.get(),
        encoded / 1e6,
        saved / 1e6,
        (saved + encoded) / 1e6
    )?;
    Ok(())
}
