//! The hash of lowering's interning tables (works and groups): a fixed,
//! seedless multiply-rotate hash over the key's words, the same in every run.
//! It only finds an existing id; ids are still handed out in first-use
//! order, and no table is ever iterated, so nothing it does reaches output.

use std::hash::{BuildHasherDefault, Hasher};

/// The multiplier of rustc-hash's `FxHasher` (rust-lang/rustc-hash
/// `src/lib.rs`, version 1.1.0: `SEED = 0x51_7c_c1_b7_27_22_0a_95`, from
/// Firefox's hash), with its rotate-xor-multiply step per word.
const MULTIPLIER: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// Hashes keys word by word (see the module comment).
#[derive(Debug, Default, Clone, Copy)]
pub struct InternHasher(u64);

impl InternHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for InternHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.add(value as u64);
    }

    #[inline]
    fn write_u16(&mut self, value: u16) {
        self.add(value as u64);
    }

    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.add(value as u64);
    }

    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.add(value);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.add(value as u64);
    }
}

/// A `HashMap` keyed through [`InternHasher`].
pub type InternMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<InternHasher>>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn equal_keys_hash_alike_and_different_ones_apart() {
        let build = BuildHasherDefault::<InternHasher>::default();
        let hash = |key: &(u32, u64, bool)| build.hash_one(key);
        assert_eq!(hash(&(1, 2, true)), hash(&(1, 2, true)));
        assert_ne!(hash(&(1, 2, true)), hash(&(1, 2, false)));
        assert_ne!(hash(&(1, 2, true)), hash(&(2, 1, true)));
        let mut bytes = build.build_hasher();
        bytes.write(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let mut other = build.build_hasher();
        other.write(&[1, 2, 3, 4, 5, 6, 7, 8, 10]);
        assert_ne!(bytes.finish(), other.finish());
    }
}
