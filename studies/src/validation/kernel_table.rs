//! What the kernel tables ([`super::gemm_table`], [`super::attention_table`])
//! share: a CSV whose first line that is not a `#` comment is its header,
//! with `# clustersim-…:` directives among the comments; and the GPU a table
//! names (`# clustersim-gpu: ID`, a datasheet id) priced by its embedded
//! profile at the burst rate, as the tables time short runs.

use profile::Profile;
use topologies::GpuSpec;

/// One line of a table that is neither empty nor its header.
pub enum TableLine<'a> {
    /// A `#` comment, the `#` and surrounding blanks removed.
    Comment { line: usize, text: &'a str },
    /// A data row after the header.
    Row { line: usize, text: &'a str },
}

/// Whether `text`'s first line that is neither empty nor a comment is `header`.
pub fn starts_with_header(text: &str, header: &str) -> bool {
    text.lines()
        .map(|line| line.trim_end_matches('\r').trim())
        .find(|line| !line.is_empty() && !line.starts_with('#'))
        == Some(header)
}

/// Hands every comment and row to `on_line` in file order (1-based line
/// numbers); the first line that is neither empty nor a comment must be
/// `header`. Stops at the first problem.
pub fn for_each_line<'a>(
    text: &'a str,
    header: &str,
    mut on_line: impl FnMut(TableLine<'a>) -> Result<(), String>,
) -> Result<(), String> {
    let mut header_seen = false;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim_end_matches('\r').trim();
        if let Some(comment) = trimmed.strip_prefix('#') {
            on_line(TableLine::Comment {
                line,
                text: comment.trim(),
            })?;
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        if !header_seen {
            if trimmed != header {
                return Err(format!("line {line}: expected the header {header:?}"));
            }
            header_seen = true;
            continue;
        }
        on_line(TableLine::Row {
            line,
            text: trimmed,
        })?;
    }
    Ok(())
}

/// The GPU of datasheet id `gpu_id` and its embedded profile with every
/// sustained ratio at 1: a table's kernels are short bursts, priced (tile
/// chosen and all) at the burst rate.
pub fn burst_profile(gpu_id: &str) -> Result<(GpuSpec, Profile), String> {
    let sheet = topologies::datasheets::datasheets()
        .into_iter()
        .find(|sheet| sheet.id == gpu_id)
        .ok_or_else(|| format!("unknown GPU {gpu_id:?} in clustersim-gpu"))?;
    let mut profile = Profile::default_for_gpu(&sheet.gpu.name)
        .ok_or_else(|| format!("no embedded profile for {}", sheet.gpu.name))?;
    if let Some(model) = profile.gemm.tile_model.as_mut() {
        model.sustained_ratio.value = 1.0;
        model.fp8_sustained_ratio = None;
    }
    Ok((sheet.gpu, profile))
}
