//! `clustersim sweep`'s printed report: the counts, the ranked table (with
//! cp, ep, etp, ZeRO-stage and precision columns only in sweeps that vary
//! them) and the sentence on why the best layout wins.

use sim::scenario::era::{self, Era, EraDefault};
use sim::scenario::{Optimizer, Precision, Stack, ZeroStage, DEFAULT_STACK};
use std::io::Write;
use studies::sweep::{self, SweepOutput, SweepSpace};

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

pub fn write_report(
    out: &mut impl Write,
    output: &SweepOutput,
    top: usize,
    timing: Option<&str>,
) -> anyhow::Result<()> {
    let s = &output.sweep;
    let c = &output.counts;
    writeln!(
        out,
        "clustersim sweep · {} on {} · {} GPUs · B = {}{}{}",
        studies::sweep::space::label(&s.model),
        studies::sweep::space::label(&s.topology),
        s.gpus,
        s.global_batch,
        shared_options(s),
        output
            .shard
            .map(|shard| format!(" · shard {shard}"))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "  {} layouts examined: {} rejected by validation (problems by field: {}), {} valid",
        c.examined,
        c.rejected,
        sweep::enumerate::summarize(&output.rejections),
        c.valid
    )?;
    if let Some(shard) = output.shard {
        writeln!(
            out,
            "  this shard ({shard}) holds {} of them",
            c.dropped_out_of_memory + c.simulated
        )?;
    }
    if c.dropped_out_of_memory > 0 {
        let capacity = output.dropped[0].memory_capacity_bytes;
        let reasons: Vec<String> = output
            .dropped_by_reason()
            .iter()
            .map(|(reason, count)| format!("{count}: {}", reason.describe()))
            .collect();
        let headroom = match output.sweep.memory_headroom_bytes {
            Some(bytes) if bytes > 0 => format!(" with {:.1} GiB left free", gib(bytes)),
            _ => String::new(),
        };
        writeln!(
            out,
            "  {} dropped, do not fit in {:.1} GiB per GPU{headroom} ({})",
            c.dropped_out_of_memory,
            gib(capacity),
            reasons.join("; ")
        )?;
    }
    match timing {
        Some(timing) => writeln!(out, "  {timing}")?,
        None => writeln!(out, "  {} simulated", c.simulated)?,
    }
    if output.results.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    // cp and ep after t, ZeRO stage, precision and optimizer after rc: only in sweeps that vary them.
    let ep = s.varies_expert_parallel();
    let etp = s.varies_expert_tensor_parallel();
    let (cp, zero, precision) = (
        s.varies_context_parallel(),
        !s.zero_stages.is_empty(),
        !s.precisions.is_empty(),
    );
    let optimizer = !s.optimizers.is_empty();
    let optional = |on: bool, text: String| if on { text } else { String::new() };
    let to_train = s.train_tokens.is_some();
    writeln!(
        out,
        "{:>4} {:>3}{}{}{} {:>3} {:>4} {:>2} {:>2} {:>5}  {:<15} {:<4}{}{}{} {:>9} {:>8} {:>8} {:>6} {:>7} {:>7} {:>7} {:>6}{}",
        "rank", "t", optional(cp, format!(" {:>3}", "cp")), optional(ep, format!(" {:>3}", "ep")), optional(etp, format!(" {:>3}", "etp")), "p", "d", "v", "b", "m", "schedule", "rc",
        optional(zero, format!(" {:>4}", "zero")), optional(precision, format!(" {:<4}", "prec")),
        optional(optimizer, format!(" {:<9}", "optimizer")),
        "samples/s", "TFLOP/s", "iter s", "bubble", "TP s", "PP s", "DP s", "GiB",
        optional(to_train, format!(" {:>8}", "days"))
    )?;
    for (position, r) in output.results.iter().take(top).enumerate() {
        let l = &r.layout;
        let stage = l.zero_stage.map_or("-".to_string(), |z| z.to_string());
        let format = l.precision.map_or("-", |p| p.name());
        let optimizer_name = l.optimizer.map_or("-", |o| o.name());
        writeln!(
            out,
            "{:>4} {:>3}{}{}{} {:>3} {:>4} {:>2} {:>2} {:>5}  {:<15} {:<4}{}{}{} {:>9.2} {:>8.1} {:>8.3} {:>6.3} {:>7.3} {:>7.3} {:>7.3} {:>6.1}{}{}",
            position + 1,
            l.tensor_parallel,
            optional(cp, format!(" {:>3}", l.context_parallel)),
            optional(ep, format!(" {:>3}", l.expert_parallel)),
            optional(
                etp,
                format!(" {:>3}", l.expert_tensor_parallel.unwrap_or(l.tensor_parallel))
            ),
            l.pipeline_parallel,
            l.data_parallel,
            l.chunks,
            l.microbatch_size,
            r.microbatches,
            l.schedule.name(),
            l.recompute.name(),
            optional(zero, format!(" {stage:>4}")),
            optional(precision, format!(" {format:<4}")),
            optional(optimizer, format!(" {optimizer_name:<9}")),
            r.samples_per_s,
            r.tflops_per_gpu,
            r.iteration_time_s,
            r.bubble_fraction,
            r.exposed_communication_s.tensor_s,
            r.exposed_communication_s.pipeline_s,
            r.exposed_communication_s.data_parallel_s,
            gib(r.peak_memory_bytes),
            optional(
                to_train,
                format!(" {:>8.2}", r.expected_time_to_train_s.unwrap_or(f64::NAN) / 86_400.0)
            ),
            if r.fits_in_memory { "" } else { " *" }
        )?;
    }
    if output.results.len() > top {
        writeln!(
            out,
            "  … {} more (--top N, --csv, --json)",
            output.results.len() - top
        )?;
    }
    writeln!(
        out,
        "  (TFLOP/s per GPU counts recompute as Megatron does; TP/PP/DP s: exposed communication per GPU; GiB: peak memory per GPU)"
    )?;
    if let Some(tokens) = s.train_tokens {
        writeln!(
            out,
            "  (ranked by days: the expected time to train {tokens} tokens with failures, checkpoints and restarts at run-plan's defaults)"
        )?;
    }
    if output.results.iter().any(|r| !r.fits_in_memory) {
        writeln!(
            out,
            "  * does not fit in GPU memory (simulated because of --ignore-memory)"
        )?;
    }
    if let Some(sentence) = sweep::explain_best(&output.results) {
        writeln!(out)?;
        writeln!(out, "{sentence}")?;
    }
    Ok(())
}

/// The options every layout of the sweep runs with, for the title line,
/// then the dimensions it varies beyond the layout.
pub fn shared_options(space: &SweepSpace) -> String {
    // What each layout takes by era where the sweep does not say
    // (`sim::scenario::era`): the stack and the precision; sequence
    // parallelism and the distributed optimizer depend on the layout.
    let era = space.base_file().era_defaults();
    let stack_name = match (&space.stack, &era) {
        (Some(name), _) => name.as_str(),
        (None, Some(defaults)) => defaults.era.stack(),
        (None, None) => DEFAULT_STACK,
    };
    let mut era_options = space.options.clone();
    for default in era.iter().flat_map(|defaults| &defaults.applied) {
        if let EraDefault::Precision(precision) = default {
            era_options.precision = Some(*precision);
        }
    }
    let mut options = match Stack::resolve(stack_name) {
        Ok(stack) => stack.defaults_under(&era_options).with_defaults(),
        Err(_) => era_options.with_defaults(),
    };
    // A varied option is named by its list below, not by the stack's default.
    if !space.precisions.is_empty() {
        options.precision = Precision::default();
    }
    if !space.optimizers.is_empty() {
        options.optimizer = Optimizer::default();
    }
    if !space.zero_stages.is_empty() {
        options.sharding = ZeroStage::None;
        options.distributed_optimizer = false;
    }
    let stack = match (&space.stack, &era) {
        (Some(name), _) => format!(" · stack {name}"),
        (None, Some(defaults)) if defaults.era == Era::Today => {
            let mut text = format!(" · today's defaults: stack {stack_name}");
            if era::sequence_parallel_may_default(&space.options) {
                text.push_str(", sequence parallel at t > 1");
            }
            // A varied ZeRO stage sets the sharding of every layout.
            if era::distributed_optimizer_may_default(&space.options)
                && space.zero_stages.is_empty()
            {
                text.push_str(", distributed optimizer at d·cp > 1");
            }
            text
        }
        (None, _) => String::new(),
    };
    let list = |values: Vec<String>| format!("{{{}}}", values.join(","));
    let mut varied = String::new();
    if space.varies_context_parallel() {
        let values = space.context_parallel.iter().map(u32::to_string).collect();
        varied.push_str(&format!(" · cp ∈ {}", list(values)));
    }
    if space.varies_expert_parallel() {
        let values = space.expert_parallel.iter().map(u32::to_string).collect();
        varied.push_str(&format!(" · ep ∈ {}", list(values)));
    }
    if space.varies_expert_tensor_parallel() {
        let values = space
            .expert_tensor_parallel
            .iter()
            .map(u32::to_string)
            .collect();
        varied.push_str(&format!(" · etp ∈ {}", list(values)));
    }
    if !space.zero_stages.is_empty() {
        let values = space.zero_stages.iter().map(u8::to_string).collect();
        varied.push_str(&format!(" · ZeRO stage ∈ {}", list(values)));
    }
    if !space.precisions.is_empty() {
        let values = space
            .precisions
            .iter()
            .map(|p| p.name().to_string())
            .collect();
        varied.push_str(&format!(" · precision ∈ {}", list(values)));
    }
    if !space.optimizers.is_empty() {
        let values = space
            .optimizers
            .iter()
            .map(|o| o.name().to_string())
            .collect();
        varied.push_str(&format!(" · optimizer ∈ {}", list(values)));
    }
    format!(
        "{}{stack}{varied}",
        options.title_suffix(options.default_iterations())
    )
}
