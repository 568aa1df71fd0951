//! Temporary files left by processes that died mid-write
//! (`.STEM.tmp-PID.EXT` beside a target, see [`crate::write_via_path`]):
//! removed when the same target is written again, so they never pile up or
//! pass for outputs. A process counts as dead when `/proc` is mounted and has
//! no entry for its id (Linux); elsewhere nothing is removed.

use std::path::Path;

/// Removes the temporaries of `target` whose writer is dead.
pub(crate) fn remove_dead_temporaries(target: &Path, prefix: &str, extension: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let folder = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(prefix))
            .and_then(|rest| rest.strip_suffix(extension))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if !alive && entry.file_type().is_ok_and(|kind| kind.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
