//! Memory formulas: model states per parameter (mixed-precision Adam, as the
//! ZeRO paper counts them) and activation bytes per layer (Korthikanti et al.
//! 2022, Sec. 4: s·b·h·(34 + 5·a·s/h) without parallelism, and
//! s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tensor parallelism t).

use crate::ModelSpec;

/// fp16 weight bytes per parameter.
pub const WEIGHT_BYTES_PER_PARAM: u64 = 2;
/// fp16 gradient bytes per parameter.
pub const GRADIENT_BYTES_PER_PARAM: u64 = 2;
/// Adam optimizer states in mixed precision: fp32 master weights, momentum and
/// variance (ZeRO paper, Rajbhandari et al. 2020, Sec. 3.1: K = 12).
pub const OPTIMIZER_BYTES_PER_PARAM: u64 = 12;

/// Activation bytes stored by one layer for one microbatch of size `b`
/// with tensor parallelism `t`, without recomputation (Korthikanti Eq. 2).
pub fn activation_bytes_per_layer(model: &ModelSpec, microbatch: u64, tensor_parallel: u64) -> f64 {
    let (s, b, h, a, t) = (
        model.seq_len as f64,
        microbatch as f64,
        model.hidden as f64,
        model.heads as f64,
        tensor_parallel as f64,
    );
    s * b * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t))
}

/// Activation bytes stored by one layer per microbatch for every recompute and
/// sequence-parallel choice (Korthikanti et al. 2022, Table 2):
/// - none: s·b·h·(10 + 24/t + 5·a·s/(h·t)); with sequence parallelism s·b·h·(34/t + 5·a·s/(h·t));
/// - selective (attention core recomputed): s·b·h·(10 + 24/t); with sequence parallelism s·b·h·34/t;
/// - full: the layer input, 2·s·b·h (÷t with sequence parallelism).
pub fn stored_activation_bytes_per_layer(
    model: &ModelSpec,
    microbatch: u64,
    tensor_parallel: u64,
    sequence_parallel: bool,
    recompute: RecomputeKind,
) -> f64 {
    let (s, b, h, a, t) = (
        model.seq_len as f64,
        microbatch as f64,
        model.hidden as f64,
        model.heads as f64,
        tensor_parallel as f64,
    );
    let attention = 5.0 * a * s / (h * t);
    let linear = if sequence_parallel {
        34.0 / t
    } else {
        10.0 + 24.0 / t
    };
    let split = if sequence_parallel { t } else { 1.0 };
    s * b
        * h
        * match recompute {
            RecomputeKind::None => linear + attention,
            RecomputeKind::Selective => linear,
            RecomputeKind::Full => 2.0 / split,
        }
}

/// What is recomputed in the backward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecomputeKind {
    None,
    /// Only the attention core (scores, softmax, dropout, attention over values).
    Selective,
    Full,
}

/// Activation bytes one layer keeps under full recomputation: only its fp16
/// input, s·b·h·2 (Korthikanti Sec. 4.2; not split across tensor ranks).
pub fn checkpoint_bytes_per_layer(model: &ModelSpec, microbatch: u64) -> f64 {
    (model.seq_len * microbatch * model.hidden * 2) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn korthikanti_table_2_cases_agree_with_the_older_helpers() {
        let model = crate::preset("gpt-530b").unwrap();
        let none = stored_activation_bytes_per_layer(&model, 1, 8, false, RecomputeKind::None);
        assert!((none - activation_bytes_per_layer(&model, 1, 8)).abs() < 1.0);
        let full = stored_activation_bytes_per_layer(&model, 1, 8, false, RecomputeKind::Full);
        assert!((full - checkpoint_bytes_per_layer(&model, 1)).abs() < 1.0);
        // Sequence parallel + selective: 34·s·b·h/t.
        let sp_selective =
            stored_activation_bytes_per_layer(&model, 1, 8, true, RecomputeKind::Selective);
        assert!((sp_selective - 34.0 * 2048.0 * 20480.0 / 8.0).abs() < 1.0);
    }

    #[test]
    fn tensor_parallel_formula_reduces_to_serial_one_at_t_equal_1() {
        let model = crate::preset("gpt3-175b").unwrap();
        let (s, b, h, a) = (2048.0, 1.0, 12288.0, 96.0);
        let serial = s * b * h * (34.0 + 5.0 * a * s / h);
        assert!((activation_bytes_per_layer(&model, 1, 1) - serial).abs() < 1.0);
    }
}
