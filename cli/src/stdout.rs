//! Standard output, written only through here: a write that fails (a full
//! disk, `> /dev/full`, an I/O error) is a user error (exit 2) with one
//! message naming standard output, e.g. `error: cannot write to standard
//! output: No space left on device (os error 28)` — never a panic (as
//! `println!` gives) nor a silently lost tail (each write is flushed at once,
//! so nothing is left for the flush at exit, which ignores errors).
//!
//! [`outln!`] and [`out!`] replace `println!` and `print!` byte for byte;
//! [`write_all`] writes text built in memory; [`error`] names standard output
//! in an error from a writer over it.
//!
//! A reader that goes away (`clustersim … | head`) is not seen here: `main`
//! restores SIGPIPE's default action, so the next write ends the program by
//! that signal, quietly, as any Unix tool does (status 141 in a shell), in
//! every subcommand alike. Only where SIGPIPE is blocked does the write fail
//! (EPIPE) and end here like any other failed write: exit 2,
//! `error: cannot write to standard output: Broken pipe (os error 32)`.

use crate::exit::user_error;
use std::io::Write;

/// The exit-2 error of a failed write to standard output.
pub fn error(e: std::io::Error) -> anyhow::Error {
    user_error(format!("cannot write to standard output: {e}"))
}

/// Writes `bytes` to standard output and flushes them.
pub fn write_all(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(error)
}

/// Formats `args` onto standard output and flushes them (what [`out!`] and
/// [`outln!`] expand to).
pub fn write_fmt(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.flush())
        .map_err(error)
}

/// `print!` that returns the exit-2 error instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write_fmt(format_args!($($arg)*))
    };
}

/// `println!` that returns the exit-2 error instead of panicking.
macro_rules! outln {
    () => {
        $crate::stdout::write_fmt(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::stdout::write_fmt(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};
