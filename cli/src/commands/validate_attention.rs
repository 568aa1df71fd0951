//! `clustersim validate` on an attention table (validation/kernels/
//! flashattention-a100-attention.csv): each group's error, then every row
//! with the kernels the simulator prices for it.

use super::validate_json::{document, ValidatedFile};
use crate::exit::user_error;
use crate::stdout::outln;
use studies::validation::attention_table::{self, Implementation, Pass};
use studies::validation::vtrain_table::ErrorSummary;

/// Reads, predicts and reports an attention table (a bad file exits 2).
pub fn run_attention_table(path: &str, text: &str, json: bool) -> anyhow::Result<()> {
    let mut table = attention_table::read(text).map_err(|e| user_error(format!("{path}: {e}")))?;
    attention_table::predict(&mut table);
    let summaries = attention_table::summaries(&table.rows);
    if json {
        let mut json = document(ValidatedFile::AttentionTable, path);
        json["quantity"] = "kernel_time_s".into();
        json["gpu"] = table.gpu.name.clone().into();
        json["profile"] = table.profile.id.clone().into();
        json["summary"] = serde_json::to_value(ErrorSummary::of_lines(
            table.rows.iter().map(|row| (row.line, row.error_percent)),
        ))?;
        json["groups"] = serde_json::to_value(&summaries)?;
        json["rows"] = serde_json::to_value(&table.rows)?;
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(());
    }
    outln!(
        "attention table {path}: {} rows on {} (profile {}); Megatron's rows priced as the \
         simulator prices its unfused attention core, every kernel with its launch, at the burst \
         rate; error = predicted / measured - 1",
        table.rows.len(),
        table.gpu.name,
        table.profile.id
    )?;
    let percent = |v: Option<f64>, signed: bool| match (v, signed) {
        (Some(v), true) => format!("{v:+.1}%"),
        (Some(v), false) => format!("{v:.1}%"),
        (None, _) => "-".into(),
    };
    outln!(
        "\n{:<16} {:<9} {:<8} {:>5} {:>9} {:>12} {:>11}",
        "implementation",
        "pass",
        "dropout",
        "rows",
        "predicted",
        "mean |error|",
        "mean error"
    )?;
    for s in &summaries {
        outln!(
            "{:<16} {:<9} {:<8} {:>5} {:>9} {:>12} {:>11}",
            implementation_name(s.implementation),
            pass_name(s.pass),
            if s.dropout { "yes" } else { "no" },
            s.rows,
            s.predicted,
            percent(s.mean_abs_error_percent, false),
            percent(s.mean_error_percent, true),
        )?;
    }
    outln!(
        "\n{:<9} {:<8} {:>6} {:>9} {:>10} {:>8}  kernels (ms)",
        "pass",
        "dropout",
        "seq",
        "measured",
        "predicted",
        "error"
    )?;
    for row in table.rows.iter().filter(|r| r.predicted_s.is_some()) {
        outln!(
            "{:<9} {:<8} {:>6} {:>9.3} {:>10.3} {:>8}  {}",
            pass_name(row.pass),
            if row.dropout { "yes" } else { "no" },
            row.seq_len,
            row.measured_s * 1e3,
            row.predicted_s.unwrap_or(f64::NAN) * 1e3,
            percent(row.error_percent, true),
            row.note
        )?;
    }
    let mut reasons: Vec<&str> = Vec::new();
    for row in table.rows.iter().filter(|r| r.predicted_s.is_none()) {
        if !reasons.contains(&row.note.as_str()) {
            reasons.push(&row.note);
            outln!(
                "not predicted: {} (first at line {}): {}",
                implementation_name(row.implementation),
                row.line,
                row.note
            )?;
        }
    }
    Ok(())
}

fn implementation_name(implementation: Implementation) -> &'static str {
    match implementation {
        Implementation::Megatron => "megatron",
        Implementation::Pytorch => "pytorch",
        Implementation::Flashattention => "flashattention",
    }
}

fn pass_name(pass: Pass) -> &'static str {
    match pass {
        Pass::Forward => "forward",
        Pass::Backward => "backward",
    }
}
