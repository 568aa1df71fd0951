//! `clustersim validate DEV_SET.json`: published measurements vs predictions.

use crate::exit::user_error;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  clustersim validate validation/dev-set.json")]
pub struct ValidateArgs {
    /// A file of published cases (validation/dev-set.json format).
    pub dev_set: PathBuf,
    /// Print the rows as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ValidateArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.dev_set)
        .map_err(|e| user_error(format!("cannot read {}: {e}", args.dev_set.display())))?;
    let rows = studies::validation::run_dev_set(&text)
        .map_err(|e| user_error(format!("{}: {e}", args.dev_set.display())))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "{:<26} {:<48} {:>10} {:>10} {:>8}  breakdown",
        "case", "quantity", "published", "predicted", "error"
    );
    let mut errors = Vec::new();
    for row in &rows {
        match (row.predicted, row.error_percent) {
            (Some(predicted), Some(error)) => {
                errors.push(error.abs());
                println!(
                    "{:<26} {:<48} {:>10.2} {:>10.2} {:>+7.1}%  {}",
                    row.case, row.quantity, row.published, predicted, error, row.note
                )
            }
            _ => println!(
                "{:<26} {:<48} {:>10.2} {:>10} {:>8}  {}",
                row.case, row.quantity, row.published, "—", "—", row.note
            ),
        }
    }
    if !errors.is_empty() {
        let mean = errors.iter().sum::<f64>() / errors.len() as f64;
        let max = errors.iter().cloned().fold(0.0, f64::max);
        println!(
            "\n{} predictions: mean |error| {mean:.1}%, max {max:.1}%",
            errors.len()
        );
    }
    Ok(())
}
