//! Software-stack profiles: what a training framework of a given time does
//! by default, so that a scenario is costed with the software its run used.
//!
//! A stack is versioned JSON, like a calibration profile: a name, a summary,
//! the defaults it gives the training options (each with the source that
//! says so), and the features of that software the simulator does not model
//! yet (also with sources), so outputs can say what was left out. The
//! embedded stacks live in `scenario/stacks/*.json`; `--stack FILE` reads another.
//!
//! Precedence: command-line flags, then the scenario file, then the stack.
//! One rule comes from the code itself rather than a default: Megatron turns
//! the asynchronous tensor all-reduce off under sequence parallelism
//! (`megatron/arguments.py`: "if args.sequence_parallel:
//! args.async_tensor_model_parallel_allreduce = False"), so a stack's
//! asynchronous all-reduce does not apply when sequence parallelism is on and
//! the user did not ask for it explicitly.
//!
//! A stack's `host` section says what its host thread pays to issue a kernel
//! and a collective call, how many kernels its optimizer issues, and whether
//! it synchronizes with the GPU after every pipeline exchange; the lowering
//! then puts a host lane in front of the GPU (`sim::lowering`). A stack
//! without one simulates an infinitely fast host.
//!
//! A stack's `kernels` section says which kernel implementations the software
//! had where that changes the kernels a layer runs: today the longest
//! sequence its fused softmax kernel accepts ([`models::softmax`]).
//!
//! A stack's optional `nccl` key says which NCCL it ran (`"2.12"` or `"2.21"`,
//! with its source): the tuner that picks and costs every collective's algorithm
//! and protocol ([`collectives::version`]). A stack without one runs 2.12's.

use crate::options::TrainingOptionsFile;
use collectives::NcclVersion;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The stack a scenario uses when it names none: the software of the SC21
/// runs, whose behaviour is what the options' own defaults describe.
pub const DEFAULT_STACK: &str = "megatron-2021";

/// A default and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourcedValue {
    pub value: serde_json::Value,
    pub source: String,
}

/// A feature of the stack the simulator leaves out, and where it is described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotModeled {
    pub feature: String,
    pub source: String,
}

/// The memory-bound kernels Megatron-LM's local DDP runs over one GPU's
/// gradients when it all-reduces them after the last backward
/// (`allreduce_gradients`, megatron/model/distributed.py), also at d = 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalDdpKernels {
    /// No contiguous gradient buffer (before e8fb052, 2021-08-18):
    /// `_flatten_dense_tensors` (a copy into one buffer), `coalesced /= d`,
    /// the all-reduce, then every gradient copied back from the buffer.
    FlattenDivideCopyBack,
    /// The contiguous buffer (e8fb052 on): `buffer_.data /= d` in place,
    /// then the all-reduce.
    Divide,
}

impl LocalDdpKernels {
    /// Memory-bound kernels before the all-reduce and after it, each reading
    /// and writing the gradients once.
    pub fn kernels_before_and_after(self) -> (u32, u32) {
        match self {
            LocalDdpKernels::FlattenDivideCopyBack => (2, 1),
            LocalDdpKernels::Divide => (1, 0),
        }
    }
}

/// What one rank's host thread pays to issue work (eager PyTorch: Python,
/// autograd, the dispatcher and the launch), and where it waits for the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCosts {
    /// Host time per kernel issued.
    pub kernel_issue_ns: u64,
    /// Host time per collective or point-to-point call issued.
    pub collective_call_ns: u64,
    /// Kernels the optimizer step issues (multi-tensor phases).
    pub optimizer_kernels: u32,
    /// `torch.cuda.synchronize()` after every pipeline exchange: the host
    /// waits for the GPU to drain before it issues more.
    pub synchronize_after_p2p: bool,
}

/// The option keys of a stack file, checked against the training options.
/// A software stack, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    pub name: String,
    pub summary: String,
    /// The defaults it gives the training options.
    pub options: TrainingOptionsFile,
    /// Option key → the source of its default.
    pub sources: BTreeMap<String, String>,
    /// The host's costs; `None`: the host is not simulated (infinitely fast).
    pub host: Option<HostCosts>,
    /// The longest sequence the fused softmax kernel accepts (`None`: no
    /// fused kernel). A stack without a `kernels` section has one for every
    /// length ([`models::softmax`]).
    pub fused_softmax_max_seq_len: Option<u64>,
    /// The attention core runs as one fused kernel (`models::attention`).
    pub fused_attention: bool,
    /// Local DDP's kernels around a blocking data-parallel all-reduce
    /// (`None`: none).
    pub local_ddp: Option<LocalDdpKernels>,
    /// The interleaved schedule's steady state holds each forward's output
    /// until the next backward is done and sends both in one exchange
    /// (Megatron-LM 2021's `send_forward_backward_recv_forward_backward`).
    pub combined_interleaved_exchange: bool,
    /// The NCCL whose tuner costs the collectives (2.12 when the file says none).
    pub nccl: NcclVersion,
    pub not_modeled: Vec<NotModeled>,
}

/// A stack name that is no built-in: the nearest built-in when one is
/// close, else all of them (`input_file::named`).
fn unknown_stack_message(name: &str) -> String {
    let builtins = Stack::builtin_names();
    match input_file::named::did_you_mean(name, &builtins) {
        Some(suggestion) => format!(
            "unknown stack '{name}': {suggestion} (built-ins: {}; or a stack JSON file)",
            builtins.join(", ")
        ),
        None => format!(
            "unknown stack '{name}' (built-ins: {}; or a stack JSON file)",
            builtins.join(", ")
        ),
    }
}

/// Why a stack cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("{}", unknown_stack_message(name))]
    Unknown { name: String },
    #[error("cannot read stack file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("stack {origin} is not a valid stack: {message}")]
    Invalid { origin: String, message: String },
}

impl Stack {
    /// `options` (flags over the scenario file) with this stack's defaults
    /// under them, and Megatron's rule that sequence parallelism turns the
    /// asynchronous tensor all-reduce off unless it was asked for; under
    /// ZeRO-Offload the stack's gradient-reduction defaults do not apply.
    pub fn defaults_under(&self, options: &TrainingOptionsFile) -> TrainingOptionsFile {
        let mut defaults = self.options.clone();
        if options.sequence_parallel == Some(true) {
            defaults.async_tensor_allreduce = None;
        }
        // Under ZeRO-Offload DeepSpeed's engine owns the gradients: a
        // Megatron stack's DDP and accumulation defaults do not apply.
        if options.zero_offload == Some(true) {
            defaults.overlap_grad_reduce = None;
            defaults.grad_reduce_bucket_params = None;
            defaults.gradient_accumulation_fusion = None;
        }
        // ZeRO-2/3 reduce-scatter gradients as the backward produces them:
        // a stack's overlapped all-reduce does not apply (its bucket size
        // still cuts ZeRO-2's buckets; ZeRO-3's units are layers).
        let sharding = options.sharding().unwrap_or_default();
        if sharding >= crate::zero_stage::ZeroStage::Gradients {
            defaults.overlap_grad_reduce = None;
        }
        if sharding == crate::zero_stage::ZeroStage::Full {
            defaults.grad_reduce_bucket_params = None;
        }
        // A user who turns the overlapped reduce off turns its buckets off
        // with it (ZeRO-2's buckets stay: they cut its reduce-scatters).
        if options.overlap_grad_reduce == Some(false)
            && sharding < crate::zero_stage::ZeroStage::Gradients
        {
            defaults.grad_reduce_bucket_params = None;
        }
        options.clone().or(defaults)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_stack_parses_and_sources_every_default() {
        for name in Stack::builtin_names() {
            let stack = Stack::builtin(name).unwrap();
            assert_eq!(stack.name, name);
            assert!(!stack.sources.is_empty(), "{name}");
            assert!(stack.sources.values().all(|s| !s.is_empty()), "{name}");
        }
        assert!(Stack::builtin(DEFAULT_STACK).is_some());
    }

    #[test]
    fn turning_the_overlapped_reduce_off_drops_the_stacks_bucket_size() {
        let stack = Stack::builtin("megatron-core-2024").unwrap();
        let off = TrainingOptionsFile {
            overlap_grad_reduce: Some(false),
            ..TrainingOptionsFile::default()
        };
        let options = stack.defaults_under(&off);
        assert_eq!(options.overlap_grad_reduce, Some(false));
        assert_eq!(options.grad_reduce_bucket_params, None);
        let asked = TrainingOptionsFile {
            grad_reduce_bucket_params: Some(1_000_000),
            ..off
        };
        // Asked for with the reduce off, it is the user's to explain: kept.
        assert_eq!(
            stack.defaults_under(&asked).grad_reduce_bucket_params,
            Some(1_000_000)
        );
    }

    #[test]
    fn stacks_run_the_nccl_of_their_time() {
        let nccl = |name| Stack::builtin(name).unwrap().nccl;
        assert_eq!(nccl("megatron-2021"), NcclVersion::V2_12);
        assert_eq!(nccl("megatron-2022"), NcclVersion::V2_12);
        assert_eq!(nccl("deepspeed-pipeline"), NcclVersion::V2_12);
        assert_eq!(nccl("megatron-core-2024"), NcclVersion::V2_21);
        let stack = Stack::builtin("megatron-core-2024").unwrap();
        assert!(stack.sources["nccl"].contains("v2.21.5-1"));
    }

    #[test]
    fn the_default_stack_gives_the_options_their_own_defaults() {
        let stack = Stack::builtin(DEFAULT_STACK).unwrap();
        let resolved = stack
            .defaults_under(&TrainingOptionsFile::default())
            .with_defaults();
        assert_eq!(resolved, TrainingOptionsFile::default().with_defaults());
    }

    #[test]
    fn flags_win_over_the_stack_and_sequence_parallelism_turns_async_off() {
        let stack = Stack::builtin("megatron-2022").unwrap();
        let plain = stack
            .defaults_under(&TrainingOptionsFile::default())
            .with_defaults();
        assert!(plain.async_tensor_allreduce);
        let with_sp = stack
            .defaults_under(&TrainingOptionsFile {
                sequence_parallel: Some(true),
                ..Default::default()
            })
            .with_defaults();
        assert!(with_sp.sequence_parallel && !with_sp.async_tensor_allreduce);
        let overridden = stack
            .defaults_under(&TrainingOptionsFile {
                async_tensor_allreduce: Some(false),
                ..Default::default()
            })
            .with_defaults();
        assert!(!overridden.async_tensor_allreduce);
    }

    #[test]
    fn bad_stack_files_are_named_errors() {
        let unknown_key = r#"{"format_version": 1, "name": "x", "summary": "", "options": {"warp_speed": {"value": true, "source": "s"}}}"#;
        let error = Stack::from_json_str(unknown_key, "x.json")
            .unwrap_err()
            .to_string();
        assert!(error.contains("warp_speed"), "{error}");
        let unsourced = r#"{"format_version": 1, "name": "x", "summary": "", "options": {"sequence_parallel": {"value": true, "source": " "}}}"#;
        let error = Stack::from_json_str(unsourced, "x.json")
            .unwrap_err()
            .to_string();
        assert!(error.contains("needs a source"), "{error}");
        let version = r#"{"format_version": 2, "name": "x", "summary": "", "options": {}}"#;
        assert!(Stack::from_json_str(version, "x.json").is_err());
        let nccl = |value: &str, source: &str| {
            let text = format!(
                r#"{{"format_version": 1, "name": "x", "summary": "", "options": {{}}, "nccl": {{"value": {value}, "source": "{source}"}}}}"#
            );
            Stack::from_json_str(&text, "x.json").map(|s| s.nccl)
        };
        assert_eq!(nccl(r#""2.21""#, "s").unwrap(), NcclVersion::V2_21);
        let error = nccl(r#""2.18""#, "s").unwrap_err().to_string();
        assert!(error.contains("nccl: one of 2.12, 2.21"), "{error}");
        let error = nccl("2.21", "s").unwrap_err().to_string();
        assert!(error.contains("nccl: one of"), "{error}");
        let error = nccl(r#""2.21""#, " ").unwrap_err().to_string();
        assert!(
            error.contains("nccl: the version needs a source"),
            "{error}"
        );
        let error = Stack::resolve("megatron-1999").unwrap_err().to_string();
        assert!(error.contains("built-ins: megatron-2021"), "{error}");
    }
}
