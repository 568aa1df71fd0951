//! Resolution of a raw scenario file into a validated [`Scenario`]: every
//! problem is collected and reported at once, each naming its field.

use crate::era::{self, Era, EraDefaults, LayoutFacts};
use crate::experts;
use crate::kinds::Recompute;
use crate::layout::Layout;
use crate::options::TrainingOptions;
use crate::problem::Problem;
use crate::resolved::{Scenario, ScenarioError};
use crate::scenario_file::ScenarioFile;
use crate::stack::{Stack, DEFAULT_STACK};
use models::ModelSpec;
use profile::Profile;
use schedules::ScheduleKind;
use std::num::NonZeroU32;
use topologies::TopologySpec;

mod checks;
mod layout_checks;
use checks::{check_activation_offload, check_options, check_task_count, check_topology_fit};

/// What a scenario's model, topology and profile resolve to (None where
/// one is missing or wrong: its problem is listed).
struct Inputs {
    model: Option<ModelSpec>,
    topology: Option<TopologySpec>,
    profile: Option<Profile>,
}

/// The layout's degrees and batch, each a positive count (a missing or zero
/// one is a problem and counts as 1 for the checks after it), and the
/// microbatches m = B/(b·d) they give.
#[derive(Debug, Clone, Copy)]
struct Degrees {
    t: NonZeroU32,
    p: NonZeroU32,
    d: NonZeroU32,
    cp: NonZeroU32,
    ep: NonZeroU32,
    etp: NonZeroU32,
    v: NonZeroU32,
    b: NonZeroU32,
    global_batch: NonZeroU32,
    /// 0 where the global batch is smaller than b·d (a problem listed).
    m: u32,
}

impl ScenarioFile {
    /// Validates and resolves; every problem is reported at once, in the
    /// order of the sections below.
    pub fn resolve(&self) -> Result<Scenario, ScenarioError> {
        let mut problems = Vec::new();
        let Inputs {
            model,
            topology,
            profile,
        } = self.resolve_inputs(&mut problems);
        let schedule = self.schedule.unwrap_or(ScheduleKind::OneFOneB);
        let recompute = self.recompute.unwrap_or(Recompute::None);
        let degrees = self.resolve_degrees(schedule, &mut problems);
        self.check_schedule(schedule, degrees, &mut problems);
        if let Some(model) = &model {
            self.check_model_split(model, schedule, degrees, &mut problems);
        }
        if let Some(topology) = &topology {
            check_topology_fit(topology, degrees, &mut problems);
        }
        let pipeline_split = match &self.pipeline_layout {
            Some(text) => super::pipeline_layout::resolve(
                text,
                model.as_ref(),
                degrees.p.get(),
                degrees.v.get(),
                self.pipeline_split.is_some_and(|split| !split.is_even()),
                &mut problems,
            )
            .unwrap_or_default(),
            None => self.pipeline_split.unwrap_or_default(),
        };
        let era = match (&model, &topology) {
            (Some(model), Some(topology)) => Some(Era::of(model, topology)),
            _ => None,
        };
        let default_stack = era.as_ref().map_or(DEFAULT_STACK, |(era, _)| era.stack());
        let stack = Stack::resolve(self.stack.as_deref().unwrap_or(default_stack))
            .map_err(|e| problems.push(Problem::new("stack", e)))
            .ok();
        let options_file = match &stack {
            Some(stack) => stack.defaults_under(&self.options),
            None => self.options.clone(),
        };
        let facts = LayoutFacts {
            stack_named: self.stack.is_some(),
            tensor_parallel: degrees.t.get(),
            data_and_context_parallel: degrees.d.saturating_mul(degrees.cp).get(),
            schedule,
        };
        let (options_file, defaults) = match (era, &model) {
            (Some((era, why)), Some(model)) => {
                let (filled, applied) = era::apply(era, model, &self.options, options_file, &facts);
                (filled, Some(EraDefaults { era, why, applied }))
            }
            _ => (options_file, None),
        };
        // ZeroStage and HSDP groups span the dp-cp group: d·cp ranks.
        let options = options_file.resolve(
            degrees.p.get(),
            degrees.d.saturating_mul(degrees.cp).get(),
            &mut problems,
        );
        check_options(schedule, &options, topology.as_ref(), &mut problems);
        let (iterations, experts) = self.check_features(
            &options,
            schedule,
            recompute,
            model.as_ref(),
            degrees,
            &mut problems,
        );
        check_activation_offload(
            &options,
            schedule,
            recompute,
            model.as_ref(),
            degrees.p.get(),
            &mut problems,
        );
        if let Some(topology) = &topology {
            let layout = super::zeropp::ZeroPlusPlusLayout {
                model_parallel: [degrees.t, degrees.p, degrees.cp, degrees.ep].map(|n| n.get()),
                data_parallel: degrees.d.get(),
                gpus_per_node: topology.node.gpus_per_node,
            };
            super::zeropp::check(&options, layout, &mut problems);
        }
        super::powersgd::check(
            &options,
            model.as_ref(),
            schedule == ScheduleKind::DualPipe,
            &mut problems,
        );
        let Degrees {
            t,
            p,
            d,
            cp,
            ep,
            etp,
            v,
            b,
            global_batch,
            m,
        } = degrees;
        // A dense model has no expert tensor groups, whatever tp.
        let etp = if experts.is_some() {
            etp
        } else {
            NonZeroU32::MIN
        };
        let layout = Layout {
            tensor_parallel: t,
            pipeline_parallel: p,
            data_parallel: d,
            context_parallel: cp,
            expert_parallel: ep,
            expert_tensor_parallel: etp,
            pipeline_split,
            stage_map: schedule.stage_map(),
            chunks: v,
            microbatch_group_size: self.microbatch_group_size.and_then(NonZeroU32::new),
            microbatch_size: b,
            global_batch,
            // Never returned at 0: that is a problem listed above.
            microbatches: NonZeroU32::new(m).unwrap_or(NonZeroU32::MIN),
        };
        check_task_count(
            &layout,
            m,
            recompute,
            stack.as_ref(),
            iterations,
            model.as_ref(),
            schedule,
            &options,
            &mut problems,
        );
        if !problems.is_empty() {
            return Err(ScenarioError::Invalid { problems });
        }
        Ok(Scenario {
            model: model.expect("checked"),
            topology: topology.expect("checked"),
            profile: profile.expect("checked"),
            layout,
            experts,
            schedule,
            recompute,
            seed: self.seed.unwrap_or(0),
            stack: stack.expect("checked"),
            stack_is_default: self.stack.is_none(),
            defaults: defaults.expect("checked: the model and topology resolved"),
            options,
            iterations,
        })
    }

    /// The era of the scenario's model and topology ([`Era`]), where both
    /// resolve (the rest is not checked).
    pub fn era(&self) -> Option<Era> {
        self.era_defaults().map(|defaults| defaults.era)
    }

    /// The era and the defaults this file takes at its own degrees (1 where
    /// unset: a sweep's base takes the stack and precision; the layout
    /// options depend on each layout), where the model and topology resolve.
    pub fn era_defaults(&self) -> Option<EraDefaults> {
        let inputs = self.resolve_inputs(&mut Vec::new());
        let (model, topology) = (inputs.model?, inputs.topology?);
        let (era, why) = Era::of(&model, &topology);
        let degree = |value: Option<u32>| value.unwrap_or(1);
        let facts = LayoutFacts {
            stack_named: self.stack.is_some(),
            tensor_parallel: degree(self.tp),
            data_and_context_parallel: degree(self.dp).saturating_mul(degree(self.cp)),
            schedule: self.schedule.unwrap_or(ScheduleKind::OneFOneB),
        };
        let (_, applied) = era::apply(era, &model, &self.options, self.options.clone(), &facts);
        Some(EraDefaults { era, why, applied })
    }

    /// The model (with the sequence length it trains at), the topology and
    /// the profile, and whether the profile describes the topology's GPU.
    fn resolve_inputs(&self, problems: &mut Vec<Problem>) -> Inputs {
        let model = match &self.model {
            None => {
                problems.push(Problem::new(
                    "model",
                    "missing (a preset name, a model JSON file, or an inline object)",
                ));
                None
            }
            Some(value) => resolve_model(value)
                .map_err(|e| problems.push(Problem::new("model", e)))
                .ok(),
        };
        let model = match (model, self.seq_len) {
            (Some(mut model), Some(seq_len)) => {
                model.seq_len = seq_len;
                match model.validate() {
                    Ok(()) => Some(model),
                    Err(e) => {
                        problems.push(Problem::new("seq_len", format!("{seq_len} tokens: {e}")));
                        None
                    }
                }
            }
            (model, _) => model,
        };
        // Experts, latent attention and Qwen3's heads are counted by the
        // models crate but no kernel, routing or expert parallelism is
        // lowered for them yet: refused here, so nothing downstream sees them.
        let model = match model {
            Some(model) if has_unsimulated_blocks(&model) => {
                problems.push(Problem::new("model", unsimulated(&model)));
                None
            }
            model => model,
        };
        let topology = match &self.topology {
            None => {
                problems.push(Problem::new(
                    "topology",
                    "missing (a preset name, a topology JSON file, or an inline object)",
                ));
                None
            }
            Some(value) => resolve_topology(value)
                .map_err(|e| problems.push(Problem::new("topology", e)))
                .ok(),
        };
        let profile = match (&self.profile, &topology) {
            (Some(name), _) => Profile::resolve(name)
                .map_err(|e| problems.push(Problem::new("profile", e)))
                .ok(),
            (None, Some(topology)) => {
                let found = Profile::default_for_gpu(&topology.gpu.name);
                if found.is_none() {
                    problems.push(Problem::new(
                        "profile",
                        format!(
                            "no embedded profile for GPU '{}'; pass --profile (built-ins: {})",
                            topology.gpu.name,
                            Profile::builtin_names().join(", ")
                        ),
                    ));
                }
                found
            }
            (None, None) => None,
        };
        if let (Some(profile), Some(topology)) = (&profile, &topology) {
            if profile.gpu != topology.gpu.name {
                problems.push(Problem::new(
                    "profile",
                    format!(
                        "'{}' describes {} but topology '{}' has {}",
                        profile.id, profile.gpu, topology.name, topology.gpu.name
                    ),
                ));
            }
        }
        Inputs {
            model,
            topology,
            profile,
        }
    }

    /// Each degree and the batch, and the microbatches they give.
    fn resolve_degrees(&self, schedule: ScheduleKind, problems: &mut Vec<Problem>) -> Degrees {
        let mut positive =
            |key: &'static str, value: Option<u32>, default: Option<u32>| -> NonZeroU32 {
                match value.or(default).map(NonZeroU32::new) {
                    None => {
                        problems.push(Problem::new(key, "missing"));
                        NonZeroU32::MIN
                    }
                    Some(None) => {
                        problems.push(Problem::new(key, "must be at least 1"));
                        NonZeroU32::MIN
                    }
                    Some(Some(v)) => v,
                }
            };
        let t = positive("tp", self.tp, Some(1));
        let p = positive("pp", self.pp, Some(1));
        let d = positive("dp", self.dp, Some(1));
        let cp = positive("cp", self.cp, Some(1));
        let ep = positive("ep", self.ep, Some(1));
        // Megatron-Core's default expert tensor parallelism is tp
        // (megatron/training/arguments.py: expert_tensor_parallel_size =
        // tensor_model_parallel_size when not given).
        let etp = positive("etp", self.etp, Some(t.get()));
        // The V-shaped schedules hold two chunks per rank (the V map), DualPipe
        // one chunk of each of its two copies.
        let v_shaped = schedule.stage_map() != models::sharding::StageMap::Interleaved;
        let v = positive("chunks", self.chunks, Some(if v_shaped { 2 } else { 1 }));
        let b = positive("microbatch_size", self.microbatch_size, Some(1));
        let global_batch = positive("global_batch", self.global_batch, None);
        // u64 arithmetic throughout: flags are u32 and their products can overflow.
        let samples_per_step = u64::from(b.get()) * u64::from(d.get());
        let m = (u64::from(global_batch.get()) / samples_per_step) as u32;

        if !u64::from(global_batch.get()).is_multiple_of(samples_per_step) {
            problems.push(Problem::new("global_batch", format!(
            "{global_batch} is not divisible by microbatch_size × dp = {b} × {d} = {samples_per_step}"
        )));
        } else if m == 0 {
            problems.push(Problem::new("global_batch", "gives zero microbatches"));
        }
        Degrees {
            t,
            p,
            d,
            cp,
            ep,
            etp,
            v,
            b,
            global_batch,
            m,
        }
    }

    /// The checks of features with rules of their own (post-validation, the
    /// iterations simulated, context parallelism, latent attention, MoE
    /// communication, experts): the iterations and the expert routing.
    fn check_features(
        &self,
        options: &TrainingOptions,
        schedule: ScheduleKind,
        recompute: Recompute,
        model: Option<&ModelSpec>,
        degrees: Degrees,
        problems: &mut Vec<Problem>,
    ) -> (u32, Option<experts::ExpertRouting>) {
        let Degrees {
            t, d, cp, ep, etp, ..
        } = degrees;
        let (t, d, cp, ep, etp) = (t.get(), d.get(), cp.get(), ep.get(), etp.get());
        super::post_validation::check(
            options,
            schedule,
            model.map(|model| model.tied_embeddings),
            problems,
        );
        let iterations = self.resolve_iterations(options, problems);
        if cp > 1 {
            super::context::check(cp, model, recompute, options, problems);
        }
        if let Some(model) = model {
            super::mla::check(model, t, cp, options, problems);
            super::sequence_parallel::check(t, cp, model, options, problems);
        }
        super::moe_comm::check(options, schedule, ep, recompute, problems);
        let experts = model.and_then(|model| {
            super::experts::check(
                model,
                ep,
                (etp, self.etp.is_some()),
                t,
                d.saturating_mul(cp),
                self.expert_imbalance.is_some(),
                options,
                problems,
            );
            super::experts::resolve(
                model,
                (degrees.ep, degrees.etp),
                self.expert_imbalance.as_deref(),
                problems,
            )
        });
        (iterations, experts)
    }
}

fn resolve_model(value: &serde_json::Value) -> Result<ModelSpec, String> {
    match value {
        serde_json::Value::String(name) => ModelSpec::resolve(name).map_err(|e| e.to_string()),
        serde_json::Value::Object(_) => {
            ModelSpec::from_json_str(&value.to_string(), "inline model").map_err(|e| e.to_string())
        }
        other => Err(format!("expected a name, a path or an object, got {other}")),
    }
}

/// Whether the model has blocks the simulator does not lower: of mixtures
/// of experts, biases ([`super::experts`]).
fn has_unsimulated_blocks(model: &ModelSpec) -> bool {
    model.moe.is_some() && model.bias
}

/// Why a model the models crate counts cannot be simulated: its first
/// unlowered block leads, the others follow, then its parameter counts.
fn unsimulated(model: &ModelSpec) -> String {
    let mut blocks: Vec<(&str, String)> = Vec::new();
    if model.moe.is_some() && model.bias {
        blocks.push(("experts with biases are", "biased experts".into()));
    }
    let lead = blocks.first().map_or("these blocks are", |(lead, _)| lead);
    let has: Vec<&str> = blocks.iter().map(|(_, what)| what.as_str()).collect();
    format!(
        "{lead} not simulated yet (issue 17): '{}' has {}; {} parameters, {} active per token",
        model.name,
        has.join(", "),
        models::formulas::published_parameter_count(model),
        models::formulas::published_active_parameter_count(model),
    )
}

fn resolve_topology(value: &serde_json::Value) -> Result<TopologySpec, String> {
    match value {
        serde_json::Value::String(name) => TopologySpec::resolve(name).map_err(|e| e.to_string()),
        serde_json::Value::Object(_) => {
            TopologySpec::from_json_str(&value.to_string(), "inline topology")
                .map_err(|e| e.to_string())
        }
        other => Err(format!("expected a name, a path or an object, got {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::ScenarioFile;

    fn resolve_with_tp(model: &str, tp: u32) -> Result<(), String> {
        let file = ScenarioFile {
            model: Some(serde_json::Value::String(model.into())),
            tp: Some(tp),
            ..ScenarioFile::embedded_default()
        };
        file.resolve().map(|_| ()).map_err(|e| e.to_string())
    }

    #[test]
    fn mixtures_of_experts_are_refused_where_not_built_with_their_counts() {
        // Mixtral (experts in every layer, dropless, no biases) is simulated;
        // at t > 1 only with sequence parallelism (etp then defaults to t),
        // which today's defaults turn on and which, turned off, is refused.
        assert_eq!(resolve_with_tp("mixtral-8x7b", 8), Ok(()));
        let without_sp = ScenarioFile {
            model: Some(serde_json::Value::String("mixtral-8x7b".into())),
            tp: Some(8),
            options: crate::TrainingOptionsFile {
                sequence_parallel: Some(false),
                ..crate::TrainingOptionsFile::default()
            },
            ..ScenarioFile::embedded_default()
        };
        let text = without_sp.resolve().map(|_| ()).unwrap_err().to_string();
        assert!(
            text.contains(
                "sequence_parallel: tensor parallelism (8) in a mixture-of-experts model needs sequence parallelism"
            ) && !text.contains("etp:"),
            "{text}"
        );
        assert!(resolve_with_tp("mixtral-8x7b", 1).is_ok());
        // DeepSeek-V3 (MLA, dense layers before its MoE layers, sigmoid
        // router) is simulated: only the default layout's pp is refused.
        let text = resolve_with_tp("deepseek-v3", 1).unwrap_err();
        assert!(!text.contains("model:"), "{text}");
        assert!(text.contains("pp: layers (61)"), "{text}");
        // Token dropping is simulated; biased experts are refused with
        // the model's counts.
        let mut dropping = models::preset("mixtral-8x7b").unwrap();
        dropping.moe.as_mut().unwrap().capacity_factor = Some(models::CapacityFactor(1.25));
        let file = |model: &models::ModelSpec| ScenarioFile {
            model: Some(serde_json::to_value(model).unwrap()),
            tp: Some(1),
            ..ScenarioFile::embedded_default()
        };
        if let Err(e) = file(&dropping).resolve() {
            panic!("{e}");
        }
        let mut biased = dropping.clone();
        biased.bias = true;
        let text = file(&biased).resolve().map(|_| ()).unwrap_err().to_string();
        assert!(
            text.contains("model: experts with biases are not simulated yet (issue 17): 'mixtral-8x7b' has biased experts;"),
            "{text}"
        );
        // Qwen3's wider heads and q/k norms are lowered.
        assert!(resolve_with_tp("qwen3-30b-a3b", 1).is_ok());
        // A simulated model's layout is checked like any other: every
        // problem of tp = 64 is listed.
        let text = resolve_with_tp("qwen3-30b-a3b", 64).unwrap_err();
        assert!(
            text.contains("tp: heads (32) must be divisible by tp (64)")
                && text.contains("tp: kv_heads (4) must be divisible by tp (64)"),
            "{text}"
        );
        // MLA alone is simulated at tp 1; tensor parallelism is refused by name.
        let mut deepseek = models::preset("deepseek-v3").unwrap();
        deepseek.moe = None;
        let file = |tp| ScenarioFile {
            model: Some(serde_json::to_value(&deepseek).unwrap()),
            tp: Some(tp),
            pp: Some(1),
            ..ScenarioFile::embedded_default()
        };
        if let Err(e) = file(1).resolve() {
            panic!("{e}");
        }
        let text = file(2).resolve().map(|_| ()).unwrap_err().to_string();
        assert!(
            text.contains(
                "tp: tensor parallelism (2) with multi-head latent attention is not simulated yet"
            ),
            "{text}"
        );
    }

    #[test]
    fn kv_heads_must_split_evenly_over_tensor_ranks() {
        // Llama-3-8B: 32 query heads, 8 KV heads.
        let text = resolve_with_tp("llama3-8b", 16).unwrap_err();
        assert!(
            text.contains("tp: kv_heads (8) must be divisible by tp (16)"),
            "{text}"
        );
        assert!(!text.contains("tp: heads"), "{text}");
        let text = resolve_with_tp("llama3-8b", 8).err().unwrap_or_default();
        assert!(!text.contains("kv_heads"), "{text}");
        // Multi-head attention: only the heads check speaks.
        let text = resolve_with_tp("gpt3-175b", 5).unwrap_err();
        assert!(text.contains("tp: heads (96)"), "{text}");
        assert!(!text.contains("kv_heads"), "{text}");
    }
}
