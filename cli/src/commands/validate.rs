//! `clustersim validate FILE`: published measurements vs predictions. FILE is
//! a dev set (validation/dev-set.json format), a GEMM table
//! (validation/kernels/*.csv, told apart by its `b,m,n,k,dtype,flops_per_s`
//! header), an attention table (validation/kernels/*attention*.csv, by its
//! `implementation,pass,…` header) or vTrain's single-node ground truth CSV
//! (validation/vtrain-single-node.csv), told apart by its `.csv` extension or
//! its `#` header line.

use super::validate_json::{cases_summary, document, ValidatedFile};
use crate::exit::user_error;
use crate::stdout::outln;
use clap::Args;
use sim::scenario::fitted::FitValues;
use std::path::PathBuf;
use std::time::Instant;
use studies::validation::vtrain::{self, VtrainResult};
use studies::validation::vtrain_table::{error_table, ErrorSummary, ErrorTable};
use studies::validation::{attention_table, gemm_table};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  clustersim validate validation/dev-set.json\n  clustersim validate validation/vtrain-single-node.csv\n  clustersim validate validation/kernels/xla-h100-matmul.csv   (a GEMM table against the tile model)\n  clustersim validate validation/kernels/flashattention-a100-attention.csv   (Megatron's attention core)"
)]
pub struct ValidateArgs {
    /// A file of published cases (validation/dev-set.json format), a GEMM
    /// table (validation/kernels/*.csv: `b,m,n,k,dtype,flops_per_s` rows and
    /// `# clustersim-gpu:` / `# clustersim-timing:` lines), an attention
    /// table (`implementation,pass,dropout,batch,heads,seq_len,head_dim,dtype,ms`
    /// rows and a `# clustersim-gpu:` line) or vTrain's
    /// ground-truth CSV (validation/vtrain-single-node.csv); at most 256 MiB.
    #[arg(value_name = "FILE")]
    pub dev_set: PathBuf,
    /// Print one JSON document: `kind`, `source`, `summary`, `rows` (each with
    /// `measured`, `predicted`, `error_percent`), and for tables `groups`; with
    /// --fit, the fit applied (schemas/validate.schema.json).
    #[arg(long)]
    pub json: bool,
    /// Simulate every run with the factors a `clustersim fit` learned
    /// (FIT.json); runs only, not kernel tables.
    #[arg(long, value_name = "FIT.json")]
    pub fit: Option<PathBuf>,
}

pub fn run(args: ValidateArgs) -> anyhow::Result<()> {
    let text = input_file::read_to_string(&args.dev_set)
        .map_err(|e| user_error(format!("cannot read {}: {e}", args.dev_set.display())))?;
    let kernel_table = gemm_table::looks_like_gemm_table(&text)
        || attention_table::looks_like_attention_table(&text);
    if kernel_table && args.fit.is_some() {
        return Err(user_error(format!(
            "--fit: {} is a kernel table; a fit applies to whole runs (a dev set or vTrain's CSV)",
            args.dev_set.display()
        )));
    }
    let fit = args.fit.as_deref().map(super::fit::load).transpose()?;
    let values = fit.as_ref().map(|f| f.values()).unwrap_or_default();
    let fit_json = args
        .fit
        .as_ref()
        .zip(fit.as_ref())
        .map(|(path, record)| super::fit::applied_json(&path.display().to_string(), record));
    if let (Some(path), Some(record), false) = (&args.fit, &fit, args.json) {
        outln!(
            "with fit {}\n",
            super::fit::applied_line(&path.display().to_string(), record)
        )?;
    }
    if gemm_table::looks_like_gemm_table(&text) {
        return run_gemm_table(&args, &text);
    }
    if attention_table::looks_like_attention_table(&text) {
        let path = args.dev_set.display().to_string();
        return super::validate_attention::run_attention_table(&path, &text, args.json);
    }
    if vtrain::is_vtrain_file(&args.dev_set, &text) {
        return run_vtrain(&args, &text, &values, fit_json);
    }
    let rows = studies::validation::run_dev_set_with(&text, &values)
        .map_err(|e| user_error(format!("{}: {e}", args.dev_set.display())))?;
    if args.json {
        let source = args.dev_set.display().to_string();
        let mut json = document(ValidatedFile::Cases, &source);
        json["summary"] = cases_summary(&rows);
        json["rows"] = serde_json::to_value(&rows)?;
        if let Some(fit) = fit_json {
            json["fit"] = fit;
        }
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(());
    }
    outln!(
        "{:<26} {:<48} {:>10} {:>10} {:>8}  breakdown",
        "case",
        "quantity",
        "published",
        "predicted",
        "error"
    )?;
    let mut errors = Vec::new();
    for row in &rows {
        match (row.predicted, row.error_percent) {
            (Some(predicted), Some(error)) => {
                errors.push(error.abs());
                outln!(
                    "{:<26} {:<48} {:>10.2} {:>10.2} {:>+7.1}%  {}",
                    row.case,
                    row.quantity,
                    row.published,
                    predicted,
                    error,
                    row.note
                )?
            }
            _ => outln!(
                "{:<26} {:<48} {:>10.2} {:>10} {:>8}  {}",
                row.case,
                row.quantity,
                row.published,
                "—",
                "—",
                row.note
            )?,
        }
    }
    if !errors.is_empty() {
        let mean = errors.iter().sum::<f64>() / errors.len() as f64;
        let max = errors.iter().cloned().fold(0.0, f64::max);
        outln!(
            "\n{} predictions: mean |error| {mean:.1}%, max {max:.1}%",
            errors.len()
        )?;
    }
    Ok(())
}

/// Reads, predicts and reports a GEMM table (a bad file exits 2).
fn run_gemm_table(args: &ValidateArgs, text: &str) -> anyhow::Result<()> {
    let path = args.dev_set.display();
    let mut table = gemm_table::read(text).map_err(|e| user_error(format!("{path}: {e}")))?;
    gemm_table::predict(&mut table);
    let summaries = gemm_table::summaries(&table.rows);
    if args.json {
        let mut json = document(ValidatedFile::GemmTable, &path.to_string());
        json["quantity"] = "kernel_time_s".into();
        json["gpu"] = table.gpu.name.clone().into();
        json["profile"] = table.profile.id.clone().into();
        json["timing"] = serde_json::to_value(table.timing)?;
        json["summary"] = serde_json::to_value(ErrorSummary::of_lines(
            table.rows.iter().map(|row| (row.line, row.error_percent)),
        ))?;
        json["groups"] = serde_json::to_value(&summaries)?;
        json["rows"] = serde_json::to_value(&table.rows)?;
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(());
    }
    let timing = match table.timing {
        gemm_table::Timing::Kernel => "kernel durations (no launch gap)".to_string(),
        gemm_table::Timing::BackToBack { launch_gap_ns } => {
            format!("back-to-back launches ({launch_gap_ns:.0} ns launch gap added)")
        }
    };
    outln!(
        "GEMM table {path}: {} rows on {} (profile {}), timed as {timing}; predicted by the \
         tile model at its burst rate; error = predicted / measured - 1",
        table.rows.len(),
        table.gpu.name,
        table.profile.id
    )?;
    outln!(
        "\n{:<26} {:>6} {:>9} {:>12} {:>11} {:>8} {:>6}",
        "dtype",
        "rows",
        "predicted",
        "mean |error|",
        "mean error",
        "worst",
        "line"
    )?;
    let percent = |v: Option<f64>, signed: bool| match (v, signed) {
        (Some(v), true) => format!("{v:+.1}%"),
        (Some(v), false) => format!("{v:.1}%"),
        (None, _) => "-".into(),
    };
    for s in &summaries {
        outln!(
            "{:<26} {:>6} {:>9} {:>12} {:>11} {:>8} {:>6}",
            s.dtype,
            s.rows,
            s.predicted,
            percent(s.mean_abs_error_percent, false),
            percent(s.mean_error_percent, true),
            percent(s.worst_error_percent, true),
            s.worst_line.map_or("-".into(), |l| l.to_string())
        )?;
    }
    outln!()?;
    // Each reason once per data type (its first word tells reasons apart).
    let mut reasons: Vec<(&str, &str)> = Vec::new();
    for row in table.rows.iter().filter(|r| r.predicted_s.is_none()) {
        let why = row.note.split_whitespace().next().unwrap_or("");
        if !reasons.contains(&(row.dtype.as_str(), why)) {
            reasons.push((&row.dtype, why));
            outln!(
                "not predicted: {} (first at line {}): {}",
                row.dtype,
                row.line,
                row.note
            )?;
        }
    }
    Ok(())
}

/// Reads, simulates and reports vTrain's CSV (a bad file exits 2).
fn run_vtrain(
    args: &ValidateArgs,
    text: &str,
    fit: &FitValues,
    fit_json: Option<serde_json::Value>,
) -> anyhow::Result<()> {
    let path = args.dev_set.display();
    let runs = vtrain::read_csv(text).map_err(|e| user_error(format!("{path}: {e}")))?;
    // No progress bar: all 1,440 rows take about 0.05 s on two cores.
    let started = Instant::now();
    let results = vtrain::simulate_runs(&runs, fit, &|_, _| {});
    let elapsed_s = started.elapsed().as_secs_f64();
    let table = error_table(&results);
    eprintln!(
        "{} runs simulated in {elapsed_s:.2} s ({} threads)",
        results.len(),
        rayon::current_num_threads()
    );
    if args.json {
        let mut json = document(ValidatedFile::VtrainCsv, &path.to_string());
        json["quantity"] = "iteration_time_s".into();
        json["topology"] = vtrain::VTRAIN_TOPOLOGY.into();
        json["summary"] = serde_json::to_value(&table.summary)?;
        json["groups"] = serde_json::to_value(&table.groups)?;
        json["worst"] = table
            .worst
            .iter()
            .map(|r| r.run.line)
            .collect::<Vec<_>>()
            .into();
        json["refusals"] = serde_json::to_value(&table.refusals)?;
        json["rows"] = serde_json::to_value(&results)?;
        if let Some(fit) = fit_json {
            json["fit"] = fit;
        }
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
        return Ok(());
    }
    print_table(&path.to_string(), &table)
}

fn percent(value: Option<f64>, signed: bool) -> String {
    match (value, signed) {
        (Some(v), true) => format!("{v:+.1}%"),
        (Some(v), false) => format!("{v:.1}%"),
        (None, _) => "—".into(),
    }
}

fn line(value: Option<usize>) -> String {
    value.map_or_else(|| "—".into(), |l| l.to_string())
}

fn print_table(path: &str, table: &ErrorTable) -> anyhow::Result<()> {
    let s = &table.summary;
    outln!(
        "vTrain single-node ground truth ({path}): {} runs on {}, default profile, stack deepspeed-pipeline (Megatron-DeepSpeed); error = predicted / measured − 1",
        s.runs,
        vtrain::VTRAIN_TOPOLOGY
    )?;
    outln!(
        "{} predicted, {} refused; mean |error| {}, mean error {}, max |error| {} (line {})",
        s.predicted,
        s.refused,
        percent(s.mean_abs_error_percent, false),
        percent(s.mean_error_percent, true),
        percent(s.max_abs_error_percent, false),
        line(s.max_line)
    )?;
    outln!(
        "\n{:>6} {:>3} {:>5} {:>8} {:>11} {:>12} {:>9} {:>6}",
        "hidden",
        "t",
        "runs",
        "refused",
        "mean error",
        "mean |error|",
        "worst",
        "line"
    )?;
    for g in &table.groups {
        outln!(
            "{:>6} {:>3} {:>5} {:>8} {:>11} {:>12} {:>9} {:>6}",
            g.hidden,
            g.tp,
            g.runs,
            g.refused,
            percent(g.mean_error_percent, true),
            percent(g.mean_abs_error_percent, false),
            percent(g.worst_error_percent, true),
            line(g.worst_line)
        )?;
    }
    outln!("\n{} worst rows:", table.worst.len())?;
    outln!(
        "{:>5} {:>4} {:>4} {:>3} {:>6} {:>6} {:>3} {:>3} {:>3} {:>3} {:>11} {:>12} {:>8}  fits",
        "line",
        "GPUs",
        "B",
        "b",
        "hidden",
        "layers",
        "t",
        "d",
        "p",
        "s",
        "measured ms",
        "predicted ms",
        "error"
    )?;
    for r in &table.worst {
        print_row(r)?;
    }
    if !table.refusals.is_empty() {
        outln!("\nrefused:")?;
        for refusal in &table.refusals {
            outln!("{:>5} × {}", refusal.runs, refusal.reason)?;
        }
    }
    Ok(())
}

fn print_row(r: &VtrainResult) -> anyhow::Result<()> {
    let run = &r.run;
    outln!(
        "{:>5} {:>4} {:>4} {:>3} {:>6} {:>6} {:>3} {:>3} {:>3} {:>3} {:>11.1} {:>12} {:>8}  {}",
        run.line,
        run.gpus,
        run.global_batch,
        run.microbatch_size,
        run.hidden,
        run.layers,
        run.tp,
        run.dp,
        run.pp,
        run.seq_len,
        run.measured_ms,
        r.predicted_ms
            .map_or_else(|| "—".into(), |ms| format!("{ms:.1}")),
        percent(r.error_percent, true),
        match r.fits_in_memory {
            Some(true) => "yes",
            Some(false) => "no",
            None => "—",
        }
    )
}
