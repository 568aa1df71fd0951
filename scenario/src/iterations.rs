//! How many consecutive iterations a scenario simulates: several only under
//! ZeRO-Offload, or with zero-bubble optimizer post-validation.

use crate::options::TrainingOptions;
use crate::problem::Problem;
use crate::scenario_file::ScenarioFile;

impl ScenarioFile {
    /// The number of consecutive iterations to simulate, given the resolved
    /// options; problems are appended.
    pub(super) fn resolve_iterations(
        &self,
        options: &TrainingOptions,
        problems: &mut Vec<Problem>,
    ) -> u32 {
        let zero_offload = options.offload.is_some();
        let delayed = options.offload.filter(|offload| offload.delayed_update);
        let iterations = self.iterations.unwrap_or(options.default_iterations());
        if iterations == 0 {
            problems.push(Problem::new("iterations", "must be at least 1"));
        } else if iterations > u16::MAX as u32 {
            problems.push(Problem::new(
                "iterations",
                format!("at most {} can be simulated (got {iterations})", u16::MAX),
            ));
        } else if options.optimizer_post_validation {
            problems.extend(crate::post_validation::iterations_problem(iterations));
        } else if iterations > 1 && !zero_offload {
            problems.push(Problem::new("iterations", "several consecutive iterations are simulated only with zero_offload or optimizer_post_validation (every other iteration is identical)"));
        } else if let Some(offload) = delayed {
            let warmup = offload.dpu_warmup_iterations;
            if iterations < warmup.saturating_add(3) {
                problems.push(Problem::new("iterations", format!(
                    "{iterations} cannot show the delayed steady state (warm-up, a first delayed iteration, the measured one and one after it); with dpu_warmup_iterations = {warmup} simulate at least {}",
                    warmup.saturating_add(3)
                )));
            }
        }
        iterations.max(1)
    }
}
