//! One FP8 GEMM through cuBLASLt (`cublasLtMatmul` via cudarc's `cublaslt`
//! bindings) as Transformer Engine (TE) issues it for a linear layer under
//! Megatron-Core's `--fp8-format hybrid`: FP8 inputs, fp32 accumulation
//! (`CUBLAS_COMPUTE_32F`, scale type `CUDA_R_32F`), a bf16 output.
//!
//! - Formats ([`Fp8Role::operand_formats`]): E4M3 for activations and
//!   weights, E5M2 for the output gradient (TE's HYBRID format,
//!   `transformer_engine.common.recipe.Format`). cuBLASLt's FP8 matmul takes
//!   E4M3×E4M3, E4M3×E5M2 and E5M2×E4M3, not E5M2×E5M2 (cuBLAS documentation,
//!   `cublasLtMatmul`, FP8 data type table), which the HYBRID roles never need.
//! - Layout: FP8 on Hopper requires the "TN" format, cuBLAS's A transposed
//!   and B not, both operands K-major (same table). TE keeps FP8 transposes
//!   from its cast-transpose kernels so every FP8 GEMM is TN (`models::fp8`):
//!   each role here is the row-major shape of `models::ops` in
//!   [`GemmLayout::Tn`], through the same [`ColumnMajorCall`] as the bf16 GEMMs
//!   (cuBLAS's A is our B stored n×k, its B our A stored m×k).
//! - Scales: the A and B scale pointers (`CUBLASLT_MATMUL_DESC_A_SCALE_POINTER`,
//!   `…_B_SCALE_POINTER`) point at device fp32 1.0, as TE passes its
//!   `scale_inv` there; the output is bf16, so no D scale or amax.
//! - Accumulation: the forward uses cuBLASLt's fast accumulation
//!   (`CUBLASLT_MATMUL_DESC_FAST_ACCUM` = 1), the data and weight gradients do
//!   not: TE's `_2X_ACC_FPROP = False`, `_2X_ACC_DGRAD = True`,
//!   `_2X_ACC_WGRAD = True` (`transformer_engine/pytorch/module/base.py`),
//!   and `fastAccuMode = use_split_accumulator ? 0 : use_fp8`
//!   (`transformer_engine/common/gemm/cublaslt_gemm.cu`).
//! - Workspace: [`WORKSPACE_BYTES`], 32 MiB.
//! - The algorithm: `cublasLtMatmulAlgoGetHeuristic`'s first answer, chosen
//!   once per shape ([`Fp8GemmPlan`]), then `cublasLtMatmul` on the stream.
//!
//! Inputs are seeded random FP8 codes ([`random_codes`]: uniform values in
//! [−1, 1] encoded with [`format::Fp8Format::encode`]); a CPU reference of
//! the product is in the test module.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

pub mod format;

use crate::error::{CublasLtContextExt, CudaContextExt, GpuError};
use crate::gemm::{describe, ColumnMajorCall};
use crate::random;
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use format::Fp8Format;
use half::bf16;
use models::ops::{GemmLayout, GemmShape};
use std::ffi::c_void;
use std::sync::Arc;

/// cuBLASLt workspace: 32 MiB, as TE gives cuBLASLt on Hopper
/// (`_CUBLASLT_WORKSPACE_SIZE_BYTES = 33_554_432` in TE's
/// `pytorch/module/base.py`), the size cuBLAS recommends for Hopper
/// (cuBLAS documentation, `cublasSetWorkspace`) and cudarc's
/// `cublaslt::Workspace` allocates for compute capability ≥ 9.
pub const WORKSPACE_BYTES: usize = 32 << 20;

/// The layout every FP8 GEMM runs in, and the name written to
/// `GemmMeasurement::layout`.
pub const FP8_LAYOUT: GemmLayout = GemmLayout::Tn;

/// The name written to `GemmMeasurement::dtype` for FP8 GEMMs.
pub const FP8_DTYPE: &str = "fp8";

/// Which GEMM of a linear layer: it decides the operands' formats and the
/// accumulation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fp8Role {
    /// y = x·Wᵀ: input and weight in E4M3.
    Forward,
    /// dx = dy·W: the output gradient (our A) in E5M2, the weight in E4M3.
    DataGradient,
    /// dW = xᵀ·dy: the input (our A) in E4M3, the output gradient in E5M2.
    WeightGradient,
}

impl Fp8Role {
    pub const ALL: [Fp8Role; 3] = [
        Fp8Role::Forward,
        Fp8Role::DataGradient,
        Fp8Role::WeightGradient,
    ];

    /// "forward", "dgrad", "wgrad".
    pub fn name(self) -> &'static str {
        match self {
            Fp8Role::Forward => "forward",
            Fp8Role::DataGradient => "dgrad",
            Fp8Role::WeightGradient => "wgrad",
        }
    }

    /// The role of an FP8 linear layer's kernel by its `models::ops` name
    /// (`mlp_fc1`, `mlp_fc1.dgrad`, `mlp_fc1.wgrad`).
    pub fn of_kernel(name: &str) -> Fp8Role {
        if name.ends_with(".dgrad") {
            Fp8Role::DataGradient
        } else if name.ends_with(".wgrad") {
            Fp8Role::WeightGradient
        } else {
            Fp8Role::Forward
        }
    }

    /// Formats of (our A, our B) under TE's HYBRID recipe.
    pub fn operand_formats(self) -> (Fp8Format, Fp8Format) {
        match self {
            Fp8Role::Forward => (Fp8Format::E4M3, Fp8Format::E4M3),
            Fp8Role::DataGradient => (Fp8Format::E5M2, Fp8Format::E4M3),
            Fp8Role::WeightGradient => (Fp8Format::E4M3, Fp8Format::E5M2),
        }
    }

    /// Whether cuBLASLt's fast (non-split) accumulation is on: the forward
    /// only, as TE runs it.
    pub fn fast_accumulation(self) -> bool {
        self == Fp8Role::Forward
    }
}

/// cuBLASLt's type for an FP8 format.
fn cuda_type(format: Fp8Format) -> sys::cudaDataType {
    match format {
        Fp8Format::E4M3 => sys::cudaDataType::CUDA_R_8F_E4M3,
        Fp8Format::E5M2 => sys::cudaDataType::CUDA_R_8F_E5M2,
    }
}

/// `len` seeded random FP8 codes: uniform values in [−1, 1] rounded to
/// `format` (all finite).
pub fn random_codes(seed: u64, len: usize, format: Fp8Format) -> Vec<u8> {
    random::signed_values(seed, len, 1.0)
        .into_iter()
        .map(|value| format.encode(value))
        .collect()
}

/// Whether cudarc can load cuBLASLt (`libcublasLt.so`, `.so.13`, …); it
/// sits beside cuBLAS, which links it.
pub fn cublaslt_present() -> bool {
    // SAFETY: only tries `dlopen` on candidate names; calls nothing in it.
    unsafe { sys::is_culib_present() }
}

/// A cuBLASLt handle on a stream, its workspace and the device fp32 1.0
/// the scale pointers point at.
pub struct LtContext {
    handle: sys::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    unit_scale: CudaSlice<f32>,
    stream: Arc<CudaStream>,
}

impl LtContext {
    /// Creates the handle and allocates the workspace. Check
    /// [`cublaslt_present`] first: cudarc panics when the library is missing.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, GpuError> {
        let handle = lt::create_handle().cublaslt(|| "creating a cuBLASLt handle".into())?;
        let allocate = || -> Result<(CudaSlice<u8>, CudaSlice<f32>), GpuError> {
            let workspace = stream
                .alloc_zeros::<u8>(WORKSPACE_BYTES)
                .cuda(|| "allocating the cuBLASLt workspace".into())?;
            let unit_scale = stream
                .clone_htod(&[1.0f32])
                .cuda(|| "uploading the FP8 scale 1.0".into())?;
            Ok((workspace, unit_scale))
        };
        match allocate() {
            Ok((workspace, unit_scale)) => Ok(LtContext {
                handle,
                workspace,
                unit_scale,
                stream,
            }),
            Err(error) => {
                // SAFETY: created above, not yet owned by anything.
                let _ = unsafe { lt::destroy_handle(handle) };
                Err(error)
            }
        }
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}

impl Drop for LtContext {
    fn drop(&mut self) {
        // SAFETY: the handle was created in `new` and is destroyed once.
        let _ = unsafe { lt::destroy_handle(self.handle) };
    }
}

/// The descriptors and chosen algorithm of one FP8 GEMM shape and role,
/// built once and launched many times.
pub struct Fp8GemmPlan {
    pub call: ColumnMajorCall,
    pub role: Fp8Role,
    desc: sys::cublasLtMatmulDesc_t,
    /// cuBLAS's A (our B), B (our A), and C = D.
    layouts: [sys::cublasLtMatrixLayout_t; 3],
    algo: sys::cublasLtMatmulAlgo_t,
}

/// Sets one attribute of a matmul descriptor from a plain value.
///
/// # Safety
/// `desc` must be live and `T` the attribute's documented type.
unsafe fn set_desc<T>(
    desc: sys::cublasLtMatmulDesc_t,
    attribute: sys::cublasLtMatmulDescAttributes_t,
    value: &T,
) -> Result<(), lt::CublasError> {
    lt::set_matmul_desc_attribute(
        desc,
        attribute,
        value as *const T as *const c_void,
        std::mem::size_of::<T>(),
    )
}

impl Fp8GemmPlan {
    /// Describes `shape` (row-major, as `models::ops`) in `role` to cuBLASLt
    /// in the TN layout and asks its heuristic for an algorithm. Fails with
    /// `CUBLAS_STATUS_NOT_SUPPORTED` when cuBLASLt has none (a GPU without
    /// FP8 tensor cores, or dimensions FP8 kernels do not take: FP8 needs
    /// 16-byte aligned leading dimensions).
    pub fn new(context: &LtContext, shape: &GemmShape, role: Fp8Role) -> Result<Self, GpuError> {
        let call = ColumnMajorCall::for_shape(shape, FP8_LAYOUT)?;
        let what = format!("the FP8 {} GEMM {}", role.name(), describe(shape));
        let mut plan = Fp8GemmPlan {
            call,
            role,
            desc: std::ptr::null_mut(),
            layouts: [std::ptr::null_mut(); 3],
            algo: sys::cublasLtMatmulAlgo_t { data: [0; 8] },
        };
        // SAFETY: every descriptor is created before use and owned by
        // `plan`, whose Drop destroys what was created even on an early return.
        unsafe { plan.describe(context) }.cublaslt(|| format!("describing {what} to cuBLASLt"))?;
        Ok(plan)
    }

    /// # Safety
    /// `self`'s handles are null or live (they are destroyed by Drop).
    unsafe fn describe(&mut self, context: &LtContext) -> Result<(), lt::CublasError> {
        use sys::cublasLtMatmulDescAttributes_t as Attr;
        let call = self.call;
        let (a_format, b_format) = self.role.operand_formats();
        self.desc = lt::create_matmul_desc(
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cudaDataType::CUDA_R_32F,
        )?;
        // cublasOperation_t is an int enum (cublas_api.h).
        let transa = cublasOperation_t::CUBLAS_OP_T as i32;
        let transb = cublasOperation_t::CUBLAS_OP_N as i32;
        set_desc(self.desc, Attr::CUBLASLT_MATMUL_DESC_TRANSA, &transa)?;
        set_desc(self.desc, Attr::CUBLASLT_MATMUL_DESC_TRANSB, &transb)?;
        let (scale, _record) = context.unit_scale.device_ptr(&context.stream);
        let scale_pointer = scale as *const c_void;
        set_desc(
            self.desc,
            Attr::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
            &scale_pointer,
        )?;
        set_desc(
            self.desc,
            Attr::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
            &scale_pointer,
        )?;
        let fast_accumulation = i8::from(self.role.fast_accumulation());
        set_desc(
            self.desc,
            Attr::CUBLASLT_MATMUL_DESC_FAST_ACCUM,
            &fast_accumulation,
        )?;
        // Column-major shapes as stored: cuBLAS's A (our B) is k × m with
        // leading dimension lda (transposed), its B (our A) k × n, C m × n.
        let dims = |value: i32| value as u64;
        self.layouts[0] = lt::create_matrix_layout(
            cuda_type(b_format),
            dims(call.k),
            dims(call.m),
            call.lda as i64,
        )?;
        self.layouts[1] = lt::create_matrix_layout(
            cuda_type(a_format),
            dims(call.k),
            dims(call.n),
            call.ldb as i64,
        )?;
        self.layouts[2] = lt::create_matrix_layout(
            sys::cudaDataType::CUDA_R_16BF,
            dims(call.m),
            dims(call.n),
            call.ldc as i64,
        )?;
        if call.batch > 1 {
            use sys::cublasLtMatrixLayoutAttribute_t as LayoutAttr;
            let strides = [call.stride_a, call.stride_b, call.stride_c];
            for (layout, stride) in self.layouts.iter().zip(strides) {
                lt::set_matrix_layout_attribute(
                    *layout,
                    LayoutAttr::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                    &call.batch as *const i32 as *const c_void,
                    std::mem::size_of::<i32>(),
                )?;
                lt::set_matrix_layout_attribute(
                    *layout,
                    LayoutAttr::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    &stride as *const i64 as *const c_void,
                    std::mem::size_of::<i64>(),
                )?;
            }
        }
        let preference = lt::create_matmul_pref()?;
        let workspace_bytes: u64 = WORKSPACE_BYTES as u64;
        let heuristic = lt::set_matmul_pref_attribute(
            preference,
            sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
            &workspace_bytes as *const u64 as *const c_void,
            std::mem::size_of::<u64>(),
        )
        .and_then(|()| {
            lt::get_matmul_algo_heuristic(
                context.handle,
                self.desc,
                self.layouts[0],
                self.layouts[1],
                self.layouts[2],
                self.layouts[2],
                preference,
            )
        });
        let _ = lt::destroy_matmul_pref(preference);
        self.algo = heuristic?.algo;
        Ok(())
    }

    /// Launches the GEMM on the context's stream (no synchronisation): `a`
    /// holds our A (m×k row-major FP8 codes in the role's first format), `b`
    /// our B stored n×k (the TN layout), `c` receives row-major C in bf16.
    ///
    /// # Safety
    /// `a`, `b`, `c` must hold at least `batch·m·k`, `batch·k·n`, `batch·m·n`
    /// elements for the shape the plan was built from, and `context` must be
    /// the one the plan was built with.
    pub unsafe fn launch<A, B, C>(
        &self,
        context: &LtContext,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<(), GpuError>
    where
        A: DevicePtr<u8>,
        B: DevicePtr<u8>,
        C: DevicePtrMut<bf16>,
    {
        let stream = &context.stream;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (a, _record_a) = a.device_ptr(stream);
        let (b, _record_b) = b.device_ptr(stream);
        let (c, _record_c) = c.device_ptr_mut(stream);
        let (workspace, _record_w) = context.workspace.device_ptr(stream);
        // cuBLAS's A is our B and its B our A (Cᵀ = Bᵀ·Aᵀ); C = D, beta 0.
        lt::matmul(
            context.handle,
            self.desc,
            &alpha as *const f32 as *const c_void,
            &beta as *const f32 as *const c_void,
            b as *const c_void,
            self.layouts[0],
            a as *const c_void,
            self.layouts[1],
            c as *const c_void,
            self.layouts[2],
            c as *mut c_void,
            self.layouts[2],
            &self.algo,
            workspace as *mut c_void,
            WORKSPACE_BYTES,
            stream.cu_stream() as sys::cudaStream_t,
        )
        .cublaslt(|| {
            format!(
                "launching the FP8 {} GEMM (cuBLAS m {}, n {}, k {})",
                self.role.name(),
                self.call.m,
                self.call.n,
                self.call.k
            )
        })
    }
}

impl Drop for Fp8GemmPlan {
    fn drop(&mut self) {
        // SAFETY: each handle is null or was created once in `describe`.
        unsafe {
            for layout in self.layouts {
                if !layout.is_null() {
                    let _ = lt::destroy_matrix_layout(layout);
                }
            }
            if !self.desc.is_null() {
                let _ = lt::destroy_matmul_desc(self.desc);
            }
        }
    }
}

#[cfg(test)]
mod device_tests;
#[cfg(test)]
mod reference;
