//! One module per subcommand.

pub mod presets;
pub mod scenario_args;
pub mod simulate;
pub mod validate;
