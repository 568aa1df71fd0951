//! # profile — the calibration profile
//!
//! What the hardware *achieves*, as opposed to what
//! the datasheet (topology) says it could. Versioned JSON; every quantity says
//! where it comes from (`measured` by `clustersim calibrate`, `datasheet` or a
//! published measurement, or `model`: an assumption stated in its note).
//!
//! Embedded defaults for A100-80GB, V100-32GB, H100 SXM, H200, B200 and GB200
//! live in `profile/profiles/*.json`, built from shared/HARDWARE.md (the B200
//! and GB200 efficiencies are Hopper's, assumed, not measured on Blackwell,
//! as each note says); each carries a GEMM tile model (`tile_model.rs`) and
//! the lab H100's measured memory-bound kernel classes, scaled to its HBM
//! bandwidth (`scripts/carry-memory-classes.py`). `calibrate` writes the
//! same schema from real timings. Measured entries win over the model.

use serde::{Deserialize, Serialize};
use std::path::Path;

mod fitted;
mod limits;
mod quantity;
mod sustained;
mod tile_model;
pub use fitted::FittedRates;
pub use limits::{
    GEMM_LAYOUTS, MAX_GEMM_DIMENSION, MAX_OVERHEAD_NS, MAX_RATE_PER_S, MIN_EFFICIENCY,
    MIN_RATE_PER_S, TILE_SIDES,
};
pub use quantity::{Quantity, Source};
pub use sustained::{SustainedRun, SustainedSample, MAX_SUSTAINED_SECONDS};
pub use tile_model::{GemmTileModel, MAX_OVERLAP_EXPONENT};

/// Version of the profile schema this build reads and writes.
pub const PROFILE_SCHEMA_VERSION: u32 = 1;

/// Who made the profile, on what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// e.g. "clustersim 0.1.0".
    pub tool: String,
    /// ISO-8601 date or "embedded default".
    pub created: String,
    /// How the numbers were obtained.
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cublas_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpu: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// Statistic reported per measured entry, e.g. "median".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistic: Option<String>,
    /// Clocks, power and temperature of the GPUs before the first GPU stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_state_before: Option<GpuStateSample>,
    /// The same, right after the last GPU stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_state_after: Option<GpuStateSample>,
    /// What the run could not do or the reader should know (a stage skipped,
    /// an NCCL error, a stand-in base profile, efficiencies not computed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remarks: Vec<String>,
}

/// The GPUs' state at one moment, as `nvidia-smi --query-gpu` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GpuStateSample {
    /// When it was read (ISO-8601 UTC).
    pub read_at: String,
    /// One entry per GPU, in nvidia-smi's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuState>,
    /// Why nothing could be read (nvidia-smi missing, failed, or unparsable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

/// One GPU's clocks, power and temperature; `None` where the driver says
/// "[N/A]" or "[Not Supported]".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GpuState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_draw_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_limit_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<i32>,
}

/// A timed GEMM: fp16/bf16 in (cuBLAS), or `dtype` "fp8" (cuBLASLt, E4M3/E5M2
/// in, bf16 out, always layout "tn"); fp32 accumulate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GemmMeasurement {
    pub batch: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub dtype: String,
    pub time_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_ns: Option<u64>,
    pub source: Source,
    /// The operand layout the GEMM was timed in, as cuBLAS's `transa`,
    /// `transb` letters: one of [`GEMM_LAYOUTS`] ("tn" is a linear layer's
    /// forward, "nn" its data gradient, "nt" its weight gradient; the models
    /// crate's `GemmLayout` says which GEMM runs in which). Absent in
    /// profiles written before layouts were recorded: unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

/// GEMM cost model parameters and measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GemmProfile {
    /// Fraction of the datasheet peak a large, well-shaped GEMM reaches.
    pub large_gemm_efficiency: Quantity,
    /// Output tile shapes [rows, cols] the library chooses among; the cost
    /// model takes the one that finishes first (the tile model) or the one
    /// with the least tile+wave quantization waste (without it).
    pub tile_shapes: Vec<[u64; 2]>,
    /// The tile-and-wave model's constants; absent, GEMMs are priced at
    /// `large_gemm_efficiency` × tile quantization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile_model: Option<GemmTileModel>,
    /// calibrate's sustained stage: one GEMM back to back for seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained_run: Option<SustainedRun>,
    /// Fixed cost of every kernel launch (launch gap, prologue, tail).
    pub kernel_overhead_ns: Quantity,
    /// An FP8 GEMM's efficiency relative to a bf16 GEMM's of the same shape
    /// (the FP8 rate is the datasheet FP8 peak × `large_gemm_efficiency` ×
    /// this × tile quantization). Absent: 1, the bf16 efficiency unchanged.
    /// calibrate measures it on GPUs with FP8 tensor cores: the largest FP8
    /// square's efficiency over the FP8 peak, divided by the same run's
    /// `large_gemm_efficiency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_relative_efficiency: Option<Quantity>,
    #[serde(default)]
    pub measured: Vec<GemmMeasurement>,
}

impl GemmProfile {
    /// [`GemmProfile::fp8_relative_efficiency`], 1 when the profile has none.
    pub fn fp8_relative_efficiency(&self) -> f64 {
        self.fp8_relative_efficiency
            .as_ref()
            .map_or(1.0, |quantity| quantity.value)
    }
}

/// A timed memory-bound kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryMeasurement {
    /// What was timed. "copy": a device-to-device copy (`bytes` = twice the
    /// bytes copied), from which calibrate derives `hbm_efficiency`.
    /// Otherwise a kernel class (`models::memory_class`), whose entries the
    /// simulator interpolates in bytes to cost every model kernel of that
    /// class: "layernorm" (4 B per element: x read, y written), "layernorm.bwd"
    /// (6 B: gradient and x read, gradient written; gamma/beta gradients
    /// included in the time), "softmax" (4 B; causal), "softmax.bwd" (6 B),
    /// "dropout" (5 B: x read, y and a 1-byte mask written),
    /// "bias_dropout_add" (7 B: x and residual read, output and mask
    /// written), "gelu" (4 B), "swiglu" (6 B per output element), and the
    /// optimizer's "optimizer.copy" (6 B per parameter: bf16 read, fp32
    /// written), "optimizer.unscale" (8 B), "optimizer.l2norm" (4 B) and
    /// "optimizer.adam" (28 B: weight, gradient and both moments read,
    /// weight and moments written). Other names are kept but not used.
    pub kernel: String,
    /// Bytes read plus written, as `models::ops` counts them for the kernel.
    pub bytes: u64,
    /// Median time of one launch (or of the class's launches together).
    pub time_ns: u64,
    pub source: Source,
}

/// Memory-bound kernel costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryProfile {
    /// Fraction of datasheet HBM bandwidth memory-bound kernels achieve.
    pub hbm_efficiency: Quantity,
    #[serde(default)]
    pub measured: Vec<MemoryMeasurement>,
}

/// A timed collective or point-to-point transfer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectiveMeasurement {
    /// "all_reduce", "reduce_scatter", "all_gather", "send_recv", "all_to_all".
    pub op: String,
    pub group_size: u32,
    pub bytes: u64,
    pub time_ns: u64,
    pub source: Source,
}

/// Achieved communication rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommunicationProfile {
    /// Ring bus bandwidth NCCL reaches inside one NVLink/NVSwitch domain.
    pub nvlink_bus_bandwidth_bytes_per_s: Quantity,
    /// Fixed cost of one ring step inside a node.
    pub nvlink_step_latency_ns: Quantity,
    /// What one NIC achieves per direction.
    pub nic_bandwidth_bytes_per_s: Quantity,
    /// Fixed cost of one ring step that crosses the network.
    pub network_step_latency_ns: Quantity,
    #[serde(default)]
    pub measured: Vec<CollectiveMeasurement>,
}

/// Host ↔ device copies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieProfile {
    pub host_to_device_bytes_per_s: Quantity,
    pub device_to_host_bytes_per_s: Quantity,
}

/// A timed CPU Adam step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuAdamMeasurement {
    pub params: u64,
    pub threads: u32,
    pub time_ns: u64,
    pub source: Source,
}

/// The CPU optimizer (ZeRO-Offload).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuAdamProfile {
    /// Parameters updated per second using every core of the host.
    pub params_per_s: Quantity,
    #[serde(default)]
    pub measured: Vec<CpuAdamMeasurement>,
}

/// Rates of the fused attention kernel a software stack runs
/// (`models::attention`), by direction, head dimension, causal mask and
/// sequence length; the simulator interpolates them in sequence length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionProfile {
    /// Which kernels the rates are of, e.g. "cuDNN fused attention (BF16)".
    pub implementation: String,
    /// At which clock the rates were timed: burst rates are priced at the
    /// GEMM tile model's sustained ratio, as the GEMMs are.
    pub clock: AttentionClock,
    /// Where `clock` comes from (the benchmark's method).
    pub clock_source: String,
    pub measured: Vec<AttentionMeasurement>,
}

/// The clock a set of attention rates was timed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionClock {
    /// Short runs at the boost clock (a benchmark that rests the GPU
    /// between configurations): faster than a training step sustains.
    Burst,
    /// Seconds of back-to-back kernels at the power limit.
    Sustained,
}

/// One rate of the fused attention kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionMeasurement {
    /// "forward" or "backward".
    pub direction: String,
    pub head_dim: u64,
    pub seq_len: u64,
    pub causal: bool,
    /// FLOP/s by FlashAttention's benchmark convention: forward 4·b·h·s²·d,
    /// halved when causal; backward 2.5 × the forward's.
    pub flops_per_s: f64,
    pub source: Source,
    pub note: String,
}

/// The directions an attention rate may have.
pub const ATTENTION_DIRECTIONS: [&str; 2] = ["forward", "backward"];

/// A calibration profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub schema_version: u32,
    pub id: String,
    /// GPU name this profile describes (must match the topology's GPU).
    pub gpu: String,
    pub provenance: Provenance,
    pub gemm: GemmProfile,
    pub memory: MemoryProfile,
    pub communication: CommunicationProfile,
    pub pcie: PcieProfile,
    pub cpu_adam: CpuAdamProfile,
    /// Rates of the fused attention kernel (none: the simulator models it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention: Option<AttentionProfile>,
    /// Rates a fit applied in memory (`clustersim fit`); never read from
    /// or written to the file ([`FittedRates::CALIBRATED`] when loaded).
    #[serde(skip)]
    pub fitted: FittedRates,
}

/// Problems loading a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("profile {path} is not a valid calibration profile: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error("profile {path} has schema version {found}; this build reads version {PROFILE_SCHEMA_VERSION}")]
    Version { path: String, found: u64 },
    #[error("{message}")]
    Unknown { message: String },
    #[error("invalid profile {path}: {}", problems.join("; "))]
    Invalid { path: String, problems: Vec<String> },
}

include!(concat!(env!("OUT_DIR"), "/embedded_profiles.rs"));

/// Embedded profile `at` (of `EMBEDDED`), parsed once per process on first
/// use: a sweep resolves a scenario per layout, and parsing the JSON each
/// time was a seventh of its time.
fn embedded_parsed(at: usize) -> &'static Profile {
    static PARSED: std::sync::OnceLock<Vec<std::sync::OnceLock<Profile>>> =
        std::sync::OnceLock::new();
    let slots = PARSED.get_or_init(|| {
        EMBEDDED
            .iter()
            .map(|_| std::sync::OnceLock::new())
            .collect()
    });
    slots[at].get_or_init(|| {
        let (name, text) = EMBEDDED[at];
        Profile::from_json_str(text, name).expect("embedded profiles are valid (tested)")
    })
}

impl Profile {
    /// Names of the embedded default profiles.
    pub fn builtin_names() -> Vec<&'static str> {
        EMBEDDED.iter().map(|(name, _)| *name).collect()
    }

    /// An embedded default profile.
    pub fn builtin(name: &str) -> Option<Profile> {
        let at = EMBEDDED.iter().position(|(id, _)| *id == name)?;
        Some(embedded_parsed(at).clone())
    }

    /// The embedded default for a GPU name from a topology, if there is one
    /// (the first in `EMBEDDED`'s order).
    pub fn default_for_gpu(gpu_name: &str) -> Option<Profile> {
        (0..EMBEDDED.len())
            .map(embedded_parsed)
            .find(|profile| profile.gpu == gpu_name)
            .cloned()
    }

    /// Parses and checks a profile; `origin` names it in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let version = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|value| value.get("schema_version").and_then(|v| v.as_u64()));
        if let Some(found) = version {
            if found != PROFILE_SCHEMA_VERSION as u64 {
                return Err(ProfileError::Version {
                    path: origin.into(),
                    found,
                });
            }
        }
        let profile: Profile =
            serde_json::from_str(text).map_err(|source| ProfileError::Parse {
                path: origin.into(),
                source,
            })?;
        profile.validate(origin)?;
        Ok(profile)
    }

    /// A built-in name or a path to a profile file.
    pub fn resolve(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some(profile) = Self::builtin(name_or_path) {
            return Ok(profile);
        }
        let path = Path::new(name_or_path);
        if !path.exists() {
            return Err(ProfileError::Unknown {
                message: input_file::named::unknown(
                    "profile",
                    name_or_path,
                    &Self::builtin_names(),
                ),
            });
        }
        let text = input_file::read_to_string(path).map_err(|source| ProfileError::Read {
            path: name_or_path.into(),
            source,
        })?;
        Self::from_json_str(&text, name_or_path)
    }

    /// Every value within physical ranges; all problems at once:
    /// efficiencies in [0.001, 1], rates from 1 kB/s (or 1 parameter/s) to
    /// 10 PB/s, overheads and latencies from 0 to 1 s. Values outside would
    /// make durations that no GPU shows, or overflow integer nanoseconds.
    pub fn validate(&self, origin: &str) -> Result<(), ProfileError> {
        let mut problems = Vec::new();
        let mut fraction = |key: &str, q: &Quantity| {
            if !(q.value >= MIN_EFFICIENCY && q.value <= 1.0) {
                problems.push(format!(
                    "{key} must be in [{MIN_EFFICIENCY}, 1], got {:e}",
                    q.value
                ));
            }
        };
        fraction(
            "gemm.large_gemm_efficiency",
            &self.gemm.large_gemm_efficiency,
        );
        fraction("memory.hbm_efficiency", &self.memory.hbm_efficiency);
        if let Some(relative) = &self.gemm.fp8_relative_efficiency {
            fraction("gemm.fp8_relative_efficiency", relative);
        }
        let mut positive = |key: &str, q: &Quantity| {
            if !(q.value.is_finite() && (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&q.value)) {
                problems.push(format!(
                    "{key} must be from {MIN_RATE_PER_S:e} to {MAX_RATE_PER_S:e}, got {:e}",
                    q.value
                ));
            }
        };
        positive(
            "communication.nvlink_bus_bandwidth_bytes_per_s",
            &self.communication.nvlink_bus_bandwidth_bytes_per_s,
        );
        positive(
            "communication.nic_bandwidth_bytes_per_s",
            &self.communication.nic_bandwidth_bytes_per_s,
        );
        positive(
            "pcie.host_to_device_bytes_per_s",
            &self.pcie.host_to_device_bytes_per_s,
        );
        positive(
            "pcie.device_to_host_bytes_per_s",
            &self.pcie.device_to_host_bytes_per_s,
        );
        positive("cpu_adam.params_per_s", &self.cpu_adam.params_per_s);
        for (key, q) in [
            ("gemm.kernel_overhead_ns", &self.gemm.kernel_overhead_ns),
            (
                "communication.nvlink_step_latency_ns",
                &self.communication.nvlink_step_latency_ns,
            ),
            (
                "communication.network_step_latency_ns",
                &self.communication.network_step_latency_ns,
            ),
        ] {
            if !(q.value.is_finite() && (0.0..=MAX_OVERHEAD_NS).contains(&q.value)) {
                problems.push(format!(
                    "{key} must be from 0 to {MAX_OVERHEAD_NS:e} ns (1 s), got {:e}",
                    q.value
                ));
            }
        }
        if let Some(model) = &self.gemm.tile_model {
            problems.extend(model.problems());
        }
        if let Some(run) = &self.gemm.sustained_run {
            problems.extend(run.problems());
        }
        if self.gemm.tile_shapes.is_empty()
            || self
                .gemm
                .tile_shapes
                .iter()
                .flatten()
                .any(|side| !TILE_SIDES.contains(side))
        {
            problems.push(format!(
                "gemm.tile_shapes must list at least one [rows, cols] tile, each side from {} to {}",
                TILE_SIDES.start(),
                TILE_SIDES.end()
            ));
        }
        for (index, entry) in self.gemm.measured.iter().enumerate() {
            let dimensions = [entry.batch, entry.m, entry.n, entry.k];
            if dimensions
                .iter()
                .any(|d| !(1..=MAX_GEMM_DIMENSION).contains(d))
                || entry.time_ns == 0
            {
                problems.push(format!(
                    "gemm.measured[{index}] needs batch, m, n and k from 1 to {MAX_GEMM_DIMENSION} and a non-zero time_ns"
                ));
            }
            if let Some(layout) = &entry.layout {
                if !GEMM_LAYOUTS.contains(&layout.as_str()) {
                    problems.push(format!(
                        "gemm.measured[{index}].layout must be one of {}, got {layout:?}",
                        GEMM_LAYOUTS.join(", ")
                    ));
                }
            }
        }
        for (index, entry) in self.memory.measured.iter().enumerate() {
            // The simulator scales these times by bytes: a rate below any
            // hardware's would give durations past integer nanoseconds.
            let rate = entry.bytes as f64 / (entry.time_ns as f64 * 1e-9);
            if entry.bytes == 0 || entry.time_ns == 0 || rate < MIN_RATE_PER_S {
                problems.push(format!(
                    "memory.measured[{index}] ({}) needs non-zero bytes and time_ns and at least {MIN_RATE_PER_S:e} bytes/s",
                    entry.kernel
                ));
            }
        }
        let attention = self.attention.iter().flat_map(|a| a.measured.iter());
        for (index, entry) in attention.enumerate() {
            if !ATTENTION_DIRECTIONS.contains(&entry.direction.as_str()) {
                problems.push(format!(
                    "attention.measured[{index}].direction must be one of {}, got {:?}",
                    ATTENTION_DIRECTIONS.join(", "),
                    entry.direction
                ));
            }
            if entry.head_dim == 0 || entry.seq_len == 0 {
                problems.push(format!(
                    "attention.measured[{index}] needs non-zero head_dim and seq_len"
                ));
            }
            if !(entry.flops_per_s.is_finite()
                && (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&entry.flops_per_s))
            {
                problems.push(format!(
                    "attention.measured[{index}].flops_per_s must be from {MIN_RATE_PER_S:e} to {MAX_RATE_PER_S:e}, got {:e}",
                    entry.flops_per_s
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ProfileError::Invalid {
                path: origin.into(),
                problems,
            })
        }
    }
}

#[cfg(test)]
mod tests;
