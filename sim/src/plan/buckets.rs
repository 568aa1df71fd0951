//! Gradient buckets: how a backward is cut into buckets of whole layers
//! ([`backward_buckets`]) so that each bucket's gradients can leave
//! (reduce-scatter, all-reduce, offload) while the backward goes on (how
//! many layers a bucket cap holds is the scenario's
//! [`scenario::bucket_sizes::layers_per_bucket`]). Read by the shard
//! and offload plans and lowering.

/// A gradient bucket of a backward pass: its layers, and whether it holds the
/// embedding's or the head's backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketLayers {
    pub layers: u32,
    pub embedding: bool,
    pub head: bool,
}

/// The gradient buckets of a backward over `layers` layers, in the order the
/// backward runs them: `per_bucket` layers each from the top (the head joins
/// the first bucket, the embedding the last), the remainder last.
pub fn backward_buckets(
    layers: u32,
    per_bucket: u32,
    embedding: bool,
    head: bool,
) -> Vec<BucketLayers> {
    let per_bucket = per_bucket.max(1);
    let count = layers.div_ceil(per_bucket).max(1);
    (0..count)
        .map(|i| BucketLayers {
            layers: per_bucket.min(layers - i * per_bucket),
            embedding: embedding && i + 1 == count,
            head: head && i == 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_layer_once_with_head_first_and_embedding_last() {
        let buckets = backward_buckets(10, 3, true, true);
        assert_eq!(
            buckets.iter().map(|b| b.layers).collect::<Vec<_>>(),
            [3, 3, 3, 1]
        );
        assert!(buckets[0].head && !buckets[0].embedding);
        assert!(buckets[3].embedding && !buckets[3].head);
        assert!(buckets[1..3].iter().all(|b| !b.head && !b.embedding));
        let whole = backward_buckets(4, 4, true, false);
        assert_eq!(
            whole,
            [BucketLayers {
                layers: 4,
                embedding: true,
                head: false
            }]
        );
    }
}
