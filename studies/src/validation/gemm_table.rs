//! Measured GEMM tables (validation/kernels/*.csv) against the GEMM model:
//! what `clustersim validate` prints for a kernel table, as it does for the
//! training cases.
//!
//! A table is a CSV whose first line that is not a `#` comment is
//! `b,m,n,k,dtype,flops_per_s` (batch, C[m,n] = A[m,k]·B[k,n], the data
//! types, achieved FLOP/s). Two comment directives say how to price it:
//! `# clustersim-gpu: ID` (a datasheet id: `h100-sxm`, `a100-sxm4-80gb`, …;
//! the GPU's embedded profile prices it) and `# clustersim-timing: kernel`
//! (kernel durations, as a tracer records them) or
//! `# clustersim-timing: back-to-back NS` (launches back to back, each time
//! including a launch gap of NS nanoseconds, as `calibrate` times them).
//! Tables are short bursts, so rows are priced at the burst rate.

use super::kernel_table::{self, TableLine};
use sim::cost::gemm_estimate;
use sim::scenario::Precision;
use topologies::GpuSpec;

/// The CSV header a GEMM table starts with.
pub const HEADER: &str = "b,m,n,k,dtype,flops_per_s";
/// Largest batch, m, n or k a row may give: what a profile's measured GEMM
/// may have.
pub const MAX_DIMENSION: u64 = profile::MAX_GEMM_DIMENSION;
/// Largest FLOP/s a row may give (10 PFLOP/s).
pub const MAX_FLOPS_PER_S: f64 = 1e16;

/// How a table's times were taken.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Kernel durations (a tracer's start to end): no launch gap.
    Kernel,
    /// Back-to-back launches: each time includes this launch gap.
    BackToBack { launch_gap_ns: f64 },
}

/// One row: what was measured and what the model predicts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GemmRow {
    /// 1-based line in the file.
    pub line: usize,
    pub batch: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub dtype: String,
    #[serde(rename = "measured")]
    pub measured_s: f64,
    #[serde(rename = "predicted")]
    pub predicted_s: Option<f64>,
    pub error_percent: Option<f64>,
    /// The tile, split-K and waves the model chose, or why no prediction.
    pub note: String,
}

/// A read table: its GPU, its timing and its rows (not yet predicted).
#[derive(Debug, Clone)]
pub struct GemmTable {
    pub gpu: GpuSpec,
    pub profile: profile::Profile,
    pub timing: Timing,
    pub rows: Vec<GemmRow>,
}

/// Whether `text` is a GEMM table: its first line that is neither empty nor
/// a comment is [`HEADER`].
pub fn looks_like_gemm_table(text: &str) -> bool {
    kernel_table::starts_with_header(text, HEADER)
}

/// Reads a table; the first problem found, naming its line.
pub fn read(text: &str) -> Result<GemmTable, String> {
    let mut gpu_id = None;
    let mut timing = None;
    let mut rows = Vec::new();
    kernel_table::for_each_line(text, HEADER, |line| {
        match line {
            TableLine::Comment { line, text } => {
                if let Some(id) = text.strip_prefix("clustersim-gpu:") {
                    gpu_id = Some(id.trim().to_string());
                } else if let Some(how) = text.strip_prefix("clustersim-timing:") {
                    timing = Some(parse_timing(how.trim(), line)?);
                }
            }
            TableLine::Row { line, text } => rows.push(parse_row(text, line)?),
        }
        Ok(())
    })?;
    let gpu_id = gpu_id.ok_or("no '# clustersim-gpu: ID' line naming the GPU")?;
    let timing = timing
        .ok_or("no '# clustersim-timing: kernel' or '# clustersim-timing: back-to-back NS' line")?;
    let (gpu, profile) = kernel_table::burst_profile(&gpu_id)?;
    if rows.is_empty() {
        return Err("the table has no rows".into());
    }
    Ok(GemmTable {
        gpu,
        profile,
        timing,
        rows,
    })
}

fn parse_timing(how: &str, line_number: usize) -> Result<Timing, String> {
    if how == "kernel" {
        return Ok(Timing::Kernel);
    }
    let gap = how
        .strip_prefix("back-to-back")
        .map(str::trim)
        .and_then(|ns| ns.parse::<f64>().ok())
        .filter(|ns| ns.is_finite() && (0.0..=profile::MAX_OVERHEAD_NS).contains(ns))
        .ok_or_else(|| {
            format!(
                "line {line_number}: clustersim-timing must be 'kernel' or 'back-to-back NS' \
                 (a launch gap from 0 to 1e9 ns), got {how:?}"
            )
        })?;
    Ok(Timing::BackToBack { launch_gap_ns: gap })
}

fn parse_row(line: &str, line_number: usize) -> Result<GemmRow, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() != 6 {
        return Err(format!(
            "line {line_number}: expected 6 fields ({HEADER}), got {}",
            fields.len()
        ));
    }
    let dimension = |index: usize, name: &str| -> Result<u64, String> {
        fields[index]
            .parse::<u64>()
            .ok()
            .filter(|v| (1..=MAX_DIMENSION).contains(v))
            .ok_or_else(|| {
                format!(
                    "line {line_number}: {name} must be an integer from 1 to {MAX_DIMENSION}, got {:?}",
                    fields[index]
                )
            })
    };
    let (batch, m, n, k) = (
        dimension(0, "b")?,
        dimension(1, "m")?,
        dimension(2, "n")?,
        dimension(3, "k")?,
    );
    let flops_per_s = fields[5]
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f >= 1.0 && *f <= MAX_FLOPS_PER_S)
        .ok_or_else(|| {
            format!(
                "line {line_number}: flops_per_s must be from 1 to {MAX_FLOPS_PER_S:e}, got {:?}",
                fields[5]
            )
        })?;
    let flops = 2.0 * batch as f64 * m as f64 * n as f64 * k as f64;
    Ok(GemmRow {
        line: line_number,
        batch,
        m,
        n,
        k,
        dtype: fields[4].to_string(),
        measured_s: flops / flops_per_s,
        predicted_s: None,
        error_percent: None,
        note: String::new(),
    })
}

/// The precision a table's data type is priced in, or why it is not.
fn precision_of(dtype: &str) -> Result<Precision, &'static str> {
    match dtype {
        "bf16" | "bf16xbf16->bf16" => Ok(Precision::Bf16),
        "fp16" | "f16xf16->f16" => Ok(Precision::Fp16),
        "fp8" => Ok(Precision::Fp8),
        _ if dtype.starts_with("f8e") => Ok(Precision::Fp8),
        _ if dtype.starts_with("f32") => Err("fp32 GEMMs are not modeled"),
        _ => Err("unknown data type"),
    }
}

/// How far above the datasheet dense peak a measured rate may be and still
/// be taken as a dense GEMM's: NVIDIA's peaks are computed at a clock the
/// GPU may exceed in a burst (H100 SXM: 1830 MHz, running up to 1980, +8 %).
pub const PEAK_MARGIN: f64 = 1.1;

/// Every row predicted: burst seconds of the model, plus the table's launch
/// gap when its times include one. A row whose measured rate is above
/// [`PEAK_MARGIN`] × the datasheet dense peak of its precision is not a
/// dense GEMM this GPU can run (XLA's FP8 rows reach 2.6 PFLOP/s on an
/// H100 whose dense FP8 peak is 1.98): it is left unpredicted, saying so.
pub fn predict(table: &mut GemmTable) {
    let gap_s = match table.timing {
        Timing::Kernel => 0.0,
        Timing::BackToBack { launch_gap_ns } => launch_gap_ns * 1e-9,
    };
    for row in &mut table.rows {
        let precision = match precision_of(&row.dtype) {
            Ok(precision) => precision,
            Err(why) => {
                row.note = why.into();
                continue;
            }
        };
        let shape = models::ops::GemmShape {
            batch: row.batch,
            m: row.m,
            n: row.n,
            k: row.k,
        };
        let peak = match (precision, table.gpu.peak.fp8_flops_per_s) {
            (Precision::Fp8, Some(fp8)) => fp8,
            (Precision::Fp8, None) => {
                row.note = format!("the {} has no FP8 tensor cores", table.gpu.name);
                continue;
            }
            (other, _) => other.peak_flops_per_s(&table.gpu.peak),
        };
        let measured_rate = shape.flops() / row.measured_s;
        if measured_rate > PEAK_MARGIN * peak {
            row.note = format!(
                "measured {:.0} TFLOP/s, above {PEAK_MARGIN} x the datasheet dense peak ({:.0}): not a dense GEMM of this GPU",
                measured_rate / 1e12,
                peak / 1e12
            );
            continue;
        }
        let Some(estimate) = gemm_estimate(precision, &shape, &table.gpu, &table.profile) else {
            row.note = "the GPU's profile has no tile model".into();
            continue;
        };
        // The profile's sustained ratio is 1 here: `seconds` is the burst.
        let predicted = estimate.seconds + gap_s;
        row.predicted_s = Some(predicted);
        row.error_percent = Some((predicted / row.measured_s - 1.0) * 100.0);
        row.note = format!(
            "tile {}x{}, split {}, {} waves",
            estimate.tile[0], estimate.tile[1], estimate.split_k, estimate.waves
        );
    }
}

/// Errors of one data type: rows, predicted, mean |error|, mean error and
/// the worst row (by |error|), in percent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DtypeSummary {
    pub dtype: String,
    pub rows: usize,
    pub predicted: usize,
    pub mean_abs_error_percent: Option<f64>,
    pub mean_error_percent: Option<f64>,
    pub worst_error_percent: Option<f64>,
    pub worst_line: Option<usize>,
}

/// One summary per data type, in the order the types first appear.
pub fn summaries(rows: &[GemmRow]) -> Vec<DtypeSummary> {
    let mut dtypes: Vec<&str> = Vec::new();
    for row in rows {
        if !dtypes.contains(&row.dtype.as_str()) {
            dtypes.push(&row.dtype);
        }
    }
    dtypes
        .into_iter()
        .map(|dtype| {
            let of_type: Vec<&GemmRow> = rows.iter().filter(|r| r.dtype == dtype).collect();
            let errors: Vec<(f64, usize)> = of_type
                .iter()
                .filter_map(|r| r.error_percent.map(|e| (e, r.line)))
                .collect();
            let count = errors.len() as f64;
            let worst = errors
                .iter()
                .copied()
                .max_by(|a, b| a.0.abs().total_cmp(&b.0.abs()));
            DtypeSummary {
                dtype: dtype.to_string(),
                rows: of_type.len(),
                predicted: errors.len(),
                mean_abs_error_percent: (!errors.is_empty())
                    .then(|| errors.iter().map(|e| e.0.abs()).sum::<f64>() / count),
                mean_error_percent: (!errors.is_empty())
                    .then(|| errors.iter().map(|e| e.0).sum::<f64>() / count),
                worst_error_percent: worst.map(|w| w.0),
                worst_line: worst.map(|w| w.1),
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "gemm_table_tests.rs"]
mod tests;
