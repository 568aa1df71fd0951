//! `clustersim`: simulate GPU clusters training large transformers before
//! buying time on them. This binary only restores SIGPIPE and runs the
//! command line the library (`lib.rs`) parses; every subcommand lives in
//! `commands/`.
#![allow(unsafe_code)] // restores a signal's default disposition

use std::process::ExitCode;

fn main() -> ExitCode {
    // Like every Unix tool, end quietly when the reader of stdout goes away
    // (`clustersim compare a b | head`) instead of panicking on the write.
    // SAFETY: restores the default disposition of one signal before any
    // thread exists; no handler runs Rust code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    clustersim_cli::report(clustersim_cli::run_in_process(
        std::env::args_os(),
        clustersim_cli::Host::OwnProcess,
    ))
}
