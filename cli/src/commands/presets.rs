//! `clustersim presets`: what is built in; `--show NAME` prints one preset
//! as the JSON file a user would copy and edit (`--model FILE`,
//! `--topology FILE`, `--profile FILE`, `--stack FILE` read it back), and
//! `--json` lists every name machine-readably.

use crate::exit::user_error;
use crate::stdout::outln;
use clap::{Args, ValueEnum};
use sim::scenario::era::TODAYS_STACK;
use sim::scenario::{ScheduleKind, Stack, DEFAULT_STACK};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  clustersim presets
  clustersim presets --show llama3-70b > my-model.json     (edit, then --model my-model.json)
  clustersim presets --show h200 --kind profile
  clustersim presets --json")]
pub struct PresetsArgs {
    /// Print this preset as JSON (a model, topology, profile or stack).
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
    /// Which kind of preset `--show` means, where a name is more than one
    /// (`h200` is a topology and a profile).
    #[arg(long, value_enum)]
    pub kind: Option<PresetKind>,
    /// Print the lists as one JSON object.
    #[arg(long, conflicts_with = "show")]
    pub json: bool,
}

/// The kinds of preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PresetKind {
    Model,
    Topology,
    Profile,
    Stack,
}

impl PresetKind {
    const ALL: [PresetKind; 4] = [
        PresetKind::Model,
        PresetKind::Topology,
        PresetKind::Profile,
        PresetKind::Stack,
    ];

    fn name(self) -> &'static str {
        match self {
            PresetKind::Model => "model",
            PresetKind::Topology => "topology",
            PresetKind::Profile => "profile",
            PresetKind::Stack => "stack",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            PresetKind::Model => "models",
            PresetKind::Topology => "topologies",
            PresetKind::Profile => "profiles",
            PresetKind::Stack => "stacks",
        }
    }

    /// The names built in of this kind.
    fn names(self) -> Vec<String> {
        match self {
            PresetKind::Model => models::preset_names(),
            PresetKind::Topology => topologies::preset_names(),
            PresetKind::Profile => profile::Profile::builtin_names()
                .into_iter()
                .map(String::from)
                .collect(),
            PresetKind::Stack => Stack::builtin_names()
                .into_iter()
                .map(String::from)
                .collect(),
        }
    }

    /// The preset `name` of this kind as pretty JSON, if there is one.
    fn show(self, name: &str) -> anyhow::Result<Option<String>> {
        Ok(match self {
            PresetKind::Model => models::preset(name)
                .map(|spec| serde_json::to_string_pretty(&spec))
                .transpose()?,
            PresetKind::Topology => topologies::preset(name)
                .map(|spec| serde_json::to_string_pretty(&spec))
                .transpose()?,
            PresetKind::Profile => profile::Profile::builtin(name)
                .map(|p| serde_json::to_string_pretty(&p))
                .transpose()?,
            PresetKind::Stack => Stack::builtin_text(name).map(|text| text.trim_end().to_string()),
        })
    }
}

pub fn run(args: PresetsArgs) -> anyhow::Result<()> {
    if let Some(name) = &args.show {
        return show(name, args.kind);
    }
    if args.json {
        let mut lists = serde_json::Map::new();
        lists.insert(
            "schema_version".into(),
            crate::schema_versions::PRESETS.into(),
        );
        for kind in PresetKind::ALL {
            lists.insert(kind.plural().into(), kind.names().into());
        }
        lists.insert("schedules".into(), ScheduleKind::names().into());
        lists.insert("default_stack".into(), DEFAULT_STACK.into());
        lists.insert("todays_default_stack".into(), TODAYS_STACK.into());
        outln!("{}", serde_json::to_string_pretty(&lists)?)?;
        return Ok(());
    }
    outln!("models:     {}", PresetKind::Model.names().join(", "))?;
    outln!("topologies: {}", PresetKind::Topology.names().join(", "))?;
    outln!("profiles:   {}", PresetKind::Profile.names().join(", "))?;
    outln!(
        "stacks:     {} (default {TODAYS_STACK} for today's models and GPUs, {DEFAULT_STACK} for the paper-era GPT models on A100 and V100)",
        PresetKind::Stack.names().join(", ")
    )?;
    outln!("schedules:  {}", ScheduleKind::names().join(", "))?;
    outln!("\n`clustersim presets --show NAME` prints one as the JSON file to copy and edit.")?;
    Ok(())
}

/// Prints the preset `name` (exit 2 when it is none, or more than one kind
/// without `--kind`).
fn show(name: &str, kind: Option<PresetKind>) -> anyhow::Result<()> {
    let kinds: Vec<PresetKind> = kind.map_or(PresetKind::ALL.to_vec(), |k| vec![k]);
    let mut found = Vec::new();
    for kind in kinds {
        if let Some(text) = kind.show(name)? {
            found.push((kind, text));
        }
    }
    match found.as_slice() {
        [(_, text)] => {
            outln!("{text}")?;
            Ok(())
        }
        [] => {
            let all: Vec<String> = PresetKind::ALL.iter().flat_map(|k| k.names()).collect();
            let hint = input_file::named::did_you_mean(name, &all)
                .unwrap_or_else(|| "`clustersim presets` lists them".into());
            let what = kind.map_or("preset".to_string(), |k| format!("{} preset", k.name()));
            Err(user_error(format!("no {what} is named '{name}': {hint}")))
        }
        several => {
            let kinds: Vec<&str> = several.iter().map(|(k, _)| k.name()).collect();
            Err(user_error(format!(
                "'{name}' is a {}: add --kind {}",
                kinds.join(" and a "),
                kinds.join(" or --kind ")
            )))
        }
    }
}
