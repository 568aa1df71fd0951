//! CUDA source of the memory-bound kernel classes calibrate times
//! ([`models::memory_class::MemoryKernelClass`]), compiled by NVRTC to a
//! cubin for the device ([`gpu::kernels`]), one module per class so that one
//! class that fails to compile costs only its own entries.
//!
//! Written without any include, so NVRTC needs no include path: bf16 values
//! travel as raw 16-bit patterns packed four to a 64-bit word (8-byte loads
//! and stores), are widened to fp32 for the arithmetic and rounded back to
//! nearest-even; fp32 tensors are read and written as 16-byte quads. Every
//! length is a multiple of four elements (the plans check it,
//! [`crate::memory_plans`]).
//!
//! | class | functions | per launch |
//! |---|---|---|
//! | layernorm | `layernorm_fwd` | one block per row: mean, variance, normalise with gamma/beta; row cached in shared memory; mean and 1/σ saved |
//! | layernorm.bwd | `layernorm_bwd_dx`, `layernorm_bwd_gamma_beta_partial`, `layernorm_bwd_gamma_beta_finish` | input gradient per row; gamma/beta gradients as column sums over row slabs, then over slabs (as apex does) |
//! | softmax | `softmax_fwd` | one block per row: scale, causal mask (query = row mod columns), max, exp, sum, normalise; masked words are not read |
//! | softmax.bwd | `softmax_bwd` | one block per row: scale·y·(dy − Σ dy·y) |
//! | dropout | `dropout_fwd` | keep with probability 1 − p from a hash of the element index; scaled output and a one-byte mask |
//! | bias_dropout_add | `bias_dropout_add` | residual + dropout(x + bias) and the mask |
//! | gelu | `gelu_bf16x4` | tanh GeLU |
//! | swiglu | `swiglu` | silu(a)·b |
//! | optimizer.copy | `widen_bf16_fp32` | bf16 gradients to fp32 |
//! | optimizer.unscale | `unscale_fp32` | times 1/scale, a flag set when a value is not finite |
//! | optimizer.l2norm | `l2norm_partial`, `l2norm_finish` | sums of squares per block, then the square root of their sum |
//! | optimizer.adam | `adam_fp32` | AdamW as apex's FusedAdam (`adam_w_mode`), in place |

use models::memory_class::MemoryKernelClass;

/// Helpers every class's module starts with: bf16 packing, the dropout hash,
/// warp and block reductions.
pub const PRELUDE: &str = r#"
typedef unsigned long long u64;
typedef unsigned int u32;

struct alignas(16) quad { float x, y, z, w; };

__device__ __forceinline__ float bf16_to_f32(u32 bits) {
    return __uint_as_float((bits & 0xFFFFu) << 16);
}
__device__ __forceinline__ u32 f32_to_bf16(float value) {
    u32 bits = __float_as_uint(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
    bits += 0x7FFFu + ((bits >> 16) & 1u);
    return bits >> 16;
}
__device__ __forceinline__ void unpack4(u64 word, float v[4]) {
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) v[lane] = bf16_to_f32((u32)(word >> (16 * lane)));
}
__device__ __forceinline__ u64 pack4(const float v[4]) {
    u64 word = 0;
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) word |= ((u64)f32_to_bf16(v[lane])) << (16 * lane);
    return word;
}
__device__ __forceinline__ bool is_finite(float v) {
    return (__float_as_uint(v) & 0x7F800000u) != 0x7F800000u;
}
/* SplitMix64's finaliser of the element index: the dropout mask's bits. */
__device__ __forceinline__ u32 hash32(u64 index, u32 seed) {
    u64 z = ((index + 1ull) * 0x9E3779B97F4A7C15ull) ^ (((u64)seed) << 32);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (u32)(z >> 32);
}
__device__ __forceinline__ float warp_reduce(float v, bool is_max) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        float other = __shfl_xor_sync(0xFFFFFFFFu, v, offset);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    return v;
}
/* Sum or max over a one-dimensional block (blockDim.x a multiple of 32, at
   most 1024); every thread calls it and gets the result. scratch: 33 floats. */
__device__ float block_reduce(float v, bool is_max, float* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    v = warp_reduce(v, is_max);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < warps ? scratch[lane] : (is_max ? __uint_as_float(0xFF800000u) : 0.0f);
        w = warp_reduce(w, is_max);
        if (lane == 0) scratch[32] = w;
    }
    __syncthreads();
    return scratch[32];
}
"#;

const LAYERNORM: &str = r#"
extern "C" __global__ void layernorm_fwd(const u64* __restrict__ x, const u64* __restrict__ gamma,
                                         const u64* __restrict__ beta, u64* __restrict__ y,
                                         float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                         u32 rows, u32 cols, float eps) {
    extern __shared__ u64 row_words[];
    __shared__ float scratch[33];
    const u32 row = blockIdx.x;
    if (row >= rows) return;
    const u32 words = cols >> 2;
    const u64 base = (u64)row * words;
    float sum = 0.0f;
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        const u64 word = x[base + w];
        row_words[w] = word;
        float v[4];
        unpack4(word, v);
        sum += (v[0] + v[1]) + (v[2] + v[3]);
    }
    const float mean = block_reduce(sum, false, scratch) / (float)cols;
    float squares = 0.0f;
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        float v[4];
        unpack4(row_words[w], v);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            const float d = v[lane] - mean;
            squares += d * d;
        }
    }
    const float rstd = rsqrtf(block_reduce(squares, false, scratch) / (float)cols + eps);
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        float v[4], g[4], b[4];
        unpack4(row_words[w], v);
        unpack4(gamma[w], g);
        unpack4(beta[w], b);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) v[lane] = (v[lane] - mean) * rstd * g[lane] + b[lane];
        y[base + w] = pack4(v);
    }
    if (threadIdx.x == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}
"#;

const LAYERNORM_BACKWARD: &str = r#"
extern "C" __global__ void layernorm_bwd_dx(const u64* __restrict__ dy, const u64* __restrict__ x,
                                            const float* __restrict__ mean, const float* __restrict__ rstd,
                                            const u64* __restrict__ gamma, u64* __restrict__ dx,
                                            u32 rows, u32 cols) {
    __shared__ float scratch[33];
    const u32 row = blockIdx.x;
    if (row >= rows) return;
    const u32 words = cols >> 2;
    const u64 base = (u64)row * words;
    const float mu = mean[row];
    const float rs = rstd[row];
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        float d[4], v[4], g[4];
        unpack4(dy[base + w], d);
        unpack4(x[base + w], v);
        unpack4(gamma[w], g);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            const float gy = d[lane] * g[lane];
            sum_g += gy;
            sum_gx += gy * (v[lane] - mu) * rs;
        }
    }
    const float mean_g = block_reduce(sum_g, false, scratch) / (float)cols;
    const float mean_gx = block_reduce(sum_gx, false, scratch) / (float)cols;
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        float d[4], v[4], g[4], out[4];
        unpack4(dy[base + w], d);
        unpack4(x[base + w], v);
        unpack4(gamma[w], g);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            const float xhat = (v[lane] - mu) * rs;
            out[lane] = rs * (d[lane] * g[lane] - mean_g - xhat * mean_gx);
        }
        dx[base + w] = pack4(out);
    }
}

/* Block (32, 8): 32 words (128 columns) by a slab of rows_per_slab rows;
   partial holds gamma sums [slab][col] then beta sums [slab][col]. */
extern "C" __global__ void layernorm_bwd_gamma_beta_partial(const u64* __restrict__ dy,
                                                            const u64* __restrict__ x,
                                                            const float* __restrict__ mean,
                                                            const float* __restrict__ rstd,
                                                            float* __restrict__ partial,
                                                            u32 rows, u32 cols, u32 rows_per_slab) {
    __shared__ float tile_g[8][128];
    __shared__ float tile_b[8][128];
    const u32 words = cols >> 2;
    const u32 w = blockIdx.x * 32 + threadIdx.x;
    const u32 first = blockIdx.y * rows_per_slab;
    const u32 end = rows - first < rows_per_slab ? rows : first + rows_per_slab;
    float dg[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float db[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (w < words && first < rows) {
        for (u32 r = first + threadIdx.y; r < end; r += 8) {
            float d[4], v[4];
            unpack4(dy[(u64)r * words + w], d);
            unpack4(x[(u64)r * words + w], v);
            const float mu = mean[r];
            const float rs = rstd[r];
#pragma unroll
            for (int lane = 0; lane < 4; ++lane) {
                dg[lane] += d[lane] * (v[lane] - mu) * rs;
                db[lane] += d[lane];
            }
        }
    }
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
        tile_g[threadIdx.y][threadIdx.x * 4 + lane] = dg[lane];
        tile_b[threadIdx.y][threadIdx.x * 4 + lane] = db[lane];
    }
    __syncthreads();
    if (threadIdx.y == 0 && w < words) {
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            float g = 0.0f, b = 0.0f;
            for (int k = 0; k < 8; ++k) {
                g += tile_g[k][threadIdx.x * 4 + lane];
                b += tile_b[k][threadIdx.x * 4 + lane];
            }
            const u64 col = (u64)w * 4 + lane;
            partial[(u64)blockIdx.y * cols + col] = g;
            partial[((u64)gridDim.y + blockIdx.y) * cols + col] = b;
        }
    }
}

extern "C" __global__ void layernorm_bwd_gamma_beta_finish(const float* __restrict__ partial,
                                                           float* __restrict__ dgamma,
                                                           float* __restrict__ dbeta,
                                                           u32 cols, u32 slabs) {
    const u32 col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols) return;
    float g = 0.0f, b = 0.0f;
    for (u32 s = 0; s < slabs; ++s) {
        g += partial[(u64)s * cols + col];
        b += partial[((u64)slabs + s) * cols + col];
    }
    dgamma[col] = g;
    dbeta[col] = b;
}
"#;

const SOFTMAX: &str = r#"
extern "C" __global__ void softmax_fwd(const u64* __restrict__ x, u64* __restrict__ y,
                                       u32 rows, u32 cols, u32 causal, float scale) {
    extern __shared__ u64 row_words[];
    __shared__ float scratch[33];
    const u32 row = blockIdx.x;
    if (row >= rows) return;
    const u32 words = cols >> 2;
    const u64 base = (u64)row * words;
    /* Causal: query row % cols sees keys 0..=last; later words are not read. */
    const u32 last = causal ? row % cols : cols - 1;
    const u32 live_words = last / 4 + 1;
    float local_max = __uint_as_float(0xFF800000u);
    for (u32 w = threadIdx.x; w < live_words; w += blockDim.x) {
        const u64 word = x[base + w];
        row_words[w] = word;
        float v[4];
        unpack4(word, v);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane)
            if (w * 4 + lane <= last) local_max = fmaxf(local_max, v[lane] * scale);
    }
    const float row_max = block_reduce(local_max, true, scratch);
    float local_sum = 0.0f;
    for (u32 w = threadIdx.x; w < live_words; w += blockDim.x) {
        float v[4];
        unpack4(row_words[w], v);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane)
            if (w * 4 + lane <= last) local_sum += __expf(v[lane] * scale - row_max);
    }
    const float inv_sum = 1.0f / block_reduce(local_sum, false, scratch);
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (w < live_words) {
            float v[4];
            unpack4(row_words[w], v);
#pragma unroll
            for (int lane = 0; lane < 4; ++lane)
                if (w * 4 + lane <= last) p[lane] = __expf(v[lane] * scale - row_max) * inv_sum;
        }
        y[base + w] = pack4(p);
    }
}
"#;

const SOFTMAX_BACKWARD: &str = r#"
extern "C" __global__ void softmax_bwd(const u64* __restrict__ dy, const u64* __restrict__ y,
                                       u64* __restrict__ dx, u32 rows, u32 cols, float scale) {
    extern __shared__ u64 cache[];
    __shared__ float scratch[33];
    const u32 row = blockIdx.x;
    if (row >= rows) return;
    const u32 words = cols >> 2;
    const u64 base = (u64)row * words;
    u64* dy_row = cache;
    u64* y_row = cache + words;
    float local = 0.0f;
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        const u64 a = dy[base + w];
        const u64 b = y[base + w];
        dy_row[w] = a;
        y_row[w] = b;
        float d[4], p[4];
        unpack4(a, d);
        unpack4(b, p);
        local += (d[0] * p[0] + d[1] * p[1]) + (d[2] * p[2] + d[3] * p[3]);
    }
    const float dot = block_reduce(local, false, scratch);
    for (u32 w = threadIdx.x; w < words; w += blockDim.x) {
        float d[4], p[4], out[4];
        unpack4(dy_row[w], d);
        unpack4(y_row[w], p);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) out[lane] = scale * p[lane] * (d[lane] - dot);
        dx[base + w] = pack4(out);
    }
}
"#;

const DROPOUT: &str = r#"
extern "C" __global__ void dropout_fwd(const u64* __restrict__ x, u64* __restrict__ y,
                                       u32* __restrict__ mask, u64 words, u32 threshold,
                                       float keep_scale, u32 seed) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        float v[4];
        unpack4(x[i], v);
        u32 bits = 0;
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            const bool keep = hash32(i * 4 + lane, seed) >= threshold;
            v[lane] = keep ? v[lane] * keep_scale : 0.0f;
            bits |= (keep ? 1u : 0u) << (8 * lane);
        }
        y[i] = pack4(v);
        mask[i] = bits;
    }
}
"#;

const BIAS_DROPOUT_ADD: &str = r#"
extern "C" __global__ void bias_dropout_add(const u64* __restrict__ x, const u64* __restrict__ bias,
                                            const u64* __restrict__ residual, u64* __restrict__ out,
                                            u32* __restrict__ mask, u64 words, u32 hidden_words,
                                            u32 threshold, float keep_scale, u32 seed) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        float v[4], b[4], r[4];
        unpack4(x[i], v);
        unpack4(bias[(u32)i % hidden_words], b);
        unpack4(residual[i], r);
        u32 bits = 0;
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            const bool keep = hash32(i * 4 + lane, seed) >= threshold;
            r[lane] += keep ? (v[lane] + b[lane]) * keep_scale : 0.0f;
            bits |= (keep ? 1u : 0u) << (8 * lane);
        }
        out[i] = pack4(r);
        mask[i] = bits;
    }
}
"#;

/// GeLU (tanh form, as Megatron's `bias_gelu` without the bias) over bf16
/// values packed four to a 64-bit word; round-to-nearest-even back to bf16.
pub const GELU_KERNEL_SOURCE: &str = r#"
extern "C" __global__ void gelu_bf16x4(const unsigned long long* __restrict__ x,
                                       unsigned long long* __restrict__ y,
                                       unsigned long long words) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < words; i += stride) {
        unsigned long long in = x[i];
        unsigned long long out = 0;
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) {
            unsigned int half_bits = (unsigned int)((in >> (16 * lane)) & 0xFFFFull);
            float v = __uint_as_float(half_bits << 16);
            float g = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
            unsigned int bits = __float_as_uint(g);
            bits += 0x7FFFu + ((bits >> 16) & 1u);
            out |= ((unsigned long long)(bits >> 16)) << (16 * lane);
        }
        y[i] = out;
    }
}
"#;

const SWIGLU: &str = r#"
extern "C" __global__ void swiglu(const u64* __restrict__ a, const u64* __restrict__ b,
                                  u64* __restrict__ y, u64 words) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        float va[4], vb[4], out[4];
        unpack4(a[i], va);
        unpack4(b[i], vb);
#pragma unroll
        for (int lane = 0; lane < 4; ++lane) out[lane] = va[lane] / (1.0f + __expf(-va[lane])) * vb[lane];
        y[i] = pack4(out);
    }
}
"#;

const OPTIMIZER_COPY: &str = r#"
extern "C" __global__ void widen_bf16_fp32(const u64* __restrict__ source, quad* __restrict__ target,
                                           u64 words) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        float v[4];
        unpack4(source[i], v);
        quad q;
        q.x = v[0];
        q.y = v[1];
        q.z = v[2];
        q.w = v[3];
        target[i] = q;
    }
}
"#;

const OPTIMIZER_UNSCALE: &str = r#"
extern "C" __global__ void unscale_fp32(const quad* __restrict__ input, quad* __restrict__ output,
                                        float* __restrict__ found_inf, u64 quads, float inv_scale) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    bool bad = false;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < quads; i += stride) {
        quad g = input[i];
        bad = bad || !is_finite(g.x) || !is_finite(g.y) || !is_finite(g.z) || !is_finite(g.w);
        g.x *= inv_scale;
        g.y *= inv_scale;
        g.z *= inv_scale;
        g.w *= inv_scale;
        output[i] = g;
    }
    if (bad) *found_inf = 1.0f;
}
"#;

const OPTIMIZER_L2NORM: &str = r#"
extern "C" __global__ void l2norm_partial(const quad* __restrict__ g, float* __restrict__ partial,
                                          u64 quads) {
    __shared__ float scratch[33];
    const u64 stride = (u64)gridDim.x * blockDim.x;
    float sum = 0.0f;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < quads; i += stride) {
        const quad v = g[i];
        sum += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
    }
    sum = block_reduce(sum, false, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

extern "C" __global__ void l2norm_finish(const float* __restrict__ partial, float* __restrict__ norm,
                                         u32 count) {
    __shared__ float scratch[33];
    float sum = 0.0f;
    for (u32 i = threadIdx.x; i < count; i += blockDim.x) sum += partial[i];
    sum = block_reduce(sum, false, scratch);
    if (threadIdx.x == 0) *norm = sqrtf(sum);
}
"#;

const OPTIMIZER_ADAM: &str = r#"
__device__ __forceinline__ void adam_one(float& p, float g, float& m, float& v, float lr,
                                         float beta1, float beta2, float eps, float weight_decay,
                                         float bias_correction1, float bias_correction2) {
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    const float denom = sqrtf(v / bias_correction2) + eps;
    p = p - lr * ((m / bias_correction1) / denom + weight_decay * p);
}

extern "C" __global__ void adam_fp32(quad* __restrict__ p, const quad* __restrict__ g,
                                     quad* __restrict__ m, quad* __restrict__ v, u64 quads,
                                     float lr, float beta1, float beta2, float eps,
                                     float weight_decay, float bias_correction1,
                                     float bias_correction2) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < quads; i += stride) {
        quad pp = p[i], gg = g[i], mm = m[i], vv = v[i];
        adam_one(pp.x, gg.x, mm.x, vv.x, lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2);
        adam_one(pp.y, gg.y, mm.y, vv.y, lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2);
        adam_one(pp.z, gg.z, mm.z, vv.z, lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2);
        adam_one(pp.w, gg.w, mm.w, vv.w, lr, beta1, beta2, eps, weight_decay, bias_correction1, bias_correction2);
        p[i] = pp;
        m[i] = mm;
        v[i] = vv;
    }
}
"#;

/// The class's functions, in the order a plan's launches index them.
pub fn function_names(class: MemoryKernelClass) -> &'static [&'static str] {
    use MemoryKernelClass::*;
    match class {
        LayerNorm => &["layernorm_fwd"],
        LayerNormBackward => &[
            "layernorm_bwd_dx",
            "layernorm_bwd_gamma_beta_partial",
            "layernorm_bwd_gamma_beta_finish",
        ],
        Softmax => &["softmax_fwd"],
        SoftmaxBackward => &["softmax_bwd"],
        Dropout => &["dropout_fwd"],
        BiasDropoutAdd => &["bias_dropout_add"],
        Gelu => &["gelu_bf16x4"],
        Swiglu => &["swiglu"],
        OptimizerCopy => &["widen_bf16_fp32"],
        OptimizerUnscale => &["unscale_fp32"],
        OptimizerL2Norm => &["l2norm_partial", "l2norm_finish"],
        OptimizerAdam => &["adam_fp32"],
    }
}

/// The whole source NVRTC compiles for a class: [`PRELUDE`] and its kernels.
pub fn source(class: MemoryKernelClass) -> String {
    use MemoryKernelClass::*;
    let body = match class {
        LayerNorm => LAYERNORM,
        LayerNormBackward => LAYERNORM_BACKWARD,
        Softmax => SOFTMAX,
        SoftmaxBackward => SOFTMAX_BACKWARD,
        Dropout => DROPOUT,
        BiasDropoutAdd => BIAS_DROPOUT_ADD,
        Gelu => GELU_KERNEL_SOURCE,
        Swiglu => SWIGLU,
        OptimizerCopy => OPTIMIZER_COPY,
        OptimizerUnscale => OPTIMIZER_UNSCALE,
        OptimizerL2Norm => OPTIMIZER_L2NORM,
        OptimizerAdam => OPTIMIZER_ADAM,
    };
    format!("{PRELUDE}{body}")
}

#[cfg(test)]
#[path = "memory_kernels_tests.rs"]
mod tests;
