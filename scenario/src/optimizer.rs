//! The optimizer a run trains with (`optimizer`, `--optimizer`): what state
//! it keeps per parameter and which implementation's kernels price its step
//! (`sim::cost::optimizer_step`).
//!
//! Every optimizer runs under mixed precision as Megatron-LM wraps any
//! torch optimizer (`Float16OptimizerWithFloat16Params`, or the distributed
//! optimizer): fp16/bf16 weights and gradients outside it, fp32 master
//! weights inside it (4 bytes per parameter), plus the optimizer's own state:
//!
//! | optimizer | state per parameter beside the master weights | implementation priced |
//! |---|---|---|
//! | adam, adamw | two fp32 moments, 8 B (ZeRO paper Sec. 3.1: K = 12 with the master weights) | apex / Transformer Engine `FusedAdam` (Megatron's `--optimizer adam` is AdamW: `adam_w_mode`) |
//! | adafactor | the factored second moment: r + c fp32 values per r×c matrix (Shazeer & Stern 2018, Sec. 3), no first moment | `torch.optim.Adafactor` (pytorch 051d6a09, `_single_tensor_adafactor`, its default `foreach=None`) |
//! | adam8bit | two 1-byte block-quantized moments and one fp32 absmax per moment per block of 256 (Dettmers et al. 2022; bitsandbytes 95f9af30 `Optimizer2State.init_state`: `blocksize = 256`) | bitsandbytes `kOptimizerStatic8bit2StateBlockwise` |
//! | lion | one fp32 momentum, 4 B (Chen et al. 2023, Alg. 2: Lion keeps only the momentum) | bitsandbytes 32-bit `Lion` (`kOptimizer32bit1State`) |
//! | sgd | one fp32 momentum buffer, 4 B (Megatron-LM `--optimizer sgd`, `--sgd-momentum` 0.9) | apex / Transformer Engine `FusedSGD` |
//! | onebitadam | Adam's two fp32 moments and the compression's fp32 `worker_error`, 12 B, plus `server_error`, 4 B over the data-parallel size (counted by the memory model) | DeepSpeed `OneBitAdam` (Tang et al. 2021) in its compressed stage: the momentum reduced by `compressed_allreduce` |
//! | onebitlamb | LAMB's two fp32 moments, the fresh variance `exp_avg_sq_fresh` and `worker_error`, 16 B, plus `server_error` as above | DeepSpeed `OnebitLamb` (Li et al. 2021, arXiv 2104.06069) in its compressed stage, the same `compressed_allreduce` |
//!
//! Not counted: Adafactor's factors and the unfactored second moment of its
//! 1-D parameters (norm weights, biases): (r + c)/(r·c) of a matrix's
//! elements, under 1% for every matrix side of 256 or more; bitsandbytes'
//! fp32 states for tensors under `min_8bit_size` (4,096 elements: norm
//! weights and biases). Under ZeRO the states shard with the parameters
//! (rounded up per rank), as Megatron's distributed optimizer shards its
//! flat buffer; whether an implementation accepts a shard (Adafactor's
//! factors need whole matrices) is not checked.

use crate::options::TrainingOptions;
use crate::problem::Problem;
use serde::{Deserialize, Serialize};

/// fp32 master weights, kept by the mixed-precision wrapper for every optimizer.
pub const MASTER_WEIGHT_BYTES_PER_PARAM: u64 = 4;

/// Elements per block of bitsandbytes' block-wise 8-bit states
/// (`Optimizer2State.init_state`, bitsandbytes 95f9af30).
pub const ADAM8BIT_BLOCK_ELEMENTS: u64 = 256;

/// Bytes of the block-wise states' scales per block: one fp32 absmax for
/// each of the two moments (`absmax1`, `absmax2`).
pub const ADAM8BIT_ABSMAX_BYTES_PER_BLOCK: u64 = 8;

/// The optimizer of a training run.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    /// Adam with two fp32 moments (the default).
    #[default]
    #[cfg_attr(feature = "clap", value(name = "adam"))]
    Adam,
    /// AdamW: Adam with decoupled weight decay; the same state and kernels.
    #[cfg_attr(feature = "clap", value(name = "adamw"))]
    AdamW,
    /// Adafactor: a factored second moment, no first moment.
    #[cfg_attr(feature = "clap", value(name = "adafactor"))]
    Adafactor,
    /// 8-bit Adam (bitsandbytes): block-wise quantized moments.
    #[cfg_attr(feature = "clap", value(name = "adam8bit"))]
    Adam8bit,
    /// Lion: one momentum, sign updates.
    #[cfg_attr(feature = "clap", value(name = "lion"))]
    Lion,
    /// SGD with momentum.
    #[cfg_attr(feature = "clap", value(name = "sgd"))]
    Sgd,
    /// DeepSpeed's 1-bit Adam after its warm-up: the variance frozen, the
    /// momentum all-reduced as error-compensated signs instead of the gradients.
    #[cfg_attr(feature = "clap", value(name = "onebitadam"))]
    OneBitAdam,
    /// DeepSpeed's 1-bit LAMB after its warm-up: LAMB's layer-wise scaling
    /// on 1-bit Adam's compressed momentum, with a fresh variance estimate.
    #[cfg_attr(feature = "clap", value(name = "onebitlamb"))]
    OneBitLamb,
}

impl Optimizer {
    /// Every optimizer, in the order lists and sweeps use.
    pub const ALL: [Optimizer; 8] = [
        Optimizer::Adam,
        Optimizer::AdamW,
        Optimizer::Adafactor,
        Optimizer::Adam8bit,
        Optimizer::Lion,
        Optimizer::Sgd,
        Optimizer::OneBitAdam,
        Optimizer::OneBitLamb,
    ];

    /// The name of the scenario key's value and the flag's.
    pub fn name(self) -> &'static str {
        match self {
            Optimizer::Adam => "adam",
            Optimizer::AdamW => "adamw",
            Optimizer::Adafactor => "adafactor",
            Optimizer::Adam8bit => "adam8bit",
            Optimizer::Lion => "lion",
            Optimizer::Sgd => "sgd",
            Optimizer::OneBitAdam => "onebitadam",
            Optimizer::OneBitLamb => "onebitlamb",
        }
    }

    /// The optimizer as summaries name its states ("weights+grads+Adam").
    pub fn display_name(self) -> &'static str {
        match self {
            Optimizer::Adam => "Adam",
            Optimizer::AdamW => "AdamW",
            Optimizer::Adafactor => "Adafactor",
            Optimizer::Adam8bit => "8-bit Adam",
            Optimizer::Lion => "Lion",
            Optimizer::Sgd => "SGD",
            Optimizer::OneBitAdam => "1-bit Adam",
            Optimizer::OneBitLamb => "1-bit LAMB",
        }
    }

    /// What the optimizer keeps and whose kernels price its step, in words.
    pub fn description(self) -> &'static str {
        match self {
            Optimizer::Adam | Optimizer::AdamW => {
                "fp32 master weights and two fp32 moments (12 B per parameter); apex FusedAdam"
            }
            Optimizer::Adafactor => {
                "fp32 master weights and a factored second moment (4 B per parameter; the row \
                 and column factors not counted); torch.optim.Adafactor"
            }
            Optimizer::Adam8bit => {
                "fp32 master weights and two block-wise 8-bit moments (6 B per parameter plus \
                 8 B per block of 256); bitsandbytes Adam8bit"
            }
            Optimizer::Lion => {
                "fp32 master weights and one fp32 momentum (8 B per parameter); bitsandbytes Lion"
            }
            Optimizer::Sgd => {
                "fp32 master weights and one fp32 momentum buffer (8 B per parameter); apex FusedSGD"
            }
            Optimizer::OneBitAdam => {
                "fp32 master weights, two fp32 moments and the worker's compression error (16 B \
                 per parameter) plus the server's (4 B over d); DeepSpeed OneBitAdam after its \
                 warm-up, the momentum all-reduced as signs"
            }
            Optimizer::OneBitLamb => {
                "fp32 master weights, two fp32 moments, the fresh variance and the worker's \
                 compression error (20 B per parameter) plus the server's (4 B over d); DeepSpeed \
                 OnebitLamb after its warm-up, the momentum all-reduced as signs"
            }
        }
    }

    /// Bytes of optimizer state (master weights included) for `params`
    /// parameters held whole; see the module header for what is not counted.
    pub fn state_bytes(self, params: u64) -> u64 {
        let master = params.saturating_mul(MASTER_WEIGHT_BYTES_PER_PARAM);
        let own = match self {
            // The ZeRO paper's K = 12 counts the master weights too.
            Optimizer::Adam | Optimizer::AdamW => params.saturating_mul(
                models::memory::OPTIMIZER_BYTES_PER_PARAM - MASTER_WEIGHT_BYTES_PER_PARAM,
            ),
            Optimizer::Lion | Optimizer::Sgd => params.saturating_mul(4),
            // exp_avg, exp_avg_sq and worker_error, fp32 (the server's
            // error, 1/d of them, is `onebit_server_error_bytes`).
            Optimizer::OneBitAdam => params.saturating_mul(12),
            // exp_avg, exp_avg_sq, exp_avg_sq_fresh and worker_error.
            Optimizer::OneBitLamb => params.saturating_mul(16),
            Optimizer::Adafactor => 0,
            Optimizer::Adam8bit => params.saturating_mul(2).saturating_add(
                params
                    .div_ceil(ADAM8BIT_BLOCK_ELEMENTS)
                    .saturating_mul(ADAM8BIT_ABSMAX_BYTES_PER_BLOCK),
            ),
        };
        master.saturating_add(own)
    }

    /// Adam or AdamW: the optimizers whose step ZeRO-Offload's CPU Adam
    /// prices (the profiles time DeepSpeed's CPU Adam only; DeepSpeed also
    /// has CPU Adagrad and Lion, which nobody here has timed) and whose step
    /// zero-bubble post-validation can invert.
    pub fn is_adam(self) -> bool {
        matches!(self, Optimizer::Adam | Optimizer::AdamW)
    }

    pub fn is_default(&self) -> bool {
        *self == Optimizer::default()
    }

    /// 1-bit Adam or 1-bit LAMB: the momentum, not the gradients, is
    /// all-reduced, compressed to signs (`sim::cost::onebit`).
    pub fn compresses_momentum(self) -> bool {
        matches!(self, Optimizer::OneBitAdam | Optimizer::OneBitLamb)
    }

    /// 1-bit Adam's `server_error` for `params` parameters over
    /// `data_parallel` ranks: fp32, 1/d of the padded momentum (0 for any
    /// other optimizer). DeepSpeed pads each tensor to a multiple of
    /// d·lcm(d, 8) elements (`corrected_tensor_size`).
    pub fn onebit_server_error_bytes(self, params: u64, data_parallel: u32) -> u64 {
        if !self.compresses_momentum() {
            return 0;
        }
        onebit_padded_elements(params, data_parallel).div_ceil(u64::from(data_parallel.max(1))) * 4
    }
}

/// The momentum's length after DeepSpeed's padding for `data_parallel`
/// ranks: a multiple of d · `divider`, `divider` = d·8/gcd(d, 8)
/// (`OnebitAdam.__init__`, `corrected_tensor_size`).
pub fn onebit_padded_elements(elements: u64, data_parallel: u32) -> u64 {
    let d = u64::from(data_parallel.max(1));
    let divider = d * 8 / gcd(d, 8);
    elements.div_ceil(d * divider).saturating_mul(d * divider)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// What the other options refuse of a non-Adam optimizer, appended to
/// `problems` under the `optimizer` key.
pub(crate) fn check_compatible(options: &TrainingOptions, problems: &mut Vec<Problem>) {
    let optimizer = options.optimizer;
    if options.offload.is_some() && !optimizer.is_adam() {
        problems.push(Problem::new(
            "optimizer",
            format!(
                "{} is not priced under zero_offload: the CPU step is DeepSpeed's CPU Adam, the only one \
                 the profiles time (use adam or adamw, or drop --zero-offload)",
                optimizer.name()
            ),
        ));
    }
    if optimizer.compresses_momentum() {
        check_onebit(options, problems);
    }
    if options.optimizer_post_validation && !optimizer.is_adam() {
        problems.push(Problem::new(
            "optimizer",
            format!(
                "{} cannot run with optimizer_post_validation: its rollback inverts an AdamW step \
                 (the zero-bubble source's zbpp_optimizer_helper.py), so it needs adam or adamw",
                optimizer.name()
            ),
        ));
    }
}

/// What 1-bit Adam refuses: DeepSpeed's engine asserts "1bit-Adam is not
/// compatible with ZeRO" (`_configure_basic_optimizer`, any stage ≥ 1, so
/// the distributed optimizer too) and turns the backward's gradient
/// all-reduce off (`enable_backward_allreduce = False`): the momentum is
/// reduced inside the step, so nothing overlaps the backward.
fn check_onebit(options: &TrainingOptions, problems: &mut Vec<Problem>) {
    if options.distributed_optimizer {
        problems.push(Problem::new(
            "optimizer",
            format!(
                "{} is not compatible with ZeRO (DeepSpeed asserts it), which the distributed \
             optimizer is: add --distributed-optimizer=false (and no --zero-stage)",
                options.optimizer.name()
            ),
        ));
    }
    if options.overlap_grad_reduce {
        problems.push(Problem::new(
            "optimizer",
            format!(
                "{} turns the backward's gradient all-reduce off and reduces the momentum in \
             the step, so nothing overlaps the backward: add --overlap-grad-reduce=false",
                options.optimizer.name()
            ),
        ));
    }
    if options.network_contention {
        problems.push(Problem::new(
            "optimizer",
            format!(
                "{}'s compressed all-reduce is not modeled as fabric flows: drop --contention",
                options.optimizer.name()
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_bytes_per_parameter_are_the_implementations() {
        let n = 1_000_000_u64;
        // Adam: fp32 master 4 + exp_avg 4 + exp_avg_sq 4.
        assert_eq!(Optimizer::Adam.state_bytes(n), 12 * n);
        assert_eq!(Optimizer::AdamW.state_bytes(n), 12 * n);
        // Lion: master 4 + exp_avg 4; SGD: master 4 + momentum_buffer 4.
        assert_eq!(Optimizer::Lion.state_bytes(n), 8 * n);
        assert_eq!(Optimizer::Sgd.state_bytes(n), 8 * n);
        // Adafactor: master 4 (factors not counted).
        assert_eq!(Optimizer::Adafactor.state_bytes(n), 4 * n);
        // 8-bit Adam: master 4 + state1 1 + state2 1, and ⌈n/256⌉ blocks of
        // two fp32 absmax: 1e6/256 = 3906.25 → 3,907 blocks × 8 B.
        assert_eq!(Optimizer::Adam8bit.state_bytes(n), 6 * n + 3_907 * 8);
        assert_eq!(Optimizer::Adam8bit.state_bytes(256), 6 * 256 + 8);
        assert_eq!(Optimizer::Adam8bit.state_bytes(257), 6 * 257 + 16);
        assert_eq!(Optimizer::Adam8bit.state_bytes(0), 0);
        // 1-bit Adam: master 4 + exp_avg 4 + exp_avg_sq 4 + worker_error 4.
        assert_eq!(Optimizer::OneBitAdam.state_bytes(n), 16 * n);
        // 1-bit LAMB: those and exp_avg_sq_fresh, 4 more.
        assert_eq!(Optimizer::OneBitLamb.state_bytes(n), 20 * n);
        // server_error: 1e6 padded to a multiple of 12 · lcm(12, 8) = 288
        // (3,473 · 288 = 1,000,224), 1/12 of it (83,352) × 4 B.
        assert_eq!(onebit_padded_elements(n, 12), 1_000_224);
        assert_eq!(
            Optimizer::OneBitAdam.onebit_server_error_bytes(n, 12),
            83_352 * 4
        );
        assert_eq!(Optimizer::Adam.onebit_server_error_bytes(n, 12), 0);
    }

    #[test]
    fn offload_and_post_validation_take_adam_only() {
        let problems = |file: crate::TrainingOptionsFile| {
            let mut problems = Vec::new();
            check_compatible(&file.with_defaults(), &mut problems);
            problems
        };
        for optimizer in Optimizer::ALL {
            let offload = problems(crate::TrainingOptionsFile {
                zero_offload: Some(true),
                optimizer: Some(optimizer),
                ..Default::default()
            });
            let post_validation = problems(crate::TrainingOptionsFile {
                optimizer_post_validation: Some(true),
                optimizer: Some(optimizer),
                ..Default::default()
            });
            let expected = usize::from(!optimizer.is_adam());
            assert_eq!(offload.len(), expected, "{optimizer:?} {offload:?}");
            assert_eq!(post_validation.len(), expected, "{optimizer:?}");
            for problem in offload.iter().chain(&post_validation) {
                assert_eq!(problem.field(), "optimizer");
                let line = problem.to_string();
                assert!(
                    line.starts_with(&format!("optimizer: {} ", optimizer.name())),
                    "{line}"
                );
            }
        }
    }

    #[test]
    fn names_round_trip_through_serde_and_huge_counts_saturate() {
        for optimizer in Optimizer::ALL {
            let json = serde_json::to_string(&optimizer).unwrap();
            assert_eq!(json, format!("\"{}\"", optimizer.name()));
            assert_eq!(serde_json::from_str::<Optimizer>(&json).unwrap(), optimizer);
            assert_eq!(optimizer.state_bytes(u64::MAX), u64::MAX);
        }
        assert!(serde_json::from_str::<Optimizer>("\"adagrad\"").is_err());
    }
}
