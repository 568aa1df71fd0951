//! One module per subcommand, plus the argument groups they share.

pub mod accuracy;
pub mod calibrate;
pub mod collective;
pub mod compare;
pub mod cuda_libs;
pub mod defaults_note;
pub mod execute;
pub mod expected_range;
pub mod explain;
pub mod fit;
pub mod import_trace;
pub mod max_model;
pub mod pictures;
pub mod plot;
pub mod post_validation;
pub mod presets;
pub mod registry_help;
pub mod scenario_args;
pub mod simulate;
pub mod sweep;
pub mod sweep_post_validation;
pub mod sweep_report;
pub mod timeline;
pub mod validate;
pub mod validate_attention;
pub mod validate_json;
