//! `simulate --explain`'s optimizer section: what the optimizer keeps per
//! parameter, the step's kernels with the HBM bytes each moves per
//! parameter (`sim::cost::optimizer_step`), and the optimizer states of the
//! stage that holds most.

use sim::cost::optimizer_step;
use sim::plan::Plan;
use sim::scenario::Scenario;
use std::io::Write;

/// The optimizer, its step's kernels and the largest stage's states.
pub fn write_optimizer(
    out: &mut impl Write,
    scenario: &Scenario,
    plan: &Plan,
) -> anyhow::Result<()> {
    let optimizer = scenario.options.optimizer;
    writeln!(
        out,
        "\noptimizer {}: {}",
        optimizer.name(),
        optimizer.description()
    )?;
    let phases = optimizer_step::optimizer_phases(scenario.options.fp32_main_grads(), optimizer);
    let total: f64 = phases.iter().map(|phase| phase.bytes_per_param).sum();
    let kernels: Vec<String> = phases
        .iter()
        .map(|phase| format!("{} {}", phase.kernel, bytes(phase.bytes_per_param)))
        .collect();
    writeln!(
        out,
        "  step kernels, HBM bytes per parameter the rank steps: {} = {} B",
        kernels.join(", "),
        bytes(total)
    )?;
    if optimizer.compresses_momentum() {
        let d = scenario.layout.replicas();
        let compress = sim::cost::onebit::kernel_bytes(1_000_000, d) / 1e6;
        writeln!(
            out,
            "  compressed momentum all-reduce over d = {d} (in place of the gradients'): an all-to-all and an all-gather of 1 bit per parameter (1/16 of fp16's bytes) and of {d} fp32 scales each, with {compress:.1} B per parameter of unfused compression kernels; the first freeze_step iterations (DeepSpeed's default 100000, its tutorial's 15-25% of the run) train as Adam with the full all-reduce: simulate them with --optimizer adam"
        )?;
    }
    if let Some(rank) = scenario.options.powersgd_rank {
        let sizes = sim::cost::powersgd::stage_sizes(scenario, 0, u64::from(rank.get()));
        let b = sim::cost::gradients::main_grad_bytes_per_param(scenario.options.fp32_main_grads());
        let sent = (sizes.uncompressed_elements() + sizes.p_elements + sizes.q_elements) * b;
        writeln!(
            out,
            "  PowerSGD rank {rank} (DDP's powerSGD_hook) on a stage-0 rank: {} of its {} gradient elements in matrices it compresses, sent as {} + {} factor elements; the all-reduces move {sent} B in place of {} B; the hook's kernels move {:.0} B through HBM; its error feedback holds a gradient-sized buffer; the first start_powerSGD_iter iterations (PyTorch's default 1000) all-reduce whole: simulate them without --powersgd-rank",
            sizes.matrix_elements,
            sizes.elements,
            sizes.p_elements,
            sizes.q_elements,
            sizes.elements * b,
            sim::cost::powersgd::kernel_bytes(&sizes, b, u64::from(rank.get())),
        )?;
    }
    let memory = sim::memory::memory_per_stage(scenario, plan);
    if let Some(stage) = memory
        .iter()
        .max_by_key(|stage| stage.optimizer_state_bytes)
    {
        writeln!(
            out,
            "  GPU optimizer states of a stage-{} rank (master weights included): {:.2} GiB for its {} parameters{}",
            stage.stage,
            stage.optimizer_state_bytes as f64 / (1u64 << 30) as f64,
            stage.parameters,
            if scenario.options.offload.is_some() {
                " (ZeRO-Offload keeps them on the CPU)"
            } else {
                ""
            }
        )?;
    }
    Ok(())
}

/// Bytes per parameter as the source counts them: 28, 16.0625.
fn bytes(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value}")
    }
}
