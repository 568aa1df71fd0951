//! The optimizer step's kernels, listed one by one with the HBM bytes each
//! moves per parameter and the memory-bound class `calibrate` times it as,
//! so that phases it timed (copy, unscale, norm, Adam) are costed from their
//! measurements. Read from Megatron-LM's code of the time of the published
//! runs (`megatron/optimizer/optimizer.py`: `Float16OptimizerWithFloat16Params`
//! with local DDP; apex's fused Adam).
//!
//! The mixed-precision wrapper's phases (zero the gradients, copy them to
//! fp32, unscale, norm, copy the weights back) are the same for every
//! optimizer; the update between them is the optimizer's own
//! ([`update_phases`]), each read from the implementation
//! [`scenario::optimizer`] names, on fp32 master weights and gradients:
//! - Adam/AdamW, apex `multi_tensor_adam`: reads weight, gradient, both
//!   moments (16), writes weight and moments (12): 28 B.
//! - Lion, bitsandbytes `kOptimizer32bit1State`: reads weight, gradient,
//!   momentum (12), writes weight and momentum (8): 20 B.
//! - SGD with momentum, apex `multi_tensor_sgd`: the same 20 B.
//! - 8-bit Adam, bitsandbytes `kOptimizerStatic8bit2StateBlockwise`: reads
//!   weight and gradient (8) and the two 1-byte moments (2), writes weight
//!   and moments (6), and reads and writes both moments' fp32 absmax once
//!   per block of 256 (16/256): 16.0625 B.
//! - Adafactor, `torch.optim.Adafactor`'s `_single_tensor_adafactor` for a
//!   matrix (weight decay 0, its default): ten full-size kernels,
//!   68 B — the weight's norm (4), the gradient's row and column norms
//!   (4 + 4), the outer product of the factors (writes 4), its division by
//!   the row factor's mean (8), `clamp_` (8), `rsqrt_` (8), times the
//!   gradient (12), the update's norm (4), and the update added to the
//!   weight (12).
//! - 1-bit Adam, DeepSpeed `OnebitAdam.step` after `freeze_step`
//!   (`deepspeed/runtime/fp16/onebit/adam.py`, 38327e07), unfused torch
//!   ops on the fp32 flat buffer: the momentum update `exp_avg.mul_(β1)`
//!   (8) `.add_(1 − β1, grad)` (12) before the compressed all-reduce
//!   (costed with it: `cost::onebit`); after it `exp_avg_sq.sqrt()` (8),
//!   `+ eps` (8), the division (12), the weight decay's product (8) and sum
//!   (12), `−lr · update` (8) and `p.add_` (12): 88 B; the variance frozen.
//! - 1-bit LAMB, DeepSpeed `OnebitLamb.step` after `freeze_step`
//!   (`onebit/lamb.py`): before the compression the momentum's last value
//!   cloned (8), `mul_(β1)` (8), `add_` (12) and `mul_(scaling_coeff)` (8);
//!   after it `div_(scaling_coeff)` (8), the gradient reconstructed from
//!   the momenta (8 + 12 + 8), the fresh variance `mul_` (8) and `addcmul_`
//!   (16), `sqrt` and `+ eps` (8 + 8), `update_prelim` (12), the weight
//!   decay (8 + 12), the update's norm (8 + 4), the fresh denominator
//!   (8 + 8), the factor's ratio and max (12 + 4), the prelim update's norm
//!   (8 + 4) and the scaled update added (8 + 12): 220 B. Its `.item()`
//!   host syncs, a few per flat tensor, are not modeled.
//!
//! Phases no profile measures are costed together as one kernel
//! (`memory_bound.rs`); the per-tensor launches of the bitsandbytes and
//! Adafactor loops and Adafactor's two `.item()` syncs per tensor are not
//! modeled (the host issues the stack's `optimizer_kernels`).

use models::memory_class::MemoryKernelClass;
use scenario::optimizer::{ADAM8BIT_ABSMAX_BYTES_PER_BLOCK, ADAM8BIT_BLOCK_ELEMENTS};
use scenario::Optimizer;

/// HBM bytes per parameter of Megatron's fp16 optimizer step
/// (`Float16OptimizerWithFloat16Params.step` with local DDP), unfused:
/// zero the fp16 gradient buffer (2), `main_grad.float()` copy to fp32 (2 + 4),
/// unscale and inf check (4 + 4), gradient-norm read (4), fused Adam reading
/// fp32 weight, gradient, momentum and variance and writing weight, momentum
/// and variance (16 + 12), fp32 → fp16 weight copy (4 + 2). Gradient clipping
/// adds a scale pass (8) only when the norm exceeds the threshold; not counted.
pub const OPTIMIZER_BYTES_PER_PARAM_UNFUSED: f64 = 54.0;

/// The same with fp32 main gradients (fused accumulation): the buffer zeroing
/// writes 4 bytes and the fp16 → fp32 gradient copy disappears.
pub const OPTIMIZER_BYTES_PER_PARAM_FUSED: f64 = 50.0;

/// One kernel of the optimizer step: its name, the memory-bound class
/// `calibrate` times it as (`None` for "optimizer.zero_grad": the cost model
/// reads this, never the name), and its HBM bytes per parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimizerPhase {
    pub kernel: &'static str,
    pub class: Option<MemoryKernelClass>,
    pub bytes_per_param: f64,
}

const fn phase(
    kernel: &'static str,
    class: Option<MemoryKernelClass>,
    bytes_per_param: f64,
) -> OptimizerPhase {
    OptimizerPhase {
        kernel,
        class,
        bytes_per_param,
    }
}

/// The update of each optimizer: see the module header for the bytes.
const ADAM_UPDATE: [OptimizerPhase; 1] = [phase(
    "optimizer.adam",
    Some(MemoryKernelClass::OptimizerAdam),
    28.0,
)];
const LION_UPDATE: [OptimizerPhase; 1] = [phase("optimizer.lion", None, 20.0)];
const SGD_UPDATE: [OptimizerPhase; 1] = [phase("optimizer.sgd", None, 20.0)];
const ADAM8BIT_UPDATE: [OptimizerPhase; 1] = [phase(
    "optimizer.adam8bit",
    None,
    // The absmax of both moments, read and written once per block.
    16.0 + 2.0 * ADAM8BIT_ABSMAX_BYTES_PER_BLOCK as f64 / ADAM8BIT_BLOCK_ELEMENTS as f64,
)];
const ONEBIT_ADAM_UPDATE: [OptimizerPhase; 2] = [
    phase("optimizer.onebitadam.momentum", None, 8.0 + 12.0),
    phase(
        "optimizer.onebitadam.apply",
        None,
        8.0 + 8.0 + 12.0 + 8.0 + 12.0 + 8.0 + 12.0,
    ),
];
const ONEBIT_LAMB_UPDATE: [OptimizerPhase; 2] = [
    phase(
        "optimizer.onebitlamb.momentum",
        None,
        8.0 + 8.0 + 12.0 + 8.0,
    ),
    phase(
        "optimizer.onebitlamb.apply",
        None,
        8.0 + 28.0 + 24.0 + 16.0 + 12.0 + 20.0 + 12.0 + 16.0 + 16.0 + 12.0 + 20.0,
    ),
];
const ADAFACTOR_UPDATE: [OptimizerPhase; 10] = [
    phase("optimizer.adafactor.weight_norm", None, 4.0),
    phase("optimizer.adafactor.row_norms", None, 4.0),
    phase("optimizer.adafactor.column_norms", None, 4.0),
    phase("optimizer.adafactor.variance_estimate", None, 4.0),
    phase("optimizer.adafactor.normalize", None, 8.0),
    phase("optimizer.adafactor.clamp", None, 8.0),
    phase("optimizer.adafactor.rsqrt", None, 8.0),
    phase("optimizer.adafactor.times_gradient", None, 12.0),
    phase("optimizer.adafactor.update_norm", None, 4.0),
    phase("optimizer.adafactor.apply", None, 12.0),
];

/// The optimizer's own kernels between the wrapper's unscale and norm and
/// its copy of the weights back.
pub fn update_phases(optimizer: Optimizer) -> &'static [OptimizerPhase] {
    match optimizer {
        Optimizer::Adam | Optimizer::AdamW => &ADAM_UPDATE,
        Optimizer::Lion => &LION_UPDATE,
        Optimizer::Sgd => &SGD_UPDATE,
        Optimizer::Adam8bit => &ADAM8BIT_UPDATE,
        Optimizer::Adafactor => &ADAFACTOR_UPDATE,
        Optimizer::OneBitAdam => &ONEBIT_ADAM_UPDATE,
        Optimizer::OneBitLamb => &ONEBIT_LAMB_UPDATE,
    }
}

/// The wrapper's phases around the update: the main-gradient buffer zeroed
/// (2 or 4 bytes as wide as it is), a 2-byte buffer copied to fp32 (2 + 4),
/// unscale and inf check (4 + 4), the norm (4); after the update, the fp32 →
/// fp16/bf16 copy of the weights (4 + 2).
const ZERO_GRAD_FP16: OptimizerPhase = phase("optimizer.zero_grad", None, 2.0);
const ZERO_GRAD_FP32: OptimizerPhase = phase("optimizer.zero_grad", None, 4.0);
const COPY_GRADS_TO_FP32: OptimizerPhase = phase(
    "optimizer.copy",
    Some(MemoryKernelClass::OptimizerCopy),
    6.0,
);
const UNSCALE: OptimizerPhase = phase(
    "optimizer.unscale",
    Some(MemoryKernelClass::OptimizerUnscale),
    8.0,
);
const L2NORM: OptimizerPhase = phase(
    "optimizer.l2norm",
    Some(MemoryKernelClass::OptimizerL2Norm),
    4.0,
);
const COPY_PARAMS: OptimizerPhase = phase(
    "optimizer.copy_params",
    Some(MemoryKernelClass::OptimizerCopy),
    6.0,
);

/// The kernels of the optimizer step in order, with the bytes each moves
/// per parameter; Adam's add up to [`OPTIMIZER_BYTES_PER_PARAM_UNFUSED`]
/// or [`OPTIMIZER_BYTES_PER_PARAM_FUSED`].
pub fn optimizer_phases(fp32_main_grads: bool, optimizer: Optimizer) -> Vec<OptimizerPhase> {
    let mut phases = if fp32_main_grads {
        vec![ZERO_GRAD_FP32]
    } else {
        vec![ZERO_GRAD_FP16, COPY_GRADS_TO_FP32]
    };
    phases.extend([UNSCALE, L2NORM]);
    phases.extend_from_slice(update_phases(optimizer));
    phases.push(COPY_PARAMS);
    phases
}

/// HBM bytes per parameter of the optimizer step.
pub fn optimizer_bytes_per_param(fp32_main_grads: bool, optimizer: Optimizer) -> f64 {
    optimizer_phases(fp32_main_grads, optimizer)
        .iter()
        .map(|phase| phase.bytes_per_param)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimizer_phases_add_up_to_the_step_bytes_and_carry_their_classes() {
        for fused in [false, true] {
            for optimizer in Optimizer::ALL {
                let phases = optimizer_phases(fused, optimizer);
                for phase in &phases {
                    // The mark is the class the phase's name lists.
                    assert_eq!(
                        phase.class,
                        MemoryKernelClass::of_kernel(phase.kernel),
                        "{}",
                        phase.kernel
                    );
                    if let Some(class) = phase.class {
                        // A class's bytes per parameter are the phase's.
                        assert_eq!(
                            class.bytes_per_element() as f64,
                            phase.bytes_per_param,
                            "{}",
                            phase.kernel
                        );
                    }
                }
                // Only Adam's update is a class calibrate times.
                let classed_updates = update_phases(optimizer)
                    .iter()
                    .filter(|p| p.class.is_some())
                    .count();
                assert_eq!(classed_updates, usize::from(optimizer.is_adam()));
            }
            let adam: f64 = optimizer_phases(fused, Optimizer::Adam)
                .iter()
                .map(|p| p.bytes_per_param)
                .sum();
            let expected = if fused {
                OPTIMIZER_BYTES_PER_PARAM_FUSED
            } else {
                OPTIMIZER_BYTES_PER_PARAM_UNFUSED
            };
            assert_eq!(adam, expected, "fused {fused}");
        }
        assert!(optimizer_phases(true, Optimizer::Adam)
            .iter()
            .all(|p| p.kernel != "optimizer.copy"));
    }

    #[test]
    fn each_update_moves_its_implementation_s_bytes() {
        let update =
            |o: Optimizer| -> f64 { update_phases(o).iter().map(|p| p.bytes_per_param).sum() };
        // Adam: read w, g, m, v (4 × 4), write w, m, v (3 × 4).
        assert_eq!(update(Optimizer::Adam), 16.0 + 12.0);
        assert_eq!(update(Optimizer::AdamW), 28.0);
        // Lion and SGD: read w, g, m (3 × 4), write w, m (2 × 4).
        assert_eq!(update(Optimizer::Lion), 12.0 + 8.0);
        assert_eq!(update(Optimizer::Sgd), 20.0);
        // 8-bit Adam: w and g read (8), 1-byte m and v read (2), w, m, v
        // written (4 + 2), two fp32 absmax read and written per 256.
        assert_eq!(
            update(Optimizer::Adam8bit),
            8.0 + 2.0 + 6.0 + 2.0 * 2.0 * 4.0 / 256.0
        );
        // Adafactor: ten kernels, 4+4+4+4+8+8+8+12+4+12.
        assert_eq!(update_phases(Optimizer::Adafactor).len(), 10);
        assert_eq!(update(Optimizer::Adafactor), 68.0);
        // 1-bit Adam: momentum 8 + 12, then sqrt, eps, divide, decay ×,
        // decay +, −lr ×, add: 8 + 8 + 12 + 8 + 12 + 8 + 12.
        assert_eq!(update(Optimizer::OneBitAdam), 20.0 + 68.0);
        // 1-bit LAMB: 36 before, 184 after (the module header's list).
        assert_eq!(update(Optimizer::OneBitLamb), 36.0 + 184.0);
        // The whole unfused step: the wrapper's 2 + 6 + 8 + 4 before and 6 after.
        for optimizer in Optimizer::ALL {
            assert_eq!(
                optimizer_bytes_per_param(false, optimizer),
                26.0 + update(optimizer),
                "{optimizer:?}"
            );
        }
    }
}
