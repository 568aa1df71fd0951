//! Finding the user's CUDA libraries (cuBLAS, NVRTC, NCCL) wherever they
//! are, and making cudarc load exactly those.
//!
//! cudarc loads each library by bare file name (`libcublas.so`, then
//! `libcublas.so.13`, `.12`, … `.1`) through the dynamic loader, whose search
//! path is fixed when the process starts. Python wheels put the libraries in
//! `site-packages/nvidia/*/lib`, which is on no search path, and NCCL's wheel
//! ships only `libnccl.so.2`, a name cudarc never tries. So:
//!
//! 1. [`resolve`] looks for each library in this order: the directories given
//!    with `--cuda-lib-dir` (in order), those in `CLUSTERSIM_CUDA_LIB_DIR`
//!    (colon-separated), whatever the dynamic loader finds by itself
//!    (`LD_LIBRARY_PATH`, `/etc/ld.so.cache`), and the NVIDIA wheel folders of
//!    the active Python (`python3` on `PATH`, `$VIRTUAL_ENV`, `$CONDA_PREFIX`).
//! 2. When a library was found in a directory, [`LaunchPlan`] names a
//!    directory of symbolic links called as cudarc asks (`libnccl.so` →
//!    `…/libnccl.so.2`) and the `LD_LIBRARY_PATH` that puts it (and the
//!    libraries' own directories, for their dependencies) first; the CLI then
//!    re-executes itself once with that environment (see
//!    `cli/src/commands/cuda_libs.rs`).
//! 3. [`loaded_from`] reports the file each library was actually loaded from
//!    (read from `/proc/self/maps`), for the startup line.
//!
//! Search and planning are pure over the file system, so they are tested on
//! machines without CUDA.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::detect::CudaLibrary;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Colon-separated directories searched after `--cuda-lib-dir`.
pub const LIB_DIR_ENV: &str = "CLUSTERSIM_CUDA_LIB_DIR";
/// Set in the re-executed process; holds what was found, one line per library.
pub const PREPARED_ENV: &str = "CLUSTERSIM_CUDA_LIBS_PREPARED";

/// Where a directory to search came from (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirOrigin {
    /// `--cuda-lib-dir`.
    Flag,
    /// `CLUSTERSIM_CUDA_LIB_DIR`.
    Env,
    /// A Python environment's NVIDIA wheel folder.
    PythonWheel,
    /// Where the dynamic loader found it before a restart (pinned so that the
    /// restart's new search path cannot swap it for another copy).
    Loader,
}

impl DirOrigin {
    pub fn describe(&self) -> &'static str {
        match self {
            DirOrigin::Flag => "--cuda-lib-dir",
            DirOrigin::Env => LIB_DIR_ENV,
            DirOrigin::PythonWheel => "a Python NVIDIA wheel",
            DirOrigin::Loader => "the system's loader path",
        }
    }
}

/// A directory to search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    pub path: PathBuf,
    pub origin: DirOrigin,
}

/// Where a library was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A file in a searched directory.
    File { path: PathBuf, origin: DirOrigin },
    /// The dynamic loader finds it as things stand.
    Loader,
}

/// The result for one library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub library: CudaLibrary,
    /// `None`: found nowhere.
    pub found: Option<Found>,
}

/// The stem cudarc puts between `lib` and `.so`.
pub fn stem(library: CudaLibrary) -> &'static str {
    match library {
        CudaLibrary::Driver => "cuda",
        CudaLibrary::Cublas => "cublas",
        CudaLibrary::Nccl => "nccl",
        CudaLibrary::Nvrtc => "nvrtc",
    }
}

/// How well a file name matches `lib<stem>.so[.N…]`: lower is better, in
/// cudarc's order (`lib<stem>.so`, `.so.13`, `.so.12`, …), then any other
/// version; `None` when it is not this library (`libcublasLt.so` is not cuBLAS).
pub fn name_rank(file_name: &str, stem: &str) -> Option<u32> {
    let base = format!("lib{stem}.so");
    if file_name == base {
        return Some(0);
    }
    let version = file_name.strip_prefix(&base)?.strip_prefix('.')?;
    let major: u32 = version.split('.').next()?.parse().ok()?;
    if !version.split('.').all(|part| part.parse::<u32>().is_ok()) {
        return None;
    }
    // cudarc tries .13 (its CUDA major), then .12, .11, .10, .9, .1; a full
    // version (libcublas.so.13.1.0.3) ranks just after its major.
    let exact = !version.contains('.');
    let order = match major {
        13 => 1,
        12 => 3,
        11 => 5,
        10 => 7,
        9 => 9,
        1 => 11,
        _ => 13,
    };
    Some(order + u32::from(!exact))
}

/// The best file for `stem` in `dir`, if any.
pub fn find_in_dir(dir: &Path, stem: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<(u32, String)> = None;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(rank) = name_rank(&name, stem) {
            let better = match &best {
                None => true,
                Some((r, n)) => (rank, &name) < (*r, n),
            };
            if better && entry.path().is_file() {
                best = Some((rank, name));
            }
        }
    }
    best.map(|(_, name)| dir.join(name))
}

/// Looks for `library`: `explicit` directories in order (flags, then the
/// environment variable), then the dynamic loader (`loader_finds`), then the
/// Python wheel directories (best-ranked name first, then directory order).
pub fn resolve(
    library: CudaLibrary,
    explicit: &[SearchDir],
    python: &[SearchDir],
    loader_finds: &dyn Fn(CudaLibrary) -> bool,
) -> Resolution {
    let stem = stem(library);
    let found = explicit
        .iter()
        .find_map(|dir| {
            find_in_dir(&dir.path, stem).map(|path| Found::File {
                path,
                origin: dir.origin.clone(),
            })
        })
        .or_else(|| loader_finds(library).then_some(Found::Loader))
        .or_else(|| {
            python
                .iter()
                .enumerate()
                .filter_map(|(index, dir)| {
                    let path = find_in_dir(&dir.path, stem)?;
                    let rank = name_rank(&path.file_name()?.to_string_lossy(), stem)?;
                    Some((rank, index, path))
                })
                .min_by_key(|(rank, index, _)| (*rank, *index))
                .map(|(_, _, path)| Found::File {
                    path,
                    origin: DirOrigin::PythonWheel,
                })
        });
    Resolution { library, found }
}

/// The directories of `CLUSTERSIM_CUDA_LIB_DIR`'s value.
pub fn env_dirs(value: &str) -> Vec<SearchDir> {
    value
        .split(':')
        .filter(|part| !part.is_empty())
        .map(|part| SearchDir {
            path: PathBuf::from(part),
            origin: DirOrigin::Env,
        })
        .collect()
}

/// Every `nvidia/*/lib` folder under the given site-packages directories
/// (sorted within each, `cu13` first), plus `lib` of a conda prefix.
pub fn wheel_dirs(site_packages: &[PathBuf], conda_prefix: Option<&Path>) -> Vec<SearchDir> {
    let mut dirs = Vec::new();
    let mut seen = BTreeSet::new();
    for site in site_packages {
        let Ok(entries) = std::fs::read_dir(site.join("nvidia")) else {
            continue;
        };
        let mut libs: Vec<PathBuf> = entries
            .flatten()
            .map(|entry| entry.path().join("lib"))
            .filter(|lib| lib.is_dir())
            .collect();
        libs.sort_by_key(|lib| {
            let package = lib
                .parent()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (package != "cu13", package)
        });
        for lib in libs {
            if seen.insert(lib.clone()) {
                dirs.push(SearchDir {
                    path: lib,
                    origin: DirOrigin::PythonWheel,
                });
            }
        }
    }
    if let Some(prefix) = conda_prefix {
        let lib = prefix.join("lib");
        if lib.is_dir() && seen.insert(lib.clone()) {
            dirs.push(SearchDir {
                path: lib,
                origin: DirOrigin::PythonWheel,
            });
        }
    }
    dirs
}

/// The site-packages directories of the active Python: `python3 -c …` on
/// `PATH` (an activated venv or conda env comes first there) and
/// `$VIRTUAL_ENV/lib/python3*/site-packages`. Empty when there is no Python.
pub fn python_site_packages() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
        if let Ok(entries) = std::fs::read_dir(Path::new(&venv).join("lib")) {
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path().join("site-packages"))
                .filter(|p| p.is_dir())
                .collect();
            found.sort();
            dirs.extend(found);
        }
    }
    let script =
        "import site,sys\nfor p in site.getsitepackages()+[site.getusersitepackages()]: print(p)";
    if let Some(text) = run_with_timeout("python3", &["-c", script], 10) {
        dirs.extend(text.lines().map(PathBuf::from).filter(|p| p.is_dir()));
    }
    let mut seen = BTreeSet::new();
    dirs.retain(|d| seen.insert(d.clone()));
    dirs
}

/// Runs a program, returning its stdout if it exits 0 within `seconds`.
fn run_with_timeout(program: &str, args: &[&str], seconds: u64) -> Option<String> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        match child.try_wait().ok()? {
            Some(status) if status.success() => break,
            Some(_) => return None,
            None if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            None => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut text).ok()?;
    Some(text)
}

/// What the process must be restarted with so cudarc loads the files found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchPlan {
    /// (link name inside the link directory, file it points to).
    pub links: Vec<(String, PathBuf)>,
    /// The `LD_LIBRARY_PATH` to run with.
    pub ld_library_path: String,
}

/// Before a restart, the libraries the loader found as things stand become
/// files (where this process maps them from), so that the restart's
/// `LD_LIBRARY_PATH` — with other libraries' directories in front — cannot
/// make cudarc pick another copy of them (a wheel's `.so.13` over a system
/// `.so.12`, say).
pub fn pin_loader_libraries(resolutions: &mut [Resolution]) {
    for resolution in resolutions.iter_mut() {
        if resolution.found == Some(Found::Loader) {
            if let Some(path) = loaded_from(resolution.library) {
                resolution.found = Some(Found::File {
                    path,
                    origin: DirOrigin::Loader,
                });
            }
        }
    }
}

/// The links a restart needs: `lib<stem>.so` → each file found in a directory.
pub fn links(resolutions: &[Resolution]) -> Vec<(String, PathBuf)> {
    resolutions
        .iter()
        .filter_map(|r| match &r.found {
            Some(Found::File { path, .. }) => {
                Some((format!("lib{}.so", stem(r.library)), path.clone()))
            }
            _ => None,
        })
        .collect()
}

/// [`launch_plan`] in this selection's own link directory
/// ([`link_dir_for`]), with the directory; `None` when no restart is needed.
pub fn launch_plan_in_temp(
    resolutions: &[Resolution],
    current: Option<&str>,
) -> Option<(PathBuf, LaunchPlan)> {
    let link_dir = link_dir_for(&links(resolutions));
    launch_plan(resolutions, &link_dir, current).map(|plan| (link_dir, plan))
}

/// `None` when every library is found by the loader as things stand (or
/// nowhere): no restart needed. Otherwise links named `lib<stem>.so` in
/// `link_dir` (the first name cudarc tries, so it wins over any other copy
/// on the path), then the files' own directories (their dependencies, e.g.
/// cuBLAS's `libcublasLt.so.13` and NVRTC's builtins), then `current`.
pub fn launch_plan(
    resolutions: &[Resolution],
    link_dir: &Path,
    current: Option<&str>,
) -> Option<LaunchPlan> {
    let links = links(resolutions);
    let mut path = vec![link_dir.display().to_string()];
    for (_, file) in &links {
        if let Some(dir) = file.parent() {
            let dir = dir.display().to_string();
            if !path.contains(&dir) {
                path.push(dir);
            }
        }
    }
    if links.is_empty() {
        return None;
    }
    path.extend(
        current
            .unwrap_or("")
            .split(':')
            .filter(|part| !part.is_empty())
            .map(str::to_string),
    );
    Some(LaunchPlan {
        links,
        ld_library_path: path.join(":"),
    })
}

/// A per-user, per-selection link directory under the temporary directory:
/// the user id and a hash of the links in its name.
pub fn link_dir_for(plan_links: &[(String, PathBuf)]) -> PathBuf {
    // FNV-1a of the links, a 0 byte after each field: same selection, same directory.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, target) in plan_links {
        let fields = [name.as_bytes(), target.as_os_str().as_encoded_bytes()];
        for byte in fields.iter().flat_map(|f| f.iter().copied().chain([0u8])) {
            hash = (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("clustersim-cuda-libs-{uid}-{hash:016x}"))
}

/// Creates (or refreshes) the links in `link_dir`. The directory is made
/// private (0700); an existing one must be a real directory of this user
/// that nobody else can write, since the restarted process loads libraries
/// from it first. Each link is made under a temporary name and renamed into
/// place, so concurrent runs never see a half-made link.
pub fn make_links(link_dir: &Path, links: &[(String, PathBuf)]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(link_dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let metadata = std::fs::symlink_metadata(link_dir)?;
    // SAFETY: as above.
    let uid = unsafe { libc::geteuid() };
    if !metadata.is_dir() || metadata.uid() != uid || metadata.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a directory of this user that only it can write; remove it",
            link_dir.display()
        )));
    }
    for (name, target) in links {
        let link = link_dir.join(name);
        if std::fs::read_link(&link).ok().as_deref() == Some(target.as_path()) {
            continue;
        }
        let temporary = link_dir.join(format!(".{name}.{}", std::process::id()));
        let _ = std::fs::remove_file(&temporary);
        std::os::unix::fs::symlink(target, &temporary)?;
        std::fs::rename(&temporary, &link)?;
    }
    Ok(())
}

/// The file `library` is mapped from in this process (`/proc/self/maps`),
/// after making sure cudarc has loaded it. `None` if it cannot be loaded.
pub fn loaded_from(library: CudaLibrary) -> Option<PathBuf> {
    if !library.is_present() {
        return None;
    }
    // SAFETY: the library is present (checked above), so cudarc's loader
    // returns it instead of panicking; loading runs its initialisers only.
    unsafe {
        match library {
            CudaLibrary::Driver => {
                cudarc::driver::sys::culib();
            }
            CudaLibrary::Cublas => {
                cudarc::cublas::sys::culib();
            }
            CudaLibrary::Nccl => {
                cudarc::nccl::sys::culib();
            }
            CudaLibrary::Nvrtc => {
                cudarc::nvrtc::sys::culib();
            }
        }
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    mapped_file(&maps, stem(library))
}

/// The first mapped file in a `/proc/<pid>/maps` text that is `lib<stem>.so…`.
pub fn mapped_file(maps: &str, stem: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .find(|path| {
            path.file_name()
                .map(|name| name_rank(&name.to_string_lossy(), stem).is_some())
                .unwrap_or(false)
        })
}

#[cfg(test)]
#[path = "libraries_tests.rs"]
mod tests;
