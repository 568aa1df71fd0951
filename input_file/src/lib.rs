//! # input_file — every input file is read through here, with a size cap
//!
//! Models, topologies, profiles, scenarios, stacks, dev sets and CSVs and
//! sweep shards are small JSON or CSV documents: they are read whole, up to
//! [`MAX_INPUT_BYTES`] (256 MiB). Timelines are streamed and may be far
//! bigger (`simulate --model gpt-1t --tp 8 --pp 64 --dp 6 --global-batch 3072
//! --recompute full --timeline` writes 1,343,652,322 bytes): they are read up to
//! [`MAX_TIMELINE_BYTES`] (4 GiB). A larger file, or one that never ends
//! (`/dev/zero`, a pipe), is refused with an error naming the file and the
//! cap, after reading at most cap + 1 bytes, so nothing is ever allocated
//! beyond the cap. Depends on nothing, so every crate can use it.
//!
//! ```
//! let path = std::env::temp_dir().join(format!("input-file-doc-{}.json", std::process::id()));
//! std::fs::write(&path, "{}").unwrap();
//! assert_eq!(input_file::read_to_string(&path).unwrap(), "{}");
//! # std::fs::remove_file(&path).unwrap();
//! ```

pub mod named;
use std::io::{BufReader, ErrorKind, Read};
use std::path::Path;

/// Largest model, topology, profile, scenario, stack, dev set, CSV or sweep
/// shard file read: 256 MiB.
pub const MAX_INPUT_BYTES: u64 = 256 << 20;

/// Largest timeline file read: 4 GiB (three times the 1.34 GB of a 3072-GPU
/// GPT-1T iteration, 7.3 M tasks).
pub const MAX_TIMELINE_BYTES: u64 = 4 << 30;

/// A byte count as the caps are documented: "256 MiB", "16 GiB".
fn describe(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// The error for a file over `cap` (kind [`ErrorKind::FileTooLarge`]).
fn too_large(cap: u64) -> std::io::Error {
    std::io::Error::new(
        ErrorKind::FileTooLarge,
        format!(
            "the file is larger than {}, the limit on input files of this kind (or it never ends)",
            describe(cap)
        ),
    )
}

/// Reads a whole UTF-8 file of at most [`MAX_INPUT_BYTES`].
pub fn read_to_string(path: &Path) -> std::io::Result<String> {
    read_to_string_capped(path, MAX_INPUT_BYTES)
}

/// Reads a whole UTF-8 file of at most `cap` bytes (refused beyond, without
/// reading more than `cap` + 1 bytes).
pub fn read_to_string_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    let mut reader = open_capped(path, cap)?;
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes)?;
    String::from_utf8(bytes)
        .map_err(|_| std::io::Error::new(ErrorKind::InvalidData, "the file is not UTF-8 text"))
}

/// Opens a file for streaming: a regular file over `cap` is refused at once;
/// anything else fails with [`ErrorKind::FileTooLarge`] when its reader is
/// asked for byte `cap` + 1.
pub fn open_capped(path: &Path, cap: u64) -> std::io::Result<Capped<BufReader<std::fs::File>>> {
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    if metadata.is_file() && metadata.len() > cap {
        return Err(too_large(cap));
    }
    if metadata.is_dir() {
        return Err(std::io::Error::new(
            ErrorKind::IsADirectory,
            "it is a directory",
        ));
    }
    Ok(Capped {
        inner: BufReader::new(file),
        left: cap,
        cap,
        exceeded: false,
    })
}

/// A reader that fails once more than its cap was asked of it.
#[derive(Debug)]
pub struct Capped<R> {
    inner: R,
    left: u64,
    cap: u64,
    exceeded: bool,
}

impl<R> Capped<R> {
    /// Whether the source held more than the cap (the reader then failed).
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// The error a read past the cap returned.
    pub fn too_large_error(&self) -> std::io::Error {
        too_large(self.cap)
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => {
                    self.exceeded = true;
                    Err(too_large(self.cap))
                }
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let got = self.inner.read(&mut buf[..want])?;
        self.left -= got as u64;
        Ok(got)
    }
}

impl<R: std::io::BufRead> std::io::BufRead for Capped<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.left == 0 {
            if self.inner.fill_buf()?.is_empty() {
                return Ok(&[]);
            }
            self.exceeded = true;
            return Err(too_large(self.cap));
        }
        let left = usize::try_from(self.left).unwrap_or(usize::MAX);
        let buf = self.inner.fill_buf()?;
        let n = buf.len().min(left);
        Ok(&buf[..n])
    }

    fn consume(&mut self, amount: usize) {
        let amount = amount.min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.left -= amount as u64;
        self.inner.consume(amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufRead;

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("input-file-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_file_at_the_cap_is_read_and_one_over_it_is_refused() {
        let path = temp("cap", b"12345678");
        assert_eq!(read_to_string_capped(&path, 8).unwrap(), "12345678");
        let error = read_to_string_capped(&path, 7).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge);
        assert!(error.to_string().contains("larger than 7 bytes"), "{error}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn an_endless_file_is_refused_after_the_cap() {
        let error = read_to_string_capped(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge);
        assert!(error.to_string().contains("1 MiB"), "{error}");
        let mut reader = open_capped(Path::new("/dev/zero"), 1 << 20).unwrap();
        let mut line = Vec::new();
        let error = reader.read_until(b'\n', &mut line).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge);
        assert!(reader.exceeded());
        assert_eq!(line.len(), 1 << 20);
    }

    #[test]
    fn caps_are_described_in_their_units() {
        assert_eq!(describe(MAX_INPUT_BYTES), "256 MiB");
        assert_eq!(describe(MAX_TIMELINE_BYTES), "4 GiB");
    }
}
