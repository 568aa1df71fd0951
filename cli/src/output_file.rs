//! The CLI's output files, written whole or not at all through the
//! `output_file` crate; any failure is a user error (exit 2) naming the file.

use crate::exit::user_error;
use std::io::BufWriter;
use std::path::Path;

/// Writes `path` with `write`; errors name the file and exit 2.
pub fn write_output<F>(path: &Path, write: F) -> anyhow::Result<()>
where
    F: FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
{
    output_file::write_with(path, write)
        .map_err(|e| user_error(format!("cannot write {}: {e}", path.display())))
}
