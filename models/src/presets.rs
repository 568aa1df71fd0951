//! Built-in models. Sources: GPT-3 (Brown et al. 2020, Table 2.1); Megatron-LM
//! SC21 Table 1 (530B, 1T); Korthikanti et al. 2022 Table 3 (22B); ZeRO-Offload
//! (Ren et al. ATC'21) Table 3 GPT-2-like models for single-GPU offload work.

use crate::ModelSpec;

fn gpt(name: &str, layers: u64, hidden: u64, heads: u64, seq_len: u64) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        layers,
        hidden,
        heads,
        seq_len,
        vocab: 51200,
        ffn_hidden: None,
    }
}

/// (name, constructor) for every preset, in the order `--help` lists them.
fn all() -> Vec<ModelSpec> {
    vec![
        // Small model for tests and quick runs.
        gpt("tiny", 4, 512, 8, 256),
        // Korthikanti et al. 2022 Table 3.
        gpt("gpt-22b", 48, 6144, 64, 2048),
        // GPT-3 175B (Brown et al.; Megatron-LM SC21 Table 1 row 175B uses a=96).
        gpt("gpt3-175b", 96, 12288, 96, 2048),
        // Megatron-LM SC21 Table 1 / Megatron-Turing NLG 530B.
        gpt("gpt-530b", 105, 20480, 128, 2048),
        // Megatron-LM SC21 Table 1, 1.0T row.
        gpt("gpt-1t", 128, 25600, 160, 2048),
        // ZeRO-Offload paper Table 3 (GPT-2-like, seq 1024 as in their runs).
        gpt("gpt2-1b", 20, 2048, 16, 1024),
        gpt("gpt2-2b", 40, 2048, 16, 1024),
        gpt("gpt2-4b", 64, 2304, 16, 1024),
        gpt("gpt2-6b", 53, 3072, 16, 1024),
        gpt("gpt2-8b", 72, 3072, 16, 1024),
        gpt("gpt2-10b", 50, 4096, 16, 1024),
        gpt("gpt2-11b", 55, 4096, 16, 1024),
        gpt("gpt2-12b", 60, 4096, 16, 1024),
        gpt("gpt2-13b", 65, 4096, 16, 1024),
    ]
}

/// The preset with this name, if any.
pub fn preset(name: &str) -> Option<ModelSpec> {
    all().into_iter().find(|spec| spec.name == name)
}

/// Names of all presets.
pub fn preset_names() -> Vec<String> {
    all().into_iter().map(|spec| spec.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid_and_round_trips_through_json() {
        for name in preset_names() {
            let spec = preset(&name).unwrap();
            spec.validate().unwrap();
            let text = serde_json::to_string(&spec).unwrap();
            assert_eq!(ModelSpec::from_json_str(&text, "test").unwrap(), spec);
        }
    }
}
