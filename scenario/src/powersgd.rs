//! PowerSGD gradient compression (`powersgd_rank`, `--powersgd-rank R`):
//! PyTorch DDP's `powerSGD_hook` with `matrix_approximation_rank` R, after
//! its `start_powerSGD_iter` warm-up (`sim::cost::powersgd` prices it).
//! This file holds what the option refuses.

use crate::options::TrainingOptions;
use crate::problem::Problem;
use models::ModelSpec;

/// What PowerSGD refuses, under the `powersgd_rank` key.
pub(crate) fn check(
    options: &TrainingOptions,
    model: Option<&ModelSpec>,
    two_model_copies: bool,
    problems: &mut Vec<Problem>,
) {
    if options.powersgd_rank.is_none() {
        return;
    }
    let mut refuse = |why: &str| problems.push(Problem::new("powersgd_rank", why));
    if options.distributed_optimizer {
        refuse("PowerSGD is a DDP comm hook replacing DDP's gradient all-reduce, which the distributed optimizer and ZeRO replace by reduce-scatters: add --distributed-optimizer=false (and no --zero-stage)");
    }
    if options.overlap_grad_reduce {
        refuse("the hook synchronizes the device for every bucket (torch.cuda.synchronize in decompress), so nothing overlaps the backward: add --overlap-grad-reduce=false");
    }
    if options.optimizer.compresses_momentum() {
        refuse("onebitadam and onebitlamb already replace the gradient all-reduce with their compressed momentum");
    }
    if options.network_contention {
        refuse("its all-reduces and kernels are costed as one task, not as fabric flows: drop --contention");
    }
    if two_model_copies {
        refuse("DualPipe's two model copies are not modeled under PowerSGD");
    }
    if let Some(model) = model {
        if model.moe.is_some() || model.mla.is_some() {
            refuse("the gradient matrices of experts and latent attention are not modeled: dense models with standard attention only");
        }
    }
}
