//! Megatron-Core's pipeline layout string (`--pipeline-model-parallel-layout`,
//! `megatron/core/transformer/pipeline_parallel_layer_layout.py`:
//! `parse_str_to_list`, `validate_layer_layout`): which layers each virtual
//! stage builds, written as `Et*7|(t*8|)*14,t*7L`.
//!
//! Grammar, as the source's parser reads it: commas are cosmetic and
//! dropped; `(…)*n` repeats a group n times (the group holds no
//! parentheses); `x*n` repeats the one character before it n times; `|`
//! separates stages; `E` is the embedding, `t` a transformer layer, `L` the
//! loss, `m` a multi-token-prediction layer. Stage i of the list is virtual
//! stage i: chunk i div p of rank i mod p. The source then requires the
//! embedding first and the loss last, each exactly once, and as many `t` as
//! the model has layers; the scenario (`sim::scenario`) checks those, and the
//! stage count p·v.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The most layers and separators a layout may expand to (a bound on what a
/// user's repeat counts allocate; Megatron's largest recipes use hundreds).
pub const MAX_EXPANDED: usize = 1 << 20;

/// What one virtual stage of a layout builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StageContent {
    /// Transformer layers (`t`).
    pub transformer_layers: u32,
    /// Embeddings (`E`) and losses (`L`) on the stage.
    pub embeddings: u32,
    pub losses: u32,
    /// Multi-token-prediction layers (`m`).
    pub mtp_layers: u32,
}

/// A layout string that does not parse: what and where (0-based character
/// position in the string as written).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pipeline_layout: position {position} of '{text}': {message}")]
pub struct LayoutParseError {
    pub text: String,
    pub position: usize,
    pub message: String,
}

/// A parsed layout: its virtual stages in order, and its first and last
/// layer characters (the source requires `E` first and `L` last).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedLayout {
    pub stages: Vec<StageContent>,
    pub first: Option<char>,
    pub last: Option<char>,
}

/// Parses a layout string into its virtual stages.
pub fn parse(text: &str) -> Result<ParsedLayout, LayoutParseError> {
    let error = |position: usize, message: String| LayoutParseError {
        text: text.to_string(),
        position,
        message,
    };
    // (character, position as written), commas dropped as the source does.
    let chars: Vec<(char, usize)> = text
        .chars()
        .enumerate()
        .filter(|&(_, c)| c != ',')
        .map(|(i, c)| (c, i))
        .collect();
    let mut expanded: Vec<char> = Vec::new();
    let mut i = 0;
    // `*n` at chars[at..]: the count and the index after it.
    let count_at = |at: usize| -> Result<(usize, usize), LayoutParseError> {
        let star = chars[at].1;
        let digits: String = chars[at + 1..]
            .iter()
            .take_while(|(c, _)| c.is_ascii_digit())
            .map(|&(c, _)| c)
            .collect();
        if digits.is_empty() {
            return Err(error(star, "'*' must be followed by a repeat count".into()));
        }
        let count = digits
            .parse::<usize>()
            .map_err(|_| error(star + 1, format!("repeat count {digits} is too large")))?;
        Ok((count, at + 1 + digits.len()))
    };
    let push = |expanded: &mut Vec<char>, piece: &[char], count: usize, at: usize| {
        let grown = piece
            .len()
            .checked_mul(count)
            .and_then(|n| n.checked_add(expanded.len()));
        match grown {
            Some(n) if n <= MAX_EXPANDED => {
                for _ in 0..count {
                    expanded.extend_from_slice(piece);
                }
                Ok(())
            }
            _ => Err(error(
                at,
                format!("the layout expands to more than {MAX_EXPANDED} layers and separators"),
            )),
        }
    };
    while i < chars.len() {
        let (c, position) = chars[i];
        match c {
            '(' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&(c, _)| c == ')' || c == '(')
                    .map(|k| i + 1 + k);
                let close = match close {
                    Some(k) if chars[k].0 == ')' => k,
                    Some(k) => {
                        return Err(error(chars[k].1, "groups do not nest".into()));
                    }
                    None => return Err(error(position, "'(' is never closed".into())),
                };
                if close == i + 1 {
                    return Err(error(position, "empty group '()'".into()));
                }
                if close + 1 >= chars.len() || chars[close + 1].0 != '*' {
                    return Err(error(
                        chars[close].1,
                        "a group must be followed by '*' and a repeat count".into(),
                    ));
                }
                let (count, next) = count_at(close + 1)?;
                // The group's own `x*n` repeats, expanded once.
                let mut body = Vec::new();
                let mut j = i + 1;
                while j < close {
                    let (c, at) = chars[j];
                    check_layer_char(c).map_err(|m| error(at, m))?;
                    if j + 1 < close && chars[j + 1].0 == '*' {
                        let (n, after) = count_at(j + 1)?;
                        if after > close {
                            return Err(error(at, "repeat count runs past ')'".into()));
                        }
                        push(&mut body, &[c], n, at)?;
                        j = after;
                    } else {
                        body.push(c);
                        j += 1;
                    }
                }
                push(&mut expanded, &body, count, position)?;
                i = next;
            }
            ')' => return Err(error(position, "')' without '('".into())),
            '*' => return Err(error(position, "'*' without a layer before it".into())),
            c => {
                check_layer_char(c).map_err(|m| error(position, m))?;
                if i + 1 < chars.len() && chars[i + 1].0 == '*' {
                    let (count, next) = count_at(i + 1)?;
                    push(&mut expanded, &[c], count, position)?;
                    i = next;
                } else {
                    expanded.push(c);
                    i += 1;
                }
            }
        }
        if i < chars.len() && chars[i].0 == '*' {
            return Err(error(
                chars[i].1,
                "a repeat count cannot itself be repeated".into(),
            ));
        }
    }
    let first = expanded.iter().copied().find(|&c| c != '|');
    let last = expanded.iter().copied().rev().find(|&c| c != '|');
    let mut stages = vec![StageContent::default()];
    for c in expanded {
        let stage = stages.last_mut().expect("one stage at least");
        match c {
            '|' => stages.push(StageContent::default()),
            'E' => stage.embeddings += 1,
            'L' => stage.losses += 1,
            't' => stage.transformer_layers += 1,
            'm' => stage.mtp_layers += 1,
            _ => unreachable!("checked"),
        }
    }
    Ok(ParsedLayout {
        stages,
        first,
        last,
    })
}

fn check_layer_char(c: char) -> Result<(), String> {
    match c {
        'E' | 'L' | 't' | 'm' | '|' => Ok(()),
        other => Err(format!(
            "unknown layer character '{other}' (known: E embedding, t transformer layer, L loss, m MTP layer, | stage separator)"
        )),
    }
}

/// A parsed layout's transformer layers per virtual stage, interned: a
/// `Copy` handle (so [`crate::sharding::Sharding`] stays `Copy`) to the list,
/// stored once per distinct layout string for the life of the process.
#[derive(Clone, Copy)]
pub struct StageLayers {
    source: &'static str,
    layers: &'static [u32],
}

/// Interned layouts by source string (a `BTreeMap`, so nothing depends on
/// hash order); each distinct string is stored once.
static INTERNED: Mutex<BTreeMap<String, StageLayers>> = Mutex::new(BTreeMap::new());

impl StageLayers {
    /// The interned handle of `source` with these per-stage layers.
    pub fn intern(source: &str, layers: &[u32]) -> StageLayers {
        let mut table = INTERNED
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(found) = table.get(source) {
            if found.layers == layers {
                return *found;
            }
        }
        let handle = StageLayers {
            source: Box::leak(source.to_string().into_boxed_str()),
            layers: Box::leak(layers.to_vec().into_boxed_slice()),
        };
        table.insert(source.to_string(), handle);
        handle
    }

    /// The layout string as written.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// Transformer layers of each virtual stage, in order.
    pub fn layers(&self) -> &'static [u32] {
        self.layers
    }
}

impl std::fmt::Debug for StageLayers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {:?}", self.source, self.layers)
    }
}

impl PartialEq for StageLayers {
    fn eq(&self, other: &StageLayers) -> bool {
        self.source == other.source && self.layers == other.layers
    }
}

impl Eq for StageLayers {}

impl Serialize for StageLayers {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(text: &str) -> Vec<(u32, u32, u32)> {
        parse(text)
            .unwrap()
            .stages
            .iter()
            .map(|s| (s.embeddings, s.transformer_layers, s.losses))
            .collect()
    }

    #[test]
    fn megatron_cores_examples_parse_as_its_parser_reads_them() {
        // parse_str_to_list's docstring: "Ettt|(tt|)*29,m|L" → [E t t t] + [t t]*29 + [m] + [L].
        let parsed = parse("Ettt|(tt|)*29,m|L").unwrap();
        assert_eq!((parsed.first, parsed.last), (Some('E'), Some('L')));
        let stages = parsed.stages;
        assert_eq!(stages.len(), 32);
        assert_eq!((stages[0].embeddings, stages[0].transformer_layers), (1, 3));
        assert!(stages[1..30].iter().all(|s| s.transformer_layers == 2));
        assert_eq!(stages[30].mtp_layers, 1);
        assert_eq!((stages[31].losses, stages[31].transformer_layers), (1, 0));
        // The regex comments: "(ab)*3 -> ababab", "ab,(cd|)*2 -> abcd|cd|", "(|ab)*2,cd -> |ab|abcd".
        assert_eq!(counts("(tE)*3"), vec![(3, 3, 0)]);
        assert_eq!(counts("tt,(tt|)*2"), vec![(0, 4, 0), (0, 2, 0), (0, 0, 0)]);
        assert_eq!(counts("(|tt)*2,tL"), vec![(0, 0, 0), (0, 2, 0), (0, 3, 1)]);
        assert_eq!(counts("t*3|E,t*12"), vec![(0, 3, 0), (1, 12, 0)]);
        assert_eq!(counts("(t*2|)*2L"), vec![(0, 2, 0), (0, 2, 0), (0, 0, 1)]);
    }

    #[test]
    fn llama_405b_on_16_stages_with_lighter_ends() {
        let stages = parse("Et*7|(t*8|)*14,t*7L").unwrap().stages;
        assert_eq!(stages.len(), 16);
        let layers: Vec<u32> = stages.iter().map(|s| s.transformer_layers).collect();
        assert_eq!(layers[0], 7);
        assert_eq!(layers[15], 7);
        assert!(layers[1..15].iter().all(|&n| n == 8));
        assert_eq!(layers.iter().sum::<u32>(), 126);
        assert_eq!((stages[0].embeddings, stages[15].losses), (1, 1));
    }

    #[test]
    fn parse_errors_name_their_position() {
        for (text, position, words) in [
            ("Et*7|tx|L", 6, "unknown layer character 'x'"),
            ("Et*|L", 2, "followed by a repeat count"),
            ("E(t(t)*2)*3", 3, "groups do not nest"),
            ("E(tt|", 1, "never closed"),
            ("Ett)|L", 3, "')' without '('"),
            ("E(tt|)L", 5, "a group must be followed by '*'"),
            ("*3t", 0, "'*' without a layer"),
            ("E()*2", 1, "empty group"),
            ("Et*2*3", 4, "cannot itself be repeated"),
            ("E((t)*2)*3", 2, "groups do not nest"),
            ("Et*99999999999999999999999", 3, "too large"),
            ("E(t*1000|)*100000L", 1, "expands to more than"),
            ("E,t,x", 4, "unknown layer character 'x'"),
        ] {
            let error = parse(text).unwrap_err();
            assert_eq!(error.position, position, "{text}: {error}");
            assert!(error.to_string().contains(words), "{text}: {error}");
            assert!(error.to_string().contains(&format!("position {position}")));
        }
    }

    #[test]
    fn interning_keeps_one_copy_per_string() {
        let a = StageLayers::intern("Et|tL", &[1, 1]);
        let b = StageLayers::intern("Et|tL", &[1, 1]);
        assert!(std::ptr::eq(a.layers(), b.layers()));
        assert_eq!(a, b);
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"Et|tL\"");
    }
}
