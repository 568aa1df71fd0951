//! The model specification: a GPT-style decoder-only transformer.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// A GPT-style transformer. JSON keys match the field names; unknown keys are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Human-readable name, e.g. "gpt3-175b".
    pub name: String,
    /// Number of transformer layers `l`.
    pub layers: u64,
    /// Hidden size `h`.
    pub hidden: u64,
    /// Attention heads `a`.
    pub heads: u64,
    /// Sequence length `s` in tokens.
    pub seq_len: u64,
    /// Vocabulary size `V` (after padding).
    pub vocab: u64,
    /// MLP inner size; 4·hidden when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ffn_hidden: Option<u64>,
}

/// Everything that can be wrong with a model spec or its file.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file could not be read.
    #[error("cannot read model file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// The file is not a valid model JSON (syntax, unknown key, wrong type).
    #[error("model file {path} is not a valid model: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    /// The name is neither a preset nor an existing file.
    #[error("unknown model '{name}': not a preset ({presets}) and no such file")]
    Unknown { name: String, presets: String },
    /// Field values that cannot describe a transformer; every problem is listed.
    #[error("invalid model '{name}': {}", problems.join("; "))]
    Invalid { name: String, problems: Vec<String> },
}

/// Limits on a model's sizes, far beyond any model trained so far (GPT-style
/// models reach about 200 layers, h = 53,248, 1 M-token contexts and 256 k
/// vocabularies) yet small enough that every FLOP, byte and parameter count
/// fits in u64 and a simulation's memory stays bounded: a model beyond them
/// is refused before anything is built.
pub const MAX_LAYERS: u64 = 16_384;
/// See [`MAX_LAYERS`].
pub const MAX_HIDDEN: u64 = 1 << 20;
/// See [`MAX_LAYERS`].
pub const MAX_HEADS: u64 = 1 << 16;
/// See [`MAX_LAYERS`].
pub const MAX_SEQ_LEN: u64 = 1 << 24;
/// See [`MAX_LAYERS`].
pub const MAX_VOCAB: u64 = 1 << 24;
/// See [`MAX_LAYERS`].
pub const MAX_FFN_HIDDEN: u64 = 1 << 22;

impl ModelSpec {
    /// MLP inner size (`ffn_hidden`, default 4·hidden).
    pub fn ffn(&self) -> u64 {
        self.ffn_hidden.unwrap_or(4 * self.hidden)
    }

    /// Per-head dimension h/a.
    pub fn head_dim(&self) -> u64 {
        self.hidden / self.heads.max(1)
    }

    /// Checks the spec describes a buildable transformer; reports every problem at once.
    pub fn validate(&self) -> Result<(), ModelError> {
        let mut problems = Vec::new();
        for (key, value, max) in [
            ("layers", self.layers, MAX_LAYERS),
            ("hidden", self.hidden, MAX_HIDDEN),
            ("heads", self.heads, MAX_HEADS),
            ("seq_len", self.seq_len, MAX_SEQ_LEN),
            ("vocab", self.vocab, MAX_VOCAB),
        ] {
            if value == 0 {
                problems.push(format!("{key} must be positive"));
            } else if value > max {
                problems.push(format!("{key} {value} is over the limit of {max}"));
            }
        }
        match self.ffn_hidden {
            Some(0) => problems.push("ffn_hidden must be positive when given".into()),
            Some(ffn) if ffn > MAX_FFN_HIDDEN => problems.push(format!(
                "ffn_hidden {ffn} is over the limit of {MAX_FFN_HIDDEN}"
            )),
            _ => {}
        }
        if self.heads > 0 && !self.hidden.is_multiple_of(self.heads) {
            problems.push(format!(
                "hidden ({}) must be divisible by heads ({})",
                self.hidden, self.heads
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ModelError::Invalid {
                name: self.name.clone(),
                problems,
            })
        }
    }

    /// Parses and validates a model from JSON text; `origin` names the source in errors.
    pub fn from_json_str(text: &str, origin: &str) -> Result<Self, ModelError> {
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
        if let Some(spec) = crate::preset(name_or_path) {
            return Ok(spec);
        }
        let path = Path::new(name_or_path);
        if path.exists() {
            return Self::from_file(path);
        }
        Err(ModelError::Unknown {
            name: name_or_path.to_string(),
            presets: crate::preset_names().join(", "),
        })
    }
}
