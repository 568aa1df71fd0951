//! What each memory-bound class kernel must compute, on the CPU in f64: the
//! reference a GPU check holds a kernel's output against
//! ([`crate::memory_classes::check_class`]), with the host side of that
//! check (inputs rounded to their element type, poisoned outputs, byte
//! encoding) and the comparison (relative Frobenius error, exact masks).

use crate::memory_plans::{self, Elem, Fill, Plan};
use half::bf16;
use models::memory_class::MemoryKernelClass;

/// A byte no mask holds (masks are 0 or 1): what a mask is poisoned with.
pub const MASK_POISON: u8 = 0xAB;

/// `value` as the bf16 the GPU stores (round to nearest even).
pub fn bf16_round(value: f32) -> f32 {
    bf16::from_f32(value).to_f32()
}

/// The dropout kernels' hash of an element index (SplitMix64's finaliser),
/// bit for bit as the CUDA `hash32`.
pub fn hash32(index: u64, seed: u32) -> u32 {
    let mut z = index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((seed as u64) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 32) as u32
}

/// Whether dropout keeps element `index`.
pub fn dropout_keeps(index: u64) -> bool {
    hash32(index, memory_plans::DROPOUT_SEED) >= memory_plans::dropout_threshold()
}

/// `len` seeded values uniform in [low, high), as the element type holds them.
pub fn uniform_values(elem: Elem, low: f32, high: f32, seed: u64, len: usize) -> Vec<f32> {
    gpu::random::signed_values(seed, len, 1.0)
        .into_iter()
        .map(|v| {
            let value = low + (v + 1.0) * 0.5 * (high - low);
            match elem {
                Elem::Bf16 => bf16_round(value),
                Elem::F32 => value,
                Elem::U8 => value.round().clamp(0.0, 255.0),
            }
        })
        .collect()
}

/// Host values of every buffer of `plan` for a check: random inputs in
/// their range rounded to their element type, zeros, and poison (NaN,
/// [`MASK_POISON`]) where the kernel must write.
pub fn host_inputs(plan: &Plan, seed: u64) -> Vec<Vec<f32>> {
    plan.buffers
        .iter()
        .enumerate()
        .map(|(index, buffer)| {
            let len = buffer.len as usize;
            match buffer.fill {
                Fill::Uniform { low, high } => {
                    uniform_values(buffer.elem, low, high, seed.wrapping_add(index as u64), len)
                }
                Fill::Zero => vec![0.0; len],
                Fill::Output => match buffer.elem {
                    Elem::U8 => vec![MASK_POISON as f32; len],
                    Elem::Bf16 | Elem::F32 => vec![f32::NAN; len],
                },
            }
        })
        .collect()
}

/// Values as the device stores them (little-endian).
pub fn encode(elem: Elem, values: &[f32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * elem.bytes() as usize);
    for &value in values {
        match elem {
            Elem::Bf16 => bytes.extend(bf16::from_f32(value).to_bits().to_le_bytes()),
            Elem::F32 => bytes.extend(value.to_le_bytes()),
            Elem::U8 => bytes.push(value as u8),
        }
    }
    bytes
}

/// Device bytes back to values (a trailing partial element is ignored).
pub fn decode(elem: Elem, bytes: &[u8]) -> Vec<f32> {
    match elem {
        Elem::Bf16 => bytes
            .chunks_exact(2)
            .map(|b| bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
            .collect(),
        Elem::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        Elem::U8 => bytes.iter().map(|&b| b as f32).collect(),
    }
}

/// ‖got − expected‖₂ / ‖expected‖₂; infinite when the lengths differ or
/// `got` holds a value that is not finite where `expected` is finite (an
/// unwritten, poisoned element).
pub fn relative_error(got: &[f32], expected: &[f32]) -> f64 {
    if got.len() != expected.len() {
        return f64::INFINITY;
    }
    let (mut difference, mut norm) = (0.0f64, 0.0f64);
    for (&g, &e) in got.iter().zip(expected) {
        if !g.is_finite() && e.is_finite() {
            return f64::INFINITY;
        }
        difference += (g as f64 - e as f64).powi(2);
        norm += (e as f64).powi(2);
    }
    if norm == 0.0 {
        return if difference == 0.0 {
            0.0
        } else {
            f64::INFINITY
        };
    }
    (difference / norm).sqrt()
}

/// How one checked buffer compared with the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferCheck {
    pub role: &'static str,
    /// Relative Frobenius error (of the change, for buffers updated in place).
    pub relative_error: f64,
    /// Mask entries that differ (0 for value buffers).
    pub mismatches: usize,
}

/// Compares the downloaded checked buffers (`outputs`: buffer index and
/// values) with the reference computed from `inputs`.
pub fn compare(
    plan: &Plan,
    inputs: &[Vec<f32>],
    outputs: &[(usize, Vec<f32>)],
) -> Vec<BufferCheck> {
    let expected = reference(plan, inputs);
    expected
        .into_iter()
        .map(|(index, want)| {
            let spec = &plan.buffers[index];
            let got = outputs
                .iter()
                .find(|(i, _)| *i == index)
                .map(|(_, values)| values.as_slice())
                .unwrap_or(&[]);
            if spec.elem == Elem::U8 {
                let mismatches = if got.len() == want.len() {
                    got.iter().zip(&want).filter(|(g, w)| g != w).count()
                } else {
                    want.len().max(1)
                };
                return BufferCheck {
                    role: spec.role,
                    relative_error: if mismatches == 0 { 0.0 } else { f64::INFINITY },
                    mismatches,
                };
            }
            let relative_error = if matches!(spec.fill, Fill::Uniform { .. }) {
                // Updated in place: compare what changed.
                let start = &inputs[index];
                let delta = |values: &[f32]| -> Vec<f32> {
                    values.iter().zip(start).map(|(v, s)| v - s).collect()
                };
                relative_error(&delta(got), &delta(&want))
            } else {
                relative_error(got, &want)
            };
            BufferCheck {
                role: spec.role,
                relative_error,
                mismatches: 0,
            }
        })
        .collect()
}

/// The values every checked buffer of `plan` must hold after its launches,
/// from the host inputs of [`host_inputs`].
pub fn reference(plan: &Plan, inputs: &[Vec<f32>]) -> Vec<(usize, Vec<f32>)> {
    use MemoryKernelClass::*;
    let get = |role: &str| -> &[f32] {
        plan.buffer(role)
            .map(|index| inputs[index].as_slice())
            .unwrap_or(&[])
    };
    let at = |role: &str| plan.buffer(role).unwrap_or(usize::MAX);
    let (rows, cols) = (plan.size.rows as usize, plan.size.cols as usize);
    let outputs: Vec<(&str, Vec<f32>)> = match plan.class {
        LayerNorm => {
            let (y, mean, rstd) = layernorm(get("x"), get("gamma"), get("beta"), rows, cols);
            vec![("y", y), ("mean", mean), ("rstd", rstd)]
        }
        LayerNormBackward => {
            let (dx, dgamma, dbeta) = layernorm_backward(
                get("dy"),
                get("x"),
                get("mean"),
                get("rstd"),
                get("gamma"),
                cols,
            );
            vec![("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta)]
        }
        Softmax => vec![("y", softmax(get("x"), cols, plan.causal))],
        SoftmaxBackward => vec![("dx", softmax_backward(get("dy"), get("y"), cols))],
        Dropout => {
            let (y, mask) = dropout(get("x"), None, None);
            vec![("y", y), ("mask", mask)]
        }
        BiasDropoutAdd => {
            let (out, mask) = dropout(get("x"), Some(get("bias")), Some(get("residual")));
            vec![("out", out), ("mask", mask)]
        }
        Gelu => vec![("y", get("x").iter().map(|&v| gelu(v)).collect())],
        Swiglu => vec![(
            "y",
            get("a")
                .iter()
                .zip(get("b"))
                .map(|(&a, &b)| (a as f64 / (1.0 + (-a as f64).exp()) * b as f64) as f32)
                .collect(),
        )],
        OptimizerCopy => vec![("main_grad", get("grad").to_vec())],
        OptimizerUnscale => {
            let grad = get("grad");
            let inv = memory_plans::INV_LOSS_SCALE as f64;
            let found = grad.iter().any(|g| !g.is_finite());
            vec![
                (
                    "unscaled",
                    grad.iter().map(|&g| (g as f64 * inv) as f32).collect(),
                ),
                ("found_inf", vec![if found { 1.0 } else { 0.0 }]),
            ]
        }
        OptimizerL2Norm => {
            let sum: f64 = get("grad").iter().map(|&g| (g as f64).powi(2)).sum();
            vec![("norm", vec![sum.sqrt() as f32])]
        }
        OptimizerAdam => {
            let (param, exp_avg, exp_avg_sq) =
                adam(get("param"), get("grad"), get("exp_avg"), get("exp_avg_sq"));
            vec![
                ("param", param),
                ("exp_avg", exp_avg),
                ("exp_avg_sq", exp_avg_sq),
            ]
        }
    };
    outputs
        .into_iter()
        .map(|(role, values)| (at(role), values))
        .filter(|(index, _)| *index != usize::MAX)
        .collect()
}

/// LayerNorm of each row: y, and the row's mean and 1/σ.
pub fn layernorm(
    x: &[f32],
    gamma: &[f32],
    beta: &[f32],
    rows: usize,
    cols: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let eps = memory_plans::LAYERNORM_EPS as f64;
    let mut y = Vec::with_capacity(rows * cols);
    let (mut means, mut rstds) = (Vec::new(), Vec::new());
    for row in x.chunks_exact(cols).take(rows) {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
        let variance = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
        let rstd = 1.0 / (variance + eps).sqrt();
        for (c, &v) in row.iter().enumerate() {
            y.push(((v as f64 - mean) * rstd * gamma[c] as f64 + beta[c] as f64) as f32);
        }
        means.push(mean as f32);
        rstds.push(rstd as f32);
    }
    (y, means, rstds)
}

/// LayerNorm's backward from the saved mean and 1/σ: the input gradient and
/// the gamma and beta gradients (sums over rows).
pub fn layernorm_backward(
    dy: &[f32],
    x: &[f32],
    mean: &[f32],
    rstd: &[f32],
    gamma: &[f32],
    cols: usize,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut dx = Vec::with_capacity(x.len());
    let mut dgamma = vec![0.0f64; cols];
    let mut dbeta = vec![0.0f64; cols];
    for (r, (dy_row, x_row)) in dy.chunks_exact(cols).zip(x.chunks_exact(cols)).enumerate() {
        let (mu, rs) = (mean[r] as f64, rstd[r] as f64);
        let xhat = |c: usize| (x_row[c] as f64 - mu) * rs;
        let g = |c: usize| dy_row[c] as f64 * gamma[c] as f64;
        let mean_g = (0..cols).map(g).sum::<f64>() / cols as f64;
        let mean_gx = (0..cols).map(|c| g(c) * xhat(c)).sum::<f64>() / cols as f64;
        for c in 0..cols {
            dx.push((rs * (g(c) - mean_g - xhat(c) * mean_gx)) as f32);
            dgamma[c] += dy_row[c] as f64 * xhat(c);
            dbeta[c] += dy_row[c] as f64;
        }
    }
    let narrow = |v: Vec<f64>| v.into_iter().map(|x| x as f32).collect();
    (dx, narrow(dgamma), narrow(dbeta))
}

/// The scaled softmax of each row of square `cols`×`cols` score matrices;
/// causal: query `row % cols` sees keys up to itself, later ones are 0.
pub fn softmax(x: &[f32], cols: usize, causal: bool) -> Vec<f32> {
    let scale = memory_plans::SOFTMAX_SCALE as f64;
    let mut y = Vec::with_capacity(x.len());
    for (r, row) in x.chunks_exact(cols).enumerate() {
        let last = if causal { r % cols } else { cols - 1 };
        let live = &row[..=last];
        let max = live
            .iter()
            .map(|&v| v as f64 * scale)
            .fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = live.iter().map(|&v| (v as f64 * scale - max).exp()).sum();
        for (c, &v) in row.iter().enumerate() {
            y.push(if c <= last {
                ((v as f64 * scale - max).exp() / sum) as f32
            } else {
                0.0
            });
        }
    }
    y
}

/// The softmax backward: scale · y · (dy − Σ dy·y) per row.
pub fn softmax_backward(dy: &[f32], y: &[f32], cols: usize) -> Vec<f32> {
    let scale = memory_plans::SOFTMAX_SCALE as f64;
    let mut dx = Vec::with_capacity(y.len());
    for (d, p) in dy.chunks_exact(cols).zip(y.chunks_exact(cols)) {
        let dot: f64 = d.iter().zip(p).map(|(&a, &b)| a as f64 * b as f64).sum();
        dx.extend(
            d.iter()
                .zip(p)
                .map(|(&a, &b)| (scale * b as f64 * (a as f64 - dot)) as f32),
        );
    }
    dx
}

/// Dropout of x (plus a bias row, then added to a residual, for
/// bias-dropout-add): the output and the 0/1 mask.
pub fn dropout(x: &[f32], bias: Option<&[f32]>, residual: Option<&[f32]>) -> (Vec<f32>, Vec<f32>) {
    let scale = memory_plans::dropout_keep_scale();
    let mut out = Vec::with_capacity(x.len());
    let mut mask = Vec::with_capacity(x.len());
    for (i, &v) in x.iter().enumerate() {
        let keep = dropout_keeps(i as u64);
        let biased = bias.map_or(v, |b| v + b[i % b.len()]);
        let dropped = if keep { biased * scale } else { 0.0 };
        out.push(residual.map_or(dropped, |r| r[i] + dropped));
        mask.push(if keep { 1.0 } else { 0.0 });
    }
    (out, mask)
}

/// GeLU, tanh form.
pub fn gelu(v: f32) -> f32 {
    let v = v as f64;
    let inner = 0.797_884_560_8 * (v + 0.044_715 * v * v * v);
    (0.5 * v * (1.0 + inner.tanh())) as f32
}

/// One AdamW step (apex FusedAdam, `adam_w_mode`): new weights and moments.
pub fn adam(
    param: &[f32],
    grad: &[f32],
    exp_avg: &[f32],
    exp_avg_sq: &[f32],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let [lr, beta1, beta2, eps, weight_decay] = memory_plans::ADAM.map(|v| v as f64);
    let correction1 = 1.0 - beta1.powi(memory_plans::ADAM_STEP);
    let correction2 = 1.0 - beta2.powi(memory_plans::ADAM_STEP);
    let (mut p_out, mut m_out, mut v_out) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..param.len() {
        let (p, g) = (param[i] as f64, grad[i] as f64);
        let m = beta1 * exp_avg[i] as f64 + (1.0 - beta1) * g;
        let v = beta2 * exp_avg_sq[i] as f64 + (1.0 - beta2) * g * g;
        let denom = (v / correction2).sqrt() + eps;
        p_out.push((p - lr * ((m / correction1) / denom + weight_decay * p)) as f32);
        m_out.push(m as f32);
        v_out.push(v as f32);
    }
    (p_out, m_out, v_out)
}

#[cfg(test)]
#[path = "memory_reference_tests.rs"]
mod tests;
