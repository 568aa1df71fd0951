//! Bytes per element of the number format activations, weights and
//! gradients are kept in (FP8's is [`crate::fp8::FP8_BYTES`]).

/// Bytes per fp16 element.
pub const FP16_BYTES: u64 = 2;
