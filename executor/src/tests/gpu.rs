//! Runs on a GPU, each skipped with a printed message when no CUDA driver
//! loads. They check what the executor claims:
//! - synthetic mode, p = 4 and m = 8 (the tiny model with t = 2, and both
//!   pipeline examples): every task starts after each of its predecessors
//!   ends and no stream runs two tasks at once, as measured, and the
//!   iteration lands within 2 % of the simulated one;
//! - real mode runs the real example (`examples/gpt-layers-p1-real.json`),
//!   respecting every dependency.
//!
//! Run them with `CUDA_DEVICE_MAX_CONNECTIONS=32` in the environment (other
//! tests of this process initialise the driver first; see
//! [`crate::queues`]): without it they fail saying so. Example files are
//! found from `CLUSTERSIM_REPO`, else the current directory when it holds
//! `examples/`, else the source tree, so a test binary carried to another
//! machine finds them. Where NVRTC loads (no GPU needed) the spin kernels
//! are compiled to cubins for sm_80 and sm_90.

use crate::plan::ExecutionMode;
use crate::spin::TIMER_STEP_KERNEL_SOURCE;
use crate::{execute, require_driver, ExecuteOptions, Execution};
use gpu::detect::CudaLibrary;
use sim::scenario::{Scenario, ScenarioFile};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// CUDA events resolve about 0.5 µs: a successor may appear to start this
/// much before its predecessor's end.
const EVENT_SLACK_NS: u64 = 1_000;
/// The synthetic acceptance target.
const SYNTHETIC_TOLERANCE: f64 = 0.02;

/// The repository root: `CLUSTERSIM_REPO`, else the current directory when
/// it holds `examples/`, else the source tree this was built from.
fn repository_root() -> PathBuf {
    if let Some(root) = std::env::var_os("CLUSTERSIM_REPO") {
        let root = PathBuf::from(root);
        assert!(
            root.join("examples").is_dir(),
            "CLUSTERSIM_REPO={} holds no examples/",
            root.display()
        );
        return root;
    }
    if let Ok(current) = std::env::current_dir() {
        if current.join("examples").is_dir() {
            return current;
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("executor/ is inside the workspace")
        .to_path_buf()
}

/// An example scenario, its relative topology path made absolute.
fn example(name: &str) -> Scenario {
    let root = repository_root();
    let mut file = ScenarioFile::from_file(&root.join("examples").join(name))
        .unwrap_or_else(|error| panic!("{error}"));
    if let Some(serde_json::Value::String(topology)) = &file.topology {
        if topology.ends_with(".json") && Path::new(topology).is_relative() {
            file.topology = Some(root.join(topology).display().to_string().into());
        }
    }
    file.resolve()
        .unwrap_or_else(|error| panic!("{name}: {error}"))
}

/// `false` (after saying why) when there is no GPU to run on.
fn gpu_present() -> bool {
    match require_driver() {
        Ok(_) => true,
        Err(error) => {
            eprintln!("skipping: {error}");
            false
        }
    }
}

/// Runs `scenario` and checks, as measured, that every task starts after
/// each predecessor ends and that no stream overlaps two tasks.
fn run_and_check_dependencies(name: &str, scenario: &Scenario, mode: ExecutionMode) -> Execution {
    let options = ExecuteOptions {
        mode,
        ..ExecuteOptions::default()
    };
    let execution = execute(scenario, &options).unwrap_or_else(|error| panic!("{name}: {error}"));
    assert!(
        execution.warnings.is_empty(),
        "{name}: {}",
        execution.warnings.join("; ")
    );
    let (_, graph) = sim::build_graph(scenario);
    let tasks = &execution.timeline.tasks;
    assert_eq!(tasks.len(), graph.task_count(), "{name}");
    let mut violations = Vec::new();
    for (from, to, _) in graph.edges() {
        let (from, to) = (&tasks[from.index()], &tasks[to.index()]);
        if to.start_ns + EVENT_SLACK_NS < from.end_ns {
            violations.push(format!(
                "task {} starts at {} ns, before its predecessor {} ends at {} ns",
                to.id, to.start_ns, from.id, from.end_ns
            ));
        }
    }
    let mut by_stream: BTreeMap<u32, Vec<(u64, u64, u32)>> = BTreeMap::new();
    for planned in &execution.plan.tasks {
        let record = &tasks[planned.task as usize];
        by_stream.entry(planned.stream).or_default().push((
            record.start_ns,
            record.end_ns,
            record.id,
        ));
    }
    for spans in by_stream.values_mut() {
        spans.sort();
        for pair in spans.windows(2) {
            if pair[1].0 + EVENT_SLACK_NS < pair[0].1 {
                violations.push(format!(
                    "tasks {} and {} overlap on one stream",
                    pair[0].2, pair[1].2
                ));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "{name}: {} violations, first: {}",
        violations.len(),
        violations[..violations.len().min(5)].join("; ")
    );
    execution
}

/// measured ÷ simulated − 1, printed.
fn iteration_error(name: &str, execution: &Execution) -> f64 {
    let measured = execution.timeline.makespan_ns() as f64;
    let simulated = execution.plan.simulated_iteration_ns as f64;
    let error = measured / simulated - 1.0;
    eprintln!(
        "{name}: measured {measured} ns vs simulated {simulated} ns ({:+.2} %); spin {}; gate {}",
        error * 100.0,
        execution.notes["spin"],
        execution.notes["gate"]
    );
    error
}

#[test]
fn synthetic_p4_m8_runs_respect_every_dependency_and_land_within_2_percent() {
    if !gpu_present() {
        return;
    }
    let scenarios = [
        (
            "tiny t=2 p=4 m=8 (8 ranks)",
            ScenarioFile::tiny_example().resolve().unwrap(),
        ),
        (
            "examples/pipeline-1f1b-p4-synthetic.json",
            example("pipeline-1f1b-p4-synthetic.json"),
        ),
        (
            "examples/pipeline-interleaved-p4-synthetic.json",
            example("pipeline-interleaved-p4-synthetic.json"),
        ),
    ];
    let mut outside = Vec::new();
    for (name, scenario) in &scenarios {
        assert_eq!(scenario.layout.pipeline_parallel.get(), 4, "{name}");
        let execution = run_and_check_dependencies(name, scenario, ExecutionMode::Synthetic);
        assert_eq!(execution.notes["mode"], "synthetic");
        let error = iteration_error(name, &execution);
        if error.abs() >= SYNTHETIC_TOLERANCE {
            outside.push(format!("{name}: {:+.2} %", error * 100.0));
        }
    }
    assert!(outside.is_empty(), "outside ±2 %: {}", outside.join("; "));
}

#[test]
fn real_mode_runs_the_real_example_respecting_every_dependency() {
    if !gpu_present() {
        return;
    }
    let name = "examples/gpt-layers-p1-real.json";
    let scenario = example("gpt-layers-p1-real.json");
    let execution = run_and_check_dependencies(name, &scenario, ExecutionMode::Real);
    assert_eq!(execution.notes["mode"], "real");
    execution.timeline.check("measured").unwrap();
    let counts = execution.plan.launch_counts();
    assert!(counts.gemms > 0, "real mode runs GEMMs");
    let timed: u64 = execution
        .timeline
        .tasks
        .iter()
        .filter(|task| task.kind.is_compute())
        .map(|task| task.duration_ns())
        .sum();
    assert!(timed > 0, "compute tasks took measurable time");
    // Real mode depends on the profile matching this GPU: a smoke bound.
    let error = iteration_error(name, &execution);
    assert!(error.abs() < 0.5, "{name}: {:+.1} %", error * 100.0);
}

/// Where NVRTC loads (a GPU machine, or a CPU machine with the NVRTC wheel
/// on `LD_LIBRARY_PATH`): both kernels compile to cubins.
#[test]
fn the_spin_and_timer_step_kernels_compile_to_cubins_where_nvrtc_loads() {
    if !CudaLibrary::Nvrtc.is_present() {
        eprintln!("skipping: NVRTC cannot be loaded");
        return;
    }
    let supported = gpu::kernels::supported_architectures().unwrap();
    let mut compiled = 0;
    for sm in [80, 90] {
        if !supported.contains(&sm) {
            continue;
        }
        let architecture = format!("sm_{sm}");
        for source in [gpu::gate::GATE_KERNEL_SOURCE, TIMER_STEP_KERNEL_SOURCE] {
            let cubin = gpu::kernels::compile_cubin(source, &architecture, "a test kernel")
                .unwrap_or_else(|error| panic!("{error}"));
            assert_eq!(
                &cubin[..4],
                b"\x7fELF",
                "{architecture}: a cubin is an ELF file"
            );
            compiled += 1;
        }
    }
    eprintln!("compiled {compiled} cubins (NVRTC supports {supported:?})");
    assert!(
        compiled > 0,
        "this NVRTC supports neither sm_80 nor sm_90: {supported:?}"
    );
}
