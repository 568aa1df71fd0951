//! Whether a model spec describes a buildable transformer
//! ([`ModelSpec::validate`]): sizes within [`crate::limits`], the blocks'
//! keys consistent, and, for the larger blocks, the whole parameter count
//! within [`crate::moe::MAX_PARAMETERS`] ([`crate::formulas`] counts it).

use crate::limits::{MAX_FFN_HIDDEN, MAX_HEADS, MAX_HIDDEN, MAX_LAYERS, MAX_SEQ_LEN, MAX_VOCAB};
use crate::spec::{ModelError, ModelSpec};

impl ModelSpec {
    /// Checks the spec describes a buildable transformer; reports every problem at once.
    pub fn validate(&self) -> Result<(), ModelError> {
        let mut problems = Vec::new();
        for (key, value, max) in [
            ("layers", self.layers, MAX_LAYERS),
            ("hidden", self.hidden, MAX_HIDDEN),
            ("heads", self.heads, MAX_HEADS),
            ("seq_len", self.seq_len, MAX_SEQ_LEN),
            ("vocab", self.vocab, MAX_VOCAB),
        ] {
            if value == 0 {
                problems.push(format!("{key} must be positive"));
            } else if value > max {
                problems.push(format!("{key} {value} is over the limit of {max}"));
            }
        }
        match self.ffn_hidden {
            Some(0) => problems.push("ffn_hidden must be positive when given".into()),
            Some(ffn) if ffn > MAX_FFN_HIDDEN => problems.push(format!(
                "ffn_hidden {ffn} is over the limit of {MAX_FFN_HIDDEN}"
            )),
            _ => {}
        }
        match self.head_dim {
            Some(0) => problems.push("head_dim must be positive when given".into()),
            Some(d) if d > MAX_HIDDEN => {
                problems.push(format!("head_dim {d} is over the limit of {MAX_HIDDEN}"))
            }
            _ => {}
        }
        if self.head_dim.is_none() && self.heads > 0 && !self.hidden.is_multiple_of(self.heads) {
            problems.push(format!(
                "hidden ({}) must be divisible by heads ({})",
                self.hidden, self.heads
            ));
        }
        match self.kv_heads {
            Some(0) => problems.push("kv_heads must be positive when given".into()),
            Some(kv) if self.heads > 0 && !self.heads.is_multiple_of(kv) => problems.push(format!(
                "heads ({}) must be divisible by kv_heads ({kv}): each key/value head serves a whole group of query heads",
                self.heads
            )),
            _ => {}
        }
        if self.rope && self.mla.is_none() && self.heads > 0 && !self.head_dim().is_multiple_of(2) {
            problems.push(format!(
                "rope needs an even head dimension, not {} = {}",
                if self.head_dim.is_some() {
                    "head_dim"
                } else {
                    "hidden/heads"
                },
                self.head_dim()
            ));
        }
        problems.extend(self.attention_dropout.problem("attention_dropout"));
        problems.extend(self.hidden_dropout.problem("hidden_dropout"));
        if let Some(moe) = &self.moe {
            problems.extend(moe.problems(self.layers));
        }
        if let Some(mla) = &self.mla {
            problems.extend(mla.problems());
            if self.kv_heads.is_some_and(|kv| kv != self.heads) {
                problems.push(format!(
                    "kv_heads ({}) must equal heads ({}) with mla: latent attention has no key/value groups",
                    self.kv_heads(),
                    self.heads
                ));
            }
            if self.head_dim.is_some() {
                problems.push("head_dim must be absent with mla: mla.qk_nope_head_dim, mla.qk_rope_head_dim and mla.v_head_dim give the head dimensions".into());
            }
            if self.qk_norm {
                problems.push("qk_norm with mla is not a known model: latent attention normalizes its latents instead".into());
            }
            if !self.rope {
                problems.push("mla needs rope: true (its mla.qk_rope_head_dim part carries the rotary embedding)".into());
            }
            if self.bias || self.has_qkv_bias() {
                problems.push(
                    "mla with biases is not a known model: set bias false (and leave qkv_bias out)"
                        .into(),
                );
            }
        }
        if problems.is_empty()
            && (self.moe.is_some() || self.mla.is_some() || self.head_dim.is_some())
        {
            let total = crate::formulas::published_parameter_count_wide(self);
            if total > crate::moe::MAX_PARAMETERS {
                problems.push(format!(
                    "the model has {total} parameters, over the limit of {}",
                    crate::moe::MAX_PARAMETERS
                ));
            }
        }
        match self.vocab_unpadded {
            Some(0) => problems.push("vocab_unpadded must be positive when given".into()),
            Some(unpadded) if unpadded > self.vocab => problems.push(format!(
                "vocab_unpadded ({unpadded}) must not exceed the padded vocab ({})",
                self.vocab
            )),
            _ => {}
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ModelError::Invalid {
                name: self.name.clone(),
                problems,
            })
        }
    }
}
