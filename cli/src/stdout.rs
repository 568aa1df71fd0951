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
//! A library caller (the Python package) runs a command inside [`capture`]:
//! what it writes is kept in memory and handed back instead.
//!
//! A reader that goes away (`clustersim … | head`) is not seen here: `main`
//! restores SIGPIPE's default action, so the next write ends the program by
//! that signal, quietly, as any Unix tool does (status 141 in a shell), in
//! every subcommand alike. Only where SIGPIPE is blocked does the write fail
//! (EPIPE) and end here like any other failed write: exit 2,
//! `error: cannot write to standard output: Broken pipe (os error 32)`.

use crate::exit::user_error;
use std::io::Write;
use std::sync::Mutex;

/// Standard output kept in memory while [`capture`] runs (one command at a
/// time: `run_captured` holds the process's command lock).
static CAPTURED: Mutex<Option<Vec<u8>>> = Mutex::new(None);

fn captured() -> std::sync::MutexGuard<'static, Option<Vec<u8>>> {
    // A panic while holding the lock leaves plain bytes behind; keep them.
    CAPTURED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `command` with every write to standard output kept in memory, and
/// returns its result and those bytes.
pub fn capture<T>(command: impl FnOnce() -> T) -> (T, Vec<u8>) {
    *captured() = Some(Vec::new());
    /// Ends the capture even when `command` panics.
    struct EndCapture;
    impl Drop for EndCapture {
        fn drop(&mut self) {
            captured().take();
        }
    }
    let end = EndCapture;
    let result = command();
    let bytes = captured().take().unwrap_or_default();
    drop(end);
    (result, bytes)
}

/// The exit-2 error of a failed write to standard output.
pub fn error(e: std::io::Error) -> anyhow::Error {
    user_error(format!("cannot write to standard output: {e}"))
}

/// Writes `bytes` to standard output and flushes them.
pub fn write_all(bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(kept) = captured().as_mut() {
        kept.extend_from_slice(bytes);
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(error)
}

/// Formats `args` onto standard output and flushes them (what [`out!`] and
/// [`outln!`] expand to).
pub fn write_fmt(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    if let Some(kept) = captured().as_mut() {
        return kept.write_fmt(args).map_err(error);
    }
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
