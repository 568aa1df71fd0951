//! `--cuda-lib-dir` for `calibrate` and `execute`, the `cuda-libs`
//! subcommand, and the one restart that makes cudarc load the libraries
//! found (the search itself is `gpu::libraries`).
//!
//! Before any CUDA call, [`prepare`] looks for cuBLAS, NVRTC and NCCL (flags,
//! `CLUSTERSIM_CUDA_LIB_DIR`, the dynamic loader, the active Python's NVIDIA
//! wheels). When one was found in a directory the loader does not search, the
//! process re-executes itself once with `LD_LIBRARY_PATH` set (the loader
//! reads it only at start-up). Either way it prints one line per library
//! saying which file was loaded, and a required library that is nowhere is
//! one error line naming where it looked (exit 2).

use crate::exit::user_error;
use crate::stdout::outln;
use clap::Args;
use gpu::detect::CudaLibrary;
use gpu::libraries::{self, DirOrigin, Found, Resolution, SearchDir};
use std::path::PathBuf;

/// Where to look for CUDA libraries (flattened into calibrate and execute).
#[derive(Debug, Clone, Args)]
pub struct CudaLibArgs {
    /// Directory holding libcublas / libnvrtc / libnccl (repeatable; searched first, in order).
    /// Also: CLUSTERSIM_CUDA_LIB_DIR (colon-separated), then the system's loader path, then the
    /// active Python's nvidia/*/lib wheel folders.
    #[arg(long = "cuda-lib-dir", value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
}

/// What a command needs: missing `required` libraries are an error, missing
/// `optional` ones a warning (the command says what it skips).
pub struct Needs {
    pub required: &'static [CudaLibrary],
    pub optional: &'static [CudaLibrary],
}

fn display_name(library: CudaLibrary) -> &'static str {
    match library {
        CudaLibrary::Driver => "CUDA driver",
        CudaLibrary::Cublas => "cuBLAS",
        CudaLibrary::Nccl => "NCCL",
        CudaLibrary::Nvrtc => "NVRTC",
    }
}

/// The search directories of the flags and the environment variable; a
/// flag naming no directory is an error.
fn explicit_dirs(args: &CudaLibArgs) -> anyhow::Result<Vec<SearchDir>> {
    let mut dirs = Vec::new();
    for dir in &args.dirs {
        if !dir.is_dir() {
            return Err(user_error(format!(
                "--cuda-lib-dir {}: no such directory",
                dir.display()
            )));
        }
        dirs.push(SearchDir {
            path: dir.clone(),
            origin: DirOrigin::Flag,
        });
    }
    if let Ok(value) = std::env::var(libraries::LIB_DIR_ENV) {
        dirs.extend(libraries::env_dirs(&value));
    }
    Ok(dirs)
}

/// Where the search looked, for the not-found message.
fn places(explicit: &[SearchDir], python: &[SearchDir]) -> String {
    let mut places: Vec<String> = explicit
        .iter()
        .map(|d| format!("{} {}", d.origin.describe(), d.path.display()))
        .collect();
    places.push(format!(
        "the dynamic loader's path (LD_LIBRARY_PATH={}, /etc/ld.so.cache)",
        std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
    ));
    if python.is_empty() {
        places.push("no Python NVIDIA wheel folders (no python3 on PATH, or no nvidia/*/lib under its site-packages)".into());
    } else {
        places.push(format!(
            "Python wheel folders {}",
            python
                .iter()
                .map(|d| d.path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    places.join("; ")
}

/// Resolves every library of `needs` (driver excluded: it comes with the
/// NVIDIA driver and the command checks it itself).
fn resolve_all(
    args: &CudaLibArgs,
    needs: &Needs,
) -> anyhow::Result<(Vec<Resolution>, Vec<SearchDir>, Vec<SearchDir>)> {
    let explicit = explicit_dirs(args)?;
    let site = libraries::python_site_packages();
    let conda = std::env::var_os("CONDA_PREFIX").map(PathBuf::from);
    let python = libraries::wheel_dirs(&site, conda.as_deref());
    let loader = |library: CudaLibrary| library.is_present();
    let resolutions = needs
        .required
        .iter()
        .chain(needs.optional)
        .map(|&library| libraries::resolve(library, &explicit, &python, &loader))
        .collect();
    Ok((resolutions, explicit, python))
}

/// Finds the libraries, restarts the process once if the loader must be
/// pointed at them, and prints where each was loaded from. Does nothing
/// without a CUDA driver (the command reports that itself).
pub fn prepare(args: &CudaLibArgs, needs: &Needs) -> anyhow::Result<()> {
    if std::env::var_os(libraries::PREPARED_ENV).is_some() {
        report_loaded(needs);
        // Programs this one starts search for themselves. No thread exists
        // yet, so changing the environment is safe here.
        std::env::remove_var(libraries::PREPARED_ENV);
        return Ok(());
    }
    explicit_dirs(args)?;
    if !CudaLibrary::Driver.is_present() {
        return Ok(());
    }
    let (mut resolutions, explicit, python) = resolve_all(args, needs)?;
    for resolution in &resolutions {
        if resolution.found.is_none() {
            let name = display_name(resolution.library);
            let file = format!("lib{}.so", libraries::stem(resolution.library));
            let looked = places(&explicit, &python);
            if needs.required.contains(&resolution.library) {
                return Err(user_error(format!(
                    "{name} ({file}*) not found: looked in {looked}; pass --cuda-lib-dir DIR (the directory holding it)"
                )));
            }
            eprintln!("warning: {name} ({file}*) not found (looked in {looked}); what needs it is skipped and said so");
        }
    }
    let current = std::env::var("LD_LIBRARY_PATH").ok();
    if libraries::launch_plan_in_temp(&resolutions, current.as_deref()).is_none() {
        report_loaded(needs);
        return Ok(());
    }
    libraries::pin_loader_libraries(&mut resolutions);
    let Some((link_dir, plan)) = libraries::launch_plan_in_temp(&resolutions, current.as_deref())
    else {
        report_loaded(needs);
        return Ok(());
    };
    restart(&link_dir, &plan, &resolutions)
}

/// Re-executes this program with the plan's `LD_LIBRARY_PATH`; returns
/// only on failure.
fn restart(
    link_dir: &std::path::Path,
    plan: &libraries::LaunchPlan,
    resolutions: &[Resolution],
) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt;
    libraries::make_links(link_dir, &plan.links).map_err(|error| {
        anyhow::anyhow!(
            "could not create the library links in {}: {error}",
            link_dir.display()
        )
    })?;
    let origins: Vec<String> = resolutions
        .iter()
        .filter_map(|r| match &r.found {
            Some(Found::File { origin, .. }) => Some(format!(
                "{}={}",
                libraries::stem(r.library),
                origin.describe()
            )),
            _ => None,
        })
        .collect();
    let mut argv = std::env::args_os();
    let arg0 = argv.next().unwrap_or_else(|| "clustersim".into());
    let error = std::process::Command::new("/proc/self/exe")
        .arg0(arg0)
        .args(argv)
        .env("LD_LIBRARY_PATH", &plan.ld_library_path)
        .env(libraries::PREPARED_ENV, origins.join(";"))
        .exec();
    Err(anyhow::anyhow!(
        "could not restart with LD_LIBRARY_PATH={}: {error}",
        plan.ld_library_path
    ))
}

/// One stderr line per library: the file it was loaded from and why.
fn report_loaded(needs: &Needs) {
    let origins = std::env::var(libraries::PREPARED_ENV).unwrap_or_default();
    let origin_of = |library: CudaLibrary| {
        let key = format!("{}=", libraries::stem(library));
        origins
            .split(';')
            .find_map(|part| part.strip_prefix(&key).map(str::to_string))
            .unwrap_or_else(|| "the system's loader path".into())
    };
    let libraries_shown = [CudaLibrary::Driver]
        .iter()
        .chain(needs.required)
        .chain(needs.optional);
    for &library in libraries_shown {
        match libraries::loaded_from(library) {
            Some(path) => eprintln!(
                "cuda: {:<11} {} (found via {})",
                display_name(library),
                path.display(),
                if library == CudaLibrary::Driver {
                    "the NVIDIA driver".to_string()
                } else {
                    origin_of(library)
                }
            ),
            None => eprintln!("cuda: {:<11} not loaded", display_name(library)),
        }
    }
}

/// `clustersim cuda-libs`: where each library would be loaded from.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  clustersim cuda-libs\n  clustersim cuda-libs --cuda-lib-dir /opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib\n  eval \"$(clustersim cuda-libs --export)\"   # for programs that load CUDA themselves (the GPU tests)"
)]
pub struct CudaLibsArgs {
    #[command(flatten)]
    pub libs: CudaLibArgs,
    /// Print `export LD_LIBRARY_PATH=…` (links made) instead of the table.
    #[arg(long)]
    pub export: bool,
}

/// Every library either command may load.
const ALL: Needs = Needs {
    required: &[],
    optional: &[CudaLibrary::Cublas, CudaLibrary::Nvrtc, CudaLibrary::Nccl],
};

pub fn run(args: CudaLibsArgs) -> anyhow::Result<()> {
    let (resolutions, explicit, python) = resolve_all(&args.libs, &ALL)?;
    if args.export {
        let current = std::env::var("LD_LIBRARY_PATH").ok();
        match libraries::launch_plan_in_temp(&resolutions, current.as_deref()) {
            Some((link_dir, plan)) => {
                libraries::make_links(&link_dir, &plan.links)?;
                outln!(
                    "export LD_LIBRARY_PATH={}",
                    shell_quoted(&plan.ld_library_path)
                )?;
            }
            None => outln!(
                "export LD_LIBRARY_PATH={}",
                shell_quoted(&current.unwrap_or_default())
            )?,
        }
        return Ok(());
    }
    outln!(
        "CUDA driver: {}",
        if CudaLibrary::Driver.is_present() {
            "loadable"
        } else {
            "not found (libcuda.so comes with the NVIDIA driver)"
        }
    )?;
    for resolution in &resolutions {
        let name = display_name(resolution.library);
        match &resolution.found {
            Some(Found::File { path, origin }) => {
                outln!("{name}: {} (from {})", path.display(), origin.describe())?
            }
            Some(Found::Loader) => outln!("{name}: found by the system's loader path")?,
            None => outln!("{name}: not found")?,
        }
    }
    outln!("searched: {}", places(&explicit, &python))?;
    Ok(())
}

/// `text` as one single-quoted POSIX shell word (a `'` inside becomes `'\''`).
fn shell_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::shell_quoted;

    #[test]
    fn paths_are_quoted_as_one_shell_word() {
        assert_eq!(shell_quoted("/a/b:/c"), "'/a/b:/c'");
        assert_eq!(shell_quoted("/it's"), "'/it'\\''s'");
    }
}
