//! The `schema_version` of every JSON document the CLI prints, in one place.
//! Each document's keys are documented in `schemas/<name>.schema.json` (the
//! test `cli/tests/it/json_schemas.rs` validates every subcommand's output
//! against them); a version is bumped when its document's keys change. The
//! sweep document and FIT.json carry theirs from the `studies` crate
//! (`SWEEP_SCHEMA_VERSION`, `fit_file::SCHEMA_VERSION`).

/// `simulate --json` (`schemas/simulate.schema.json`).
pub const SIMULATE: u32 = 1;
/// `simulate --max-model --json` (`schemas/max-model.schema.json`).
pub const MAX_MODEL: u32 = 1;
/// `validate --json`, every kind of input (`schemas/validate.schema.json`).
pub const VALIDATE: u32 = 1;
/// `compare --json` (`schemas/compare.schema.json`).
pub const COMPARE: u32 = 1;
/// `collective --json` (`schemas/collective.schema.json`).
pub const COLLECTIVE: u32 = 1;
/// `plot bubble --json` (`schemas/plot-bubble.schema.json`).
pub const PLOT_BUBBLE: u32 = 1;
/// `presets --json` (`schemas/presets.schema.json`).
pub const PRESETS: u32 = 1;
/// `run-plan --json` (`schemas/run-plan.schema.json`).
pub const RUN_PLAN: u32 = 1;
