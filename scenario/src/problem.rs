//! One thing wrong with a scenario: the key it concerns and the line that
//! says what is wrong. Validation rules state their problems as values;
//! [`crate::ScenarioError::Invalid`] lists their lines, and the sweep counts
//! rejected layouts by key without reading the text.

use std::fmt;

/// The field of a problem with the whole layout's GPU count (tp × cp × pp ×
/// dp against the topology's GPUs), which no single key owns.
pub const GPU_COUNT_FIELD: &str = "gpus";

/// One problem of a scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    field: &'static str,
    line: String,
}

impl Problem {
    /// A problem with `field`, listed as "field: message".
    pub fn new(field: &'static str, message: impl fmt::Display) -> Problem {
        Problem {
            field,
            line: format!("{field}: {message}"),
        }
    }

    /// A problem with the layout's GPU count, listed by its message alone
    /// (the message names the degrees and the topology).
    pub fn gpu_count(message: String) -> Problem {
        Problem {
            field: GPU_COUNT_FIELD,
            line: message,
        }
    }

    /// A problem whose line another module's error already words with its
    /// key in front (`pipeline_layout: position …`).
    pub fn worded(field: &'static str, line: String) -> Problem {
        Problem { field, line }
    }

    /// The scenario key the problem concerns.
    pub fn field(&self) -> &'static str {
        self.field
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_their_key_except_the_gpu_count() {
        let problem = Problem::new("tp", "must be at least 1");
        assert_eq!(
            (problem.field(), problem.to_string().as_str()),
            ("tp", "tp: must be at least 1")
        );
        let count = Problem::gpu_count("tp × pp × dp = 8 GPUs, but topology 'x' has 4".into());
        assert_eq!(count.field(), GPU_COUNT_FIELD);
        assert!(count.to_string().starts_with("tp × pp × dp"));
    }
}
