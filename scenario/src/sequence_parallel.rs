//! What sequence parallelism requires of the sequence length: each rank's
//! s/cp tokens are split over the t tensor ranks, so t must divide them
//! (Megatron-Core `tensor_parallel/mappings.py`, `_reduce_scatter_along_first_dim`
//! and `_split_along_first_dim`: "First dimension of the tensor should be
//! divisible by tensor parallel size").

use crate::options::TrainingOptions;
use crate::problem::Problem;
use models::ModelSpec;

/// A problem when sequence parallelism at `t` > 1 cannot split the
/// sequence: seq_len not a multiple of t·cp.
pub(super) fn check(
    t: u32,
    cp: u32,
    model: &ModelSpec,
    options: &TrainingOptions,
    problems: &mut Vec<Problem>,
) {
    if !options.sequence_parallel || t < 2 {
        return;
    }
    let split = u64::from(t) * u64::from(cp);
    if !model.seq_len.is_multiple_of(split) {
        problems.push(Problem::new(
            "sequence_parallel",
            format!(
                "seq_len ({}) must be divisible by t × cp = {split}: sequence parallelism splits each rank's seq_len/cp tokens over the {t} tensor ranks (Megatron-Core asserts it); choose a length that divides, or --sequence-parallel=false",
                model.seq_len
            ),
        ));
    }
}
