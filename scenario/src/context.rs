//! Validation of context parallelism (`cp`): what Megatron-Core and
//! Transformer Engine require of it, and the combinations clustersim does not
//! model, refused by name.

use crate::kinds::Recompute;
use crate::options::TrainingOptions;
use crate::problem::Problem;
use models::ModelSpec;

/// Problems with a context-parallel degree `cp` > 1, pushed onto `problems`.
pub(super) fn check(
    cp: u32,
    model: Option<&ModelSpec>,
    recompute: Recompute,
    options: &TrainingOptions,
    problems: &mut Vec<Problem>,
) {
    if let Some(model) = model {
        // Load-balanced causal masking cuts every sequence into 2·cp chunks
        // (Megatron-Core `get_batch_on_this_cp_rank`: "seq_len must be
        // divisible by 2 * cp_size").
        let chunks = 2 * cp as u64;
        if !model.seq_len.is_multiple_of(chunks) {
            problems.push(Problem::new("cp", format!(
                "seq_len ({}) must be divisible by 2 × cp = {chunks} (load-balanced causal masking splits each sequence into 2·cp chunks)",
                model.seq_len
            )));
        }
    }
    if recompute == Recompute::Selective {
        problems.push(Problem::new("cp", "selective recompute with context parallelism is not modeled (ring attention is Transformer Engine's fused kernel, which stores no scores); use recompute none or full"));
    }
    if options.offload.is_some() {
        problems.push(Problem::new(
            "cp",
            "context parallelism with ZeRO-Offload is not modeled",
        ));
    }
    if options.network_contention {
        problems.push(Problem::new("cp", "context parallelism under network_contention is not modeled (the ring's KV exchanges are closed form)"));
    }
}
