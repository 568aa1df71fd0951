//! What the binary's integration tests share: finding and running
//! `clustersim`, finding the repository, reading output, and the path of a
//! committed input file.
//!
//! Test binaries may run where they were not built (the lab GPU machine gets
//! stripped copies of the test executables and `clustersim` in one folder,
//! with the repository but no `target/`), so neither the binary nor the
//! repository is taken from a path baked in at build time unless nothing
//! else is found: see [`clustersim_binary`] and [`repository_root`].

#![allow(dead_code)] // each test binary uses its own subset

pub mod schema;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `clustersim` binary to test: `CLUSTERSIM_BIN` when set, else a
/// `clustersim` beside the running test executable or in its parent folder
/// (cargo puts tests in `target/<profile>/deps/` and the binary in
/// `target/<profile>/`; a carried copy sits beside the tests), else the one
/// cargo built (`CARGO_BIN_EXE_clustersim`).
pub fn clustersim_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("CLUSTERSIM_BIN") {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "CLUSTERSIM_BIN={} is not a file",
            path.display()
        );
        return path;
    }
    let name = format!("clustersim{}", std::env::consts::EXE_SUFFIX);
    if let Some(found) = std::env::current_exe()
        .ok()
        .and_then(|exe| beside(&exe, &name))
    {
        return found;
    }
    PathBuf::from(env!("CARGO_BIN_EXE_clustersim"))
}

/// `name` in the folder of `executable` or in that folder's parent.
pub fn beside(executable: &Path, name: &str) -> Option<PathBuf> {
    let folder = executable.parent()?;
    [Some(folder), folder.parent()]
        .into_iter()
        .flatten()
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The repository root (where `examples/` is): `CLUSTERSIM_REPO` when set,
/// else the current directory when it holds `examples/`, else the source
/// tree the tests were built from.
pub fn repository_root() -> PathBuf {
    if let Some(root) = std::env::var_os("CLUSTERSIM_REPO") {
        let root = PathBuf::from(root);
        assert!(
            root.join("examples").is_dir(),
            "CLUSTERSIM_REPO={} holds no examples/",
            root.display()
        );
        return root;
    }
    if let Ok(current) = std::env::current_dir() {
        if current.join("examples").is_dir() {
            return current;
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ is inside the workspace")
        .to_path_buf()
}

/// `simulate` of Mixtral 8x7B on 64 H100s at t1 p4 d16, 4,096-token
/// sequences, batch 64, bf16: the MoE tests' layout, each adding its `--ep`.
pub const MIXTRAL_T1_P4_D16: [&str; 17] = [
    "simulate",
    "--model",
    "mixtral-8x7b",
    "--topology",
    "dgx-h100-superpod",
    "--seq-len",
    "4096",
    "--tp",
    "1",
    "--pp",
    "4",
    "--dp",
    "16",
    "--global-batch",
    "64",
    "--precision",
    "bf16",
];

/// Runs the binary ([`clustersim_binary`]) with `args`.
pub fn clustersim(args: &[&str]) -> Output {
    let binary = clustersim_binary();
    Command::new(&binary)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("running {}: {error}", binary.display()))
}

/// Bytes of stdout or stderr as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The run's stderr as text.
pub fn stderr(output: &Output) -> String {
    text(&output.stderr)
}

/// Runs the binary with `args` (one shell word list) under a 4 GB
/// address-space cap (`ulimit -v 4000000`), as the fuzzers run it.
pub fn clustersim_under_4gb(args: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 4000000 && exec {} {args}",
            clustersim_binary().display()
        ))
        .output()
        .expect("sh runs")
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
