//! Megatron-LM's arguments as a list of flags with their values, and why
//! each flag clustersim does not use is ignored. Flag names and defaults:
//! NVIDIA/Megatron-LM d98e8a64 (`megatron/training/arguments.py` and the
//! config dataclasses it builds flags from; `frameworks/fixtures/megatron/README.md`).

/// The arguments as given: each flag with the values that follow it, in
/// order (argparse: a flag given twice keeps its last value).
pub(crate) struct Flags {
    entries: Vec<(String, Vec<String>)>,
    used: Vec<bool>,
}

impl Flags {
    /// Splits `tokens` at each `--flag` (`--flag=value` too); a value before
    /// any flag is a problem.
    pub(crate) fn parse(tokens: &[String], problems: &mut Vec<String>) -> Flags {
        let mut entries: Vec<(String, Vec<String>)> = Vec::new();
        for token in tokens {
            if let Some(flag) = token.strip_prefix("--") {
                match flag.split_once('=') {
                    Some((name, value)) => {
                        entries.push((name.to_string(), vec![value.to_string()]))
                    }
                    None => entries.push((flag.to_string(), Vec::new())),
                }
            } else if let Some((_, values)) = entries.last_mut() {
                values.push(token.clone());
            } else {
                problems.push(format!("'{token}' comes before any --flag"));
            }
        }
        let used = vec![false; entries.len()];
        Flags { entries, used }
    }

    /// The last occurrence of `--name`, marked as read: its index.
    fn find(&mut self, name: &str) -> Option<usize> {
        let index = self.entries.iter().rposition(|(flag, _)| flag == name)?;
        for (i, (flag, _)) in self.entries.iter().enumerate() {
            if flag == name {
                self.used[i] = true;
            }
        }
        Some(index)
    }

    /// Whether the switch `--name` is given.
    pub(crate) fn switch(&mut self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// The value of `--name VALUE`; a missing value is a problem.
    pub(crate) fn text(&mut self, name: &str, problems: &mut Vec<String>) -> Option<String> {
        let index = self.find(name)?;
        let values = &self.entries[index].1;
        if values.is_empty() {
            problems.push(format!("--{name} needs a value"));
            return None;
        }
        Some(values.join(" "))
    }

    /// Every value of `--name V1 V2 …` (a list flag).
    pub(crate) fn list(&mut self, name: &str) -> Option<Vec<String>> {
        let index = self.find(name)?;
        Some(self.entries[index].1.clone())
    }

    /// The whole number `--name N`; anything else is a problem.
    pub(crate) fn number(&mut self, name: &str, problems: &mut Vec<String>) -> Option<u64> {
        let text = self.text(name, problems)?;
        match text.parse::<u64>() {
            Ok(n) => Some(n),
            Err(_) => {
                problems.push(format!("--{name} {text}: not a whole number"));
                None
            }
        }
    }

    /// The number `--name X`.
    pub(crate) fn float(&mut self, name: &str, problems: &mut Vec<String>) -> Option<f64> {
        let text = self.text(name, problems)?;
        match text.parse::<f64>() {
            Ok(x) if x.is_finite() => Some(x),
            _ => {
                problems.push(format!("--{name} {text}: not a number"));
                None
            }
        }
    }

    /// The flags no reader asked for, as written, with their values.
    pub(crate) fn unread(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .zip(&self.used)
            .filter(|(_, used)| !**used)
            .map(|((flag, values), _)| {
                let written = std::iter::once(format!("--{flag}"))
                    .chain(values.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" ");
                (flag.clone(), written)
            })
            .collect()
    }
}

/// Why clustersim does not use `--flag` (by its name); flags it does not
/// know say so.
pub(crate) fn ignored_because(flag: &str) -> &'static str {
    const DATA: &str = "data loading and tokenization are not timed";
    const LOGS: &str = "logging, evaluation and profiling are not part of a training iteration";
    const CHECKPOINTS: &str = "checkpoints are not part of a training iteration";
    const HYPER: &str = "a training hyperparameter: no effect on an iteration's time";
    const SAME_COST: &str = "no effect on the kernels' sizes: priced the same";
    const RUNTIME: &str = "a runtime setting of the framework, not modeled";
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| flag.starts_with(p));
    match flag {
        _ if starts(&["data-", "split", "mock-data", "num-workers", "tokenizer-", "vocab-file", "merge-file", "tiktoken-", "no-mmap", "no-create-attention-mask", "dataloader-", "reset-", "eod-mask"]) => DATA,
        _ if starts(&["log-", "tensorboard-", "wandb-", "eval-", "profile", "timing-log", "record-memory", "logging-"]) => LOGS,
        _ if starts(&["save", "load", "ckpt-", "no-load-", "async-save", "use-dist-ckpt", "finetune", "pretrained-checkpoint"]) => CHECKPOINTS,
        _ if starts(&["lr", "min-lr", "decoupled-", "weight-decay", "adam-", "clip-grad", "init-method", "seed", "train-iters", "train-samples", "exit-", "loss-scale", "initial-loss-scale", "min-loss-scale", "hysteresis", "optimizer", "sgd-", "start-weight-decay", "end-weight-decay", "override-opt", "use-checkpoint-opt", "calculate-per-token-loss", "step-batch-size-schedule", "rampup-batch-size"]) => HYPER,
        "rotary-base" | "rotary-percent" | "norm-epsilon" | "apply-layernorm-1p" | "max-position-embeddings" | "use-mcore-models" | "use-rotary-position-embeddings" | "no-position-embedding" | "rotary-seq-len-interpolation-factor" | "use-rope-scaling" | "rope-scaling-factor" | "moe-router-load-balancing-type" | "moe-aux-loss-coeff" | "moe-z-loss-coeff" | "moe-router-pre-softmax" | "moe-router-score-function" | "moe-router-dtype" | "kv-channels" => SAME_COST,
        "use-flash-attn" | "attention-backend" | "transformer-impl" => "the stack decides: megatron-core-2024 runs Transformer Engine's fused attention",
        "manual-gc" | "empty-unused-memory-level" | "distributed-timeout-minutes" | "distributed-backend" | "no-masked-softmax-fusion" | "no-bias-gelu-fusion" | "no-bias-dropout-fusion" | "cross-entropy-loss-fusion" | "cross-entropy-fusion-impl" | "use-torch-fsdp2" | "ddp-bucket-size" | "ddp-average-in-collective" | "overlap-p2p-communication" | "no-overlap-p2p-communication" | "align-param-gather" | "check-for-nan-in-loss-and-grad" => RUNTIME,
        "fp8-amax-history-len" | "fp8-amax-compute-algo" | "fp8-margin" | "fp8-interval" => "delayed scaling's amax bookkeeping: priced as the stack's one scale update",
        "fp8-param-gather" => "FP8 parameter all-gathers are not modeled: gathered in bf16",
        "moe-grouped-gemm" => "grouped GEMMs are not modeled: each local expert's GEMMs priced as kernels of their own",
        _ => "not known to clustersim: check it does not change the step's time",
    }
}
