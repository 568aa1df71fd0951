//! Which FP8 GEMMs calibrate times, and their buffer sizes.

use super::*;
use Fp8Role::{DataGradient, Forward, WeightGradient};

fn shape(m: u64, n: u64, k: u64) -> GemmShape {
    GemmShape { batch: 1, m, n, k }
}

#[test]
fn a_gpt3_layer_times_its_four_linear_layers_in_three_roles_once_per_shape() {
    // GPT-3 175B, tp 8, microbatch 1: 2048 tokens, h = 12288, ffn = 4h.
    let model = models::preset("gpt3-175b").unwrap();
    let cases = model_fp8_shapes(&model, 1, std::num::NonZeroU64::new(8).expect("8 is not 0"));
    let (tokens, h) = (2048, 12288);
    let (qkv, proj_in, ffn) = (3 * h / 8, h / 8, 4 * h / 8);
    // Forward y[tokens, n] = x[tokens, k]·Wᵀ; dgrad [tokens, k] over n;
    // wgrad [k, n] over tokens (models::ops::GemmShape).
    let mut expected = vec![
        (shape(tokens, qkv, h), Forward),
        (shape(tokens, h, qkv), DataGradient),
        (shape(h, qkv, tokens), WeightGradient),
        (shape(tokens, h, proj_in), Forward),
        (shape(tokens, proj_in, h), DataGradient),
        (shape(proj_in, h, tokens), WeightGradient),
        (shape(tokens, ffn, h), Forward),
        // FC1's data gradient [2048, 12288] over 6144 is FC2's forward:
        // timed once, as the forward.
        (shape(h, ffn, tokens), WeightGradient),
        (shape(tokens, h, ffn), Forward),
        (shape(tokens, ffn, h), Forward),
        (shape(ffn, h, tokens), WeightGradient),
    ];
    // FC2's data gradient [2048, 6144] over 12288 is FC1's forward.
    expected.sort();
    expected.dedup_by_key(|case| case.0);
    assert_eq!(expected.len(), 10);
    assert_eq!(cases, expected);
    // Every role appears, and the E5M2 roles are the backward ones.
    for role in [Forward, DataGradient, WeightGradient] {
        assert!(cases.iter().any(|case| case.1 == role), "{role:?}");
    }
    // The head and attention stay bf16: no FP8 GEMM has the vocabulary or
    // a batch of heads.
    assert!(cases.iter().all(|(s, _)| s.batch == 1 && s.n != 51200 / 8));
}

#[test]
fn roles_follow_the_kernel_names_and_the_hybrid_formats() {
    use gpu::gemm_fp8::format::Fp8Format::{E4M3, E5M2};
    assert_eq!(Fp8Role::of_kernel("mlp_fc1"), Forward);
    assert_eq!(Fp8Role::of_kernel("qkv_gemm.dgrad"), DataGradient);
    assert_eq!(
        Fp8Role::of_kernel("output_projection.wgrad"),
        WeightGradient
    );
    // (our A, our B): the output gradient is E5M2 wherever it is an operand.
    assert_eq!(Forward.operand_formats(), (E4M3, E4M3));
    assert_eq!(DataGradient.operand_formats(), (E5M2, E4M3));
    assert_eq!(WeightGradient.operand_formats(), (E4M3, E5M2));
    assert!(Forward.fast_accumulation());
    assert!(!DataGradient.fast_accumulation() && !WeightGradient.fast_accumulation());
}

#[test]
fn the_grid_adds_forward_squares_and_cases_stay_one_per_shape() {
    let square = |side| (shape(side, side, side), Forward);
    assert_eq!(grid_fp8_shapes(true), vec![square(8192)]);
    assert_eq!(grid_fp8_shapes(false), vec![square(8192), square(16384)]);
    assert_eq!(fp8_cases(false, None), grid_fp8_shapes(false));
    let model = models::preset("gpt3-175b").unwrap();
    let with_model = fp8_cases(
        true,
        Some((&model, 1, std::num::NonZeroU64::new(8).expect("8 is not 0"))),
    );
    assert_eq!(with_model.len(), 1 + 10);
    assert!(with_model.contains(&square(8192)));
    // A shape given in two roles keeps the first role.
    let dedup = dedup_by_shape([
        (shape(64, 64, 64), WeightGradient),
        (shape(64, 64, 64), DataGradient),
        (shape(32, 64, 64), WeightGradient),
    ]);
    assert_eq!(
        dedup,
        vec![
            (shape(32, 64, 64), WeightGradient),
            (shape(64, 64, 64), DataGradient)
        ]
    );
}

#[test]
fn fp8_sets_hold_one_byte_inputs_and_a_bf16_output_in_aligned_slots() {
    // A 100×300 = 30000 B → 30208 (118 × 256); B 200×300 = 60000 B → 60160
    // (235 × 256); C 100×200 = 20000 bf16 → 20096 elements (157 × 128).
    let s = shape(100, 200, 300);
    assert_eq!(fp8_slot_elems(&s), [30208, 60160, 20096]);
    assert_eq!(fp8_set_bytes(&s), 30208 + 60160 + 2 * 20096);
    // 16384³: 256 MiB + 256 MiB + 512 MiB, already aligned.
    assert_eq!(fp8_set_bytes(&shape(16384, 16384, 16384)), 1 << 30);
    // Absurd shapes saturate instead of overflowing.
    let huge = GemmShape {
        batch: u64::MAX,
        m: 2,
        n: 2,
        k: 2,
    };
    assert_eq!(fp8_set_bytes(&huge), u64::MAX);
}

#[test]
fn fp8_runs_only_where_the_datasheet_and_the_gpu_have_fp8() {
    let h100 = topologies::datasheet_for_device("NVIDIA H100 80GB HBM3").unwrap();
    let a100 = topologies::datasheet_for_device("NVIDIA A100-SXM4-80GB").unwrap();
    let name = "NVIDIA H100 80GB HBM3";
    assert_eq!(
        fp8_skip_reason(false, name, Some(&h100), (9, 0), true),
        None
    );
    let reason = |skip, sheet, cc, lt| fp8_skip_reason(skip, name, sheet, cc, lt).unwrap();
    assert!(reason(true, Some(&h100), (9, 0), true).contains("--no-fp8"));
    assert!(reason(false, Some(&a100), (8, 0), true).contains("has no FP8 tensor-core peak"));
    assert!(reason(false, Some(&h100), (8, 6), true).contains("compute capability 8.6"));
    assert!(reason(false, Some(&h100), (9, 0), false).contains("libcublasLt.so"));
    assert!(reason(false, None, (9, 0), true).contains("no datasheet"));
    assert!(reason(false, None, (9, 0), true).starts_with("FP8 GEMMs not timed: "));
}
