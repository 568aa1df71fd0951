//! One step of a pipeline schedule and its compact text form.
//!
//! `s2F5` is stage 2 running the forward of microbatch 5; `s0B3c1` is stage 0
//! running the backward of microbatch 3 on model chunk 1 (interleaved only;
//! chunk 0 is written without the suffix). A split backward (zero-bubble
//! schedules) writes its input-gradient pass `I` and its weight-gradient pass
//! `W`: `s1I4`, `s1W4`. An overlapped forward/backward pair (DualPipe's
//! F&B) writes both halves joined by `&`, forward first: `s0F5&B2c1` is stage
//! 0 running the forward of microbatch 5 on chunk 0 together with the
//! backward of microbatch 2 on chunk 1. The text parses back exactly.

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
    /// An overlapped pair (DualPipe's F&B): the forward of (microbatch,
    /// chunk) with the whole backward of [`Action::paired`].
    ForwardBackward,
}

impl Pass {
    /// The letter of the text form.
    pub fn letter(self) -> char {
        match self {
            Pass::Forward => 'F',
            Pass::Backward => 'B',
            Pass::InputGradient => 'I',
            Pass::WeightGradient => 'W',
            // The pair is written as its two halves, `F…&B…`.
            Pass::ForwardBackward => 'F',
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
    /// The backward half of a [`Pass::ForwardBackward`] pair (whose
    /// `microbatch` and `chunk` are the forward's); `None` for every other pass.
    pub paired: Option<Paired>,
}

/// The backward (whole, `B`) of an overlapped forward/backward pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Paired {
    pub microbatch: u32,
    pub chunk: u32,
}

impl Action {
    /// A single pass (not a pair).
    pub fn new(stage: u32, pass: Pass, microbatch: u32, chunk: u32) -> Action {
        Action {
            stage,
            pass,
            microbatch,
            chunk,
            paired: None,
        }
    }

    /// The forward of (`microbatch`, `chunk`) overlapped with the backward of `backward`.
    pub fn forward_backward(stage: u32, microbatch: u32, chunk: u32, backward: Paired) -> Action {
        Action {
            stage,
            pass: Pass::ForwardBackward,
            microbatch,
            chunk,
            paired: Some(backward),
        }
    }

    /// The single passes this action runs, in issue order: itself, or a
    /// pair's forward then its backward.
    pub fn halves(&self) -> impl Iterator<Item = Action> {
        let (first, second) = match (self.pass, self.paired) {
            (Pass::ForwardBackward, Some(backward)) => (
                Action::new(self.stage, Pass::Forward, self.microbatch, self.chunk),
                Some(Action::new(
                    self.stage,
                    Pass::Backward,
                    backward.microbatch,
                    backward.chunk,
                )),
            ),
            _ => (*self, None),
        };
        std::iter::once(first).chain(second)
    }
}

fn write_half(
    f: &mut fmt::Formatter<'_>,
    letter: char,
    microbatch: u32,
    chunk: u32,
) -> fmt::Result {
    write!(f, "{letter}{microbatch}")?;
    if chunk != 0 {
        write!(f, "c{chunk}")?;
    }
    Ok(())
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.stage)?;
        write_half(f, self.pass.letter(), self.microbatch, self.chunk)?;
        if let Some(backward) = self.paired {
            write!(f, "&")?;
            write_half(f, 'B', backward.microbatch, backward.chunk)?;
        }
        Ok(())
    }
}

/// Why an action string did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad action '{text}': expected s<stage><F|B|I|W><microbatch>[c<chunk>], e.g. s0F3, s2B1c1 or s1W4, or a pair s<stage>F<microbatch>[c<chunk>]&B<microbatch>[c<chunk>]"
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
        let (first, second) = match rest[pass_at..].split_once('&') {
            Some((first, second)) => (first, Some(second)),
            None => (&rest[pass_at..], None),
        };
        let (pass, microbatch, chunk) = parse_half(first).ok_or_else(error)?;
        match second {
            None => Ok(Action::new(stage, pass, microbatch, chunk)),
            Some(second) => match (pass, parse_half(second).ok_or_else(error)?) {
                (Pass::Forward, (Pass::Backward, backward_microbatch, backward_chunk)) => {
                    Ok(Action::forward_backward(
                        stage,
                        microbatch,
                        chunk,
                        Paired {
                            microbatch: backward_microbatch,
                            chunk: backward_chunk,
                        },
                    ))
                }
                _ => Err(error()),
            },
        }
    }
}

/// `<F|B|I|W><microbatch>[c<chunk>]`.
fn parse_half(text: &str) -> Option<(Pass, u32, u32)> {
    let pass = Pass::from_letter(*text.as_bytes().first()?)?;
    let rest = &text[1..];
    let (microbatch, chunk) = match rest.find('c') {
        Some(at) => (parse_number(&rest[..at])?, parse_number(&rest[at + 1..])?),
        None => (parse_number(rest)?, 0),
    };
    Some((pass, microbatch, chunk))
}

fn parse_number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A forward of `microbatch` on `chunk` of `stage`.
pub(crate) fn forward(stage: u32, microbatch: u32, chunk: u32) -> Action {
    Action::new(stage, Pass::Forward, microbatch, chunk)
}

/// A backward of `microbatch` on `chunk` of `stage`.
pub(crate) fn backward(stage: u32, microbatch: u32, chunk: u32) -> Action {
    Action::new(stage, Pass::Backward, microbatch, chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_text_round_trips() {
        for text in [
            "s0F3",
            "s2B1c1",
            "s63B511",
            "s10F0c3",
            "s1I4",
            "s3W0c2",
            "s0F5&B2c1",
            "s3F1c1&B0",
        ] {
            let action: Action = text.parse().unwrap();
            assert_eq!(action.to_string(), text);
        }
        let action: Action = "s2B1c1".parse().unwrap();
        assert_eq!(action, Action::new(2, Pass::Backward, 1, 1));
        let pair: Action = "s0F5&B2c1".parse().unwrap();
        let halves: Vec<String> = pair.halves().map(|a| a.to_string()).collect();
        assert_eq!(halves, ["s0F5", "s0B2c1"]);
    }

    #[test]
    fn malformed_actions_are_rejected() {
        for text in [
            "",
            "s",
            "F3",
            "s0X3",
            "s0F",
            "s0F3c",
            "sxF1",
            "s0F-1",
            "s0F3c1c2",
            "s0IW1",
            "s0I",
            "s0w1",
            "s0F1&",
            "s0F1&B",
            "s0B1&F2",
            "s0F1&I2",
            "s0F1&B2&B3",
            "s0F1&s0B2",
            "&B1",
        ] {
            assert!(text.parse::<Action>().is_err(), "{text} parsed");
        }
    }
}
