//! How large a model may be: limits far beyond any model trained so far,
//! small enough that every count fits in u64.

/// Limits on a model's sizes, far beyond any model trained so far (GPT-style
/// models reach about 200 layers, h = 53,248, 1 M-token contexts and 256 k
/// vocabularies) yet small enough that every FLOP, byte and parameter count
/// fits in u64 and a simulation's memory stays bounded: a model beyond them
/// is refused before anything is built.
pub const MAX_LAYERS: u64 = 16_384;
/// See [`MAX_LAYERS`].
pub const MAX_HIDDEN: u64 = 1 << 20;
/// See [`MAX_LAYERS`].
pub const MAX_HEADS: u64 = 1 << 16;
/// See [`MAX_LAYERS`].
pub const MAX_SEQ_LEN: u64 = 1 << 24;
/// See [`MAX_LAYERS`].
pub const MAX_VOCAB: u64 = 1 << 24;
/// See [`MAX_LAYERS`].
pub const MAX_FFN_HIDDEN: u64 = 1 << 22;
