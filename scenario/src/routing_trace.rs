//! A routing trace: the tokens each expert received, one line per training
//! iteration, as a mixture-of-experts run logs them (Megatron-Core's
//! `TopKRouter` counts them per layer in `local_tokens_per_expert` and
//! all-reduces them once per global batch for its expert-bias update,
//! `_update_router_expert_bias` in `megatron/core/transformer/moe/moe_utils.py`;
//! a line is such a count summed over the MoE layers, or one layer's).
//!
//! Each line is E non-negative numbers (whitespace or commas between them);
//! empty lines and lines starting with `#` are skipped. Each iteration is
//! then simulated with its own routing (the same in every layer and
//! microbatch of that iteration, as `expert_imbalance` routes), so the run
//! gets a distribution of iteration times instead of one.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::expert_imbalance::{token_counts, ExpertImbalance};

/// Largest routing trace read (bytes): 10,000 iterations of 256 experts
/// written with 8-digit counts.
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

/// Most iterations a trace may hold (each is one simulation).
pub const MAX_TRACE_ITERATIONS: usize = 10_000;

/// One iteration of a trace: its line in the file and its counts.
#[derive(Debug, Clone, PartialEq)]
pub struct TracedRouting {
    /// 1-based line number in the file.
    pub line: usize,
    /// Tokens per expert, E of them, summing to a positive finite number.
    pub counts: Vec<f64>,
}

/// A checked routing trace of a model with `experts` experts.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingTrace {
    pub path: PathBuf,
    pub iterations: Vec<TracedRouting>,
}

impl RoutingTrace {
    /// Reads `path` for a model of `experts` experts: at least one
    /// iteration, at most [`MAX_TRACE_ITERATIONS`], each of `experts`
    /// counts that do not sum to zero; the first problem names its line.
    pub fn read(path: &Path, experts: u64) -> Result<RoutingTrace, String> {
        let shown = path.display();
        let text = input_file::read_to_string_capped(path, MAX_TRACE_BYTES)
            .map_err(|error| format!("routing trace '{shown}': {error}"))?;
        Self::parse(path, &text, experts)
    }

    /// [`Self::read`] of text already read.
    pub fn parse(path: &Path, text: &str, experts: u64) -> Result<RoutingTrace, String> {
        let shown = path.display();
        let mut iterations = Vec::new();
        for (line_number, trimmed) in crate::trace_lines::entries(text) {
            if iterations.len() == MAX_TRACE_ITERATIONS {
                return Err(format!(
                    "routing trace '{shown}': more than {MAX_TRACE_ITERATIONS} iterations (line {line_number}); each is one simulation"
                ));
            }
            let at =
                |error: String| format!("routing trace '{shown}', line {line_number}: {error}");
            let counts = token_counts(trimmed).map_err(at)?;
            if counts.len() as u64 != experts {
                return Err(at(format!(
                    "{} counts; the model has {experts} experts",
                    counts.len()
                )));
            }
            let total: f64 = counts.iter().sum();
            if !(total > 0.0 && total.is_finite()) {
                return Err(at("the counts must sum to a positive finite number".into()));
            }
            iterations.push(TracedRouting {
                line: line_number,
                counts,
            });
        }
        if iterations.is_empty() {
            return Err(format!(
                "routing trace '{shown}' holds no iteration (one line of {experts} token counts per iteration)"
            ));
        }
        Ok(RoutingTrace {
            path: path.to_path_buf(),
            iterations,
        })
    }

    /// The routing of iteration `traced`, named `FILE:LINE`.
    pub fn imbalance(&self, traced: &TracedRouting) -> ExpertImbalance {
        ExpertImbalance::Counts {
            counts: traced.counts.clone(),
            written: format!("{}:{}", self.path.display(), traced.line),
        }
    }
}

impl fmt::Display for RoutingTrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RoutingTrace, String> {
        RoutingTrace::parse(Path::new("trace.txt"), text, 4)
    }

    #[test]
    fn each_line_is_one_iteration_and_comments_are_skipped() {
        let trace = parse("# tokens per expert\n1 2 3 4\n\n4,3,2,1\n").unwrap();
        assert_eq!(trace.iterations.len(), 2);
        assert_eq!(trace.iterations[1].line, 4);
        assert_eq!(trace.iterations[1].counts, [4.0, 3.0, 2.0, 1.0]);
        assert_eq!(
            trace.imbalance(&trace.iterations[1]).to_string(),
            "trace.txt:4"
        );
    }

    #[test]
    fn a_bad_line_is_named() {
        assert_eq!(
            parse("1 2 3 4\n1 2 3\n").unwrap_err(),
            "routing trace 'trace.txt', line 2: 3 counts; the model has 4 experts"
        );
        assert!(parse("1 2 x 4")
            .unwrap_err()
            .contains("line 1: 'x' is not a token count"));
        assert!(parse("1 2 -3 4")
            .unwrap_err()
            .contains("not a non-negative count"));
        assert!(parse("0 0 0 0").unwrap_err().contains("positive finite"));
        assert!(parse("1e308 1e308 1e308 1e308")
            .unwrap_err()
            .contains("positive finite"));
        assert!(parse("# nothing\n\n")
            .unwrap_err()
            .contains("holds no iteration"));
        let too_many = "1 1 1 1\n".repeat(MAX_TRACE_ITERATIONS + 1);
        assert!(parse(&too_many)
            .unwrap_err()
            .contains("more than 10000 iterations (line 10001)"));
    }
}
