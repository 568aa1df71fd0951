//! The model part of Megatron-LM's argument list (`megatron_args.rs`):
//! `--num-layers`, `--hidden-size`, `--num-attention-heads` and
//! `--seq-length`, the block's flags (normalization, activation, biases,
//! dropout, positions, query groups, FFN size, untied embeddings), the
//! vocabulary (padded to `--make-vocab-size-divisible-by`, or a
//! tokenizer's) and the experts with their dispatcher.

use super::{Reader, VOCAB_DIVISIBLE_BY};
use scenario::MoeDispatcher;
use serde_json::{json, Map, Value};

impl Reader<'_> {
    /// The model from `--num-layers`, `--hidden-size`, … (absent: the
    /// scenario keeps its own model).
    pub(super) fn model(&mut self) {
        let Some(layers) = self.flags.number("num-layers", self.problems) else {
            return;
        };
        let mut spec = Map::new();
        spec.insert("name".into(), self.name.clone().into());
        spec.insert("layers".into(), layers.into());
        let hidden = self.required("hidden-size");
        let heads = self.required("num-attention-heads");
        let seq_len = self.required("seq-length");
        spec.insert("hidden".into(), hidden.into());
        spec.insert("heads".into(), heads.into());
        spec.insert("seq_len".into(), seq_len.into());
        self.note(
            format!("--num-layers {layers} --hidden-size {hidden} --num-attention-heads {heads} --seq-length {seq_len}"),
            format!("a model of {layers} layers, h = {hidden}, {heads} heads, s = {seq_len}"),
        );
        self.block(&mut spec, hidden, heads);
        self.vocabulary(&mut spec);
        self.experts(&mut spec);
        self.file.model = Some(Value::Object(spec));
    }

    /// `--name N`, which the model needs (missing: a problem, and 1).
    fn required(&mut self, name: &str) -> u64 {
        let value = self.flags.number(name, self.problems);
        if value.is_none() {
            self.problems.push(format!(
                "--{name} is missing (the model needs it with --num-layers)"
            ));
        }
        value.unwrap_or(1)
    }

    fn block(&mut self, spec: &mut Map<String, Value>, hidden: u64, heads: u64) {
        let swiglu = self.flags.switch("swiglu");
        // Megatron's default: 4h, or with --swiglu int((4h·2/3)/64)·64 (a size
        // past u64 is left at u64::MAX for the model's limit check).
        let default_ffn = if swiglu {
            hidden.checked_mul(8).map(|x| x / 3 / 64 * 64)
        } else {
            hidden.checked_mul(4)
        };
        let ffn = self
            .flags
            .number("ffn-hidden-size", self.problems)
            .unwrap_or(default_ffn.unwrap_or(u64::MAX));
        spec.insert("ffn_hidden".into(), ffn.into());
        spec.insert(
            "ffn_type".into(),
            if swiglu { "swiglu" } else { "gelu" }.into(),
        );
        let kv_heads = if self.flags.switch("group-query-attention") {
            self.flags
                .number("num-query-groups", self.problems)
                .unwrap_or(1)
        } else {
            heads
        };
        spec.insert("kv_heads".into(), kv_heads.into());
        if let Some(head_dim) = self.flags.number("kv-channels", self.problems) {
            if hidden.checked_div(heads) != Some(head_dim) {
                spec.insert("head_dim".into(), head_dim.into());
            }
        }
        let norm = self
            .flags
            .text("normalization", self.problems)
            .unwrap_or("LayerNorm".into());
        match norm.as_str() {
            "LayerNorm" => {}
            "RMSNorm" => drop(spec.insert("norm".into(), "rmsnorm".into())),
            other => self
                .problems
                .push(format!("--normalization {other}: LayerNorm or RMSNorm")),
        }
        let positions = self
            .flags
            .text("position-embedding-type", self.problems)
            .unwrap_or("learned_absolute".into());
        match positions.as_str() {
            "learned_absolute" => {}
            "rope" | "yarn" => drop(spec.insert("rope".into(), true.into())),
            other => self.problems.push(format!(
                "--position-embedding-type {other}: learned_absolute, rope or yarn are modeled"
            )),
        }
        let bias = !self.flags.switch("disable-bias-linear");
        spec.insert("bias".into(), bias.into());
        if self.flags.switch("add-qkv-bias") && !bias {
            spec.insert("qkv_bias".into(), true.into());
        }
        spec.insert(
            "tied_embeddings".into(),
            (!self.flags.switch("untie-embeddings-and-output-weights")).into(),
        );
        for (flag, key) in [
            ("attention-dropout", "attention_dropout"),
            ("hidden-dropout", "hidden_dropout"),
        ] {
            let rate = self.flags.float(flag, self.problems).unwrap_or(0.1);
            spec.insert(key.into(), rate.into());
        }
        self.note(
            "(the block's flags)".into(),
            format!(
                "{} MLP of {ffn}, {kv_heads} KV heads, {norm}, {positions} positions, biases {}, embeddings {}",
                if swiglu { "SwiGLU" } else { "GeLU" },
                if bias { "on" } else { "off" },
                if spec["tied_embeddings"] == Value::Bool(true) { "tied" } else { "untied" },
            ),
        );
    }

    /// `--padded-vocab-size` as given, else `--vocab-size` padded to a
    /// multiple of 128·tp as Megatron pads it.
    fn vocabulary(&mut self, spec: &mut Map<String, Value>) {
        let tp = u64::from(self.file.tp.unwrap_or(1));
        if let Some(padded) = self.flags.number("padded-vocab-size", self.problems) {
            spec.insert("vocab".into(), padded.into());
            self.note(
                format!("--padded-vocab-size {padded}"),
                format!("vocabulary {padded}"),
            );
            return;
        }
        let divisible_by = self
            .flags
            .number("make-vocab-size-divisible-by", self.problems)
            .unwrap_or(VOCAB_DIVISIBLE_BY);
        let tokenizer = self.flags.text("tokenizer-type", self.problems);
        let by_tokenizer = tokenizer.as_deref().and_then(tokenizer_vocabulary);
        let (vocab, argument) = match (self.flags.number("vocab-size", self.problems), by_tokenizer)
        {
            (Some(vocab), _) => (vocab, format!("--vocab-size {vocab}")),
            (None, Some(vocab)) => (
                vocab,
                format!("--tokenizer-type {}", tokenizer.unwrap_or_default()),
            ),
            (None, None) => {
                self.problems.push("the vocabulary: --vocab-size (or --padded-vocab-size) is needed; the tokenizer's own size is not in the arguments".into());
                return;
            }
        };
        if divisible_by == 0 {
            self.problems
                .push("--make-vocab-size-divisible-by 0: must be at least 1".into());
            return;
        }
        let multiple = divisible_by.saturating_mul(tp);
        let padded = vocab.div_ceil(multiple).saturating_mul(multiple);
        spec.insert("vocab".into(), padded.into());
        if padded != vocab {
            spec.insert("vocab_unpadded".into(), vocab.into());
        }
        self.note(
            argument,
            format!("vocabulary {vocab}, padded to {padded} (a multiple of {divisible_by}·tp)"),
        );
    }

    fn experts(&mut self, spec: &mut Map<String, Value>) {
        let Some(experts) = self.flags.number("num-experts", self.problems) else {
            return;
        };
        let top_k = self
            .flags
            .number("moe-router-topk", self.problems)
            .unwrap_or(2);
        let ffn = spec["ffn_hidden"].as_u64().unwrap_or(0);
        let expert_ffn = self
            .flags
            .number("moe-ffn-hidden-size", self.problems)
            .unwrap_or(ffn);
        let mut moe = json!({"experts": experts, "top_k": top_k, "expert_ffn_hidden": expert_ffn});
        if let Some(shared) = self
            .flags
            .number("moe-shared-expert-intermediate-size", self.problems)
        {
            moe["shared_experts"] = 1.into();
            moe["shared_expert_ffn_hidden"] = shared.into();
        }
        if let Some(frequency) = self.flags.text("moe-layer-freq", self.problems) {
            match frequency.parse::<u64>() {
                Ok(n) => moe["layer_frequency"] = n.into(),
                Err(_) => self.problems.push(format!("--moe-layer-freq {frequency}: only a whole number (every n-th layer) is modeled")),
            }
        }
        let dispatcher = self
            .flags
            .text("moe-token-dispatcher-type", self.problems)
            .unwrap_or("allgather".into());
        match dispatcher.as_str() {
            "alltoall" => self.file.options.moe_dispatcher = Some(MoeDispatcher::Nccl),
            "flex" => self.file.options.moe_dispatcher = Some(MoeDispatcher::Deepep),
            other => self.problems.push(format!("--moe-token-dispatcher-type {other} (Megatron's default is allgather): only alltoall and flex (DeepEP) are modeled")),
        }
        self.note(
            format!("--num-experts {experts} --moe-router-topk {top_k}"),
            format!(
                "{experts} experts of {expert_ffn}, {top_k} per token, {dispatcher} dispatcher"
            ),
        );
        spec.insert("moe".into(), moe);
    }
}

/// The vocabulary of a tokenizer Megatron names by type alone: Llama 2's
/// SentencePiece model (32,000: meta-llama/Llama-2-7b-hf `vocab_size`) and
/// GPT-2's BPE (50,257: openai-community/gpt2 `vocab_size`).
fn tokenizer_vocabulary(tokenizer: &str) -> Option<u64> {
    match tokenizer {
        "Llama2Tokenizer" => Some(32000),
        "GPT2BPETokenizer" => Some(50257),
        _ => None,
    }
}
