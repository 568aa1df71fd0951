//! All of a command's output files, committed together: while a [`Batch`]
//! is open, [`crate::write_via_path`] writes each file to its temporary file
//! and leaves it there; [`Batch::commit`] renames every one over its target,
//! and a batch dropped without a commit (the command failed) removes them,
//! so a run that fails changes no file.
//!
//! One batch at a time per process (a command's outputs); the open batch is
//! process-wide so that every writer — the CLI's, the charts' — joins it
//! without being handed it.

use std::path::PathBuf;
use std::sync::Mutex;

/// Written temporaries waiting for their rename: (temporary, target).
static OPEN: Mutex<Option<Vec<(PathBuf, PathBuf)>>> = Mutex::new(None);

fn open() -> std::sync::MutexGuard<'static, Option<Vec<(PathBuf, PathBuf)>>> {
    // A panic while holding the lock leaves plain data behind; keep using it.
    OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The guard of an open batch (see the module header).
#[must_use = "a batch dropped without commit() removes its files"]
pub struct Batch {
    _private: (),
}

impl Batch {
    /// Opens the process's batch. Panics if one is already open: a command
    /// opens one, once (a programming error, not an input's).
    pub fn begin() -> Batch {
        let mut open = open();
        assert!(open.is_none(), "an output batch is already open");
        *open = Some(Vec::new());
        Batch { _private: () }
    }

    /// Renames every written temporary over its target, in the order they
    /// were written. The first rename that fails stops it; the temporaries
    /// not yet renamed are removed.
    pub fn commit(self) -> std::io::Result<()> {
        let pending = open().take().unwrap_or_default();
        let mut result = Ok(());
        for (temporary, target) in pending {
            if result.is_ok() {
                result = std::fs::rename(&temporary, &target).map_err(|error| {
                    std::io::Error::new(
                        error.kind(),
                        format!("cannot write {}: {error}", target.display()),
                    )
                });
            }
            if result.is_err() {
                let _ = std::fs::remove_file(&temporary);
            }
        }
        result
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        for (temporary, _) in open().take().unwrap_or_default() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

/// Keeps `temporary` for the open batch's commit; gives it back when no
/// batch is open (the caller renames it at once).
pub(crate) fn defer(temporary: PathBuf, target: PathBuf) -> Option<(PathBuf, PathBuf)> {
    match open().as_mut() {
        Some(pending) => {
            // The same target written again: its one temporary holds the last write.
            pending.retain(|(_, waiting)| *waiting != target);
            pending.push((temporary, target));
            None
        }
        None => Some((temporary, target)),
    }
}
