//! # output_file — every output file is written whole or not at all
//!
//! A regular file is written to a temporary file in the same folder
//! (`.STEM.tmp-PID.EXT`, keeping the extension so encoders that pick a format
//! by it still do), and renamed over the target only when everything
//! succeeded; on failure the temporary file is removed and the target is left
//! as it was. A symbolic link is written through to the file it names (as
//! `cp` and editors do), beside that file; the link stays. A device or pipe
//! (`/dev/stdout`, a FIFO, a symlink to one) is written in place. While a
//! [`Batch`] is open, every file waits for the batch's commit, so a command
//! that fails changes none of its outputs ([`batch`]). Temporaries of dead
//! writers are removed ([`stale`]). Depends on nothing, so every crate that
//! writes a user's file can use it.
//!
//! ```
//! let path = std::env::temp_dir().join(format!("output-file-doc-{}.txt", std::process::id()));
//! output_file::write_with(&path, |w| std::io::Write::write_all(w, b"whole")).unwrap();
//! assert_eq!(std::fs::read(&path).unwrap(), b"whole");
//! # std::fs::remove_file(&path).unwrap();
//! ```

pub mod batch;
mod stale;

pub use batch::Batch;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The most symbolic links followed from one output path (Linux's own limit).
const MAX_LINKS_FOLLOWED: u32 = 40;

/// The file `path` names once its symbolic links are followed (a link to a
/// file that does not exist yet names that file; a loop stops after
/// [`MAX_LINKS_FOLLOWED`] links, and writing it then fails with the system's
/// error).
pub fn destination_of(path: &Path) -> PathBuf {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS_FOLLOWED {
        let is_link = std::fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            break;
        }
        let Ok(target) = std::fs::read_link(&current) else {
            break;
        };
        current = match current.parent() {
            Some(folder) if target.is_relative() => folder.join(target),
            _ => target,
        };
    }
    current
}

/// Whether `path` can be a destination, checked before any work is done: an
/// existing file, device or pipe, or a new name in an existing folder. A
/// folder, or a name in a folder that does not exist, is refused with the
/// reason (writing can still fail later, e.g. on permissions or a full disk).
/// A regular file (or a new name) must also be in a folder this process can
/// create files in, where its temporary file goes: checked by creating and
/// removing that temporary file.
pub fn check_destination(path: &Path) -> Result<(), String> {
    let target = destination_of(path);
    if let Ok(metadata) = std::fs::metadata(&target) {
        if metadata.is_dir() {
            return Err(format!("{} is a folder, not a file", path.display()));
        }
        if !metadata.is_file() {
            return Ok(());
        }
    }
    let folder = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if !std::fs::metadata(folder).is_ok_and(|m| m.is_dir()) {
        return Err(format!(
            "cannot write {}: folder {} does not exist",
            path.display(),
            folder.display()
        ));
    }
    let probe = temporary_beside(&target);
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(format!(
            "cannot write {}: cannot create a file in {}: {error}",
            path.display(),
            folder.display()
        )),
    }
}

/// Writes `path` whole or not at all: `write` is given the path to write to
/// (a temporary file beside `path`, or `path` itself for a device or pipe).
/// `io_error` turns the rename's I/O error into the caller's error type.
pub fn write_via_path<T, E>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<T, E>,
    io_error: impl FnOnce(std::io::Error) -> E,
) -> Result<T, E> {
    let target = destination_of(path);
    let special = std::fs::metadata(&target).is_ok_and(|m| !m.is_file());
    if special {
        return write(&target);
    }
    let temporary = temporary_beside(&target);
    let (prefix, extension) = temporary_name_parts(&target);
    stale::remove_dead_temporaries(&target, &prefix, &extension);
    let result = write(&temporary).and_then(|value| {
        if let Some((temporary, target)) = batch::defer(temporary.clone(), target) {
            std::fs::rename(&temporary, &target).map_err(io_error)?;
        }
        Ok(value)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// [`write_via_path`] through a buffered writer, flushed and synced before
/// the rename; every write, flush and sync error is returned.
pub fn write_with<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<T>,
) -> std::io::Result<T> {
    write_via_path(
        path,
        |target| {
            let mut writer = BufWriter::new(File::create(target)?);
            let value = write(&mut writer)?;
            writer.flush()?;
            let file = writer.into_inner().map_err(|e| e.into_error())?;
            if file.metadata()?.is_file() {
                file.sync_all()?;
            }
            Ok(value)
        },
        |error| error,
    )
}

/// `.STEM.tmp-PID.EXT` in the folder of `path`.
fn temporary_beside(path: &Path) -> PathBuf {
    let (prefix, extension) = temporary_name_parts(path);
    path.with_file_name(format!("{prefix}{}{extension}", std::process::id()))
}

/// What comes before and after the PID in `path`'s temporary file name:
/// (`.STEM.tmp-`, `.EXT` or empty).
fn temporary_name_parts(path: &Path) -> (String, String) {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    (format!(".{stem}.tmp-"), extension)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_neither_the_target_nor_the_temporary_file() {
        let dir = std::env::temp_dir().join(format!("output-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        let error = write_with(&path, |w| {
            w.write_all(b"partial")?;
            Err::<(), _>(std::io::Error::other("disk on fire"))
        })
        .unwrap_err();
        assert!(error.to_string().contains("disk on fire"), "{error}");
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        write_with(&path, |w| w.write_all(b"whole")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
    }

    #[test]
    fn a_full_device_is_an_error_not_a_silent_success() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            eprintln!("skipping: no /dev/full on this machine");
            return;
        }
        let error = write_with(full, |w| w.write_all(&[0u8; 1 << 16])).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::StorageFull, "{error}");
    }

    #[test]
    fn the_temporary_file_keeps_the_extension() {
        let name = temporary_beside(Path::new("/x/plot.png"));
        assert!(
            name.to_string_lossy().ends_with(".png"),
            "{}",
            name.display()
        );
        assert!(name.starts_with("/x"));
    }
}
