//! A sequence-length trace: the tokens per sample of each training
//! iteration, one line per iteration, as a run that batches by length logs
//! them: length-bucketed batching (every sample of an iteration drawn from
//! one bucket and padded to its longest, as Hugging Face's
//! `group_by_length` sampler and fairseq's bucketed batches do), or a
//! sequence-length warm-up (DeepSpeed's curriculum learning `seqlen`
//! schedule).
//!
//! Each line is one positive whole number of tokens; empty lines and lines
//! starting with `#` are skipped. Each iteration is then simulated at its
//! length (every microbatch of that iteration padded to it), so the run gets
//! a distribution of iteration times instead of one. Lengths that vary
//! within an iteration (microbatch by microbatch) are not modeled.

use std::path::{Path, PathBuf};

/// Largest trace read (bytes): 100,000 iterations of 6-digit lengths.
pub const MAX_TRACE_BYTES: u64 = 4 << 20;

/// Most iterations a trace may hold.
pub const MAX_TRACE_ITERATIONS: usize = 100_000;

/// Most distinct lengths a trace may hold (each is one simulation).
pub const MAX_DISTINCT_LENGTHS: usize = 1_000;

/// One iteration of a trace: its line in the file and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedLength {
    /// 1-based line number in the file.
    pub line: usize,
    /// Tokens per sample (positive).
    pub seq_len: u64,
}

/// A checked sequence-length trace.
#[derive(Debug, Clone, PartialEq)]
pub struct SeqLenTrace {
    pub path: PathBuf,
    pub iterations: Vec<TracedLength>,
}

impl SeqLenTrace {
    /// Reads `path`: at least one iteration, at most
    /// [`MAX_TRACE_ITERATIONS`] and [`MAX_DISTINCT_LENGTHS`] distinct
    /// lengths, each a positive whole number; the first problem names its
    /// line.
    pub fn read(path: &Path) -> Result<SeqLenTrace, String> {
        let shown = path.display();
        let text = input_file::read_to_string_capped(path, MAX_TRACE_BYTES)
            .map_err(|error| format!("sequence-length trace '{shown}': {error}"))?;
        Self::parse(path, &text)
    }

    /// [`Self::read`] of text already read.
    pub fn parse(path: &Path, text: &str) -> Result<SeqLenTrace, String> {
        let shown = path.display();
        let mut iterations = Vec::new();
        for (line_number, trimmed) in crate::trace_lines::entries(text) {
            if iterations.len() == MAX_TRACE_ITERATIONS {
                return Err(format!(
                    "sequence-length trace '{shown}': more than {MAX_TRACE_ITERATIONS} iterations (line {line_number})"
                ));
            }
            let seq_len = match trimmed.parse::<u64>() {
                Ok(seq_len) if seq_len > 0 => seq_len,
                _ => {
                    return Err(format!(
                        "sequence-length trace '{shown}', line {line_number}: '{trimmed}' is not a positive whole number of tokens (one length per line)"
                    ))
                }
            };
            iterations.push(TracedLength {
                line: line_number,
                seq_len,
            });
        }
        if iterations.is_empty() {
            return Err(format!(
                "sequence-length trace '{shown}' holds no iteration (one length in tokens per line)"
            ));
        }
        let trace = SeqLenTrace {
            path: path.to_path_buf(),
            iterations,
        };
        let distinct = trace.distinct_lengths().len();
        if distinct > MAX_DISTINCT_LENGTHS {
            return Err(format!(
                "sequence-length trace '{shown}': {distinct} distinct lengths, more than {MAX_DISTINCT_LENGTHS} (each is one simulation; round them to buckets)"
            ));
        }
        Ok(trace)
    }

    /// The distinct lengths, ascending, each with the first line holding it.
    pub fn distinct_lengths(&self) -> Vec<TracedLength> {
        let mut first: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
        for traced in &self.iterations {
            first.entry(traced.seq_len).or_insert(traced.line);
        }
        first
            .into_iter()
            .map(|(seq_len, line)| TracedLength { line, seq_len })
            .collect()
    }
}

impl std::fmt::Display for SeqLenTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SeqLenTrace, String> {
        SeqLenTrace::parse(Path::new("lengths.txt"), text)
    }

    #[test]
    fn each_line_is_one_iteration_and_lengths_are_listed_once() {
        let trace = parse("# tokens per sample\n2048\n\n512\n2048\n").unwrap();
        assert_eq!(trace.iterations.len(), 3);
        assert_eq!(
            trace.iterations[1],
            TracedLength {
                line: 4,
                seq_len: 512
            }
        );
        let distinct: Vec<(u64, usize)> = trace
            .distinct_lengths()
            .iter()
            .map(|t| (t.seq_len, t.line))
            .collect();
        assert_eq!(distinct, [(512, 4), (2048, 2)]);
    }

    #[test]
    fn a_bad_line_is_named() {
        for bad in ["0", "-5", "1.5", "x", "2048 4096", "99999999999999999999"] {
            assert_eq!(
                parse(&format!("1024\n{bad}\n")).unwrap_err(),
                format!("sequence-length trace 'lengths.txt', line 2: '{bad}' is not a positive whole number of tokens (one length per line)")
            );
        }
        assert!(parse("# nothing\n\n")
            .unwrap_err()
            .contains("holds no iteration"));
        let too_many = "8\n".repeat(MAX_TRACE_ITERATIONS + 1);
        assert!(parse(&too_many)
            .unwrap_err()
            .contains("more than 100000 iterations (line 100001)"));
        let distinct: String = (1..=MAX_DISTINCT_LENGTHS as u64 + 1)
            .map(|n| format!("{n}\n"))
            .collect();
        assert!(parse(&distinct)
            .unwrap_err()
            .contains("1001 distinct lengths, more than 1000"));
    }
}
