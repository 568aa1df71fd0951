//! What to say when a name the user gave (a model, topology, profile or
//! stack) is neither a built-in nor a file: that the file is missing when it
//! reads like a path, else the nearest built-in name when one is close (a
//! typo), else every built-in name.

/// The message for `name`, given as a `kind` ("model", "topology", …) that
/// is no built-in of `builtins` and no file.
pub fn unknown<S: AsRef<str>>(kind: &str, name: &str, builtins: &[S]) -> String {
    if looks_like_path(name) {
        return format!("{kind} file {name} does not exist");
    }
    match did_you_mean(name, builtins) {
        Some(suggestion) => format!(
            "unknown {kind} '{name}': {suggestion} (`clustersim presets` lists every {kind})"
        ),
        None => format!(
            "unknown {kind} '{name}': not a preset ({}) and no such file",
            builtins
                .iter()
                .map(AsRef::as_ref)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Whether `name` reads like a file path: a folder separator or a `.json`
/// ending (no built-in name has either).
pub fn looks_like_path(name: &str) -> bool {
    name.contains('/') || name.contains('\\') || name.to_ascii_lowercase().ends_with(".json")
}

/// The built-ins a mistyped `name` most likely meant, ignoring case: those
/// that begin with it (`megatron-core` for `megatron-core-2024`; `h100` for
/// both H100 profiles), else the one nearest within an edit distance of a
/// third of the name's length (at least 1, at most 3), else none.
pub fn nearest<'a, S: AsRef<str>>(name: &str, builtins: &'a [S]) -> Vec<&'a str> {
    let lower = name.to_ascii_lowercase();
    if lower.is_empty() {
        return Vec::new();
    }
    let starting: Vec<&str> = builtins
        .iter()
        .map(AsRef::as_ref)
        .filter(|candidate| candidate.to_ascii_lowercase().starts_with(&lower))
        .collect();
    if !starting.is_empty() {
        return starting;
    }
    let limit = (lower.chars().count() / 3).clamp(1, 3);
    builtins
        .iter()
        .map(|candidate| {
            let candidate = candidate.as_ref();
            let distance = strsim::levenshtein(&lower, &candidate.to_ascii_lowercase());
            (distance, candidate)
        })
        .filter(|&(distance, _)| distance <= limit)
        .min()
        .map(|(_, candidate)| candidate)
        .into_iter()
        .collect()
}

/// "did you mean 'a'?", "did you mean 'a' or 'b'?", or `None`.
pub fn did_you_mean<S: AsRef<str>>(name: &str, builtins: &[S]) -> Option<String> {
    let near = nearest(name, builtins);
    let quoted: Vec<String> = near.iter().map(|n| format!("'{n}'")).collect();
    match quoted.as_slice() {
        [] => None,
        [one] => Some(format!("did you mean {one}?")),
        [rest @ .., last] => Some(format!("did you mean {} or {last}?", rest.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODELS: [&str; 4] = ["llama3-8b", "llama3-70b", "gpt3-175b", "mixtral-8x7b"];

    #[test]
    fn a_typo_gets_the_nearest_name_a_path_says_it_is_missing() {
        assert_eq!(nearest("llama3-70", &MODELS), ["llama3-70b"]);
        assert_eq!(nearest("LLAMA3-70B", &MODELS), ["llama3-70b"]);
        assert_eq!(nearest("lama3-70b", &MODELS), ["llama3-70b"]);
        assert!(nearest("gpt-4", &MODELS).is_empty());
        assert_eq!(nearest("mixtral", &MODELS), ["mixtral-8x7b"]);
        assert_eq!(
            did_you_mean("llama3", &MODELS).unwrap(),
            "did you mean 'llama3-8b' or 'llama3-70b'?"
        );
        assert!(unknown("model", "llama3-70", &MODELS).contains("did you mean 'llama3-70b'?"));
        assert_eq!(
            unknown("model", "./nomodel.json", &MODELS),
            "model file ./nomodel.json does not exist"
        );
        assert!(unknown("model", "gpt-4", &MODELS).contains("not a preset (llama3-8b,"));
    }
}
