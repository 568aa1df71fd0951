//! Output files through symbolic links, in a batch, and beside the
//! temporaries of dead writers. The batch is process-wide, so these tests
//! take turns (`SERIAL`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("output-file-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    output_file::write_with(path, |w| std::io::Write::write_all(w, bytes))
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_is_written_through_to_its_target_and_stays_a_link() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = folder("links");
    std::fs::create_dir(dir.join("real")).unwrap();
    std::os::unix::fs::symlink("real/target.json", dir.join("link.json")).unwrap();
    output_file::check_destination(&dir.join("link.json")).unwrap();
    // A dangling link names the file to create; a second write replaces it.
    write(&dir.join("link.json"), b"first").unwrap();
    write(&dir.join("link.json"), b"second").unwrap();
    assert_eq!(
        std::fs::read(dir.join("real/target.json")).unwrap(),
        b"second"
    );
    let link = std::fs::symlink_metadata(dir.join("link.json")).unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(std::fs::read_dir(dir.join("real")).unwrap().count(), 1);
}

#[test]
fn a_batch_commits_every_file_together_or_none() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = folder("batch");
    let (a, b) = (dir.join("a.json"), dir.join("b.csv"));
    write(&a, b"old a").unwrap();
    {
        let _batch = output_file::Batch::begin();
        write(&a, b"new a").unwrap();
        write(&b, b"new b").unwrap();
        assert_eq!(
            std::fs::read(&a).unwrap(),
            b"old a",
            "not before the commit"
        );
        // Dropped without a commit: the command failed.
    }
    assert_eq!(std::fs::read(&a).unwrap(), b"old a");
    assert!(!b.exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "no temporary left"
    );
    let batch = output_file::Batch::begin();
    write(&a, b"new a").unwrap();
    write(&b, b"new b").unwrap();
    batch.commit().unwrap();
    assert_eq!(std::fs::read(&a).unwrap(), b"new a");
    assert_eq!(std::fs::read(&b).unwrap(), b"new b");
}

#[test]
fn temporaries_of_dead_writers_are_removed_and_live_ones_kept() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !Path::new("/proc/self").exists() {
        eprintln!("skipped: no /proc (not Linux)");
        return;
    }
    let dir = folder("stale");
    // Past pid_max (at most 2^22 on Linux): no such process.
    let dead = dir.join(".out.tmp-4194399.json");
    let live = dir.join(format!(".out.tmp-{}.json", std::process::id()));
    let parent = dir.join(".out.tmp-1.json"); // init: always alive
    for path in [&dead, &parent] {
        std::fs::write(path, b"partial").unwrap();
    }
    write(&dir.join("out.json"), b"whole").unwrap();
    assert!(!dead.exists());
    assert!(parent.exists());
    assert!(!live.exists(), "this writer's own temporary was renamed");
    assert_eq!(std::fs::read(dir.join("out.json")).unwrap(), b"whole");
}

#[test]
fn a_folder_without_write_permission_is_refused_before_any_work() {
    let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let sys = Path::new("/proc/x.svg");
    if !Path::new("/proc/self").exists() {
        eprintln!("skipped: no /proc (not Linux)");
        return;
    }
    let error = output_file::check_destination(sys).unwrap_err();
    assert!(error.contains("cannot create a file in /proc"), "{error}");
}
