//! The runs a fit learns from: a CASES file in exactly the formats
//! `clustersim validate` reads (a dev-set JSON file of published cases, or
//! vTrain's CSV of measured iteration times), cut into units that can be
//! simulated alone: one published case (all its variants), or one vTrain
//! row. Leave-one-out holds out a unit, not a variant, so that two variants
//! of one case never predict each other.

use crate::validation::residuals::{kernel_class_rows, runs_of_rows, RunResidual};
use crate::validation::vtrain::{self, VtrainRun};
use crate::validation::{run_dev_set_with, ValidationError};
use rayon::prelude::*;
use sim::scenario::fitted::FitValues;

/// One unit of a CASES file.
#[derive(Debug, Clone)]
pub enum FitUnit {
    /// One case of a dev-set file, as a dev-set text of its own (with the
    /// file's `hardware`).
    Case { id: String, text: String },
    /// One row of vTrain's CSV.
    Vtrain(VtrainRun),
}

/// What is wrong with a CASES file.
#[derive(Debug, thiserror::Error)]
pub enum CasesError {
    #[error("{0}")]
    DevSet(#[from] ValidationError),
    #[error("{0}")]
    Vtrain(#[from] vtrain::VtrainCsvError),
    #[error("case {index} has no string `id`")]
    MissingId { index: usize },
}

impl FitUnit {
    /// The unit's name in FIT.json ("nemo2407-gpt3-5b", "vtrain line 17").
    pub fn name(&self) -> String {
        match self {
            FitUnit::Case { id, .. } => id.clone(),
            FitUnit::Vtrain(run) => format!("vtrain line {}", run.line),
        }
    }

    /// The unit's runs simulated with `fit`: measured ÷ predicted iteration
    /// time of each (a case without a prediction has none), then its kernel
    /// classes' measured ÷ predicted times where it gives them.
    pub fn simulate(&self, fit: &FitValues) -> Vec<RunResidual> {
        match self {
            FitUnit::Case { text, .. } => {
                let rows = run_dev_set_with(text, fit).expect("a unit's text is a valid dev set");
                let mut runs = runs_of_rows(&rows);
                runs.extend(kernel_class_rows(&rows));
                runs
            }
            FitUnit::Vtrain(run) => {
                let result = vtrain::simulate_run(run, fit);
                crate::validation::residuals::of_vtrain(std::slice::from_ref(&result))
                    .into_iter()
                    .map(|residual| RunResidual {
                        run: self.name(),
                        regime: residual.regime,
                        ratio: residual.ratio,
                        kernel_class: false,
                    })
                    .collect()
            }
        }
    }
}

/// The units of a CASES file: vTrain's CSV when `is_vtrain_csv`, else a
/// dev-set JSON file.
pub fn units_of(text: &str, is_vtrain_csv: bool) -> Result<Vec<FitUnit>, CasesError> {
    if is_vtrain_csv {
        return Ok(vtrain::read_csv(text)?
            .into_iter()
            .map(FitUnit::Vtrain)
            .collect());
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(ValidationError::from)?;
    let cases = value
        .get("cases")
        .and_then(|c| c.as_array())
        .ok_or(ValidationError::NoCases)?;
    let hardware = value.get("hardware").cloned();
    cases
        .iter()
        .enumerate()
        .map(|(index, case)| {
            let id = case
                .get("id")
                .and_then(|v| v.as_str())
                .ok_or(CasesError::MissingId { index })?;
            let mut file = serde_json::json!({ "cases": [case] });
            if let Some(hardware) = &hardware {
                file["hardware"] = hardware.clone();
            }
            Ok(FitUnit::Case {
                id: id.to_string(),
                text: file.to_string(),
            })
        })
        .collect()
}

/// Every unit's runs with `fit`, in unit order (units simulated in
/// parallel).
pub fn simulate_units(units: &[FitUnit], fit: &FitValues) -> Vec<Vec<RunResidual>> {
    units
        .par_iter()
        .with_max_len(1)
        .map(|unit| unit.simulate(fit))
        .collect()
}
