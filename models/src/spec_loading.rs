//! Where a model spec comes from: JSON text (clustersim's own format, or a
//! Hugging Face `config.json`: [`crate::hf_config`]), a file, or a preset
//! name.

use crate::spec::{ModelError, ModelSpec};
use std::path::Path;

impl ModelSpec {
    /// Parses and validates a model from JSON text; `origin` names the source in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, ModelError> {
        // A Hugging Face config.json is recognised by its `model_type` key.
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
            if crate::hf_config::is_hf_config(&value) {
                return crate::hf_config::from_hf_config(&value, origin);
            }
        }
        let spec: ModelSpec = serde_json::from_str(text).map_err(|source| ModelError::Parse {
            path: origin.to_string(),
            source,
        })?;
        spec.validate()?;
        Ok(spec)
    }

    /// Reads and validates a model JSON file.
    pub fn from_file(path: &Path) -> Result<Self, ModelError> {
        let text = input_file::read_to_string(path).map_err(|source| ModelError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json_str(&text, &path.display().to_string())
    }

    /// A preset name or a path to a model JSON file.
    pub fn resolve(name_or_path: &str) -> Result<Self, ModelError> {
        if let Some(spec) = crate::presets::preset(name_or_path) {
            return Ok(spec);
        }
        let path = Path::new(name_or_path);
        if path.exists() {
            return Self::from_file(path);
        }
        Err(ModelError::Unknown {
            message: input_file::named::unknown(
                "model",
                name_or_path,
                &crate::presets::preset_names(),
            ),
        })
    }
}
