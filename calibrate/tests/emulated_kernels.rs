//! The memory-class kernels run on the CPU: their CUDA source is compiled
//! as C++ with a small shim (a thread per CUDA thread, a barrier for
//! `__syncthreads`, a per-warp exchange for `__shfl_xor_sync`), launched as
//! their plans say, and their outputs compared with the CPU reference
//! exactly as the GPU check does. It catches indexing, reduction and
//! argument-order mistakes without a GPU, not what only hardware shows
//! (alignment faults, shared-memory limits, timing). Skips with a printed
//! line where no C++20 compiler (`c++`, or `$CXX`) is found.

use calibrate::memory_classes;
use calibrate::memory_kernels;
use calibrate::memory_plans::{self, Plan, Scalar};
use calibrate::memory_reference;
use models::memory_class::MemoryKernelClass;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// CUDA's built-ins for threads that run one block at a time.
const SHIM: &str = r#"
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>
struct dim3 { unsigned x, y, z; };
thread_local dim3 threadIdx;
dim3 blockIdx, blockDim, gridDim;
static std::unique_ptr<std::barrier<>> block_barrier;
static std::vector<std::unique_ptr<std::barrier<>>> warp_barriers;
static std::vector<float> shuffle_slots;
static std::vector<unsigned char> dynamic_smem(64 * 1024);
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
static void __syncthreads() { block_barrier->arrive_and_wait(); }
static float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
#define __expf(x) std::exp((float)(x))
static float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static unsigned flat_thread() { return threadIdx.x + threadIdx.y * blockDim.x; }
static float __shfl_xor_sync(unsigned, float v, int offset) {
    unsigned t = flat_thread(), warp = t / 32, lane = t % 32;
    shuffle_slots[warp * 32 + lane] = v;
    warp_barriers[warp]->arrive_and_wait();
    float other = shuffle_slots[warp * 32 + (lane ^ offset)];
    warp_barriers[warp]->arrive_and_wait();
    return other;
}
struct AnyPtr { void* p; template <class T> operator T*() const { return (T*)p; } };
static void launch(dim3 grid, dim3 block, std::function<void()> body) {
    gridDim = grid; blockDim = block;
    unsigned threads = block.x * block.y * block.z;
    for (unsigned z = 0; z < grid.z; ++z) for (unsigned y = 0; y < grid.y; ++y) for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        block_barrier = std::make_unique<std::barrier<>>(threads);
        warp_barriers.clear();
        for (unsigned w = 0; w < (threads + 31) / 32; ++w) warp_barriers.push_back(std::make_unique<std::barrier<>>(32));
        shuffle_slots.assign(((threads + 31) / 32) * 32, 0.0f);
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t) pool.emplace_back([t, block, &body] {
            threadIdx = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
            body();
        });
        for (auto& thread : pool) thread.join();
    }
}
static std::vector<unsigned char> read_file(const char* path) {
    std::vector<unsigned char> bytes;
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::perror(path); std::exit(2); }
    unsigned char chunk[65536];
    size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
    std::fclose(f);
    return bytes;
}
static void write_file(const char* path, const std::vector<unsigned char>& bytes) {
    FILE* f = std::fopen(path, "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) { std::perror(path); std::exit(2); }
    std::fclose(f);
}
"#;

fn compiler() -> Option<String> {
    let candidate = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let probe = Command::new(&candidate).arg("--version").output().ok()?;
    probe.status.success().then_some(candidate)
}

/// The class source with `extern __shared__` arrays pointing at the shim's
/// dynamic shared memory.
fn shimmed_source(class: MemoryKernelClass) -> String {
    memory_kernels::source(class)
        .lines()
        .map(|line| {
            let trimmed = line.trim();
            match trimmed.strip_prefix("extern __shared__ u64 ") {
                Some(rest) => {
                    let name = rest.trim_end_matches("[];");
                    format!("    u64* {name} = (u64*)dynamic_smem.data();")
                }
                None => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A `main` that reads every buffer, runs the plan's launches and writes
/// the buffers back.
fn harness(plan: &Plan) -> String {
    let names = memory_kernels::function_names(plan.class);
    let mut main = String::from("int main(int, char** argv) {\n    std::string dir = argv[1];\n");
    let count = plan.buffers.len();
    writeln!(
        main,
        "    std::vector<std::vector<unsigned char>> buf({count});"
    )
    .unwrap();
    writeln!(
        main,
        "    for (int i = 0; i < {count}; ++i) buf[i] = read_file((dir + \"/in\" + std::to_string(i)).c_str());"
    )
    .unwrap();
    for spec in &plan.launches {
        let mut args: Vec<String> = spec
            .buffers
            .iter()
            .map(|i| format!("AnyPtr{{buf[{i}].data()}}"))
            .collect();
        for scalar in &spec.scalars {
            args.push(match scalar {
                Scalar::U32(v) => format!("(u32){v}u"),
                Scalar::U64(v) => format!("(u64){v}ull"),
                Scalar::F32(v) => format!("__uint_as_float({:#x}u)", v.to_bits()),
            });
        }
        let (gx, gy, gz) = spec.grid;
        let (bx, by, bz) = spec.block;
        writeln!(
            main,
            "    launch({{{gx}, {gy}, {gz}}}, {{{bx}, {by}, {bz}}}, [&] {{ {}({}); }});",
            names[spec.function],
            args.join(", ")
        )
        .unwrap();
    }
    writeln!(
        main,
        "    for (int i = 0; i < {count}; ++i) write_file((dir + \"/out\" + std::to_string(i)).c_str(), buf[i]);\n    return 0;\n}}"
    )
    .unwrap();
    main
}

fn run(compiler: &str, dir: &Path, plan: &Plan) -> Vec<Vec<u8>> {
    std::fs::create_dir_all(dir).unwrap();
    let program = format!(
        "{SHIM}\n#include <string>\n{}\n{}",
        shimmed_source(plan.class),
        harness(plan)
    );
    let source = dir.join("kernel.cpp");
    std::fs::write(&source, program).unwrap();
    let binary = dir.join("kernel");
    let built = Command::new(compiler)
        .args(["-std=c++20", "-O1", "-pthread", "-w", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}: {}",
        plan.describe(),
        String::from_utf8_lossy(&built.stderr)
    );
    let inputs = memory_reference::host_inputs(plan, 0xe1u64);
    for (i, (spec, values)) in plan.buffers.iter().zip(&inputs).enumerate() {
        std::fs::write(
            dir.join(format!("in{i}")),
            memory_reference::encode(spec.elem, values),
        )
        .unwrap();
    }
    let ran = Command::new(&binary).arg(dir).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    (0..plan.buffers.len())
        .map(|i| std::fs::read(dir.join(format!("out{i}"))).unwrap())
        .collect()
}

#[test]
fn every_class_kernel_run_on_cpu_threads_matches_the_reference() {
    let Some(compiler) = compiler() else {
        println!("skipping: no C++ compiler (set CXX)");
        return;
    };
    let root: PathBuf =
        std::env::temp_dir().join(format!("clustersim-emulated-{}", std::process::id()));
    let mut failures = Vec::new();
    for class in MemoryKernelClass::ALL {
        for causal in [true, false] {
            if !causal && class != MemoryKernelClass::Softmax {
                continue;
            }
            let size = memory_plans::check_size(class);
            let plan = memory_plans::plan_with(class, size, 132, causal).unwrap();
            let dir = root.join(format!("{}-{causal}", class.name()));
            let written = run(&compiler, &dir, &plan);
            let inputs = memory_reference::host_inputs(&plan, 0xe1u64);
            let outputs: Vec<(usize, Vec<f32>)> = plan
                .buffers
                .iter()
                .enumerate()
                .filter(|(_, spec)| spec.checked)
                .map(|(i, spec)| (i, memory_reference::decode(spec.elem, &written[i])))
                .collect();
            for check in memory_reference::compare(&plan, &inputs, &outputs) {
                println!(
                    "{} causal={causal}: {} {:.2e} {}",
                    plan.describe(),
                    check.role,
                    check.relative_error,
                    check.mismatches
                );
                if !memory_classes::check_passes(&check) {
                    failures.push(format!("{} {check:?}", plan.describe()));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
