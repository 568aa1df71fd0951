//! What a calibration run should do ([`CalibrateOptions`]), its validation,
//! and the progress reports it sends ([`Progress`]).

use crate::error::CalibrateError;
use std::num::NonZeroU64;

/// The most timed repeats per entry: each repeat is a launch (or a few) and
/// two event records queued behind one gate, and the driver queues about a
/// thousand such commands while the GPU is held (gpu::timing).
pub const MAX_REPEATS: u32 = 200;

/// Options of one calibration run. `Default` is a full run without a model.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrateOptions {
    /// Few shapes, sizes and repeats: finishes in well under two minutes on
    /// one GPU.
    pub quick: bool,
    /// Time this model's GEMM shapes (layer and head, forward and backward)
    /// besides the grid.
    pub model: Option<models::ModelSpec>,
    /// Tensor-parallel degree the model's shapes are split by.
    pub tensor_parallel: u32,
    /// Microbatch size of the model's shapes.
    pub microbatch_size: u32,
    /// Timed repeats per entry (quick runs use at most 5).
    pub repeats: u32,
    /// Untimed runs before the timed ones (quick runs use at most 2).
    pub warmup: u32,
    /// Time only the CPU optimizer; no CUDA library is touched.
    pub cpu_only: bool,
    /// Do not time FP8 GEMMs (cuBLASLt), even on a GPU with FP8 tensor
    /// cores: the profile then keeps the base `gemm.fp8_relative_efficiency`.
    pub skip_fp8: bool,
    /// Skip the sustained stage (one GEMM back to back for 20 s, 5 s quick):
    /// the sustained ratio then comes from the grid's GEMMs of 10 ms or more
    /// (a full run has them), else the base profile's is kept.
    pub skip_sustained: bool,
    /// Built-in profile name or profile file to start from; by default the
    /// embedded profile of the detected GPU (`h200` for `cpu_only`).
    pub base_profile: Option<String>,
    /// Parameters per CPU Adam step; default 64 Mi (16 Mi quick).
    pub cpu_adam_params: Option<u64>,
    /// Most threads in the CPU Adam sweep; default all of the host's.
    pub max_cpu_threads: Option<usize>,
}

impl Default for CalibrateOptions {
    fn default() -> Self {
        Self {
            quick: false,
            model: None,
            tensor_parallel: 1,
            microbatch_size: 1,
            repeats: 20,
            warmup: 3,
            cpu_only: false,
            skip_fp8: false,
            skip_sustained: false,
            base_profile: None,
            cpu_adam_params: None,
            max_cpu_threads: None,
        }
    }
}

impl CalibrateOptions {
    /// The tensor-parallel degree the model's shapes are split by, as
    /// [`Self::validate`] leaves it (it refuses 0; unvalidated, 0 reads as 1).
    pub fn tensor_parallel_degree(&self) -> NonZeroU64 {
        NonZeroU64::new(u64::from(self.tensor_parallel)).unwrap_or(NonZeroU64::MIN)
    }

    /// Checks the options; every problem at once.
    pub fn validate(&self) -> Result<(), CalibrateError> {
        let mut problems = Vec::new();
        if self.repeats == 0 {
            problems.push("repeats must be at least 1".to_string());
        }
        if self.repeats > MAX_REPEATS {
            problems.push(format!(
                "repeats must be at most {MAX_REPEATS}: every repeat is queued behind one gate, and the driver holds only about a thousand pending launches and events"
            ));
        }
        if self.tensor_parallel == 0 {
            problems.push("tensor_parallel must be at least 1".to_string());
        }
        if self.microbatch_size == 0 {
            problems.push("microbatch_size must be at least 1".to_string());
        }
        if self.cpu_adam_params == Some(0) {
            problems.push("cpu_adam_params must be positive when given".to_string());
        }
        if self.max_cpu_threads == Some(0) {
            problems.push("max_cpu_threads must be positive when given".to_string());
        }
        if let Some(model) = &self.model {
            if let Err(error) = model.validate() {
                problems.push(error.to_string());
            }
            let t = self.tensor_parallel_degree().get();
            for (key, value) in [
                ("heads", model.heads),
                ("ffn_hidden", model.ffn()),
                ("vocab", model.vocab),
            ] {
                if value % t != 0 {
                    problems.push(format!(
                        "model '{}' {key} ({value}) is not divisible by tensor_parallel ({t})",
                        model.name
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CalibrateError::InvalidOptions { problems })
        }
    }

    /// Timed repeats actually used.
    pub fn effective_repeats(&self) -> u32 {
        if self.quick {
            self.repeats.clamp(1, 5)
        } else {
            self.repeats.max(1)
        }
    }

    /// Warm-up runs actually used.
    pub fn effective_warmup(&self) -> u32 {
        if self.quick {
            self.warmup.min(2)
        } else {
            self.warmup
        }
    }

    /// Repeats of the CPU Adam step (each one touches gigabytes).
    pub fn cpu_adam_repeats(&self) -> u32 {
        self.effective_repeats().min(if self.quick { 3 } else { 5 })
    }

    /// Parameters per CPU Adam step.
    pub fn cpu_adam_params(&self) -> u64 {
        self.cpu_adam_params
            .unwrap_or(if self.quick { 16 << 20 } else { 64 << 20 })
    }
}

/// A progress report: `done` of `total` steps of `stage` are finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// e.g. "gemm bf16", "pcie", "cpu adam".
    pub stage: String,
    pub done: u64,
    pub total: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_options_list_every_problem() {
        let mut model = models::preset("gpt3-175b").unwrap();
        model.vocab = 51201;
        let options = CalibrateOptions {
            repeats: 0,
            tensor_parallel: 8,
            microbatch_size: 0,
            model: Some(model),
            ..Default::default()
        };
        let CalibrateError::InvalidOptions { problems } = options.validate().unwrap_err() else {
            panic!("expected InvalidOptions");
        };
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("vocab (51201)")));
        assert!(CalibrateOptions::default().validate().is_ok());
    }

    #[test]
    fn quick_runs_cap_repeats_and_warmup() {
        let quick = CalibrateOptions {
            quick: true,
            repeats: 50,
            warmup: 10,
            ..Default::default()
        };
        assert_eq!(quick.effective_repeats(), 5);
        assert_eq!(quick.effective_warmup(), 2);
        assert_eq!(quick.cpu_adam_repeats(), 3);
        assert_eq!(CalibrateOptions::default().effective_repeats(), 20);
    }
}
