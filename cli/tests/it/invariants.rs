//! Physical invariants (issue 34, item 2) over seeded random valid layouts:
//! each base layout is simulated beside a changed one whose answer physics
//! fixes in one direction, and every run's numbers are checked against the
//! bounds they can never cross.
//!
//! - weak scaling never faster: twice the data parallelism and global batch
//!   (the same work per GPU) never shortens the iteration, with the
//!   optimizer step unsharded (a distributed optimizer's step shrinks as
//!   1/d: 0.2716 → 0.2707 s for llama3-8b at t4 p2 d2 → d4 on gb200-nvl72);
//! - for 1F1B, more microbatches of the same size never raise the idle
//!   (bubble) time per microbatch: the (p − 1) fill and drain is fixed. Run
//!   where every microbatch does the same work: no host cost (the GPU-bound
//!   stack) and fused gradient accumulation (else every microbatch after the
//!   first adds its gradients in kernels of its own, and more microbatches
//!   rightly idle a host-bound GPU longer on average);
//! - a slower GPU (every peak halved) or slower links (NVLink and NIC
//!   bandwidth halved) never make the iteration shorter;
//! - TFLOP/s per GPU never above the precision's peak, model TFLOP/s never
//!   above the hardware's, memory above 0, every time finite and positive;
//! - where the summary says one replica stood for all (symmetric), the run
//!   with every replica expanded (`--no-symmetry`) gives the same iteration.
//!
//! `CLUSTERSIM_INVARIANT_CASES` (default 40) sets the number of base layouts,
//! `CLUSTERSIM_INVARIANT_SEED` (default 3) the seed.

use crate::common;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// SplitMix64: a deterministic stream of layouts from one seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut x = self.0;
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

/// (model, layers, heads that t must divide).
const MODELS: [(&str, u32, u32); 3] = [("tiny", 4, 8), ("gpt2-1b", 20, 16), ("llama3-8b", 32, 8)];
/// (topology, GPUs it holds).
const TOPOLOGIES: [(&str, u32); 5] = [
    ("dgx-a100", 8),
    ("selene", 4480),
    ("dgx-h100-ib", 1024),
    ("gb200-nvl72", 576),
    ("dgx-b200", 256),
];

/// A stack with no host cost (`examples/stack-gpu-bound.json`).
const GPU_BOUND_STACK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../examples/stack-gpu-bound.json"
);

/// One valid layout: the flags after `simulate`.
#[derive(Debug, Clone)]
struct Layout {
    model: &'static str,
    topology: String,
    tp: u32,
    pp: u32,
    dp: u32,
    microbatch: u32,
    microbatches: u32,
    schedule: &'static str,
    chunks: u32,
}

impl Layout {
    fn random(random: &mut Random) -> Layout {
        loop {
            let (model, layers, heads) = random.pick(&MODELS);
            let (topology, capacity) = random.pick(&TOPOLOGIES);
            let tp = random.pick(&[1, 2, 4]);
            let pp = random.pick(&[1, 2, 4]);
            let dp = random.pick(&[1, 2, 4, 8, 16]);
            let schedule = random.pick(&["1f1b", "gpipe", "interleaved", "zb-h1"]);
            let chunks = if schedule == "interleaved" { 2 } else { 1 };
            let layout = Layout {
                model,
                topology: topology.into(),
                tp,
                pp,
                dp,
                microbatch: random.pick(&[1, 2]),
                microbatches: pp * random.pick(&[1, 2, 4]),
                schedule,
                chunks,
            };
            let fits = 2 * tp * pp * dp <= capacity;
            let splits = heads % tp == 0 && layers % (pp * chunks) == 0;
            let pipelined = schedule == "1f1b" || schedule == "gpipe" || pp > 1;
            if fits && splits && pipelined {
                return layout;
            }
        }
    }

    fn args(&self) -> Vec<String> {
        let global_batch = self.microbatch * self.microbatches * self.dp;
        let mut args: Vec<String> = [
            "simulate",
            "--model",
            self.model,
            "--topology",
            &self.topology,
            "--tp",
            &self.tp.to_string(),
            "--pp",
            &self.pp.to_string(),
            "--dp",
            &self.dp.to_string(),
            "--microbatch-size",
            &self.microbatch.to_string(),
            "--global-batch",
            &global_batch.to_string(),
            "--schedule",
            self.schedule,
            "--json",
        ]
        .map(String::from)
        .to_vec();
        if self.chunks > 1 {
            args.extend(["--chunks".into(), self.chunks.to_string()]);
        }
        args
    }
}

/// Runs a layout (with extra flags) and returns its `--json` summary.
fn run(layout: &Layout, extra: &[&str]) -> Value {
    let mut args = layout.args();
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = common::clustersim(&refs);
    assert!(
        output.status.success(),
        "clustersim {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    check_bounds(&summary, &args.join(" "));
    summary
}

fn number(summary: &Value, key: &str) -> f64 {
    summary[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing"))
}

/// The bounds every run keeps.
fn check_bounds(summary: &Value, command: &str) {
    let time = number(summary, "iteration_time_s");
    assert!(
        time.is_finite() && time > 0.0,
        "{command}: iteration {time}"
    );
    let bubble = number(summary, "bubble_fraction");
    assert!((0.0..=1.0).contains(&bubble), "{command}: bubble {bubble}");
    let percent = number(summary, "percent_of_peak");
    assert!(
        percent > 0.0 && percent <= 100.0,
        "{command}: {percent}% of peak"
    );
    let (tflops, model_tflops) = (
        number(summary, "tflops_per_gpu"),
        number(summary, "model_tflops_per_gpu"),
    );
    assert!(
        model_tflops <= tflops * (1.0 + 1e-12),
        "{command}: model {model_tflops} > {tflops}"
    );
    assert!(
        number(summary, "peak_memory_bytes") > 0.0,
        "{command}: memory"
    );
}

/// `presets --show TOPOLOGY` with its GPU's peaks or its links' bandwidths scaled.
fn slowed_topology(folder: &Path, topology: &str, what: &str) -> PathBuf {
    let output = common::clustersim(&["presets", "--show", topology, "--kind", "topology"]);
    assert!(output.status.success());
    let mut spec: Value = serde_json::from_slice(&output.stdout).expect("a topology file");
    let halve = |value: &mut Value| {
        if let Some(x) = value.as_f64() {
            *value = Value::from(x / 2.0);
        }
    };
    if what == "gpu" {
        if let Some(peaks) = spec["gpu"]["peak"].as_object_mut() {
            peaks.values_mut().for_each(halve);
        }
    } else {
        halve(&mut spec["node"]["nvlink_bandwidth_bytes_per_s"]);
        halve(&mut spec["fabric"]["nic_bandwidth_bytes_per_s"]);
    }
    let path = folder.join(format!("{topology}-slow-{what}.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&spec).unwrap()).unwrap();
    path
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn physics_holds_over_random_layouts() {
    let cases = env_or("CLUSTERSIM_INVARIANT_CASES", 40);
    let mut random = Random(env_or("CLUSTERSIM_INVARIANT_SEED", 3));
    let folder = std::env::temp_dir().join(format!("clustersim-invariants-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    for case in 0..cases {
        let base = Layout::random(&mut random);
        let label = format!("case {case}: {}", base.args().join(" "));
        let summary = run(&base, &[]);
        let time = number(&summary, "iteration_time_s");
        // Integer nanoseconds printed as seconds: 1 ns of rounding either way.
        let not_faster = |other: f64, what: &str| {
            assert!(other >= time - 1e-9, "{label}: {what} {other} s < {time} s");
        };
        // With the optimizer step unsharded: a distributed optimizer's step
        // shrinks as 1/d, so twice d may rightly be faster (today's defaults
        // turn it on at d > 1).
        let unsharded = ["--distributed-optimizer=false"];
        let mut weak = base.clone();
        weak.dp *= 2;
        let unsharded_time = number(&run(&base, &unsharded), "iteration_time_s");
        let weak_time = number(&run(&weak, &unsharded), "iteration_time_s");
        assert!(
            weak_time >= unsharded_time - 1e-9,
            "{label}: 2x dp and batch {weak_time} s < {unsharded_time} s (distributed optimizer off)"
        );
        if base.schedule == "1f1b" && base.dp == 1 {
            let mut longer = base.clone();
            longer.microbatches *= 2;
            let idle_per_microbatch = |summary: &Value, m: u32| {
                number(summary, "bubble_fraction") * number(summary, "iteration_time_s")
                    / f64::from(m)
            };
            let uniform = ["--stack", GPU_BOUND_STACK, "--grad-accumulation-fusion"];
            let before = idle_per_microbatch(&run(&base, &uniform), base.microbatches);
            let after = idle_per_microbatch(&run(&longer, &uniform), longer.microbatches);
            assert!(
                after <= before + 1e-9,
                "{label}: idle per microbatch {before} s -> {after} s at 2x m"
            );
        }
        for what in ["gpu", "links"] {
            let mut slowed = base.clone();
            slowed.topology = slowed_topology(&folder, &base.topology, what)
                .display()
                .to_string();
            not_faster(number(&run(&slowed, &[]), "iteration_time_s"), what);
        }
        let symmetric = summary["simulation_mode"]
            .as_str()
            .is_some_and(|mode| mode.starts_with("symmetric"));
        if symmetric {
            let full = number(&run(&base, &["--no-symmetry"]), "iteration_time_s");
            assert_eq!(full, time, "{label}: --no-symmetry differs");
        }
    }
    let _ = std::fs::remove_dir_all(&folder);
}
