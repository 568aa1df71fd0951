//! `clustersim fit CASES --out FIT.json`: learn a few physical factors of the
//! user's cluster (GEMM rate, host costs, achieved bandwidths) from their
//! measured runs, and report how well the simulator then predicts each run
//! it was not fitted to (`studies::fit`). `--fit FIT.json` on `simulate`,
//! `validate` and `sweep` applies the factors ([`load`]).

use crate::exit::user_error;
use crate::stdout::{out, outln};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::scenario::fitted::FitParameter;
use std::path::{Path, PathBuf};
use studies::fit::fit_file::{error_percent, FitRecord};
use studies::fit::{cases, fit, FitOptions};

#[derive(Debug, Args)]
#[command(after_help = "\
The parameters (each a factor on a calibrated figure, prior 1, within physical bounds):
  gemm_rate             achieved ÷ calibrated GEMM throughput           0.5–1.25
  memory_bound_rate     achieved ÷ calibrated memory-bound kernel rate  0.4–1.5
  attention_rate        achieved ÷ calibrated fused attention rate      0.4–1.5
  host_kernel_cost      host time per kernel ÷ the stack's              0.25–4
  host_collective_cost  host time per collective call ÷ the stack's     0.25–4
  nvlink_bandwidth      achieved ÷ calibrated NVLink bus bandwidth       0.3–1.5
  nic_bandwidth         achieved ÷ calibrated bandwidth per NIC          0.3–1.5
Only the parameters the runs can tell apart are fitted; the others keep 1 and FIT.json says why.
Each case is then left out in turn and predicted with the factors fitted without it: that
leave-one-out error is what to expect of a new prediction, and its range is what `--fit`
prints around one.

Examples:
  clustersim fit validation/h100-published.json --out h100-fit.json
  clustersim validate validation/h100-published.json --fit h100-fit.json
  clustersim simulate examples/llama3-70b-superpod-cp2.json --fit h100-fit.json
  clustersim fit my-runs.json --params gemm_rate,nic_bandwidth --out fit.json")]
pub struct FitArgs {
    /// The measured runs, in a format `clustersim validate` reads: a file of
    /// cases (validation/dev-set.json format: each case a `scenario` or a
    /// model and layout, with `measured` iteration time, tokens/s per GPU,
    /// TFLOP/s per GPU or MFU), or vTrain's CSV of measured iteration times.
    #[arg(value_name = "CASES")]
    pub cases: PathBuf,
    /// Where to write the fit (FIT.json).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub out: PathBuf,
    /// Fit only these parameters (comma-separated); each must be one the
    /// runs identify, or the fit is refused. All by default.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = parse_parameter)]
    pub params: Option<Vec<FitParameter>>,
    /// Print FIT.json to standard output instead of the summary.
    #[arg(long)]
    pub json: bool,
}

fn parse_parameter(name: &str) -> Result<FitParameter, String> {
    FitParameter::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = FitParameter::ALL.iter().map(|p| p.name()).collect();
        format!("unknown parameter '{name}'; one of: {}", names.join(", "))
    })
}

pub fn run(args: FitArgs) -> anyhow::Result<()> {
    let text = input_file::read_to_string(&args.cases)
        .map_err(|e| user_error(format!("cannot read {}: {e}", args.cases.display())))?;
    let is_csv = studies::validation::vtrain::is_vtrain_file(&args.cases, &text);
    let units = cases::units_of(&text, is_csv)
        .map_err(|e| user_error(format!("{}: {e}", args.cases.display())))?;
    let options = FitOptions {
        parameters: args.params.clone(),
        cases_file: args.cases.display().to_string(),
    };
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("valid template"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let outcome = fit(&units, &options, &|stage| {
        bar.set_message(stage.to_string())
    });
    bar.finish_and_clear();
    let record = outcome.map_err(|e| user_error(format!("{}: {e}", args.cases.display())))?;
    let text = serde_json::to_string_pretty(&record)? + "\n";
    crate::output_file::write_output(&args.out, |writer| {
        std::io::Write::write_all(writer, text.as_bytes())
    })?;
    if args.json {
        out!("{text}")?;
    } else {
        print_summary(&record, &args.out)?;
    }
    Ok(())
}

/// The parameters, the errors and the range, for a reader.
fn print_summary(record: &FitRecord, out: &Path) -> anyhow::Result<()> {
    outln!(
        "fit of {}: {} whole run{}{} (error = predicted ÷ measured iteration time − 1)",
        record.cases_file,
        record.in_sample.runs,
        if record.in_sample.runs == 1 { "" } else { "s" },
        match record.runs.iter().filter(|r| r.kernel_class).count() {
            0 => String::new(),
            n => format!(" and {n} class times from traces or timelines"),
        }
    )?;
    outln!("\n{:<21} {:>6} {:>13}  ", "parameter", "value", "±1 sd")?;
    for p in &record.parameters {
        match (p.fitted, p.range, &p.kept_at_prior_because) {
            (true, Some([low, high]), _) => outln!(
                "{:<21} {:>6.3} {:>6.3}–{:<6.3}  fitted",
                p.name.name(),
                p.value,
                low,
                high
            )?,
            (_, _, why) => outln!(
                "{:<21} {:>6.3} {:>13}  kept at its prior: {}",
                p.name.name(),
                p.value,
                "—",
                why.as_deref().unwrap_or("not fitted")
            )?,
        }
    }
    let s = &record.in_sample;
    let l = &record.leave_one_out;
    outln!(
        "\nmean |error|: calibrated {:.1}%, fitted {:.1}% (max {:.1}%), each case left out {:.1}% (max {:.1}%)",
        s.calibrated_mean_abs_error_percent,
        s.mean_abs_error_percent,
        s.max_abs_error_percent,
        l.mean_abs_error_percent,
        l.max_abs_error_percent
    )?;
    let enough = s.runs >= studies::validation::residuals::MIN_RANGE_RUNS;
    if enough {
        outln!(
        "a prediction with this fit: measured ÷ predicted {:.3}–{:.3} ({} of the {} left-out runs; \
         errors {:+.1}% to {:+.1}%)",
        l.ratio_low,
        l.ratio_high,
        l.range_method,
        s.runs,
        error_percent(l.ratio_high),
        error_percent(l.ratio_low)
    )?;
    }
    if let (Some(coverage), Some(width)) =
        (l.held_out_coverage_percent, l.held_out_mean_width_percent)
    {
        outln!(
            "that range made without each run in turn held the run {coverage:.0}% of the time \
             (mean width {width:.1}%)"
        )?;
    }
    for warning in &record.warnings {
        outln!("warning: {warning}")?;
    }
    outln!("\nwrote {}", out.display())
}

/// The fitted factors, for a summary line: "h100-fit.json: gemm_rate 0.916,
/// attention_rate 1.056 (others 1)".
pub fn applied_line(file: &str, record: &FitRecord) -> String {
    let fitted: Vec<String> = record
        .parameters
        .iter()
        .filter(|p| p.fitted)
        .map(|p| format!("{} {:.3}", p.name.name(), p.value))
        .collect();
    let runs = record.in_sample.runs;
    let left_out = if runs >= studies::validation::residuals::MIN_RANGE_RUNS {
        // Say so when the fit does not carry beyond its own runs: each left
        // out, its factors predict it no better than the calibrated ones.
        let worse = if record.leave_one_out_beats_calibrated {
            String::new()
        } else {
            format!(
                " (no better than the calibrated simulator's {:.1}% on them: these runs do not carry a fit beyond themselves)",
                record.in_sample.calibrated_mean_abs_error_percent
            )
        };
        format!(
            ", {:.1}% mean |error| each left out{worse}",
            record.leave_one_out.mean_abs_error_percent
        )
    } else {
        String::new()
    };
    format!(
        "{file}: {} (others 1); fitted to {runs} whole run{} of {}{left_out}",
        fitted.join(", "),
        if runs == 1 { "" } else { "s" },
        record.cases_file,
    )
}

/// The `fit` object of a `--json` output: the file and every factor.
pub fn applied_json(file: &str, record: &FitRecord) -> serde_json::Value {
    let factors: serde_json::Map<String, serde_json::Value> = record
        .parameters
        .iter()
        .map(|p| (p.name.name().to_string(), p.value.into()))
        .collect();
    serde_json::json!({
        "file": file,
        "cases_file": record.cases_file,
        "tool": record.tool,
        "factors": factors,
        "fitted": record.parameters.iter().filter(|p| p.fitted).map(|p| p.name.name()).collect::<Vec<_>>(),
        "leave_one_out_mean_abs_error_percent": record.leave_one_out.mean_abs_error_percent,
    })
}

/// A note when `scenario`'s regime is not among the fit's runs' regimes:
/// the factors and the range then come from other kinds of runs.
pub fn regime_note(record: &FitRecord, scenario: &sim::scenario::Scenario) -> Option<String> {
    let label = studies::validation::regime::Regime::of(scenario).label();
    let mut regimes: Vec<&str> = record.runs.iter().map(|r| r.regime.as_str()).collect();
    regimes.sort_unstable();
    regimes.dedup();
    (!regimes.contains(&label.as_str())).then(|| {
        format!(
            "this run's regime ({label}) is not among the fit's runs ({}): its factors and \
             range are carried over from them",
            regimes.join("; ")
        )
    })
}

/// Reads a FIT.json for `--fit` (exit 2 when it cannot be used).
pub fn load(path: &Path) -> anyhow::Result<FitRecord> {
    let text = input_file::read_to_string(path)
        .map_err(|e| user_error(format!("cannot read {}: {e}", path.display())))?;
    FitRecord::parse(&text).map_err(|e| user_error(format!("{}: {e}", path.display())))
}
