//! The lines of a trace file (`--routing-trace`, `--seq-len-trace`): one
//! entry per line, empty lines and lines starting with `#` skipped.

/// Each entry of `text` with its 1-based line number, trimmed.
pub(crate) fn entries(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
}
