//! Reading a Hugging Face `config.json`'s keys: typed reads that name the
//! file and key in errors ([`Fields`]), and the vocabulary padded as
//! Megatron-LM pads it.

use crate::dropout::DropoutRate;
use crate::spec::ModelError;
use serde_json::{Map, Value};
use std::path::Path;

/// Megatron-LM's `--make-vocab-size-divisible-by` default.
pub const VOCAB_PADDING_MULTIPLE: u64 = 128;

pub(crate) fn invalid(origin: &str, problem: String) -> ModelError {
    ModelError::Invalid {
        name: origin.to_string(),
        problems: vec![problem],
    }
}

/// Typed reads of a config's keys, with the file named in errors.
pub(crate) struct Fields<'a> {
    pub(crate) object: &'a Map<String, Value>,
    pub(crate) origin: &'a str,
}

impl Fields<'_> {
    pub(crate) fn count(&self, key: &str) -> Result<Option<u64>, ModelError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value.as_u64().map(Some).ok_or_else(|| {
                invalid(
                    self.origin,
                    format!("config key {key} is {value}, not a whole number"),
                )
            }),
        }
    }

    pub(crate) fn required(&self, key: &str) -> Result<u64, ModelError> {
        self.count(key)?.ok_or_else(|| {
            invalid(
                self.origin,
                format!("config key {key} is missing (a Hugging Face config.json has it)"),
            )
        })
    }

    pub(crate) fn flag(&self, key: &str, default: bool) -> Result<bool, ModelError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(value)) => Ok(*value),
            Some(value) => Err(invalid(
                self.origin,
                format!("config key {key} is {value}, not true or false"),
            )),
        }
    }

    /// A dropout probability (a number; validated with the spec).
    pub(crate) fn dropout(&self, key: &str, default: f64) -> Result<DropoutRate, ModelError> {
        match self.object.get(key) {
            None | Some(Value::Null) => Ok(DropoutRate::new(default)),
            Some(value) => value.as_f64().map(DropoutRate::new).ok_or_else(|| {
                invalid(
                    self.origin,
                    format!("config key {key} is {value}, not a probability"),
                )
            }),
        }
    }

    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.object.get(key).and_then(Value::as_str)
    }

    /// The format the weights were saved in: `torch_dtype`, or `dtype` as
    /// transformers writes it since v4.56; None where absent or unknown
    /// (`"auto"`).
    pub(crate) fn trained_dtype(&self) -> Option<crate::spec::TrainedDtype> {
        self.text("torch_dtype")
            .or_else(|| self.text("dtype"))
            .and_then(crate::spec::TrainedDtype::parse)
    }

    /// The model's name: the folder of a `config.json`, else the file stem.
    pub(crate) fn name(&self) -> String {
        let path = Path::new(self.origin);
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        match (stem.as_deref(), path.parent().and_then(Path::file_name)) {
            (Some("config"), Some(folder)) => folder.to_string_lossy().into_owned(),
            (Some(stem), _) => stem.trim_end_matches(".config").to_string(),
            (None, _) => "hf-model".into(),
        }
    }
}

/// The vocabulary padded to Megatron's multiple, and the tokenizer's size
/// when padding changed it; sizes past any padding's reach are left as they
/// are for the model's limit check to name.
pub(crate) fn padded_vocab(vocab: u64) -> (u64, Option<u64>) {
    match vocab
        .div_ceil(VOCAB_PADDING_MULTIPLE)
        .checked_mul(VOCAB_PADDING_MULTIPLE)
    {
        Some(padded) => (padded, (padded != vocab).then_some(vocab)),
        None => (vocab, None),
    }
}
