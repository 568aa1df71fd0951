//! A GEMM's shape and operand layout: the row-major product C[m,n] =
//! A[m,k]·B[k,n] a kernel computes ([`GemmShape`]), and how its operands sit
//! in memory as cuBLAS is called for it ([`GemmLayout`]), with the shapes and
//! layouts of the two backward GEMMs autograd derives from a forward one.
//! Re-exported by [`crate::ops`], which builds a layer's kernels from them.

use crate::element_bytes::FP16_BYTES;
use serde::Serialize;

/// A (batched) matrix multiplication C[m,n] = A[m,k]·B[k,n], `batch` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct GemmShape {
    pub batch: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
}

impl GemmShape {
    /// 2·batch·m·n·k multiply-add FLOPs.
    pub fn flops(&self) -> f64 {
        2.0 * self.batch as f64 * self.m as f64 * self.n as f64 * self.k as f64
    }
    /// fp16 bytes read (A, B) and written (C), assuming each is touched once.
    pub fn bytes(&self) -> f64 {
        let (b, m, n, k) = (
            self.batch as f64,
            self.m as f64,
            self.n as f64,
            self.k as f64,
        );
        b * (m * k + k * n + m * n) * FP16_BYTES as f64
    }
    /// Shape of the input-gradient GEMM dA[m,k] = dC[m,n]·Bᵀ.
    pub fn data_gradient(&self) -> GemmShape {
        GemmShape {
            batch: self.batch,
            m: self.m,
            n: self.k,
            k: self.n,
        }
    }
    /// Shape of the weight-gradient GEMM dB[k,n] = Aᵀ·dC.
    pub fn weight_gradient(&self) -> GemmShape {
        GemmShape {
            batch: self.batch,
            m: self.k,
            n: self.n,
            k: self.m,
        }
    }
}

/// How a GEMM's operands sit in memory, named as the cuBLAS `transa`,
/// `transb` pair PyTorch issues for it (cuBLAS's column-major notation).
///
/// PyTorch computes a row-major C[m,n] = A[m,k]·B[k,n] as the column-major
/// Cᵀ = Bᵀ·Aᵀ, so the first letter (cuBLAS's `transa`) describes B and the
/// second (`transb`) describes A. `N`: the operand is stored row-major as the
/// shape lists it (B as k×n, A as m×k). `T`: the GEMM reads a transposed view
/// of a row-major tensor (B stored n×k, as a linear layer's `[out, in]`
/// weight; A stored k×m). cuBLAS picks different kernels per layout.
///
/// Megatron's GEMMs (derived from the stride checks PyTorch's `addmm`/`bmm`
/// make before calling cuBLAS; see [`GemmLayout::data_gradient`] and
/// [`GemmLayout::weight_gradient`] for the backward rule):
///
/// | GEMM | forward | data gradient | weight gradient |
/// |---|---|---|---|
/// | linear layers and logits, `input @ weight.t()` | TN | NN | NT |
/// | attention scores, `baddbmm(Q, Kᵀ)` | TN | NN | NT |
/// | attention over values, `bmm(P, V)` | NN | TN | NT |
///
/// Attention (Megatron's `CoreAttention`): Q, K and V are `[s, b·np, hn]`
/// views of the QKV output whose last dimension is contiguous. The scores are
/// `torch.baddbmm(buf, Q.transpose(0, 1), K.transpose(0, 1).transpose(1, 2))`:
/// A = Q is row-major (N) and B = Kᵀ is a transposed view of K (T), so cuBLAS
/// sees TN, the same layout as a linear layer's `X·Wᵀ` (shared/GPU.md's
/// "QKᵀ NT" names the same call in row-major terms: B transposed). The context
/// is `torch.bmm(P, V.transpose(0, 1))`: P is contiguous and V's view is
/// row-major, so NN. Megatron's views have leading dimensions and batch
/// strides of the whole QKV tensor (3·hn per head); calibration times compact
/// operands of the same layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmLayout {
    Nn,
    Nt,
    Tn,
    Tt,
}

impl GemmLayout {
    /// Every layout, in `Ord` order.
    pub const ALL: [GemmLayout; 4] = [
        GemmLayout::Nn,
        GemmLayout::Nt,
        GemmLayout::Tn,
        GemmLayout::Tt,
    ];

    /// The layout of a linear layer's forward GEMM, `input @ weight.t()`.
    pub const LINEAR_FORWARD: GemmLayout = GemmLayout::Tn;

    /// "nn", "nt", "tn" or "tt" (cuBLAS's `transa` letter first), as written
    /// to a calibration profile.
    pub fn name(self) -> &'static str {
        match self {
            GemmLayout::Nn => "nn",
            GemmLayout::Nt => "nt",
            GemmLayout::Tn => "tn",
            GemmLayout::Tt => "tt",
        }
    }

    /// The layout a [`GemmLayout::name`] names.
    pub fn from_name(name: &str) -> Option<GemmLayout> {
        GemmLayout::ALL
            .into_iter()
            .find(|layout| layout.name() == name)
    }

    /// cuBLAS's `transa`: B is stored transposed (n×k row-major).
    pub fn b_transposed(self) -> bool {
        matches!(self, GemmLayout::Tn | GemmLayout::Tt)
    }

    /// cuBLAS's `transb`: A is stored transposed (k×m row-major).
    pub fn a_transposed(self) -> bool {
        matches!(self, GemmLayout::Nt | GemmLayout::Tt)
    }

    /// The layout with these transposes (`transa` for B, `transb` for A).
    pub fn from_transposes(b_transposed: bool, a_transposed: bool) -> GemmLayout {
        match (b_transposed, a_transposed) {
            (false, false) => GemmLayout::Nn,
            (false, true) => GemmLayout::Nt,
            (true, false) => GemmLayout::Tn,
            (true, true) => GemmLayout::Tt,
        }
    }

    /// Layout of the input-gradient GEMM dA = dC·Bᵀ (shape
    /// [`GemmShape::data_gradient`]) of a GEMM in this layout, as autograd
    /// issues it (`grad.mm(B.t())`): dC is a fresh contiguous tensor (N), and
    /// Bᵀ is a transposed view exactly when B itself was stored row-major.
    pub fn data_gradient(self) -> GemmLayout {
        GemmLayout::from_transposes(!self.b_transposed(), false)
    }

    /// Layout of the weight-gradient GEMM dB = Aᵀ·dC (shape
    /// [`GemmShape::weight_gradient`]) of a GEMM in this layout
    /// (`A.t().mm(grad)`): dC is contiguous (N), and Aᵀ is a transposed view
    /// exactly when A was stored row-major. For a linear layer PyTorch
    /// computes the weight's own gradient dW = dYᵀ·X, the transpose of the
    /// listed shape's product: the same NT layout (Cᵀ = Bᵀ·Aᵀ keeps NT) with
    /// cuBLAS's m and n exchanged, which this crate's shapes do not record.
    pub fn weight_gradient(self) -> GemmLayout {
        GemmLayout::from_transposes(false, !self.a_transposed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_layouts_follow_autograd_for_each_forward_layout() {
        use GemmLayout::*;
        // (forward, data gradient, weight gradient).
        let expected = [(Tn, Nn, Nt), (Nn, Tn, Nt), (Nt, Tn, Nn), (Tt, Nn, Nn)];
        for (forward, dgrad, wgrad) in expected {
            assert_eq!(forward.data_gradient(), dgrad, "{forward:?}");
            assert_eq!(forward.weight_gradient(), wgrad, "{forward:?}");
        }
        assert_eq!(GemmLayout::LINEAR_FORWARD, Tn);
    }

    #[test]
    fn layout_names_round_trip_and_letters_are_transa_then_transb() {
        for layout in GemmLayout::ALL {
            assert_eq!(GemmLayout::from_name(layout.name()), Some(layout));
            let letter = |transposed: bool| if transposed { 't' } else { 'n' };
            let name: String = [letter(layout.b_transposed()), letter(layout.a_transposed())]
                .into_iter()
                .collect();
            assert_eq!(name, layout.name());
            assert_eq!(
                GemmLayout::from_transposes(layout.b_transposed(), layout.a_transposed()),
                layout
            );
        }
        assert_eq!(GemmLayout::from_name("TN"), None);
        assert_eq!(GemmLayout::from_name(""), None);
    }

    #[test]
    fn every_gemm_carries_the_layout_megatron_calls_it_in() {
        use crate::ops::{transformer_layer, Kernel, KernelClass, Step};
        use GemmLayout::*;
        let model = crate::presets::preset("gpt3-175b").unwrap();
        let layer = transformer_layer(&model, 1, crate::nz(8));
        let head = crate::pipeline_ends::head(&model, 1, crate::nz(8));
        let mut layouts: Vec<(String, GemmLayout)> = Vec::new();
        for step in [layer.forward, layer.backward, head.forward, head.backward].concat() {
            if let Step::Kernel(Kernel {
                name,
                class: KernelClass::Gemm { layout, .. },
                ..
            }) = step
            {
                layouts.push((name.into(), layout));
            }
        }
        layouts.sort();
        let mut expected: Vec<(String, GemmLayout)> = [
            ("attention_scores", Tn),
            ("attention_scores.dgrad_q", Nn),
            ("attention_scores.dgrad_k", Nt),
            ("attention_over_values", Nn),
            ("attention_over_values.dgrad_probs", Tn),
            ("attention_over_values.dgrad_values", Nt),
        ]
        .into_iter()
        .map(|(name, layout)| (name.to_string(), layout))
        .collect();
        for linear in [
            "qkv_gemm",
            "output_projection",
            "mlp_fc1",
            "mlp_fc2",
            "logits_gemm",
        ] {
            expected.push((linear.into(), Tn));
            expected.push((format!("{linear}.dgrad"), Nn));
            expected.push((format!("{linear}.wgrad"), Nt));
        }
        expected.sort();
        assert_eq!(layouts, expected);
    }
}
