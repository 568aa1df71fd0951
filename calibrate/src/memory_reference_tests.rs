//! The CPU references checked on their own: gradients against finite
//! differences, softmax and LayerNorm invariants, dropout statistics, and
//! the check's host side (inputs, poison, encoding, comparison).

use super::*;
use crate::memory_plans::{check_size, plan, plan_with, ClassSize};

fn values(seed: u64, len: usize) -> Vec<f32> {
    gpu::random::signed_values(seed, len, 1.0)
}

#[test]
fn layernorm_rows_have_zero_mean_and_unit_variance_with_unit_gamma() {
    let (rows, cols) = (3, 64);
    let x: Vec<f32> = values(1, rows * cols)
        .iter()
        .map(|v| 3.0 * v + 2.0)
        .collect();
    let (y, mean, rstd) = layernorm(&x, &vec![1.0; cols], &vec![0.0; cols], rows, cols);
    for (r, row) in y.chunks_exact(cols).enumerate() {
        let m = row.iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
        let var = row.iter().map(|&v| (v as f64 - m).powi(2)).sum::<f64>() / cols as f64;
        assert!(
            m.abs() < 1e-5 && (var - 1.0).abs() < 1e-3,
            "row {r}: {m} {var}"
        );
        let x_mean = x[r * cols..(r + 1) * cols].iter().sum::<f32>() / cols as f32;
        assert!((mean[r] - x_mean).abs() < 1e-4);
        assert!(rstd[r] > 0.0);
    }
}

/// Σ dy · f(x), the loss whose gradient a backward computes.
fn loss(dy: &[f32], y: &[f32]) -> f64 {
    dy.iter().zip(y).map(|(&a, &b)| a as f64 * b as f64).sum()
}

#[test]
fn layernorm_backward_matches_finite_differences() {
    let (rows, cols) = (2, 16);
    let x: Vec<f32> = values(2, rows * cols).iter().map(|v| v + 0.5).collect();
    let gamma: Vec<f32> = values(3, cols).iter().map(|v| 1.0 + 0.5 * v).collect();
    let beta = values(4, cols);
    let dy = values(5, rows * cols);
    let (_, mean, rstd) = layernorm(&x, &gamma, &beta, rows, cols);
    let (dx, dgamma, dbeta) = layernorm_backward(&dy, &x, &mean, &rstd, &gamma, cols);
    let h = 1e-2f32;
    let numeric = |f: &dyn Fn(f32) -> f64| (f(h) - f(-h)) / (2.0 * h as f64);
    for i in [0, 5, 17, 31] {
        let f = |step: f32| {
            let mut moved = x.clone();
            moved[i] += step;
            loss(&dy, &layernorm(&moved, &gamma, &beta, rows, cols).0)
        };
        let want = numeric(&f);
        assert!(
            (dx[i] as f64 - want).abs() < 2e-3 * (1.0 + want.abs()),
            "dx[{i}] {} vs {want}",
            dx[i]
        );
    }
    for c in [0, 7, 15] {
        let f = |step: f32| {
            let mut moved = gamma.clone();
            moved[c] += step;
            loss(&dy, &layernorm(&x, &moved, &beta, rows, cols).0)
        };
        let want = numeric(&f);
        assert!(
            (dgamma[c] as f64 - want).abs() < 1e-3 * (1.0 + want.abs()),
            "dgamma[{c}]"
        );
        let g = |step: f32| {
            let mut moved = beta.clone();
            moved[c] += step;
            loss(&dy, &layernorm(&x, &gamma, &moved, rows, cols).0)
        };
        let want = numeric(&g);
        assert!(
            (dbeta[c] as f64 - want).abs() < 1e-3 * (1.0 + want.abs()),
            "dbeta[{c}]"
        );
    }
}

#[test]
fn causal_softmax_rows_sum_to_one_over_the_keys_they_see() {
    let cols = 8;
    let x: Vec<f32> = values(6, 2 * cols * cols).iter().map(|v| 4.0 * v).collect();
    for causal in [false, true] {
        let y = softmax(&x, cols, causal);
        for (r, row) in y.chunks_exact(cols).enumerate() {
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "row {r}");
            let last = if causal { r % cols } else { cols - 1 };
            assert!(row[..=last].iter().all(|&p| p > 0.0));
            assert!(row[last + 1..].iter().all(|&p| p == 0.0));
        }
    }
}

#[test]
fn softmax_backward_matches_finite_differences() {
    let cols = 8;
    let x: Vec<f32> = values(7, cols * cols).iter().map(|v| 4.0 * v).collect();
    let dy = values(8, cols * cols);
    let y = softmax(&x, cols, false);
    let dx = softmax_backward(&dy, &y, cols);
    let h = 1e-2f32;
    for i in [0, 9, 33, 63] {
        let f = |step: f32| {
            let mut moved = x.clone();
            moved[i] += step;
            loss(&dy, &softmax(&moved, cols, false))
        };
        let want = (f(h) - f(-h)) / (2.0 * h as f64);
        assert!(
            (dx[i] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()),
            "dx[{i}] {} vs {want}",
            dx[i]
        );
    }
}

#[test]
fn dropout_keeps_about_nine_tenths_scaled_and_masks_the_rest() {
    let x = vec![1.0f32; 100_000];
    let (y, mask) = dropout(&x, None, None);
    let kept = mask.iter().filter(|&&m| m == 1.0).count();
    assert!((kept as f64 / 1e5 - 0.9).abs() < 0.005, "{kept}");
    for (v, m) in y.iter().zip(&mask) {
        assert_eq!(
            *v,
            if *m == 1.0 {
                memory_plans::dropout_keep_scale()
            } else {
                0.0
            }
        );
    }
    // Bias-dropout-add: the residual passes where the mask drops.
    let bias = [0.5f32, -0.5];
    let residual = vec![2.0f32; 4];
    let (out, mask) = dropout(&[1.0; 4], Some(&bias), Some(&residual));
    for (i, (o, m)) in out.iter().zip(&mask).enumerate() {
        let dropped = (1.0 + bias[i % 2]) * memory_plans::dropout_keep_scale();
        assert_eq!(*o, if *m == 1.0 { 2.0 + dropped } else { 2.0 });
    }
    // The hash is deterministic and depends on the index and the seed.
    assert_eq!(hash32(12345, 7), hash32(12345, 7));
    assert_ne!(hash32(12345, 7), hash32(12346, 7));
    assert_ne!(hash32(12345, 7), hash32(12345, 8));
}

#[test]
fn adam_from_zero_moments_moves_each_weight_by_about_the_learning_rate() {
    let [lr, _, _, _, weight_decay] = memory_plans::ADAM;
    let (p, m, v) = adam(&[1.0, -1.0], &[0.5, -0.25], &[0.0, 0.0], &[0.0, 0.0]);
    // First step: m̂/√v̂ = sign(g).
    assert!(
        (p[0] - (1.0 - lr * (1.0 + weight_decay))).abs() < 1e-6,
        "{}",
        p[0]
    );
    assert!(
        (p[1] - (-1.0 + lr * (1.0 + weight_decay))).abs() < 1e-6,
        "{}",
        p[1]
    );
    assert!(m[0] > 0.0 && m[1] < 0.0 && v[0] > 0.0 && v[1] > 0.0);
    assert!((gelu(1.0) - 0.841_192).abs() < 1e-5);
    assert_eq!(gelu(0.0), 0.0);
}

#[test]
fn check_inputs_are_random_in_range_and_outputs_poisoned() {
    for class in MemoryKernelClass::ALL {
        let plan = plan(class, check_size(class), 132).unwrap();
        let inputs = host_inputs(&plan, 42);
        assert_eq!(inputs.len(), plan.buffers.len());
        for (buffer, values) in plan.buffers.iter().zip(&inputs) {
            assert_eq!(values.len() as u64, buffer.len, "{}", buffer.role);
            match buffer.fill {
                Fill::Uniform { low, high } => {
                    // Rounding to bf16 may step just past a bound.
                    let slack = (low.abs() + high.abs()) / 256.0;
                    assert!(
                        values
                            .iter()
                            .all(|&v| v >= low - slack && v <= high + slack),
                        "{}",
                        buffer.role
                    );
                    assert!(
                        values.iter().any(|&v| v != 0.0),
                        "{} is all zeros",
                        buffer.role
                    );
                    if buffer.elem == Elem::Bf16 {
                        assert!(values.iter().all(|&v| bf16_round(v) == v));
                    }
                }
                Fill::Zero => assert!(values.iter().all(|&v| v == 0.0)),
                Fill::Output => assert!(values
                    .iter()
                    .all(|&v| v.is_nan() || v == MASK_POISON as f32)),
            }
        }
        // Deterministic: the same seed gives the same bytes.
        let again = host_inputs(&plan, 42);
        for ((buffer, a), b) in plan.buffers.iter().zip(&inputs).zip(&again) {
            assert_eq!(encode(buffer.elem, a), encode(buffer.elem, b));
        }
    }
}

#[test]
fn encoding_round_trips_and_poison_reads_back_as_poison() {
    let values = [1.5f32, -2.25, 0.0, 65536.0];
    for elem in [Elem::Bf16, Elem::F32] {
        let bytes = encode(elem, &values);
        assert_eq!(bytes.len(), values.len() * elem.bytes() as usize);
        assert_eq!(decode(elem, &bytes), values);
        assert!(decode(elem, &encode(elem, &[f32::NAN]))[0].is_nan());
    }
    assert_eq!(
        decode(Elem::U8, &encode(Elem::U8, &[0.0, 1.0, 171.0])),
        [0.0, 1.0, 171.0]
    );
    assert_eq!(decode(Elem::Bf16, &[1, 2, 3]).len(), 1);
}

#[test]
fn comparison_catches_poison_wrong_values_masks_and_unchanged_in_place_buffers() {
    assert_eq!(relative_error(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    assert!((relative_error(&[1.0, 2.01], &[1.0, 2.0]) - 0.01 / 5f64.sqrt()).abs() < 1e-6);
    assert_eq!(relative_error(&[f32::NAN, 2.0], &[1.0, 2.0]), f64::INFINITY);
    assert_eq!(relative_error(&[1.0], &[1.0, 2.0]), f64::INFINITY);
    assert_eq!(relative_error(&[0.0], &[0.0]), 0.0);
    assert_eq!(relative_error(&[1.0], &[0.0]), f64::INFINITY);

    // Dropout: the reference itself passes; a flipped mask bit or an
    // unwritten (poisoned) output does not.
    let size = ClassSize { rows: 3, cols: 8 };
    let dropout_plan = plan(MemoryKernelClass::Dropout, size, 132).unwrap();
    let inputs = host_inputs(&dropout_plan, 1);
    let expected = reference(&dropout_plan, &inputs);
    let checks = compare(&dropout_plan, &inputs, &expected);
    assert!(checks
        .iter()
        .all(|c| c.relative_error == 0.0 && c.mismatches == 0));
    let mut flipped = expected.clone();
    let mask = dropout_plan.buffer("mask").unwrap();
    let entry = flipped.iter_mut().find(|(i, _)| *i == mask).unwrap();
    entry.1[3] = 1.0 - entry.1[3];
    let checks = compare(&dropout_plan, &inputs, &flipped);
    assert_eq!(checks.iter().map(|c| c.mismatches).sum::<usize>(), 1);
    let poisoned: Vec<_> = expected
        .iter()
        .map(|(i, _)| (*i, inputs[*i].clone()))
        .collect();
    let checks = compare(&dropout_plan, &inputs, &poisoned);
    assert!(
        checks.iter().all(|c| c.relative_error == f64::INFINITY),
        "{checks:?}"
    );

    // Adam updates in place: leaving the weights as they were fails even
    // though they are within 1e-2 of the updated ones.
    let adam_plan = plan(
        MemoryKernelClass::OptimizerAdam,
        check_size(MemoryKernelClass::OptimizerAdam),
        132,
    )
    .unwrap();
    let inputs = host_inputs(&adam_plan, 2);
    let mut outputs = reference(&adam_plan, &inputs);
    let param = adam_plan.buffer("param").unwrap();
    assert!(relative_error(&outputs[0].1, &inputs[param]) < 1e-2);
    outputs[0].1 = inputs[param].clone();
    let checks = compare(&adam_plan, &inputs, &outputs);
    let param_check = checks.iter().find(|c| c.role == "param").unwrap();
    assert!(param_check.relative_error >= 1.0, "{param_check:?}");
    assert!(checks
        .iter()
        .filter(|c| c.role != "param")
        .all(|c| c.relative_error == 0.0));
}

#[test]
fn every_class_has_a_reference_for_each_checked_buffer() {
    for class in MemoryKernelClass::ALL {
        for causal in [true, false] {
            let plan = plan_with(class, check_size(class), 132, causal).unwrap();
            let inputs = host_inputs(&plan, 3);
            let expected = reference(&plan, &inputs);
            let mut indices: Vec<usize> = expected.iter().map(|(i, _)| *i).collect();
            let checked: Vec<usize> = (0..plan.buffers.len())
                .filter(|&i| plan.buffers[i].checked)
                .collect();
            indices.sort();
            assert_eq!(indices, checked, "{}", class.name());
            for (index, values) in &expected {
                assert_eq!(
                    values.len() as u64,
                    plan.buffers[*index].len,
                    "{}",
                    class.name()
                );
                assert!(values.iter().all(|v| v.is_finite()), "{}", class.name());
            }
        }
    }
}
