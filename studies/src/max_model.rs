//! The largest model that fits: at the scenario's hidden size, heads,
//! sequence, vocabulary, layout and placement (ZeRO-Offload or not), the most
//! transformer layers whose peak memory fits every stage's GPU and, under
//! offload, the host's memory share. Memory grows with layers, so an
//! exponential then binary search over layer counts (multiples of p·v) finds it
//! from the memory model alone, without simulating time.

use models::formulas;
use serde::Serialize;
use sim::memory::{memory_per_stage, MemoryBreakdown};
use sim::plan::Plan;
use sim::scenario::Scenario;

/// Search ceiling on layers (far beyond any model that fits one node).
const MAX_LAYERS: u64 = 1 << 20;

/// The largest fitting model and its peak memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LargestModel {
    pub layers: u64,
    /// Megatron Eq. 2 parameter count of that model.
    pub parameters: u64,
    /// The stage with the highest GPU use.
    pub peak: MemoryBreakdown,
}

/// The largest number of layers that fits, or `None` when even `p·v` layers do not.
pub fn largest_model(scenario: &Scenario) -> Option<LargestModel> {
    let layout = scenario.layout;
    let step = layout.virtual_stages() as u64;
    let mut trial = scenario.clone();
    let mut memory_at = |units: u64| -> (bool, Vec<MemoryBreakdown>) {
        trial.model.layers = units * step;
        // The plan of each trial: its offload buckets follow its layers.
        let memory = memory_per_stage(&trial, &Plan::of(&trial));
        (memory.iter().all(|stage| stage.fits), memory)
    };
    if !memory_at(1).0 {
        return None;
    }
    // Largest known fitting (lo) and smallest known failing (hi) counts of p·v layers.
    let (mut lo, mut hi) = (1u64, 2u64);
    while hi * step <= MAX_LAYERS && memory_at(hi).0 {
        lo = hi;
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if memory_at(mid).0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (_, memory) = memory_at(lo);
    let peak = memory
        .into_iter()
        .max_by_key(|m| (m.total_bytes, std::cmp::Reverse(m.stage)))
        .expect("at least one stage");
    let mut model = scenario.model.clone();
    model.layers = lo * step;
    Some(LargestModel {
        layers: model.layers,
        parameters: formulas::parameter_count(&model),
        peak,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::scenario::ScenarioFile;

    fn single_v100(offload: bool) -> Scenario {
        ScenarioFile {
            model: Some("gpt2-10b".into()),
            topology: Some("dgx2-v100".into()),
            tp: Some(1),
            pp: Some(1),
            dp: Some(1),
            microbatch_size: Some(1),
            global_batch: Some(1),
            recompute: Some(sim::scenario::Recompute::Full),
            options: sim::scenario::TrainingOptionsFile {
                zero_offload: Some(offload),
                ..Default::default()
            },
            ..ScenarioFile::default()
        }
        .resolve()
        .unwrap()
    }

    #[test]
    fn the_answer_fits_and_one_more_layer_does_not() {
        for offload in [false, true] {
            let scenario = single_v100(offload);
            let found = largest_model(&scenario).unwrap();
            assert!(found.peak.fits);
            let mut bigger = scenario.clone();
            bigger.model.layers = found.layers + 1;
            assert!(!memory_per_stage(&bigger, &Plan::of(&bigger))[0].fits);
        }
        // Offload keeps 2 instead of 16 bytes of model state per parameter on the GPU.
        let plain = largest_model(&single_v100(false)).unwrap().parameters;
        let offload = largest_model(&single_v100(true)).unwrap().parameters;
        assert!(offload > 5 * plain, "{plain} vs {offload}");
    }
}
