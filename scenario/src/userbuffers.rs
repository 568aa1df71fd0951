//! Transformer Engine userbuffers configurations (`--tp-comm-overlap-config`):
//! for each of a layer's ten overlapped linear-layer GEMMs, the overlap
//! method and how many SMs its communication takes, as NVIDIA's recipes set
//! them. `sim::cost::tp_overlap` charges what those SMs cost the GEMMs.
//!
//! What the fields mean (TransformerEngine v1.8,
//! `transformer_engine/pytorch/module/base.py` `initialize_ub`, and
//! `transformer_engine/pytorch/csrc/comm_gemm_overlap.h`):
//! - `ring_exchange`: the chunks move peer to peer by the copy engines
//!   (`use_ce`, default true), so the communication holds no SM;
//! - `pipeline` and `bulk`: userbuffers kernels move the data, holding
//!   `num_sm` SMs while they run;
//! - `set_sm_margin`: the GEMM is launched on the SMs left
//!   (`_math_sms = sm_count - num_sm`) for its whole duration, instead of
//!   sharing them with the communication kernel while it runs.
//!
//! `cga_size`, `num_splits`, `aggregate`, `fp8_buf` and `atomic_gemm` are not
//! modeled: the closed form of `sim::cost::tp_overlap` does not chunk.

use serde::{Deserialize, Serialize};

/// How one linear layer's GEMM overlaps its tensor-parallel communication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverlapMethod {
    /// SMs the communication holds while it runs (0: copy engines).
    pub comm_sms: u32,
    /// The GEMM runs on the SMs the communication leaves, all along.
    pub set_sm_margin: bool,
}

/// TE's `ring_exchange` with its defaults: copy engines, no SM, no margin.
const RING: OverlapMethod = OverlapMethod {
    comm_sms: 0,
    set_sm_margin: false,
};

/// `ring_exchange` with `num_sm: 1, set_sm_margin: 1`: the copy engines move
/// the data, and the GEMM leaves one SM free.
const RING_MARGIN_1: OverlapMethod = OverlapMethod {
    comm_sms: 1,
    set_sm_margin: true,
};

const fn bulk(sms: u32) -> OverlapMethod {
    OverlapMethod {
        comm_sms: sms,
        set_sm_margin: false,
    }
}

const fn pipeline_with_margin(sms: u32) -> OverlapMethod {
    OverlapMethod {
        comm_sms: sms,
        set_sm_margin: true,
    }
}

/// A named userbuffers configuration: TE's defaults or an NVIDIA recipe's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub enum UserbuffersConfig {
    /// Transformer Engine's defaults (`initialize_ub` without a config, as
    /// Megatron-Core's `--tp-comm-overlap` runs it): `pipeline` and `bulk` with
    /// 16 SMs and no margin, `ring_exchange` on the copy engines.
    #[default]
    TeDefaults,
    /// NeMo-Framework-Launcher 121c975d `conf/training/tp_overlap/` (GPT-3 175B, t 4, b 1).
    NemoH12288Tp4Mbs1Seq2048,
    /// NeMo-Framework-Launcher 121c975d (GPT-3 175B, t 4, b 2).
    NemoH12288Tp4Mbs2Seq2048,
    /// NeMo-Framework-Launcher 121c975d (GPT-3 20B, t 2, b 2).
    NemoH6144Tp2Mbs2Seq2048,
    /// NeMo-Framework-Launcher 121c975d (Llama 2 70B, t 4, sequence 4096).
    NemoH8192Tp4Mbs1Seq4096,
    /// NeMo-Framework-Launcher 121c975d (Llama 3 70B, t 4, sequence 8192).
    NemoH8192Tp4Mbs1Seq8192,
    /// Megatron-Bridge 067f987d `src/megatron/bridge/training/comm_overlap.py`
    /// (its Llama 3 70B H100 FP8 performance recipe).
    BridgeFp8H8192Tp4Mbs1Seq8192,
    /// Megatron-Bridge 067f987d (its Llama 3 70B H100 bf16 recipe).
    BridgeBf16H8192Tp4Mbs1Seq8192,
    /// Megatron-Bridge 067f987d (its Llama 3.1 405B H100 FP8 recipe).
    BridgeFp8H16384Tp8Cp2Mbs1Seq8192,
    /// Megatron-Bridge 067f987d (its Llama 3.1 405B H100 bf16 recipe).
    BridgeBf16H16384Tp8Cp2Mbs1Seq8192,
}

/// Every configuration with its name (the source's own name for a recipe's).
const NAMES: [(UserbuffersConfig, &str); 10] = [
    (UserbuffersConfig::TeDefaults, "te-defaults"),
    (
        UserbuffersConfig::NemoH12288Tp4Mbs1Seq2048,
        "ub_cfg_h100_h12288_tp4_mbs1_seqlen2048",
    ),
    (
        UserbuffersConfig::NemoH12288Tp4Mbs2Seq2048,
        "ub_cfg_h100_h12288_tp4_mbs2_seqlen2048",
    ),
    (
        UserbuffersConfig::NemoH6144Tp2Mbs2Seq2048,
        "ub_cfg_h100_h6144_tp2_mbs2_seqlen2048",
    ),
    (
        UserbuffersConfig::NemoH8192Tp4Mbs1Seq4096,
        "ub_cfg_h100_h8192_tp4_mbs1_seqlen4096",
    ),
    (
        UserbuffersConfig::NemoH8192Tp4Mbs1Seq8192,
        "ub_cfg_h100_h8192_tp4_mbs1_seqlen8192",
    ),
    (
        UserbuffersConfig::BridgeFp8H8192Tp4Mbs1Seq8192,
        "userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192",
    ),
    (
        UserbuffersConfig::BridgeBf16H8192Tp4Mbs1Seq8192,
        "userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192",
    ),
    (
        UserbuffersConfig::BridgeFp8H16384Tp8Cp2Mbs1Seq8192,
        "userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192",
    ),
    (
        UserbuffersConfig::BridgeBf16H16384Tp8Cp2Mbs1Seq8192,
        "userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192",
    ),
];

impl TryFrom<String> for UserbuffersConfig {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        NAMES
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(config, _)| *config)
            .ok_or_else(|| {
                let known: Vec<&str> = NAMES.iter().map(|(_, known)| *known).collect();
                format!(
                    "unknown userbuffers configuration '{name}' (known: {})",
                    known.join(", ")
                )
            })
    }
}

impl From<UserbuffersConfig> for &'static str {
    fn from(config: UserbuffersConfig) -> &'static str {
        config.name()
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for UserbuffersConfig {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [UserbuffersConfig; 10] = {
            let mut all = [UserbuffersConfig::TeDefaults; 10];
            let mut i = 0;
            while i < 10 {
                all[i] = NAMES[i].0;
                i += 1;
            }
            all
        };
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// The ten overlapped GEMMs of a layer, by TE's names, in the order
/// [`UserbuffersConfig::methods`] lists them.
pub const UB_GEMMS: [&str; 10] = [
    "qkv_fprop",
    "proj_fprop",
    "fc1_fprop",
    "fc2_fprop",
    "qkv_dgrad",
    "proj_dgrad",
    "fc1_dgrad",
    "fc2_dgrad",
    "qkv_wgrad",
    "fc1_wgrad",
];

impl UserbuffersConfig {
    /// The name as the scenario file and `--tp-comm-overlap-config` take it.
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(config, _)| *config == self)
            .map_or("te-defaults", |(_, name)| name)
    }

    /// Whether this is TE's defaults (serialized outputs leave it out).
    pub fn is_default(&self) -> bool {
        *self == UserbuffersConfig::TeDefaults
    }

    /// Each of [`UB_GEMMS`]'s methods, as the source sets it.
    pub fn methods(self) -> [OverlapMethod; 10] {
        use UserbuffersConfig::*;
        // Columns: qkv_fprop, proj_fprop, fc1_fprop, fc2_fprop, qkv_dgrad,
        // proj_dgrad, fc1_dgrad, fc2_dgrad, qkv_wgrad, fc1_wgrad.
        match self {
            // TE v1.8 initialize_ub: num_sm 16 for pipeline and bulk
            // (`ub_cfg.get("num_sm", 1 if method == "ring_exchange" else 16)`),
            // set_sm_margin 0, use_ce true.
            TeDefaults => [
                RING,
                bulk(16),
                RING,
                bulk(16),
                bulk(16),
                RING,
                bulk(16),
                RING,
                bulk(16),
                bulk(16),
            ],
            NemoH12288Tp4Mbs1Seq2048 | NemoH12288Tp4Mbs2Seq2048 => [
                RING,
                pipeline_with_margin(24),
                RING,
                RING_MARGIN_1,
                bulk(4),
                RING,
                bulk(2),
                RING,
                bulk(4),
                bulk(4),
            ],
            NemoH6144Tp2Mbs2Seq2048 => [
                RING,
                pipeline_with_margin(16),
                RING,
                pipeline_with_margin(24),
                bulk(8),
                RING,
                bulk(4),
                RING,
                bulk(16),
                bulk(16),
            ],
            NemoH8192Tp4Mbs1Seq4096 => [
                RING,
                pipeline_with_margin(24),
                RING,
                pipeline_with_margin(16),
                bulk(8),
                RING,
                bulk(2),
                RING,
                bulk(16),
                bulk(4),
            ],
            NemoH8192Tp4Mbs1Seq8192 | BridgeBf16H8192Tp4Mbs1Seq8192 => [
                RING,
                pipeline_with_margin(24),
                RING,
                pipeline_with_margin(16),
                bulk(4),
                RING,
                bulk(2),
                RING,
                bulk(24),
                bulk(4),
            ],
            BridgeFp8H8192Tp4Mbs1Seq8192 => [
                RING,
                RING_MARGIN_1,
                RING,
                RING_MARGIN_1,
                bulk(4),
                RING,
                bulk(2),
                RING,
                bulk(24),
                bulk(4),
            ],
            BridgeFp8H16384Tp8Cp2Mbs1Seq8192 => [
                RING,
                RING_MARGIN_1,
                RING,
                RING_MARGIN_1,
                bulk(2),
                RING,
                bulk(2),
                RING,
                bulk(24),
                bulk(2),
            ],
            BridgeBf16H16384Tp8Cp2Mbs1Seq8192 => [
                RING,
                pipeline_with_margin(24),
                RING,
                pipeline_with_margin(8),
                bulk(2),
                RING,
                bulk(2),
                RING,
                bulk(24),
                bulk(2),
            ],
        }
    }

    /// The method of the overlapped GEMM TE calls `gemm` (one of [`UB_GEMMS`]).
    pub fn method(self, gemm: &str) -> Option<OverlapMethod> {
        let index = UB_GEMMS.iter().position(|&name| name == gemm)?;
        Some(self.methods()[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_the_scenario_file() {
        for config in NAMES.iter().map(|entry| &entry.0) {
            let json = serde_json::to_string(config).unwrap();
            assert_eq!(json, format!("\"{}\"", config.name()));
            let back: UserbuffersConfig = serde_json::from_str(&json).unwrap();
            assert_eq!(back, *config);
        }
    }

    #[test]
    fn the_recipes_read_as_their_sources_write_them() {
        // NeMo's 20B config: proj_fprop pipeline 16 SMs, fc2_fprop pipeline
        // 24 SMs, both with set_sm_margin 1; qkv_wgrad bulk 16.
        let nemo_20b = UserbuffersConfig::NemoH6144Tp2Mbs2Seq2048;
        assert_eq!(
            nemo_20b.method("proj_fprop"),
            Some(pipeline_with_margin(16))
        );
        assert_eq!(nemo_20b.method("fc2_fprop"), Some(pipeline_with_margin(24)));
        assert_eq!(nemo_20b.method("qkv_wgrad"), Some(bulk(16)));
        // Every ring exchange of TE's defaults holds no SM.
        assert_eq!(
            UserbuffersConfig::TeDefaults.method("qkv_fprop"),
            Some(RING)
        );
        assert_eq!(UserbuffersConfig::TeDefaults.method("nonsense"), None);
    }
}
