//! Published cases written as whole scenarios: `"scenario"` is a scenario
//! file (model, topology, stack, layout, options: what `clustersim simulate`
//! reads), simulated as it is. Today's published tables (NVIDIA's NeMo and
//! Megatron-Bridge performance summaries) name a model, a cluster, a
//! precision and a layout with FSDP, context parallelism and FP8, which the
//! dev-set's GPT-only `model` + `layout` form cannot say.
//!
//! Every measured key yields a row: a prediction, or why there is none —
//! the scenario names something this build does not model (an unknown key
//! or value, a layout it refuses), or the key is not a whole-iteration
//! quantity ([`super::keys`]; no recompute or sequence-parallel suffix: the
//! scenario says those).

use super::keys::{self, MeasuredKey, Quantity, Variant};
use super::{breakdown, row, simulate_file, skipped, ValidationRow};
use sim::scenario::fitted::FitValues;
use sim::scenario::{Recompute, ScenarioFile};

/// The rows of one scenario case.
pub fn rows(
    id: &str,
    scenario: &serde_json::Value,
    measured: &serde_json::Map<String, serde_json::Value>,
    fit: &FitValues,
) -> Vec<ValidationRow> {
    let numbers: Vec<(&str, f64)> = measured
        .iter()
        .filter_map(|(key, value)| value.as_f64().map(|v| (key.as_str(), v)))
        .collect();
    let file: ScenarioFile = match serde_json::from_value(scenario.clone()) {
        Ok(file) => file,
        Err(error) => {
            let why = format!("not modeled by this build: the scenario does not parse ({error})");
            return numbers
                .into_iter()
                .map(|(key, published)| skipped(id, key, published, &why))
                .collect();
        }
    };
    // Any variant: a bare key takes it, a suffixed one is refused below.
    let bare = Variant {
        recompute: Recompute::None,
        sequence_parallel: false,
    };
    let task_classes = super::measures_task_classes(numbers.iter().map(|(key, _)| *key), bare);
    let simulated = simulate_file(&file, fit, task_classes);
    numbers
        .into_iter()
        .map(|(key, published)| {
            let quantity = match keys::parse(key, bare) {
                MeasuredKey::Predict(quantity, variant) if variant == bare && is_bare(key, quantity) => {
                    quantity
                }
                MeasuredKey::Predict(..) => {
                    return skipped(
                        id,
                        key,
                        published,
                        "a scenario case takes recompute and sequence parallelism from its scenario: use the bare quantity",
                    )
                }
                MeasuredKey::Restated => {
                    return skipped(
                        id,
                        key,
                        published,
                        "restates another figure of this case; not predicted separately",
                    )
                }
                MeasuredKey::Unknown => {
                    return skipped(
                        id,
                        key,
                        published,
                        "not modeled: unknown measured quantity (see `studies::validation::keys`)",
                    )
                }
            };
            match &simulated {
                Ok(simulated) => row(
                    id,
                    quantity.name(),
                    published,
                    simulated.predict(quantity),
                    breakdown(&simulated.metrics),
                )
                .in_regime(&simulated.regime),
                Err(why) => skipped(id, quantity.name(), published, why),
            }
        })
        .collect()
}

/// Whether `key` is the quantity's name alone (no variant suffix).
fn is_bare(key: &str, quantity: Quantity) -> bool {
    key == quantity.name()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn measured(pairs: &[(&str, f64)]) -> serde_json::Map<String, serde_json::Value> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), json!(value)))
            .collect()
    }

    #[test]
    fn a_scenario_case_predicts_tokens_per_gpu_from_its_own_simulation() {
        let scenario = json!({
            "model": "llama3-8b", "seq_len": 4096, "topology": "dgx-h100-superpod",
            "stack": "megatron-core-2024", "tp": 2, "pp": 1, "dp": 4,
            "microbatch_size": 1, "global_batch": 16, "recompute": "full", "precision": "bf16"
        });
        let rows = rows(
            "case",
            &scenario,
            &measured(&[
                ("tokens_per_s_per_gpu", 1000.0),
                ("iteration_time_s", 2.0),
                ("iteration_time_s_full_recompute", 2.0),
                ("derived_model_tflops_per_gpu", 500.0),
            ]),
            &FitValues::CALIBRATED,
        );
        assert_eq!(rows.len(), 4);
        let get = |quantity: &str| rows.iter().find(|r| r.quantity == quantity).unwrap();
        let tokens = get("tokens_per_s_per_gpu").predicted.unwrap();
        let seconds = get("iteration_time_s").predicted.unwrap();
        // B·s tokens over the iteration, shared by t·p·d = 8 GPUs.
        let expected = 16.0 * 4096.0 / seconds / 8.0;
        assert!(
            (tokens - expected).abs() / expected < 1e-9,
            "{tokens} vs {expected}"
        );
        assert!(get("iteration_time_s_full_recompute").predicted.is_none());
        assert!(get("derived_model_tflops_per_gpu").predicted.is_none());
    }

    #[test]
    fn a_scenario_this_build_cannot_read_is_a_reason_not_an_error() {
        let scenario = json!({"model": "llama3-8b", "no_such_option": 3});
        let rows = rows(
            "case",
            &scenario,
            &measured(&[("tokens_per_s_per_gpu", 1.0)]),
            &FitValues::CALIBRATED,
        );
        assert_eq!(rows.len(), 1);
        assert!(rows[0].predicted.is_none());
        assert!(rows[0].note.contains("no_such_option"), "{}", rows[0].note);
    }
}
