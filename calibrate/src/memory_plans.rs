//! What each memory-bound class runs at one size, as data: its buffers (type,
//! length, how they start), its launches (function, buffer and scalar
//! arguments, grid) and the bytes recorded for it. Pure, so the launch
//! geometry and byte counts are tested without a GPU; [`crate::memory_classes`]
//! allocates and launches a plan, [`crate::memory_reference`] computes what it
//! must produce.
//!
//! Sizes are rows × columns as a transformer layer produces them: tokens ×
//! hidden for LayerNorm and bias-dropout-add (hidden 1024–16384, tokens
//! 512–16384), b·heads·s × s attention scores for softmax and dropout
//! (s = 512–8192), tokens × ffn/t for GeLU and SwiGLU, and 1 × parameters
//! (4–512 M) for the optimizer phases. The recorded bytes are
//! [`MemoryKernelClass::bytes_per_element`] × rows × columns: what
//! `models::ops` counts for the model's kernel of that class at that size.

use models::memory_class::MemoryKernelClass;

/// Element type of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    Bf16,
    F32,
    /// A one-byte dropout mask value (0 or 1).
    U8,
}

impl Elem {
    pub fn bytes(self) -> u64 {
        match self {
            Elem::Bf16 => 2,
            Elem::F32 => 4,
            Elem::U8 => 1,
        }
    }
}

/// How a buffer starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fill {
    /// Random values uniform in [low, high), rounded to the element type.
    Uniform { low: f32, high: f32 },
    /// Zeros (a flag the kernel only sets).
    Zero,
    /// Written by the kernel; poisoned before a check.
    Output,
}

/// One buffer of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferSpec {
    pub role: &'static str,
    pub elem: Elem,
    /// Elements in one rotation slot.
    pub len: u64,
    pub fill: Fill,
    /// Whether each rotation slot has its own copy (tensors as big as the
    /// activation) or all slots share one (gamma, bias, scratch, flags).
    pub rotates: bool,
    /// Whether a check compares it with the CPU reference (outputs, and
    /// inputs a kernel updates in place).
    pub checked: bool,
}

/// A scalar kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    U32(u32),
    U64(u64),
    F32(f32),
}

/// One kernel launch: pointer arguments first (indices into the plan's
/// buffers), then scalars, as the kernel declares them.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchSpec {
    /// Index into [`crate::memory_kernels::function_names`].
    pub function: usize,
    pub buffers: Vec<usize>,
    pub scalars: Vec<Scalar>,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_mem_bytes: u32,
}

/// Rows × columns of one timed size (rows = 1 for the optimizer's flat
/// parameter buffers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassSize {
    pub rows: u64,
    pub cols: u64,
}

impl ClassSize {
    pub fn elements(self) -> u64 {
        self.rows * self.cols
    }
}

/// Everything one timed size of a class needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub class: MemoryKernelClass,
    pub size: ClassSize,
    /// Only for softmax: the causal mask is applied (what GPT runs).
    pub causal: bool,
    pub buffers: Vec<BufferSpec>,
    pub launches: Vec<LaunchSpec>,
    /// Bytes recorded for the measurement, as `models::ops` counts them.
    pub bytes: u64,
}

impl Plan {
    /// Bytes of one rotation slot of the rotating buffers.
    pub fn slot_bytes(&self) -> u64 {
        self.buffers
            .iter()
            .filter(|b| b.rotates)
            .map(|b| b.len * b.elem.bytes())
            .sum()
    }

    /// Device bytes for `slots` rotation slots.
    pub fn device_bytes(&self, slots: u64) -> u64 {
        self.buffers
            .iter()
            .map(|b| b.len * b.elem.bytes() * if b.rotates { slots } else { 1 })
            .sum()
    }

    /// Index of the buffer with this role.
    pub fn buffer(&self, role: &str) -> Option<usize> {
        self.buffers.iter().position(|b| b.role == role)
    }

    /// "layernorm over 4096 x 1024".
    pub fn describe(&self) -> String {
        let ClassSize { rows, cols } = self.size;
        if rows == 1 {
            format!("{} over {cols} parameters", self.class.name())
        } else {
            format!("{} over {rows} x {cols}", self.class.name())
        }
    }
}

/// Dropout probability of Megatron's attention and hidden dropout.
pub const DROPOUT_PROBABILITY: f64 = 0.1;
/// Seed of the dropout hash.
pub const DROPOUT_SEED: u32 = 0x5eed;
pub const LAYERNORM_EPS: f32 = 1e-5;
/// 1/√64: the attention scale for 64-wide heads.
pub const SOFTMAX_SCALE: f32 = 0.125;
/// 1/loss-scale of the unscale phase.
pub const INV_LOSS_SCALE: f32 = 1.0 / 65536.0;
/// AdamW hyperparameters: lr, β1, β2, ε, weight decay, step.
pub const ADAM: [f32; 5] = [1e-3, 0.9, 0.95, 1e-8, 0.1];
pub const ADAM_STEP: i32 = 1;

/// Hash values at or above this keep an element (probability 1 − p).
pub fn dropout_threshold() -> u32 {
    (DROPOUT_PROBABILITY * 4_294_967_296.0).min(u32::MAX as f64) as u32
}

/// What a kept element is multiplied by.
pub fn dropout_keep_scale() -> f32 {
    (1.0 / (1.0 - DROPOUT_PROBABILITY)) as f32
}

/// Largest dynamic shared memory a launch asks for: a block may have 48 KiB
/// in all without opting in, less 1 KiB for the kernels' static scratch.
pub const MAX_SHARED_MEM_BYTES: u64 = 47 * 1024;

const MI: u64 = 1 << 20;

/// The sizes a run times for `class` (one or two when `quick`).
pub fn sizes(class: MemoryKernelClass, quick: bool) -> Vec<ClassSize> {
    use MemoryKernelClass::*;
    let shapes: &[(u64, u64)] = match (class, quick) {
        // tokens x hidden
        (LayerNorm | LayerNormBackward | BiasDropoutAdd, false) => &[
            (512, 1024),
            (2048, 1024),
            (4096, 1024),
            (4096, 2048),
            (4096, 4096),
            (4096, 8192),
            (4096, 16384),
            (16384, 8192),
            (16384, 16384),
        ],
        (LayerNorm | LayerNormBackward | BiasDropoutAdd, true) => &[(4096, 1024), (4096, 8192)],
        // b·heads·s x s attention scores
        (Softmax | SoftmaxBackward | Dropout, false) => &[
            (4 * 512, 512),
            (16 * 512, 512),
            (16 * 1024, 1024),
            (16 * 2048, 2048),
            (8 * 4096, 4096),
            (4 * 8192, 8192),
        ],
        (Softmax | SoftmaxBackward | Dropout, true) => &[(16 * 1024, 1024), (16 * 2048, 2048)],
        // tokens x ffn/t
        (Gelu | Swiglu, false) => &[
            (2048, 1024),
            (2048, 4096),
            (4096, 4096),
            (4096, 8192),
            (4096, 16384),
            (8192, 16384),
            (16384, 16384),
        ],
        (Gelu | Swiglu, true) => &[(4096, 4096), (4096, 16384)],
        // parameters on one GPU
        (OptimizerCopy | OptimizerUnscale | OptimizerL2Norm | OptimizerAdam, false) => &[
            (1, 4 * MI),
            (1, 16 * MI),
            (1, 64 * MI),
            (1, 256 * MI),
            (1, 512 * MI),
        ],
        (OptimizerCopy | OptimizerUnscale | OptimizerL2Norm | OptimizerAdam, true) => {
            &[(1, 16 * MI), (1, 64 * MI)]
        }
    };
    shapes
        .iter()
        .map(|&(rows, cols)| ClassSize { rows, cols })
        .collect()
}

/// The small size each class is checked at against the CPU reference:
/// several rows, rows longer than a block's first pass, word counts that
/// are not multiples of 32.
pub fn check_size(class: MemoryKernelClass) -> ClassSize {
    use MemoryKernelClass::*;
    let (rows, cols) = match class {
        LayerNorm | LayerNormBackward | BiasDropoutAdd => (5, 1300),
        // Square score matrices: two of them, 264 keys per row.
        Softmax | SoftmaxBackward | Dropout => (528, 264),
        Gelu | Swiglu => (3, 1000),
        OptimizerCopy | OptimizerUnscale | OptimizerL2Norm | OptimizerAdam => (1, 10_004),
    };
    ClassSize { rows, cols }
}

/// Threads of a block that owns one row of `words` 4-element words: about
/// four words per thread, a multiple of 32, from 64 (an SM holds at most 32
/// blocks, so smaller blocks could not fill it) to 1024.
pub fn row_threads(words: u64) -> u32 {
    (words.div_ceil(4).div_ceil(32) * 32).clamp(64, 1024) as u32
}

/// Blocks of 256 threads for a grid-stride loop over `items`: enough to
/// fill the GPU (eight per SM), no more than there is work for.
pub fn stride_blocks(items: u64, sm_count: u32) -> u32 {
    items.div_ceil(256).clamp(1, 8 * sm_count.max(1) as u64) as u32
}

fn buffer(role: &'static str, elem: Elem, len: u64, fill: Fill) -> BufferSpec {
    let output = fill == Fill::Output;
    BufferSpec {
        role,
        elem,
        len,
        fill,
        rotates: true,
        checked: output,
    }
}

fn shared(mut spec: BufferSpec) -> BufferSpec {
    spec.rotates = false;
    spec
}

fn checked(mut spec: BufferSpec) -> BufferSpec {
    spec.checked = true;
    spec
}

fn uniform(low: f32, high: f32) -> Fill {
    Fill::Uniform { low, high }
}

fn launch(
    function: usize,
    buffers: &[usize],
    scalars: &[Scalar],
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_mem_bytes: u64,
) -> LaunchSpec {
    LaunchSpec {
        function,
        buffers: buffers.to_vec(),
        scalars: scalars.to_vec(),
        grid,
        block,
        // Saturates, so an impossible size fails the shared-memory check.
        shared_mem_bytes: shared_mem_bytes.min(u32::MAX as u64) as u32,
    }
}

/// The plan of `class` at `size` on a GPU with `sm_count` SMs (softmax
/// causal, as timed), or why it cannot run.
pub fn plan(class: MemoryKernelClass, size: ClassSize, sm_count: u32) -> Result<Plan, String> {
    plan_with(class, size, sm_count, true)
}

/// [`plan`] with the softmax's causal mask on or off.
pub fn plan_with(
    class: MemoryKernelClass,
    size: ClassSize,
    sm_count: u32,
    causal: bool,
) -> Result<Plan, String> {
    use MemoryKernelClass::*;
    use Scalar::{F32, U32, U64};
    let ClassSize { rows, cols } = size;
    let n = size.elements();
    let what = format!("{} over {rows} x {cols}", class.name());
    if rows == 0 || cols == 0 || !cols.is_multiple_of(4) {
        return Err(format!("{what}: columns must be a positive multiple of 4"));
    }
    // Grid x, rows and word counts are 32-bit in the kernels.
    if rows > i32::MAX as u64 || cols > u32::MAX as u64 || n / 4 > u32::MAX as u64 {
        return Err(format!("{what}: too large for 32-bit indices"));
    }
    let words = n / 4;
    let row_words = cols / 4;
    let (r32, c32) = (rows as u32, cols as u32);
    let row_grid = (r32, 1, 1);
    let row_block = (row_threads(row_words), 1, 1);
    let stride = (stride_blocks(words, sm_count), 1, 1);
    let threads = (256, 1, 1);
    let bf16 = Elem::Bf16;
    let f32 = Elem::F32;
    let mut softmax_causal = false;
    let (buffers, launches) = match class {
        LayerNorm => (
            vec![
                buffer("x", bf16, n, uniform(-0.5, 1.5)),
                shared(buffer("gamma", bf16, cols, uniform(0.5, 1.5))),
                shared(buffer("beta", bf16, cols, uniform(-0.1, 0.1))),
                buffer("y", bf16, n, Fill::Output),
                buffer("mean", f32, rows, Fill::Output),
                buffer("rstd", f32, rows, Fill::Output),
            ],
            vec![launch(
                0,
                &[0, 1, 2, 3, 4, 5],
                &[U32(r32), U32(c32), F32(LAYERNORM_EPS)],
                row_grid,
                row_block,
                cols * 2,
            )],
        ),
        LayerNormBackward => {
            let tiles = row_words.div_ceil(32);
            let wanted = (2 * sm_count.max(1) as u64).div_ceil(tiles);
            let rows_per_slab = rows.div_ceil(wanted.clamp(1, rows.min(1024)));
            let slabs = rows.div_ceil(rows_per_slab);
            (
                vec![
                    buffer("dy", bf16, n, uniform(-1.0, 1.0)),
                    buffer("x", bf16, n, uniform(-0.5, 1.5)),
                    buffer("mean", f32, rows, uniform(0.4, 0.6)),
                    buffer("rstd", f32, rows, uniform(0.8, 1.2)),
                    shared(buffer("gamma", bf16, cols, uniform(0.5, 1.5))),
                    buffer("dx", bf16, n, Fill::Output),
                    shared(BufferSpec {
                        checked: false,
                        ..buffer("partial", f32, 2 * slabs * cols, Fill::Output)
                    }),
                    shared(buffer("dgamma", f32, cols, Fill::Output)),
                    shared(buffer("dbeta", f32, cols, Fill::Output)),
                ],
                vec![
                    launch(
                        0,
                        &[0, 1, 2, 3, 4, 5],
                        &[U32(r32), U32(c32)],
                        row_grid,
                        row_block,
                        0,
                    ),
                    launch(
                        1,
                        &[0, 1, 2, 3, 6],
                        &[U32(r32), U32(c32), U32(rows_per_slab as u32)],
                        (tiles as u32, slabs as u32, 1),
                        (32, 8, 1),
                        0,
                    ),
                    launch(
                        2,
                        &[6, 7, 8],
                        &[U32(c32), U32(slabs as u32)],
                        (cols.div_ceil(256) as u32, 1, 1),
                        threads,
                        0,
                    ),
                ],
            )
        }
        Softmax => {
            softmax_causal = causal;
            (
                vec![
                    buffer("x", bf16, n, uniform(-4.0, 4.0)),
                    buffer("y", bf16, n, Fill::Output),
                ],
                vec![launch(
                    0,
                    &[0, 1],
                    &[U32(r32), U32(c32), U32(causal as u32), F32(SOFTMAX_SCALE)],
                    row_grid,
                    row_block,
                    cols * 2,
                )],
            )
        }
        SoftmaxBackward => (
            vec![
                buffer("dy", bf16, n, uniform(-1.0, 1.0)),
                buffer("y", bf16, n, uniform(0.0, 0.01)),
                buffer("dx", bf16, n, Fill::Output),
            ],
            vec![launch(
                0,
                &[0, 1, 2],
                &[U32(r32), U32(c32), F32(SOFTMAX_SCALE)],
                row_grid,
                row_block,
                cols * 4,
            )],
        ),
        Dropout => (
            vec![
                buffer("x", bf16, n, uniform(-1.0, 1.0)),
                buffer("y", bf16, n, Fill::Output),
                buffer("mask", Elem::U8, n, Fill::Output),
            ],
            vec![launch(
                0,
                &[0, 1, 2],
                &[
                    U64(words),
                    U32(dropout_threshold()),
                    F32(dropout_keep_scale()),
                    U32(DROPOUT_SEED),
                ],
                stride,
                threads,
                0,
            )],
        ),
        BiasDropoutAdd => (
            vec![
                buffer("x", bf16, n, uniform(-1.0, 1.0)),
                shared(buffer("bias", bf16, cols, uniform(-0.1, 0.1))),
                buffer("residual", bf16, n, uniform(-1.0, 1.0)),
                buffer("out", bf16, n, Fill::Output),
                buffer("mask", Elem::U8, n, Fill::Output),
            ],
            vec![launch(
                0,
                &[0, 1, 2, 3, 4],
                &[
                    U64(words),
                    U32(row_words as u32),
                    U32(dropout_threshold()),
                    F32(dropout_keep_scale()),
                    U32(DROPOUT_SEED),
                ],
                stride,
                threads,
                0,
            )],
        ),
        Gelu => (
            vec![
                buffer("x", bf16, n, uniform(-3.0, 3.0)),
                buffer("y", bf16, n, Fill::Output),
            ],
            vec![launch(0, &[0, 1], &[U64(words)], stride, threads, 0)],
        ),
        Swiglu => (
            vec![
                buffer("a", bf16, n, uniform(-3.0, 3.0)),
                buffer("b", bf16, n, uniform(-1.0, 1.0)),
                buffer("y", bf16, n, Fill::Output),
            ],
            vec![launch(0, &[0, 1, 2], &[U64(words)], stride, threads, 0)],
        ),
        OptimizerCopy => (
            vec![
                buffer("grad", bf16, n, uniform(-1.0, 1.0)),
                buffer("main_grad", f32, n, Fill::Output),
            ],
            vec![launch(0, &[0, 1], &[U64(words)], stride, threads, 0)],
        ),
        OptimizerUnscale => (
            vec![
                buffer("grad", f32, n, uniform(-65536.0, 65536.0)),
                buffer("unscaled", f32, n, Fill::Output),
                checked(shared(buffer("found_inf", f32, 1, Fill::Zero))),
            ],
            vec![launch(
                0,
                &[0, 1, 2],
                &[U64(words), F32(INV_LOSS_SCALE)],
                stride,
                threads,
                0,
            )],
        ),
        OptimizerL2Norm => {
            let blocks = words
                .div_ceil(256)
                .clamp(1, (8 * sm_count.max(1) as u64).min(1024));
            (
                vec![
                    buffer("grad", f32, n, uniform(-1.0, 1.0)),
                    shared(BufferSpec {
                        checked: false,
                        ..buffer("partial", f32, blocks, Fill::Output)
                    }),
                    shared(buffer("norm", f32, 1, Fill::Output)),
                ],
                vec![
                    launch(0, &[0, 1], &[U64(words)], (blocks as u32, 1, 1), threads, 0),
                    launch(1, &[1, 2], &[U32(blocks as u32)], (1, 1, 1), threads, 0),
                ],
            )
        }
        OptimizerAdam => {
            let [lr, beta1, beta2, eps, weight_decay] = ADAM;
            let correction1 = 1.0 - beta1.powi(ADAM_STEP);
            let correction2 = 1.0 - beta2.powi(ADAM_STEP);
            (
                vec![
                    checked(buffer("param", f32, n, uniform(-1.0, 1.0))),
                    buffer("grad", f32, n, uniform(-1.0, 1.0)),
                    checked(buffer("exp_avg", f32, n, uniform(-0.1, 0.1))),
                    checked(buffer("exp_avg_sq", f32, n, uniform(0.0, 0.01))),
                ],
                vec![launch(
                    0,
                    &[0, 1, 2, 3],
                    &[
                        U64(words),
                        F32(lr),
                        F32(beta1),
                        F32(beta2),
                        F32(eps),
                        F32(weight_decay),
                        F32(correction1),
                        F32(correction2),
                    ],
                    stride,
                    threads,
                    0,
                )],
            )
        }
    };
    if let Some(too_big) = launches
        .iter()
        .find(|l| l.shared_mem_bytes as u64 > MAX_SHARED_MEM_BYTES)
    {
        return Err(format!(
            "{what}: a row needs {} bytes of shared memory (at most {MAX_SHARED_MEM_BYTES})",
            too_big.shared_mem_bytes
        ));
    }
    Ok(Plan {
        class,
        size,
        causal: softmax_causal,
        buffers,
        launches,
        bytes: class.bytes_per_element() * n,
    })
}

/// Rotation slots so that the slots together exceed twice the L2 cache:
/// each repeat then reads data the previous ones evicted.
pub fn rotation_slots(slot_bytes: u64, l2_cache_bytes: u64) -> u64 {
    // The fewest slots holding more than 2·L2 bytes.
    let beyond_twice_l2 = l2_cache_bytes.saturating_mul(2).saturating_add(1);
    gpu::timing::slots_covering(beyond_twice_l2, slot_bytes, 4096)
}

#[cfg(test)]
#[path = "memory_plans_tests.rs"]
mod tests;
