//! What the binary's integration tests share: running `clustersim`, reading
//! its output, and the path of a committed input file.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the built binary with `args`.
pub fn clustersim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_clustersim"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// Bytes of stdout or stderr as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The run's stderr as text.
pub fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

/// `cli/tests/FOLDER/NAME` as a path argument.
pub fn input(folder: &str, name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(folder)
        .join(name)
        .display()
        .to_string()
}
