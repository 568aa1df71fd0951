//! Dropout rates of a model: Megatron-LM's `--attention-dropout` (on the
//! attention probabilities, inside a fused attention kernel) and
//! `--hidden-dropout` (after the attention projection and the MLP, fused with
//! their bias and residual add, and on the embeddings), Hugging Face's
//! `attention_dropout` and GPT-2's `attn_pdrop` / `resid_pdrop`.
//!
//! Only whether a rate is zero changes the work: PyTorch's dropout returns
//! its input untouched when p = 0 (`aten/src/ATen/native/Dropout.cpp`,
//! `_dropout_impl`: `if (p == 0 || !train || input.sym_numel() == 0) return
//! input;`), so no mask is drawn, written or kept, and a fused attention
//! kernel draws no random numbers. A spec without the keys takes
//! Megatron-LM's defaults, 0.1 each (`megatron/training/arguments.py`), as
//! GPT-style models were trained; Llama-style models train without dropout
//! (their configs' `attention_dropout` 0.0 and no residual dropout).

use serde::{Deserialize, Serialize};

/// A dropout probability, in [0, 1) once the spec is validated.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DropoutRate(f64);

// A validated rate is a finite number (JSON has no NaN): equality is total.
impl Eq for DropoutRate {}

impl DropoutRate {
    /// Megatron-LM's default for both rates.
    pub const MEGATRON_DEFAULT: DropoutRate = DropoutRate(0.1);
    /// No dropout.
    pub const NONE: DropoutRate = DropoutRate(0.0);

    /// The rate `probability` (checked by [`Self::problem`]).
    pub fn new(probability: f64) -> DropoutRate {
        DropoutRate(probability)
    }

    /// The probability.
    pub fn probability(self) -> f64 {
        self.0
    }

    /// Whether dropout runs (a rate above 0): a mask is drawn and kept.
    pub fn is_on(self) -> bool {
        self.0 > 0.0
    }

    /// What is wrong with the rate of `key`, if anything.
    pub fn problem(self, key: &str) -> Option<String> {
        (!(0.0..1.0).contains(&self.0))
            .then(|| format!("{key} must be at least 0 and below 1, got {}", self.0))
    }
}

/// Serde default of both rates.
pub(crate) fn megatron_default() -> DropoutRate {
    DropoutRate::MEGATRON_DEFAULT
}

/// Serde's skip test: the default is left out, so a spec without the keys
/// serializes to the same bytes.
pub(crate) fn is_megatron_default(rate: &DropoutRate) -> bool {
    *rate == DropoutRate::MEGATRON_DEFAULT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{transformer_layer, PassSteps, Step};

    fn kernel_names(steps: &[Step]) -> Vec<&'static str> {
        steps
            .iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) => Some(kernel.name),
                _ => None,
            })
            .collect()
    }

    fn names(pass: &PassSteps) -> (Vec<&'static str>, Vec<&'static str>) {
        (kernel_names(&pass.forward), kernel_names(&pass.backward))
    }

    #[test]
    fn without_dropout_no_dropout_kernel_runs_and_the_residual_is_a_plain_add() {
        let mut model = crate::presets::preset("gpt-22b").unwrap();
        let (forward, backward) = names(&transformer_layer(&model, 1, crate::nz(8)));
        for name in [
            "attention_dropout",
            "dropout_residual_1",
            "dropout_residual_2",
        ] {
            assert!(forward.contains(&name), "{forward:?}");
        }
        assert!(backward.contains(&"dropout_residual_2.bwd"), "{backward:?}");
        model.attention_dropout = DropoutRate::NONE;
        model.hidden_dropout = DropoutRate::NONE;
        let (forward, backward) = names(&transformer_layer(&model, 1, crate::nz(8)));
        assert!(forward
            .iter()
            .chain(&backward)
            .all(|n| !n.contains("dropout")));
        assert!(forward.contains(&"residual_add_1") && forward.contains(&"residual_add_2"));
        let embedding = crate::pipeline_ends::embedding(&model, 1, crate::nz(8));
        let (forward, backward) = names(&embedding);
        assert!(forward
            .iter()
            .chain(&backward)
            .all(|n| !n.contains("dropout")));
    }

    #[test]
    fn specs_without_the_keys_take_megatrons_default_and_serialize_unchanged() {
        let text = r#"{"name":"m","layers":2,"hidden":64,"heads":4,"seq_len":32,"vocab":128}"#;
        let spec: crate::spec::ModelSpec = serde_json::from_str(text).unwrap();
        assert_eq!(spec.attention_dropout, DropoutRate::MEGATRON_DEFAULT);
        assert_eq!(spec.hidden_dropout, DropoutRate::MEGATRON_DEFAULT);
        assert_eq!(serde_json::to_string(&spec).unwrap(), text);
        let off: crate::spec::ModelSpec = serde_json::from_str(
            r#"{"name":"m","layers":2,"hidden":64,"heads":4,"seq_len":32,"vocab":128,"attention_dropout":0.0,"hidden_dropout":1.5}"#,
        )
        .unwrap();
        assert!(!off.attention_dropout.is_on());
        let error = off.validate().unwrap_err().to_string();
        assert!(
            error.contains("hidden_dropout must be at least 0 and below 1, got 1.5"),
            "{error}"
        );
    }

    #[test]
    fn zero_is_off_and_rates_outside_zero_to_one_are_refused() {
        assert!(!DropoutRate::NONE.is_on());
        assert!(DropoutRate::MEGATRON_DEFAULT.is_on());
        assert_eq!(DropoutRate::new(0.0).problem("hidden_dropout"), None);
        assert_eq!(DropoutRate::new(0.5).problem("hidden_dropout"), None);
        for bad in [1.0, -0.1, 2.0] {
            let problem = DropoutRate::new(bad).problem("attention_dropout").unwrap();
            assert!(
                problem.starts_with("attention_dropout must be"),
                "{problem}"
            );
        }
    }
}
