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

/// Clap's parser of an image path (`--plot FILE`, `plot bubble --out FILE`):
/// an extension other than `.svg` or `.png` is refused while the flags are
/// read (exit 2), before any simulation runs and before any other output is
/// written.
pub fn image_path(value: &str) -> Result<std::path::PathBuf, String> {
    let path = output_path(value)?;
    reports::check_image_path(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Clap's parser of an output file (`--timeline`, `--trace`, `--json`,
/// `--csv`, `--out`): a folder, or a name in a folder that does not exist, is
/// refused while the flags are read (exit 2), before any work is done and
/// before any other output is written. `-` (standard output, where a flag
/// takes it) passes.
pub fn output_path(value: &str) -> Result<std::path::PathBuf, String> {
    let path = std::path::PathBuf::from(value);
    if value != "-" {
        output_file::check_destination(&path)?;
    }
    Ok(path)
}
