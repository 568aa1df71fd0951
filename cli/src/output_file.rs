//! Writing an output file so that it is never half-written: a regular file
//! is written to a temporary file in the same folder, flushed and renamed
//! over the target only when everything succeeded (removed otherwise);
//! a device or pipe (`/dev/stdout`, a FIFO, a symlink to one) is written in
//! place. Every write and flush error is reported, naming the file.

use crate::exit::user_error;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes `path` with `write`; errors name the file and are user errors (exit 2).
pub fn write_output<F>(path: &Path, write: F) -> anyhow::Result<()>
where
    F: FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
{
    let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
    let target = if special {
        path.to_path_buf()
    } else {
        temporary_beside(path)
    };
    let result = (|| {
        let file = std::fs::File::create(&target)?;
        let mut writer = BufWriter::new(file);
        write(&mut writer)?;
        writer.flush()?;
        let file = writer.into_inner().map_err(|e| e.into_error())?;
        if !special {
            file.sync_all()?;
        }
        Ok::<(), std::io::Error>(())
    })();
    match result {
        Ok(()) if special => Ok(()),
        Ok(()) => std::fs::rename(&target, path).map_err(|e| {
            let _ = std::fs::remove_file(&target);
            user_error(format!("cannot write {}: {e}", path.display()))
        }),
        Err(e) => {
            if !special {
                let _ = std::fs::remove_file(&target);
            }
            Err(user_error(format!("cannot write {}: {e}", path.display())))
        }
    }
}

/// `.NAME.tmp-PID` in the folder of `path`.
fn temporary_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_neither_the_target_nor_the_temporary_file() {
        let dir = std::env::temp_dir().join(format!("clustersim-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        let error = write_output(&path, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("disk on fire"))
        })
        .unwrap_err();
        assert!(error.to_string().contains("disk on fire"), "{error}");
        assert!(!path.exists());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        write_output(&path, |w| w.write_all(b"whole")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"whole");
    }

    #[test]
    fn a_full_device_is_an_error_not_a_silent_success() {
        let full = Path::new("/dev/full");
        if !full.exists() {
            eprintln!("skipping: no /dev/full on this machine");
            return;
        }
        let error = write_output(full, |w| w.write_all(&[0u8; 1 << 16])).unwrap_err();
        assert!(
            error.to_string().contains("cannot write /dev/full"),
            "{error}"
        );
    }
}
