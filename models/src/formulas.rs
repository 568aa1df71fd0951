//! Closed-form parameter and FLOP counts from Megatron-LM (Narayanan et al.,
//! SC21): Eq. 2 (parameters) and Eq. 3 (FLOPs per iteration with full
//! activation recomputation), plus the no-recompute variant. The per-kernel
//! decomposition in [`crate::ops`] must sum to these; tests check it.
//!
//! Counts are exact integers where the formula is a polynomial (Eq. 2 expands
//! to 12·l·h² + 13·l·h + (V+s)·h); FLOPs are `f64` because they reach 1e21.

use crate::ModelSpec;

/// Parameters of one transformer layer: QKV (3h²+3h), projection (h²+h),
/// MLP (2·h·ffn + ffn + h), two LayerNorms (4h). Equals 12h² + 13h for ffn = 4h.
pub fn layer_parameters(model: &ModelSpec) -> u64 {
    let h = model.hidden;
    let f = model.ffn();
    (3 * h * h + 3 * h) + (h * h + h) + (2 * h * f + f + h) + 4 * h
}

/// Word (V·h) and position (s·h) embedding parameters.
pub fn embedding_parameters(model: &ModelSpec) -> u64 {
    (model.vocab + model.seq_len) * model.hidden
}

/// Total parameters as Megatron's Eq. 2 counts them:
/// P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h)) = l·(12h² + 13h) + (V+s)·h.
/// (The final LayerNorm's 2h parameters are not in Eq. 2 and not counted here;
/// [`crate::memory`] adds them.)
pub fn parameter_count(model: &ModelSpec) -> u64 {
    model.layers * layer_parameters(model) + embedding_parameters(model)
}

/// Eq. 2 evaluated literally in floating point, for cross-checking.
pub fn parameter_count_eq2(model: &ModelSpec) -> f64 {
    let (l, h, v, s) = (
        model.layers as f64,
        model.hidden as f64,
        model.vocab as f64,
        model.seq_len as f64,
    );
    12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (v + s) / (12.0 * l * h))
}

/// FLOPs per iteration with full activation recomputation, Eq. 3:
/// F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), for global batch B.
pub fn flops_per_iteration_full_recompute(model: &ModelSpec, global_batch: u64) -> f64 {
    let (b, s, l, h, v) = dims(model, global_batch);
    96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
}

/// FLOPs per iteration without recomputation: 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
pub fn flops_per_iteration_no_recompute(model: &ModelSpec, global_batch: u64) -> f64 {
    let (b, s, l, h, v) = dims(model, global_batch);
    72.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * l * h))
}

fn dims(model: &ModelSpec, global_batch: u64) -> (f64, f64, f64, f64, f64) {
    (
        global_batch as f64,
        model.seq_len as f64,
        model.layers as f64,
        model.hidden as f64,
        model.vocab as f64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_count_equals_eq2_for_every_megatron_model() {
        for name in ["gpt3-175b", "gpt-530b", "gpt-1t", "gpt-22b"] {
            let model = crate::preset(name).unwrap();
            let exact = parameter_count(&model) as f64;
            let eq2 = parameter_count_eq2(&model);
            assert!(
                (exact - eq2).abs() / eq2 < 1e-12,
                "{name}: {exact} vs {eq2}"
            );
        }
    }

    #[test]
    fn one_trillion_model_matches_table_1() {
        // Megatron-LM SC21 Table 1: 1008.0 billion parameters.
        let model = crate::preset("gpt-1t").unwrap();
        let billions = parameter_count(&model) as f64 / 1e9;
        assert!((billions - 1008.0).abs() < 0.5, "{billions}");
        // GPT-3: 174.6 B in Table 1; 530B row: 529.6 B.
        let gpt3 = parameter_count(&crate::preset("gpt3-175b").unwrap()) as f64 / 1e9;
        assert!((gpt3 - 174.6).abs() < 0.5, "{gpt3}");
        let mt = parameter_count(&crate::preset("gpt-530b").unwrap()) as f64 / 1e9;
        assert!((mt - 529.6).abs() < 0.5, "{mt}");
    }
}
