//! Measured attention-core runtimes (validation/kernels/*attention*.csv)
//! against the simulator's kernels for them: what `clustersim validate`
//! prints for an attention table, as it does for GEMM tables.
//!
//! A table is a CSV whose first line that is not a `#` comment is
//! [`HEADER`]: the implementation (`megatron`, `pytorch`, `flashattention`),
//! the pass (`forward`, `backward`), whether dropout ran (0/1), batch,
//! heads, sequence length, head dimension, data type and the runtime in ms.
//! `# clustersim-gpu: ID` names the GPU (a datasheet id) whose embedded
//! profile prices it, at the burst rate (the tables time short runs).
//!
//! Megatron's rows are priced as the simulator prices Megatron's unfused
//! attention core in a layer ([`models::unfused_attention`]): the score
//! product, Megatron's fused softmax (its kernel's limit of 2,048, as in
//! the 2021 stack), dropout where the row ran it, the value product, and the
//! backward of each, every kernel with its launch, issued by the host at
//! the 2021 stack's cost per kernel (eager PyTorch, [`MEGATRON_STACK`],
//! whose fused softmax limit applies too). The other
//! implementations are not a stack the simulator runs: their rows are kept
//! as data and left unpredicted, saying so.

use super::kernel_table::{self, TableLine};
use models::ops::Step;
use models::softmax::megatron_attention_softmax;
use models::unfused_attention::UnfusedCore;
use sim::cost::KernelCostModel;
use sim::scenario::{Precision, Stack};
use topologies::GpuSpec;

/// The CSV header an attention table starts with.
pub const HEADER: &str = "implementation,pass,dropout,batch,heads,seq_len,head_dim,dtype,ms";
/// Largest batch, heads, sequence or head dimension a row may give.
pub const MAX_DIMENSION: u64 = 1 << 20;
/// Largest score-matrix element count a row may give (b·heads·s² elements): 2^40.
pub const MAX_SCORE_ELEMS: u64 = 1 << 40;
/// Longest runtime a row may give, in ms: one hour.
pub const MAX_MS: f64 = 3.6e6;

/// Which attention a row timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Implementation {
    Megatron,
    Pytorch,
    Flashattention,
}

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pass {
    Forward,
    Backward,
}

/// One row: what was measured and what the model predicts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AttentionRow {
    /// 1-based line in the file.
    pub line: usize,
    pub implementation: Implementation,
    pub pass: Pass,
    pub dropout: bool,
    pub batch: u64,
    pub heads: u64,
    pub seq_len: u64,
    pub head_dim: u64,
    pub dtype: String,
    #[serde(rename = "measured")]
    pub measured_s: f64,
    #[serde(rename = "predicted")]
    pub predicted_s: Option<f64>,
    pub error_percent: Option<f64>,
    /// The kernels and their modeled times, or why no prediction.
    pub note: String,
}

/// A read table: its GPU, profile and rows (not yet predicted).
#[derive(Debug, Clone)]
pub struct AttentionTable {
    pub gpu: GpuSpec,
    pub profile: profile::Profile,
    pub rows: Vec<AttentionRow>,
}

/// Whether `text` is an attention table: its first line that is neither
/// empty nor a comment is [`HEADER`].
pub fn looks_like_attention_table(text: &str) -> bool {
    kernel_table::starts_with_header(text, HEADER)
}

/// Reads a table; the first problem found, naming its line.
pub fn read(text: &str) -> Result<AttentionTable, String> {
    let mut gpu_id = None;
    let mut rows = Vec::new();
    kernel_table::for_each_line(text, HEADER, |line| {
        match line {
            TableLine::Comment { text, .. } => {
                if let Some(id) = text.strip_prefix("clustersim-gpu:") {
                    gpu_id = Some(id.trim().to_string());
                }
            }
            TableLine::Row { line, text } => rows.push(parse_row(text, line)?),
        }
        Ok(())
    })?;
    let gpu_id = gpu_id.ok_or("no '# clustersim-gpu: ID' line naming the GPU")?;
    let (gpu, profile) = kernel_table::burst_profile(&gpu_id)?;
    if rows.is_empty() {
        return Err("the table has no rows".into());
    }
    Ok(AttentionTable { gpu, profile, rows })
}

fn parse_row(line: &str, line_number: usize) -> Result<AttentionRow, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != 9 {
        return Err(format!(
            "line {line_number}: expected 9 fields ({HEADER}), got {}",
            fields.len()
        ));
    }
    let bad = |name: &str, what: &str, value: &str| {
        format!("line {line_number}: {name} must be {what}, got {value:?}")
    };
    let implementation = match fields[0] {
        "megatron" => Implementation::Megatron,
        "pytorch" => Implementation::Pytorch,
        "flashattention" => Implementation::Flashattention,
        other => {
            return Err(bad(
                "implementation",
                "megatron, pytorch or flashattention",
                other,
            ))
        }
    };
    let pass = match fields[1] {
        "forward" => Pass::Forward,
        "backward" => Pass::Backward,
        other => return Err(bad("pass", "forward or backward", other)),
    };
    let dropout = match fields[2] {
        "0" => false,
        "1" => true,
        other => return Err(bad("dropout", "0 or 1", other)),
    };
    let dimension = |index: usize, name: &str| -> Result<u64, String> {
        fields[index]
            .parse::<u64>()
            .ok()
            .filter(|v| (1..=MAX_DIMENSION).contains(v))
            .ok_or_else(|| {
                bad(
                    name,
                    &format!("an integer from 1 to {MAX_DIMENSION}"),
                    fields[index],
                )
            })
    };
    let (batch, heads, seq_len, head_dim) = (
        dimension(3, "batch")?,
        dimension(4, "heads")?,
        dimension(5, "seq_len")?,
        dimension(6, "head_dim")?,
    );
    let score_elems = [heads, seq_len, seq_len]
        .iter()
        .try_fold(batch, |acc, &v| acc.checked_mul(v))
        .filter(|&elems| elems <= MAX_SCORE_ELEMS);
    if score_elems.is_none() {
        return Err(format!(
            "line {line_number}: batch x heads x seq_len^2 must be at most {MAX_SCORE_ELEMS}"
        ));
    }
    let ms = fields[8]
        .parse::<f64>()
        .ok()
        .filter(|ms| ms.is_finite() && *ms > 0.0 && *ms <= MAX_MS)
        .ok_or_else(|| bad("ms", &format!("above 0 and at most {MAX_MS:e}"), fields[8]))?;
    Ok(AttentionRow {
        line: line_number,
        implementation,
        pass,
        dropout,
        batch,
        heads,
        seq_len,
        head_dim,
        dtype: fields[7].to_string(),
        measured_s: ms * 1e-3,
        predicted_s: None,
        error_percent: None,
        note: String::new(),
    })
}

/// The stack Megatron's rows run under: its host cost per kernel and its
/// fused softmax's longest sequence (2,048 in the 2021 code).
pub const MEGATRON_STACK: &str = "megatron-2021";

/// Every Megatron row predicted (fp16 and bf16 only); the others say why not.
pub fn predict(table: &mut AttentionTable) {
    let stack = Stack::builtin(MEGATRON_STACK).expect("a built-in stack");
    let host_issue_s = stack
        .host
        .map_or(0.0, |host| host.kernel_issue_ns as f64 * 1e-9);
    for row in &mut table.rows {
        let precision = match row.dtype.as_str() {
            "fp16" => Precision::Fp16,
            "bf16" => Precision::Bf16,
            _ => {
                row.note = "only fp16 and bf16 attention is modeled".into();
                continue;
            }
        };
        if row.implementation != Implementation::Megatron {
            row.note = match row.implementation {
                Implementation::Pytorch => {
                    "PyTorch's eager attention is not a stack the simulator runs"
                }
                _ => "FlashAttention 1 is not a kernel the simulator's stacks run",
            }
            .into();
            continue;
        }
        let costs = KernelCostModel::new(&table.gpu, &table.profile).with_precision(precision);
        let kernels = megatron_kernels(row, stack.fused_softmax_max_seq_len);
        let times: Vec<(&str, f64)> = kernels
            .iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) => Some((kernel.name, costs.kernel_seconds(kernel))),
                _ => None,
            })
            .collect();
        let predicted = issued_and_run_seconds(&times, host_issue_s);
        row.predicted_s = Some(predicted);
        row.error_percent = Some((predicted / row.measured_s - 1.0) * 100.0);
        row.note = times
            .iter()
            .map(|(name, s)| format!("{name} {:.3}", s * 1e3))
            .collect::<Vec<_>>()
            .join(", ");
    }
}

/// When the last of `kernels` (name, GPU seconds) ends, each issued by the
/// host `issue_s` after the one before (eager PyTorch: Python, the
/// dispatcher and the launch) and run on one stream as soon as it is issued
/// and the one before has ended, as the simulator's engine runs a rank's
/// host and compute stream. Small score matrices are host-bound this way.
fn issued_and_run_seconds(kernels: &[(&str, f64)], issue_s: f64) -> f64 {
    let (mut issued_s, mut gpu_free_s) = (0.0_f64, 0.0_f64);
    for &(_, seconds) in kernels {
        issued_s += issue_s;
        gpu_free_s = gpu_free_s.max(issued_s) + seconds;
    }
    gpu_free_s
}

/// The kernels the simulator runs for a Megatron row, in order, with the
/// stack's fused softmax up to `fused_softmax_max_seq_len`.
fn megatron_kernels(row: &AttentionRow, fused_softmax_max_seq_len: Option<u64>) -> Vec<Step> {
    let core = UnfusedCore {
        batch: row.batch,
        heads: row.heads,
        seq_len: row.seq_len,
        qk_dim: row.head_dim,
        v_dim: row.head_dim,
        softmax: megatron_attention_softmax(
            row.batch * row.heads,
            row.seq_len,
            fused_softmax_max_seq_len,
        ),
        dropout: row.dropout,
    }
    .steps();
    match row.pass {
        Pass::Forward => core.forward,
        Pass::Backward => core.backward_groups.into_iter().rev().flatten().collect(),
    }
}

/// Errors of one (implementation, pass, dropout) group.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GroupSummary {
    pub implementation: Implementation,
    pub pass: Pass,
    pub dropout: bool,
    pub rows: usize,
    pub predicted: usize,
    pub mean_abs_error_percent: Option<f64>,
    pub mean_error_percent: Option<f64>,
}

/// One summary per group, in the order the groups first appear.
pub fn summaries(rows: &[AttentionRow]) -> Vec<GroupSummary> {
    let mut groups: Vec<(Implementation, Pass, bool)> = Vec::new();
    for row in rows {
        let key = (row.implementation, row.pass, row.dropout);
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    groups
        .into_iter()
        .map(|(implementation, pass, dropout)| {
            let of_group: Vec<&AttentionRow> = rows
                .iter()
                .filter(|r| {
                    (r.implementation, r.pass, r.dropout) == (implementation, pass, dropout)
                })
                .collect();
            let errors: Vec<f64> = of_group.iter().filter_map(|r| r.error_percent).collect();
            let count = errors.len() as f64;
            GroupSummary {
                implementation,
                pass,
                dropout,
                rows: of_group.len(),
                predicted: errors.len(),
                mean_abs_error_percent: (!errors.is_empty())
                    .then(|| errors.iter().map(|e| e.abs()).sum::<f64>() / count),
                mean_error_percent: (!errors.is_empty())
                    .then(|| errors.iter().sum::<f64>() / count),
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "attention_table_tests.rs"]
mod tests;
