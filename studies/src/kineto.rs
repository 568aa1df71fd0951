//! A PyTorch profiler (Kineto) trace of one rank read as the simulator's
//! kernel classes: the GPU seconds per iteration in GEMMs, fused attention
//! and memory-bound kernels, and the iteration time, for `clustersim
//! import-trace` to write as a case `fit` and `validate` read.
//!
//! The trace is Chrome trace JSON (`traceEvents`, times in microseconds) as
//! `torch.profiler` exports it. GPU kernels are the events of category
//! `kernel`; device-to-device copies and memsets (`gpu_memcpy`,
//! `gpu_memset`) count as memory-bound, host copies not at all. Iterations
//! are the `ProfilerStep#N` annotations (their mean duration is the
//! iteration time), or as many as the caller says. A kernel's class is read
//! from its name ([`class_of`]): NCCL's kernels are communication (reported,
//! not a class); cuDNN/FlashAttention attention kernels are attention; cuBLAS,
//! CUTLASS and nvjet kernels are GEMMs; every other kernel is taken as
//! memory-bound (elementwise, reductions, norms, softmax, casts, the
//! optimizer), the names listed so the reader can check.

use serde::Serialize;
use std::collections::BTreeMap;
use std::num::NonZeroU32;

/// What a kernel name is, for the simulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceClass {
    Gemm,
    Attention,
    MemoryBound,
    Communication,
}

/// The class of a kernel by its name (case-insensitive): attention first
/// (FlashAttention-3 is built on CUTLASS), then NCCL, then GEMMs.
pub fn class_of(kernel_name: &str) -> TraceClass {
    let name = kernel_name.to_ascii_lowercase();
    let has = |parts: &[&str]| parts.iter().any(|part| name.contains(part));
    if has(&["flash", "fmha", "sdpa", "attn", "attention"]) {
        TraceClass::Attention
    } else if has(&["nccl"]) {
        TraceClass::Communication
    } else if has(&[
        "gemm", "xmma", "cutlass", "nvjet", "cublas", "wgmma", "matmul",
    ]) {
        TraceClass::Gemm
    } else {
        TraceClass::MemoryBound
    }
}

/// One rank's trace, summarized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceSummary {
    /// Iterations the kernel times are divided by.
    pub iterations: u32,
    /// The mean `ProfilerStep#N` duration, when the trace has steps.
    pub iteration_time_s: Option<f64>,
    pub gemm_s: f64,
    pub attention_s: f64,
    pub memory_bound_s: f64,
    /// NCCL kernels' GPU seconds per iteration (not a fitted class).
    pub communication_s: f64,
    /// The rank the trace says it is (`distributedInfo.rank`), if it says.
    pub rank: Option<u64>,
    /// Each kernel name with its class, launches and seconds (all
    /// iterations), longest total first.
    pub kernels: Vec<TraceKernel>,
}

/// One kernel name of a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceKernel {
    pub name: String,
    pub class: TraceClass,
    pub launches: u64,
    pub total_s: f64,
}

/// What is wrong with a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no `traceEvents` array: not a Chrome/Kineto trace")]
    NoEvents,
    #[error("no GPU kernel events (category `kernel`): was the profiler run with ProfilerActivity.CUDA?")]
    NoKernels,
    #[error("kernels on {0} devices: give one rank's trace (one GPU)")]
    SeveralDevices(usize),
    #[error(
        "no `ProfilerStep#N` annotations: say how many iterations the trace holds (--iterations)"
    )]
    NoSteps,
    #[error("event {index}: {why}")]
    BadEvent { index: usize, why: String },
}

/// Reads a trace's text; `iterations` overrides the step count.
pub fn summarize(text: &str, iterations: Option<NonZeroU32>) -> Result<TraceSummary, TraceError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let events = value
        .get("traceEvents")
        .and_then(|e| e.as_array())
        .ok_or(TraceError::NoEvents)?;
    let mut kernels: BTreeMap<(String, TraceClass), (u64, f64)> = BTreeMap::new();
    let mut devices: Vec<String> = Vec::new();
    let mut steps: BTreeMap<String, f64> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        let category = event.get("cat").and_then(|c| c.as_str()).unwrap_or("");
        let name = event.get("name").and_then(|n| n.as_str()).unwrap_or("");
        let is_step = name.starts_with("ProfilerStep#")
            && matches!(
                category,
                "user_annotation" | "cpu_op" | "cpu_instant_event" | ""
            );
        let class = match category {
            "kernel" => Some(class_of(name)),
            "gpu_memcpy" if name.contains("DtoD") => Some(TraceClass::MemoryBound),
            "gpu_memset" => Some(TraceClass::MemoryBound),
            _ => None,
        };
        if class.is_none() && !is_step {
            continue;
        }
        let duration_s = duration_s(event).map_err(|why| TraceError::BadEvent { index, why })?;
        if is_step {
            *steps.entry(name.to_string()).or_default() += duration_s;
            continue;
        }
        let device = event.get("pid").map(|p| p.to_string()).unwrap_or_default();
        if !devices.contains(&device) {
            devices.push(device);
        }
        let entry = kernels
            .entry((name.to_string(), class.expect("a kernel")))
            .or_default();
        entry.0 += 1;
        entry.1 += duration_s;
    }
    if kernels.is_empty() {
        return Err(TraceError::NoKernels);
    }
    if devices.len() > 1 {
        return Err(TraceError::SeveralDevices(devices.len()));
    }
    let iterations = match (iterations, steps.len()) {
        (Some(n), _) => n.get(),
        (None, 0) => return Err(TraceError::NoSteps),
        (None, n) => n as u32,
    };
    let step_mean = (!steps.is_empty()).then(|| steps.values().sum::<f64>() / steps.len() as f64);
    Ok(summary(kernels, iterations, step_mean, &value))
}

/// An event's `dur` in seconds (microseconds in the trace).
fn duration_s(event: &serde_json::Value) -> Result<f64, String> {
    let dur = event
        .get("dur")
        .and_then(|d| d.as_f64())
        .ok_or("no numeric `dur`")?;
    if !(dur.is_finite() && dur >= 0.0) {
        return Err(format!("duration {dur} is not a time"));
    }
    Ok(dur * 1e-6)
}

fn summary(
    kernels: BTreeMap<(String, TraceClass), (u64, f64)>,
    iterations: u32,
    iteration_time_s: Option<f64>,
    trace: &serde_json::Value,
) -> TraceSummary {
    let per_iteration = |class: TraceClass| {
        kernels
            .iter()
            .filter(|((_, c), _)| *c == class)
            .map(|(_, (_, seconds))| seconds)
            .sum::<f64>()
            / f64::from(iterations)
    };
    let mut listed: Vec<TraceKernel> = kernels
        .iter()
        .map(|((name, class), &(launches, total_s))| TraceKernel {
            name: name.clone(),
            class: *class,
            launches,
            total_s,
        })
        .collect();
    listed.sort_by(|a, b| b.total_s.total_cmp(&a.total_s).then(a.name.cmp(&b.name)));
    TraceSummary {
        iterations,
        iteration_time_s,
        gemm_s: per_iteration(TraceClass::Gemm),
        attention_s: per_iteration(TraceClass::Attention),
        memory_bound_s: per_iteration(TraceClass::MemoryBound),
        communication_s: per_iteration(TraceClass::Communication),
        rank: trace
            .get("distributedInfo")
            .and_then(|d| d.get("rank"))
            .and_then(|r| r.as_u64()),
        kernels: listed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_map_to_the_simulators_classes() {
        for (name, class) in [
            (
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                TraceClass::Gemm,
            ),
            (
                "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT",
                TraceClass::Gemm,
            ),
            (
                "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm>",
                TraceClass::Gemm,
            ),
            (
                "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64>>",
                TraceClass::Attention,
            ),
            (
                "cudnn_generated_fort_native_sdpa_sm90_knob_7",
                TraceClass::Attention,
            ),
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                TraceClass::Communication,
            ),
            (
                "void at::native::vectorized_elementwise_kernel<4, ...>",
                TraceClass::MemoryBound,
            ),
            (
                "void at::native::(anonymous namespace)::layer_norm_kernel",
                TraceClass::MemoryBound,
            ),
        ] {
            assert_eq!(class_of(name), class, "{name}");
        }
    }

    const TRACE: &str = r#"{"distributedInfo": {"rank": 0, "world_size": 8},
      "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 0, "dur": 100000},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 100000, "dur": 120000},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": 0, "tid": 7, "ts": 10, "dur": 30000},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": 0, "tid": 7, "ts": 100010, "dur": 30000},
        {"ph": "X", "cat": "kernel", "name": "flash_fwd_kernel", "pid": 0, "tid": 7, "ts": 40000, "dur": 8000},
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0, "tid": 7, "ts": 50000, "dur": 4000},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 20, "ts": 60000, "dur": 10000},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": 7, "ts": 1, "dur": 500},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 7, "ts": 2, "dur": 2000},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 50}
      ]}"#;

    #[test]
    fn a_trace_gives_seconds_per_iteration_by_class() {
        let summary = summarize(TRACE, None).unwrap();
        assert_eq!(summary.iterations, 2);
        assert!((summary.iteration_time_s.unwrap() - 0.11).abs() < 1e-12);
        assert!((summary.gemm_s - 0.030).abs() < 1e-12);
        assert!((summary.attention_s - 0.004).abs() < 1e-12);
        // The elementwise kernel and the device-to-device copy; not HtoD.
        assert!((summary.memory_bound_s - 0.003).abs() < 1e-12);
        assert!((summary.communication_s - 0.005).abs() < 1e-12);
        assert_eq!(summary.rank, Some(0));
        assert_eq!(summary.kernels[0].name, "sm90_xmma_gemm_bf16");
        assert_eq!(summary.kernels[0].launches, 2);
        assert_eq!(summarize(TRACE, NonZeroU32::new(4)).unwrap().iterations, 4);
    }

    #[test]
    fn traces_it_cannot_read_are_refused_with_the_reason() {
        assert!(matches!(summarize("{}", None), Err(TraceError::NoEvents)));
        let cpu_only =
            r#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "dur": 1}]}"#;
        assert!(matches!(
            summarize(cpu_only, None),
            Err(TraceError::NoKernels)
        ));
        let no_steps =
            r#"{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "dur": 1}]}"#;
        assert!(matches!(
            summarize(no_steps, None),
            Err(TraceError::NoSteps)
        ));
        let two_gpus = r#"{"traceEvents": [{"cat": "kernel", "name": "k", "pid": 0, "dur": 1},
            {"cat": "kernel", "name": "k", "pid": 1, "dur": 1}]}"#;
        assert!(matches!(
            summarize(two_gpus, NonZeroU32::new(1)),
            Err(TraceError::SeveralDevices(2))
        ));
        let bad = r#"{"traceEvents": [{"cat": "kernel", "name": "k", "pid": 0, "dur": -1}]}"#;
        assert!(matches!(
            summarize(bad, NonZeroU32::new(1)),
            Err(TraceError::BadEvent { index: 0, .. })
        ));
    }
}
