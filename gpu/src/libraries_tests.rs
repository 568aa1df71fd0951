//! Tests of the library search: order, name ranking, wheel folders, the
//! restart plan and reading `/proc/self/maps`, on fake library files.

use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "clustersim-libraries-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn touch(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, b"not really a library").unwrap();
    path
}

fn dir(path: &Path, origin: DirOrigin) -> SearchDir {
    SearchDir {
        path: path.to_path_buf(),
        origin,
    }
}

#[test]
fn names_rank_in_cudarcs_order_and_other_libraries_do_not_match() {
    assert_eq!(name_rank("libcublas.so", "cublas"), Some(0));
    assert_eq!(name_rank("libcublas.so.13", "cublas"), Some(1));
    assert_eq!(name_rank("libcublas.so.13.1.0.3", "cublas"), Some(2));
    assert_eq!(name_rank("libcublas.so.12", "cublas"), Some(3));
    assert_eq!(name_rank("libnccl.so.2", "nccl"), Some(13));
    assert_eq!(name_rank("libcublasLt.so.13", "cublas"), None);
    assert_eq!(name_rank("libnvrtc-builtins.so.13.0", "nvrtc"), None);
    assert_eq!(name_rank("libnvrtc.alt.so.13", "nvrtc"), None);
    assert_eq!(name_rank("libcublas.so.13.x", "cublas"), None);
    assert_eq!(name_rank("libcublas.so.", "cublas"), None);
}

#[test]
fn the_best_name_in_a_directory_wins() {
    let root = scratch("best");
    touch(&root, "libcublas.so.12");
    touch(&root, "libcublas.so.13.1.0.3");
    touch(&root, "libcublasLt.so");
    let best = touch(&root, "libcublas.so.13");
    assert_eq!(find_in_dir(&root, "cublas"), Some(best));
    assert_eq!(find_in_dir(&root, "nccl"), None);
    assert_eq!(find_in_dir(&root.join("missing"), "nccl"), None);
}

#[test]
fn flags_come_before_the_environment_the_loader_and_python() {
    let root = scratch("order");
    let flag = touch(&root.join("flag"), "libnccl.so.2");
    let env = touch(&root.join("env"), "libnccl.so");
    let wheel = touch(&root.join("wheel"), "libnccl.so.2");
    let explicit = [
        dir(&root.join("flag"), DirOrigin::Flag),
        dir(&root.join("env"), DirOrigin::Env),
    ];
    let python = [dir(&root.join("wheel"), DirOrigin::PythonWheel)];
    let loader_yes = |_: CudaLibrary| true;
    let loader_no = |_: CudaLibrary| false;
    let found = |explicit: &[SearchDir], loader: &dyn Fn(CudaLibrary) -> bool| {
        resolve(CudaLibrary::Nccl, explicit, &python, loader).found
    };
    assert_eq!(
        found(&explicit, &loader_yes),
        Some(Found::File {
            path: flag,
            origin: DirOrigin::Flag
        })
    );
    assert_eq!(
        found(&explicit[1..], &loader_yes),
        Some(Found::File {
            path: env,
            origin: DirOrigin::Env
        })
    );
    assert_eq!(found(&[], &loader_yes), Some(Found::Loader));
    assert_eq!(
        found(&[], &loader_no),
        Some(Found::File {
            path: wheel,
            origin: DirOrigin::PythonWheel
        })
    );
    let nothing = resolve(CudaLibrary::Cublas, &explicit, &python, &loader_no);
    assert_eq!(nothing.found, None);
}

#[test]
fn among_wheels_the_cuda_13_library_wins_over_an_older_one_listed_first() {
    let root = scratch("wheels");
    touch(&root.join("site/nvidia/cublas/lib"), "libcublas.so.12");
    let cu13 = touch(&root.join("site/nvidia/cu13/lib"), "libcublas.so.13");
    touch(&root.join("site/nvidia/nccl/lib"), "libnccl.so.2");
    std::fs::create_dir_all(root.join("site/nvidia/empty")).unwrap();
    let dirs = wheel_dirs(&[root.join("site"), root.join("absent")], None);
    let listed: Vec<String> = dirs
        .iter()
        .map(|d| d.path.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    assert_eq!(
        listed,
        [
            "site/nvidia/cu13/lib",
            "site/nvidia/cublas/lib",
            "site/nvidia/nccl/lib"
        ]
    );
    let python: Vec<SearchDir> = dirs.into_iter().rev().collect();
    let found = resolve(CudaLibrary::Cublas, &[], &python, &|_| false).found;
    assert_eq!(
        found,
        Some(Found::File {
            path: cu13,
            origin: DirOrigin::PythonWheel
        })
    );
}

#[test]
fn the_environment_variable_splits_on_colons() {
    let dirs = env_dirs("/a::/b/c:");
    assert_eq!(dirs.len(), 2);
    assert_eq!(dirs[1].path, PathBuf::from("/b/c"));
    assert!(dirs.iter().all(|d| d.origin == DirOrigin::Env));
}

#[test]
fn a_restart_links_the_found_files_under_cudarcs_first_name_and_puts_them_first() {
    let file = |path: &str| Found::File {
        path: PathBuf::from(path),
        origin: DirOrigin::PythonWheel,
    };
    let resolutions = [
        Resolution {
            library: CudaLibrary::Cublas,
            found: Some(file("/sp/nvidia/cu13/lib/libcublas.so.13")),
        },
        Resolution {
            library: CudaLibrary::Nvrtc,
            found: Some(file("/sp/nvidia/cu13/lib/libnvrtc.so.13")),
        },
        Resolution {
            library: CudaLibrary::Nccl,
            found: Some(file("/sp/nvidia/nccl/lib/libnccl.so.2")),
        },
        Resolution {
            library: CudaLibrary::Driver,
            found: Some(Found::Loader),
        },
    ];
    let plan = launch_plan(
        &resolutions,
        Path::new("/tmp/links"),
        Some("/usr/local/lib:"),
    )
    .unwrap();
    assert_eq!(
        plan.links,
        [
            (
                "libcublas.so".to_string(),
                PathBuf::from("/sp/nvidia/cu13/lib/libcublas.so.13")
            ),
            (
                "libnvrtc.so".to_string(),
                PathBuf::from("/sp/nvidia/cu13/lib/libnvrtc.so.13")
            ),
            (
                "libnccl.so".to_string(),
                PathBuf::from("/sp/nvidia/nccl/lib/libnccl.so.2")
            ),
        ]
    );
    assert_eq!(
        plan.ld_library_path,
        "/tmp/links:/sp/nvidia/cu13/lib:/sp/nvidia/nccl/lib:/usr/local/lib"
    );
    let loader_only = [Resolution {
        library: CudaLibrary::Cublas,
        found: Some(Found::Loader),
    }];
    assert_eq!(
        launch_plan(&loader_only, Path::new("/tmp/links"), None),
        None
    );
}

#[test]
fn links_are_made_and_refreshed() {
    let root = scratch("links");
    let first = touch(&root, "libnccl.so.2");
    let second = touch(&root, "libnccl.so.3");
    let links = root.join("links");
    make_links(&links, &[("libnccl.so".into(), first.clone())]).unwrap();
    assert_eq!(std::fs::read_link(links.join("libnccl.so")).unwrap(), first);
    make_links(&links, &[("libnccl.so".into(), second.clone())]).unwrap();
    assert_eq!(
        std::fs::read_link(links.join("libnccl.so")).unwrap(),
        second
    );
    let a = link_dir_for(&[("libnccl.so".into(), first.clone())]);
    let b = link_dir_for(&[("libnccl.so".into(), second)]);
    assert_ne!(a, b);
    assert_eq!(a, link_dir_for(&[("libnccl.so".into(), first)]));
}

#[test]
fn the_mapped_file_is_read_from_proc_maps_text() {
    let maps = "\
7f00-7f01 r-xp 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libcublasLt.so.13.1.0.3
7f02-7f03 r-xp 00000000 08:01 124 /usr/local/cuda/lib64/libcublas.so.13.1.0.3
7f04-7f05 rw-p 00000000 00:00 0
7f06-7f07 r-xp 00000000 08:01 125 /opt/sp/nvidia/nccl/lib/libnccl.so.2";
    assert_eq!(
        mapped_file(maps, "cublas"),
        Some(PathBuf::from("/usr/local/cuda/lib64/libcublas.so.13.1.0.3"))
    );
    assert_eq!(
        mapped_file(maps, "nccl"),
        Some(PathBuf::from("/opt/sp/nvidia/nccl/lib/libnccl.so.2"))
    );
    assert_eq!(mapped_file(maps, "nvrtc"), None);
}
