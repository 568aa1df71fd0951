//! The optimizer step's kernels, listed one by one with the HBM bytes each
//! moves per parameter and the memory-bound class `calibrate` times it as,
//! so that phases it timed (copy, unscale, norm, Adam) are costed from their
//! measurements. Read from Megatron-LM's code of the time of the published
//! runs (`megatron/optimizer/optimizer.py`: `Float16OptimizerWithFloat16Params`
//! with local DDP; apex's fused Adam).

use models::memory_class::MemoryKernelClass;

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

/// The unfused step's kernels in order; their bytes add up to
/// [`OPTIMIZER_BYTES_PER_PARAM_UNFUSED`].
const OPTIMIZER_PHASES_UNFUSED: [OptimizerPhase; 6] = [
    phase("optimizer.zero_grad", None, 2.0),
    phase(
        "optimizer.copy",
        Some(MemoryKernelClass::OptimizerCopy),
        6.0,
    ),
    phase(
        "optimizer.unscale",
        Some(MemoryKernelClass::OptimizerUnscale),
        8.0,
    ),
    phase(
        "optimizer.l2norm",
        Some(MemoryKernelClass::OptimizerL2Norm),
        4.0,
    ),
    phase(
        "optimizer.adam",
        Some(MemoryKernelClass::OptimizerAdam),
        28.0,
    ),
    phase(
        "optimizer.copy_params",
        Some(MemoryKernelClass::OptimizerCopy),
        6.0,
    ),
];

/// The fused step's kernels (fp32 main gradients: no copy to them, a 4-byte
/// zeroing); their bytes add up to [`OPTIMIZER_BYTES_PER_PARAM_FUSED`].
const OPTIMIZER_PHASES_FUSED: [OptimizerPhase; 5] = [
    phase("optimizer.zero_grad", None, 4.0),
    phase(
        "optimizer.unscale",
        Some(MemoryKernelClass::OptimizerUnscale),
        8.0,
    ),
    phase(
        "optimizer.l2norm",
        Some(MemoryKernelClass::OptimizerL2Norm),
        4.0,
    ),
    phase(
        "optimizer.adam",
        Some(MemoryKernelClass::OptimizerAdam),
        28.0,
    ),
    phase(
        "optimizer.copy_params",
        Some(MemoryKernelClass::OptimizerCopy),
        6.0,
    ),
];

/// The kernels of the optimizer step, with the bytes each moves per parameter.
pub fn optimizer_phases(fused_accumulation: bool) -> &'static [OptimizerPhase] {
    if fused_accumulation {
        &OPTIMIZER_PHASES_FUSED
    } else {
        &OPTIMIZER_PHASES_UNFUSED
    }
}

/// HBM bytes per parameter of the optimizer step.
pub fn optimizer_bytes_per_param(fused_accumulation: bool) -> f64 {
    if fused_accumulation {
        OPTIMIZER_BYTES_PER_PARAM_FUSED
    } else {
        OPTIMIZER_BYTES_PER_PARAM_UNFUSED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimizer_phases_add_up_to_the_step_bytes_and_carry_their_classes() {
        for fused in [false, true] {
            let phases = optimizer_phases(fused);
            let total: f64 = phases.iter().map(|p| p.bytes_per_param).sum();
            assert_eq!(total, optimizer_bytes_per_param(fused), "fused {fused}");
            for phase in phases {
                // The mark is the class the phase's name lists.
                assert_eq!(
                    phase.class,
                    MemoryKernelClass::of_kernel(phase.kernel),
                    "{}",
                    phase.kernel
                );
                match phase.class {
                    // A class's bytes per parameter are the phase's.
                    Some(class) => assert_eq!(
                        class.bytes_per_element() as f64,
                        phase.bytes_per_param,
                        "{}",
                        phase.kernel
                    ),
                    None => assert_eq!(phase.kernel, "optimizer.zero_grad"),
                }
            }
        }
        assert!(optimizer_phases(true)
            .iter()
            .all(|p| p.kernel != "optimizer.copy"));
    }
}
