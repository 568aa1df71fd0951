//! `--help` text and accepted values generated from the registries
//! themselves (model, topology, profile and stack presets, schedules), so
//! adding one to its registry is all it takes for the help to name it.

use clap::builder::PossibleValuesParser;
use sim::scenario::era::TODAYS_STACK;
use sim::scenario::{ScheduleKind, Stack, DEFAULT_STACK};

/// `--schedule`'s accepted values: every schedule's name.
pub fn schedule_values() -> PossibleValuesParser {
    PossibleValuesParser::new(ScheduleKind::names())
}

/// `--topology`'s help: the presets, or a file.
pub fn topology_help() -> String {
    format!(
        "Topology: a preset ({}) or a JSON file (≤ 256 MiB)",
        topologies::preset_names().join(", ")
    )
}

/// `--profile`'s help: the built-ins, or a file calibrate wrote.
pub fn profile_help() -> String {
    format!(
        "Calibration profile: a built-in ({}) or a file written by `clustersim calibrate` \
         (≤ 256 MiB). Default: the built-in for the topology's GPU",
        profile::Profile::builtin_names().join(", ")
    )
}

/// `--stack`'s help: the built-ins, or a stack file.
pub fn stack_help() -> String {
    format!(
        "Software stack: a built-in ({}) or a stack JSON file (≤ 256 MiB). It sets the defaults \
         of the training options below as that software had them; flags and the scenario file \
         override it. Default: {TODAYS_STACK} for a model of 2023 or later (RMSNorm) or a GPU \
         with FP8 (Hopper, Blackwell), with bf16, sequence parallelism at t > 1 and the \
         distributed optimizer at d·cp > 1 as Megatron-Bridge's recipes set them; {DEFAULT_STACK} \
         and fp16 for the paper-era GPT models on A100 and V100. The summary says which applied",
        Stack::builtin_names().join(", ")
    )
}

/// `calibrate --base-profile`'s help.
pub fn base_profile_help() -> String {
    format!(
        "Profile to start from (built-in name or file, ≤ 256 MiB); default: the built-in for the \
         detected GPU ({}), or the closest one, said in a remark",
        profile::Profile::builtin_names().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::builder::TypedValueParser;

    #[test]
    fn every_registered_name_is_in_its_help() {
        let topology = topology_help();
        for name in topologies::preset_names() {
            assert!(topology.contains(&name), "{name}");
        }
        let profiles = profile_help();
        for name in profile::Profile::builtin_names() {
            assert!(profiles.contains(name), "{name}");
        }
        let stacks = stack_help();
        for name in Stack::builtin_names() {
            assert!(stacks.contains(name), "{name}");
        }
        let schedules: Vec<String> = schedule_values()
            .possible_values()
            .unwrap()
            .map(|value| value.get_name().to_string())
            .collect();
        assert_eq!(schedules, ScheduleKind::names());
    }
}
