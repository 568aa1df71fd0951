//! One step of a pipeline schedule and its compact text form.
//!
//! `s2F5` is stage 2 running the forward of microbatch 5; `s0B3c1` is stage 0
//! running the backward of microbatch 3 on model chunk 1 (interleaved only;
//! chunk 0 is written without the suffix). A split backward (zero-bubble
//! schedules) writes its input-gradient pass `I` and its weight-gradient pass
//! `W`: `s1I4`, `s1W4`. The text parses back exactly.

use std::fmt;

/// Forward or backward, or one half of a split backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Pass {
    Forward,
    Backward,
    /// The input-gradient half of a backward (`I`): what the previous stage waits for.
    InputGradient,
    /// The weight-gradient half of a backward (`W`), after its `I`, deferrable.
    WeightGradient,
}

impl Pass {
    /// The letter of the text form.
    pub fn letter(self) -> char {
        match self {
            Pass::Forward => 'F',
            Pass::Backward => 'B',
            Pass::InputGradient => 'I',
            Pass::WeightGradient => 'W',
        }
    }

    fn from_letter(letter: u8) -> Option<Pass> {
        match letter {
            b'F' => Some(Pass::Forward),
            b'B' => Some(Pass::Backward),
            b'I' => Some(Pass::InputGradient),
            b'W' => Some(Pass::WeightGradient),
            _ => None,
        }
    }
}

/// A stage runs one pass of one microbatch on one of its model chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Action {
    pub stage: u32,
    pub pass: Pass,
    pub microbatch: u32,
    pub chunk: u32,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "s{}{}{}",
            self.stage,
            self.pass.letter(),
            self.microbatch
        )?;
        if self.chunk != 0 {
            write!(f, "c{}", self.chunk)?;
        }
        Ok(())
    }
}

/// Why an action string did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad action '{text}': expected s<stage><F|B|I|W><microbatch>[c<chunk>], e.g. s0F3, s2B1c1 or s1W4"
)]
pub struct ActionParseError {
    pub text: String,
}

impl std::str::FromStr for Action {
    type Err = ActionParseError;

    fn from_str(text: &str) -> Result<Action, ActionParseError> {
        let error = || ActionParseError {
            text: text.to_string(),
        };
        let rest = text.strip_prefix('s').ok_or_else(error)?;
        let pass_at = rest.find(['F', 'B', 'I', 'W']).ok_or_else(error)?;
        let stage = parse_number(&rest[..pass_at]).ok_or_else(error)?;
        let pass = Pass::from_letter(rest.as_bytes()[pass_at]).ok_or_else(error)?;
        let rest = &rest[pass_at + 1..];
        let (microbatch, chunk) = match rest.find('c') {
            Some(at) => (
                parse_number(&rest[..at]).ok_or_else(error)?,
                parse_number(&rest[at + 1..]).ok_or_else(error)?,
            ),
            None => (parse_number(rest).ok_or_else(error)?, 0),
        };
        Ok(Action {
            stage,
            pass,
            microbatch,
            chunk,
        })
    }
}

fn parse_number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_text_round_trips() {
        for text in ["s0F3", "s2B1c1", "s63B511", "s10F0c3", "s1I4", "s3W0c2"] {
            let action: Action = text.parse().unwrap();
            assert_eq!(action.to_string(), text);
        }
        let action: Action = "s2B1c1".parse().unwrap();
        assert_eq!(
            action,
            Action {
                stage: 2,
                pass: Pass::Backward,
                microbatch: 1,
                chunk: 1
            }
        );
    }

    #[test]
    fn malformed_actions_are_rejected() {
        for text in [
            "", "s", "F3", "s0X3", "s0F", "s0F3c", "sxF1", "s0F-1", "s0F3c1c2", "s0IW1", "s0I",
            "s0w1",
        ] {
            assert!(text.parse::<Action>().is_err(), "{text} parsed");
        }
    }
}
