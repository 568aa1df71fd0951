//! The stack file as written (`scenario/stacks/*.json`, embedded, or `--stack
//! FILE`): every default, host cost and kernel choice with the source that
//! says so, read into a checked [`Stack`] whose `sources` keep those sources.

use crate::options::TrainingOptionsFile;
use crate::stack::{HostCosts, LocalDdpKernels, NotModeled, SourcedValue, Stack, StackError};
use collectives::NcclVersion;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the stack format.
pub const STACK_FORMAT_VERSION: u32 = 1;

const BUILTIN: [(&str, &str); 4] = [
    (
        "megatron-2021",
        include_str!("../stacks/megatron-2021.json"),
    ),
    (
        "megatron-2022",
        include_str!("../stacks/megatron-2022.json"),
    ),
    (
        "megatron-core-2024",
        include_str!("../stacks/megatron-core-2024.json"),
    ),
    (
        "deepspeed-pipeline",
        include_str!("../stacks/deepspeed-pipeline.json"),
    ),
];

impl Stack {
    /// Names of the embedded stacks.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(name, _)| *name).collect()
    }

    /// An embedded stack's file, as a user would copy and edit it.
    pub fn builtin_text(name: &str) -> Option<&'static str> {
        BUILTIN
            .iter()
            .find(|(builtin, _)| *builtin == name)
            .map(|(_, text)| *text)
    }

    /// An embedded stack by name (each parsed once per process: a sweep
    /// resolves one scenario per layout).
    pub fn builtin(name: &str) -> Option<Stack> {
        static PARSED: [std::sync::OnceLock<Stack>; BUILTIN.len()] =
            [const { std::sync::OnceLock::new() }; BUILTIN.len()];
        let index = BUILTIN.iter().position(|(builtin, _)| *builtin == name)?;
        let stack = PARSED[index].get_or_init(|| {
            Stack::from_json_str(BUILTIN[index].1, name)
                .expect("embedded stacks are valid (tested)")
        });
        Some(stack.clone())
    }

    /// A built-in name, or a path to a stack JSON file.
    pub fn resolve(name_or_path: &str) -> Result<Stack, StackError> {
        if let Some(stack) = Stack::builtin(name_or_path) {
            return Ok(stack);
        }
        let path = Path::new(name_or_path);
        if !name_or_path.ends_with(".json") && !path.exists() {
            return Err(StackError::Unknown {
                name: name_or_path.into(),
            });
        }
        let text = input_file::read_to_string(path).map_err(|source| StackError::Read {
            path: name_or_path.into(),
            source,
        })?;
        Stack::from_json_str(&text, name_or_path)
    }

    /// Parses and checks a stack file; `origin` names it in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Stack, StackError> {
        parse(text, origin)
    }
}

/// A stack file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackFile {
    format_version: u32,
    name: String,
    summary: String,
    /// Training-option keys (as in a scenario file) → default and source.
    options: BTreeMap<String, SourcedValue>,
    /// What the host thread pays to issue work, when the stack says.
    #[serde(default)]
    host: Option<HostFile>,
    /// Which kernel implementations the software has, when the stack says.
    #[serde(default)]
    kernels: Option<KernelsFile>,
    /// How its pipeline schedules exchange tensors, when the stack says.
    #[serde(default)]
    p2p: Option<P2pFile>,
    /// The NCCL the software ran (`"2.12"`, `"2.21"`), when the stack says.
    #[serde(default)]
    nccl: Option<SourcedValue>,
    #[serde(default)]
    not_modeled: Vec<NotModeled>,
}

/// The `kernels` section as written: each choice with its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelsFile {
    /// The longest sequence its fused scale-mask-softmax kernel accepts
    /// (null: the software has no such kernel; absent: every length).
    #[serde(default)]
    fused_softmax_max_seq_len: Option<SourcedValue>,
    /// Whether the attention core runs as one fused kernel
    /// (`models::attention`; absent: false).
    #[serde(default)]
    fused_attention: Option<SourcedValue>,
    /// What local DDP runs over the gradients around its data-parallel
    /// all-reduce (`"flatten_divide_copy_back"`, `"divide"`; absent or null:
    /// nothing, as PyTorch's and Megatron-Core's DDP).
    #[serde(default)]
    local_ddp_gradient_kernels: Option<SourcedValue>,
}

/// The `p2p` section as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct P2pFile {
    /// The interleaved schedule's steady state sends a forward's output only
    /// with the next backward's gradient, in one exchange (absent: false).
    #[serde(default)]
    combined_interleaved_exchange: Option<SourcedValue>,
}

/// The `host` section as written: each cost with its source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostFile {
    kernel_issue_ns: SourcedValue,
    collective_call_ns: SourcedValue,
    optimizer_kernels: SourcedValue,
    synchronize_after_p2p: SourcedValue,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StackOptions {
    #[serde(flatten)]
    options: TrainingOptionsFile,
}

/// A stack file's problem, naming the file.
fn invalid(origin: &str, message: String) -> StackError {
    StackError::Invalid {
        origin: origin.into(),
        message,
    }
}

/// Records the source of the value at `key`, or refuses an empty one as
/// "`key`: `needs`".
fn record_source(
    key: &str,
    sourced: &SourcedValue,
    needs: &str,
    sources: &mut BTreeMap<String, String>,
    origin: &str,
) -> Result<(), StackError> {
    if sourced.source.trim().is_empty() {
        return Err(invalid(origin, format!("{key}: {needs}")));
    }
    sources.insert(key.into(), sourced.source.clone());
    Ok(())
}

/// The value of a sourced choice at `key`, once its source is recorded (an
/// empty one is "`key`: every choice needs a source").
fn sourced_value<'a>(
    key: &str,
    sourced: &'a SourcedValue,
    sources: &mut BTreeMap<String, String>,
    origin: &str,
) -> Result<&'a serde_json::Value, StackError> {
    record_source(key, sourced, "every choice needs a source", sources, origin)?;
    Ok(&sourced.value)
}

/// Parses and checks a stack file; `origin` names it in errors.
fn parse(text: &str, origin: &str) -> Result<Stack, StackError> {
    let file: StackFile = serde_json::from_str(text).map_err(|e| invalid(origin, e.to_string()))?;
    if file.format_version != STACK_FORMAT_VERSION {
        return Err(invalid(
            origin,
            format!(
                "format_version {} (this build reads {STACK_FORMAT_VERSION})",
                file.format_version
            ),
        ));
    }
    if file.name.trim().is_empty() {
        return Err(invalid(origin, "name is empty".into()));
    }
    let options = parse_options(&file.options, origin)?;
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    let host = match &file.host {
        None => None,
        Some(host) => Some(parse_host(host, &mut sources, origin)?),
    };
    let kernels = file.kernels.as_ref();
    let fused_softmax_max_seq_len = match kernels.and_then(|k| k.fused_softmax_max_seq_len.as_ref())
    {
        None => Some(u64::MAX),
        Some(sourced) => {
            match sourced_value(
                "kernels.fused_softmax_max_seq_len",
                sourced,
                &mut sources,
                origin,
            )? {
                serde_json::Value::Null => None,
                value => Some(value.as_u64().filter(|&v| v > 0).ok_or_else(|| {
                    invalid(
                        origin,
                        "kernels.fused_softmax_max_seq_len: a positive integer or null".into(),
                    )
                })?),
            }
        }
    };
    let fused_attention = match kernels.and_then(|k| k.fused_attention.as_ref()) {
        None => false,
        Some(sourced) => sourced_value("kernels.fused_attention", sourced, &mut sources, origin)?
            .as_bool()
            .ok_or_else(|| invalid(origin, "kernels.fused_attention: true or false".into()))?,
    };
    let local_ddp = match kernels.and_then(|k| k.local_ddp_gradient_kernels.as_ref()) {
        None => None,
        Some(sourced) => parse_local_ddp(
            sourced_value(
                "kernels.local_ddp_gradient_kernels",
                sourced,
                &mut sources,
                origin,
            )?,
            origin,
        )?,
    };
    let combined_interleaved_exchange = match file
        .p2p
        .as_ref()
        .and_then(|p2p| p2p.combined_interleaved_exchange.as_ref())
    {
        None => false,
        Some(sourced) => sourced_value(
            "p2p.combined_interleaved_exchange",
            sourced,
            &mut sources,
            origin,
        )?
        .as_bool()
        .ok_or_else(|| {
            invalid(
                origin,
                "p2p.combined_interleaved_exchange: true or false".into(),
            )
        })?,
    };
    let nccl = match &file.nccl {
        None => NcclVersion::default(),
        Some(sourced) => parse_nccl(sourced, &mut sources, origin)?,
    };
    Ok(Stack {
        name: file.name,
        summary: file.summary,
        options,
        sources: file
            .options
            .into_iter()
            .map(|(key, sourced)| (key, sourced.source))
            .chain(sources)
            .collect(),
        host,
        fused_softmax_max_seq_len,
        fused_attention,
        local_ddp,
        combined_interleaved_exchange,
        nccl,
        not_modeled: file.not_modeled,
    })
}

/// The training-option defaults, each with a source.
fn parse_options(
    options: &BTreeMap<String, SourcedValue>,
    origin: &str,
) -> Result<TrainingOptionsFile, StackError> {
    if let Some((key, _)) = options.iter().find(|(_, v)| v.source.trim().is_empty()) {
        return Err(invalid(
            origin,
            format!("options.{key}: every default needs a source"),
        ));
    }
    let values: serde_json::Map<String, serde_json::Value> = options
        .iter()
        .map(|(key, sourced)| (key.clone(), sourced.value.clone()))
        .collect();
    Ok(
        serde_json::from_value::<StackOptions>(serde_json::Value::Object(values))
            .map_err(|e| invalid(origin, format!("options: {e}")))?
            .options,
    )
}

/// The host section: every cost's source first, then the values.
fn parse_host(
    host: &HostFile,
    sources: &mut BTreeMap<String, String>,
    origin: &str,
) -> Result<HostCosts, StackError> {
    let entries = [
        ("kernel_issue_ns", &host.kernel_issue_ns),
        ("collective_call_ns", &host.collective_call_ns),
        ("optimizer_kernels", &host.optimizer_kernels),
        ("synchronize_after_p2p", &host.synchronize_after_p2p),
    ];
    for (key, sourced) in entries {
        record_source(
            &format!("host.{key}"),
            sourced,
            "every cost needs a source",
            sources,
            origin,
        )?;
    }
    let count = |key: &str, sourced: &SourcedValue, max: u64| {
        sourced
            .value
            .as_u64()
            .filter(|&v| v <= max)
            .ok_or_else(|| invalid(origin, format!("host.{key}: an integer from 0 to {max}")))
    };
    Ok(HostCosts {
        // At most 1 s per kernel or call: anything larger is a unit mistake.
        kernel_issue_ns: count("kernel_issue_ns", &host.kernel_issue_ns, 1_000_000_000)?,
        collective_call_ns: count(
            "collective_call_ns",
            &host.collective_call_ns,
            1_000_000_000,
        )?,
        optimizer_kernels: count("optimizer_kernels", &host.optimizer_kernels, 1_000_000)? as u32,
        synchronize_after_p2p: host
            .synchronize_after_p2p
            .value
            .as_bool()
            .ok_or_else(|| invalid(origin, "host.synchronize_after_p2p: true or false".into()))?,
    })
}

/// `kernels.local_ddp_gradient_kernels`: a name, or null for none.
fn parse_local_ddp(
    value: &serde_json::Value,
    origin: &str,
) -> Result<Option<LocalDdpKernels>, StackError> {
    match value {
        serde_json::Value::Null => Ok(None),
        value => match value.as_str() {
            Some("flatten_divide_copy_back") => Ok(Some(LocalDdpKernels::FlattenDivideCopyBack)),
            Some("divide") => Ok(Some(LocalDdpKernels::Divide)),
            _ => Err(invalid(
                origin,
                "kernels.local_ddp_gradient_kernels: \"flatten_divide_copy_back\", \"divide\" or null"
                    .into(),
            )),
        },
    }
}

/// The NCCL version, with its source.
fn parse_nccl(
    sourced: &SourcedValue,
    sources: &mut BTreeMap<String, String>,
    origin: &str,
) -> Result<NcclVersion, StackError> {
    record_source(
        "nccl",
        sourced,
        "the version needs a source",
        sources,
        origin,
    )?;
    let names: Vec<&str> = NcclVersion::ALL.iter().map(|v| v.name()).collect();
    sourced
        .value
        .as_str()
        .and_then(NcclVersion::parse)
        .ok_or_else(|| invalid(origin, format!("nccl: one of {}", names.join(", "))))
}
