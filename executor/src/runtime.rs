//! Running a plan on the GPU: streams, scratch buffers, the start gate,
//! event-timed tasks, and the measured Timeline.
//!
//! One iteration is issued from this thread in plan order. Each task: wait
//! on the end events of its predecessors on other streams, record its start
//! event, launch, record its end event. Warm-up iterations (cuBLAS
//! heuristics, module loading) run ungated and are timed on the host; the
//! timed iteration is issued behind a start gate sized from them
//! ([`crate::gate`]), synchronised once, refused if the GPU waited for the host at any task,
//! and only then are its events read, relative to the gate.
//!
//! How many hardware work queues the driver gives the streams
//! (`CUDA_DEVICE_MAX_CONNECTIONS`) must be decided before the driver starts;
//! [`execute`] only reads what is in effect and says so in the notes
//! ([`crate::queues`]).
//!
//! Scratch is shared by all tasks (contents are irrelevant for timing): GEMM
//! buffer sets sized for the largest shape, rotated so that together they are
//! at least four times L2 (as calibration does), and a copy pool through
//! which copies rotate; copies larger than the pool are split.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use crate::check::{check, PlanCheck};
use crate::error::ExecuteError;
use crate::gate::gate_ns;
use crate::launches::Launch;
use crate::plan::{plan, simulated_costs, ExecutionMode, ExecutionPlan};
use crate::record::{measured_timeline, spans_from_ms};
use crate::spin::SpinKernel;
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream};
use gpu::detect::{open_device, CudaLibrary, Device};
use gpu::error::{CublasContextExt, CudaContextExt, GpuError};
use gpu::gemm::{self, BufferSet, ColumnMajorCall};
use gpu::random;
use gpu::timing::timing_event;
use half::{bf16, f16};
use sim::cost::WorkCost;
use sim::scenario::Precision;
use sim::scenario::Scenario;
use sim::task_graph::TaskGraph;
use std::sync::Arc;
use std::time::Instant;
use timeline::Timeline;

/// The one-line message for a machine without a usable CUDA driver.
pub const NO_DRIVER_MESSAGE: &str = "no CUDA driver found (libcuda.so could not be loaded): `clustersim execute` runs the task graph on an NVIDIA GPU; on this machine use `clustersim simulate`, or `clustersim execute --dry-run` to see the execution plan";

/// The largest copy scratch buffer (bigger copies are split).
const COPY_POOL_MAX_BYTES: u64 = 1 << 30;
/// The most GEMM buffer sets rotated through.
const MAX_GEMM_SETS: u64 = 4;
/// How to execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecuteOptions {
    pub mode: ExecutionMode,
    /// Devices to spread ranks over (1 folds every rank onto GPU 0).
    pub gpus: u32,
    /// Untimed iterations before the timed one.
    pub warmup_iterations: u32,
}

impl Default for ExecuteOptions {
    fn default() -> Self {
        ExecuteOptions {
            mode: ExecutionMode::Synthetic,
            gpus: 1,
            warmup_iterations: 1,
        }
    }
}

/// A plan ready to run, built without touching a GPU.
pub struct Prepared {
    pub graph: TaskGraph,
    pub costs: Vec<WorkCost>,
    pub plan: ExecutionPlan,
    pub check: PlanCheck,
}

/// Builds the scenario's task graph (as `simulate` does), plans and checks it.
pub fn prepare(scenario: &Scenario, options: &ExecuteOptions) -> Result<Prepared, ExecuteError> {
    let (_, graph) = sim::build_graph(scenario);
    let costs = simulated_costs(scenario, &graph);
    let plan = plan(&graph, scenario, options.mode, options.gpus)?;
    let check = check(&plan, &graph)?;
    Ok(Prepared {
        graph,
        costs,
        plan,
        check,
    })
}

/// One executed iteration.
pub struct Execution {
    pub timeline: Timeline,
    pub plan: ExecutionPlan,
    pub check: PlanCheck,
    /// What ran where, as written to `header.scenario["executor"]`.
    pub notes: serde_json::Value,
    /// One line each: conditions that may have distorted the measurement
    /// (also under `notes`), for the caller to show.
    pub warnings: Vec<String>,
}

/// Checks that a driver loads and sees a device; returns the device count.
pub fn require_driver() -> Result<usize, ExecuteError> {
    if !CudaLibrary::Driver.is_present() {
        return Err(ExecuteError::NoGpu(NO_DRIVER_MESSAGE.into()));
    }
    let count = CudaContext::device_count().map_err(|error| {
        ExecuteError::NoGpu(format!(
            "the CUDA driver loaded but found no usable GPU ({error}); `clustersim execute` needs one"
        ))
    })?;
    if count <= 0 {
        return Err(ExecuteError::NoGpu(
            "the CUDA driver loaded but reports no GPU; `clustersim execute` needs one".into(),
        ));
    }
    Ok(count as usize)
}

/// Plans, checks and runs one iteration of `scenario`, returning the measured Timeline.
pub fn execute(scenario: &Scenario, options: &ExecuteOptions) -> Result<Execution, ExecuteError> {
    // Before anything initialises the driver.
    let observed_queues = crate::queues::observe();
    let devices = require_driver()?;
    let prepared = prepare(scenario, options)?;
    let plan = &prepared.plan;
    if plan.gpu_count > 1 {
        return Err(ExecuteError::Unsupported(format!(
            "spreading ranks over {} GPUs (NCCL communicators per stream) is planned but not implemented; use --gpus 1 to fold every rank onto one GPU",
            plan.gpu_count
        )));
    }
    if devices < plan.gpu_count as usize {
        return Err(ExecuteError::Unsupported(format!(
            "the plan uses {} GPUs but the driver sees {devices}",
            plan.gpu_count
        )));
    }
    // The plan's streams and the gate's.
    let queues = crate::queues::assess(&observed_queues, plan.streams.len() + 1);
    let counts = plan.launch_counts();
    if counts.gemms > 0 {
        CudaLibrary::Cublas.require("the executor's GEMMs")?;
    }
    let device = open_device(0)?;
    let spin = SpinKernel::load(&device)?;
    let mut gpu = GpuState::new(&device, plan, scenario.options.precision)?;
    let mut slowest_warmup_issue_ns: Option<u64> = None;
    for _ in 0..options.warmup_iterations {
        let warm_up = gpu.issue(&device, plan, &spin, 0)?;
        device
            .ctx
            .synchronize()
            .cuda(|| "waiting for the warm-up iteration".into())?;
        slowest_warmup_issue_ns = slowest_warmup_issue_ns.max(Some(warm_up.issue_ns));
    }
    let gate_ns = gate_ns(
        slowest_warmup_issue_ns,
        plan.tasks.len(),
        counts.gemms + counts.copies + counts.spins,
    );
    let issued = gpu.issue(&device, plan, &spin, gate_ns)?;
    device
        .ctx
        .synchronize()
        .cuda(|| "waiting for the timed iteration".into())?;
    if let Some(&first_task) = issued.gpu_waited_for_host.first() {
        return Err(ExecuteError::HostOutranGate {
            issue_ns: issued.issue_ns,
            gate_ns,
            waited: issued.gpu_waited_for_host.len(),
            tasks: plan.tasks.len(),
            first_task,
        });
    }
    let mut elapsed_ms = vec![(0.0f32, 0.0f32); prepared.graph.task_count()];
    for planned in &plan.tasks {
        let (start, end) = &issued.events[planned.task as usize];
        let read = |event: &CudaEvent| {
            issued
                .gate
                .elapsed_ms(event)
                .cuda(|| format!("reading the events of task #{}", planned.task))
        };
        elapsed_ms[planned.task as usize] = (read(start)?, read(end)?);
    }
    let spans = spans_from_ms(&elapsed_ms);
    let mut notes = notes(&device, plan, &spin, options, scenario.options.precision);
    notes["gate"] = serde_json::json!({
        "gate_ns": gate_ns,
        "sized_from": match slowest_warmup_issue_ns {
            Some(_) => "the slowest warm-up's host issue time",
            None => "a fixed allowance per task and launch (no warm-up)",
        },
        "slowest_warmup_issue_ns": slowest_warmup_issue_ns,
        "timed_issue_ns": issued.issue_ns,
    });
    notes["hardware_queues"] = queues.notes;
    let warnings: Vec<String> = queues.warning.into_iter().collect();
    let timeline = measured_timeline(
        scenario,
        &prepared.graph,
        &prepared.costs,
        options.mode,
        &spans,
        notes.clone(),
    );
    Ok(Execution {
        timeline,
        plan: prepared.plan,
        check: prepared.check,
        notes,
        warnings,
    })
}

/// How the run was done, for the Timeline header.
fn notes(
    device: &Device,
    plan: &ExecutionPlan,
    spin: &SpinKernel,
    options: &ExecuteOptions,
    precision: Precision,
) -> serde_json::Value {
    let communication = match plan.mode {
        ExecutionMode::Synthetic => "spins of the simulated duration (no data moved)",
        ExecutionMode::Real if plan.gpu_count == 1 => {
            "device-to-device copies of the same bytes: every rank of every group is on one GPU"
        }
        ExecutionMode::Real => "NCCL across GPUs",
    };
    serde_json::json!({
        "mode": plan.mode.name(),
        "device": device.info.name,
        "gpus_used": plan.gpu_count,
        "ranks_per_gpu": plan.ranks_per_gpu(),
        "rank_gpu": plan.rank_gpu,
        "streams": plan.streams.len(),
        "compute": match plan.mode {
            ExecutionMode::Real => "cuBLAS GEMMs of the pass's shapes in the scenario's precision (see gemm_precision); memory-bound kernels as device copies of the same HBM bytes",
            ExecutionMode::Synthetic => "single-block spins on %globaltimer of the simulated duration",
        },
        "communication": communication,
        "gemm_precision": precision.name(),
        "spin": {
            "timer": "%globaltimer (wall-clock ns; independent of the SM clock)",
            "architecture": spin.architecture,
            "globaltimer_step_ns": spin.globaltimer_step_ns,
            "nominal_sm_clock_hz": spin.nominal_clock_hz,
        },
        "warmup_iterations": options.warmup_iterations,
        "timing": "one CUDA event pair per task, read after the iteration; ns from the first task start",
        "simulated_iteration_ns": plan.simulated_iteration_ns,
    })
}

/// Events of one issued iteration.
struct Issued {
    gate: CudaEvent,
    /// (start, end) per task id.
    events: Vec<(CudaEvent, CudaEvent)>,
    /// Host time from the gate's launch to the last task's end event.
    issue_ns: u64,
    /// Tasks whose start had passed when the host finished issuing them
    /// (behind a gate only), in issue order.
    gpu_waited_for_host: Vec<u32>,
}

/// The GEMM buffer sets, in the scenario's precision (fp16 or bf16: the same
/// bytes, different tensor-core kernels).
enum GemmScratch {
    Fp16(Vec<BufferSet<f16>>),
    Bf16(Vec<BufferSet<bf16>>),
}

impl GemmScratch {
    fn len(&self) -> usize {
        match self {
            GemmScratch::Fp16(sets) => sets.len(),
            GemmScratch::Bf16(sets) => sets.len(),
        }
    }
}

/// `sets` buffer sets of A, B, C with `a_len`, `b_len`, `c_len` elements,
/// inputs filled with seeded random values.
fn gemm_scratch<T: gemm::GemmElement>(
    stream: &Arc<CudaStream>,
    (sets, a_len, b_len, c_len): (u64, u64, u64, u64),
) -> Result<Vec<BufferSet<T>>, GpuError> {
    let chunk: Vec<T> = random::signed_values(0x6578_6563, gemm::RANDOM_CHUNK_ELEMS, 1.0)
        .into_iter()
        .map(T::from_f32)
        .collect();
    let mut scratch = Vec::with_capacity(sets as usize);
    for _ in 0..sets {
        let alloc = |len: u64, name: &str| {
            stream
                .alloc_zeros::<T>(len as usize)
                .cuda(|| format!("allocating GEMM scratch {name} ({len} elements)"))
        };
        let mut set = BufferSet {
            a: alloc(a_len, "A")?,
            b: alloc(b_len, "B")?,
            c: alloc(c_len, "C")?,
        };
        gemm::fill_tiled(stream, &chunk, &mut set.a, "the executor's GEMMs")?;
        gemm::fill_tiled(stream, &chunk, &mut set.b, "the executor's GEMMs")?;
        scratch.push(set);
    }
    Ok(scratch)
}

/// Streams, cuBLAS handles and scratch for one plan.
struct GpuState {
    streams: Vec<Arc<CudaStream>>,
    /// A cuBLAS handle bound to each stream that launches GEMMs.
    blas: Vec<Option<CudaBlas>>,
    gemm_sets: GemmScratch,
    next_set: usize,
    copy_source: Option<CudaSlice<u8>>,
    copy_target: Option<CudaSlice<u8>>,
    copy_cursor: usize,
    gate_stream: Arc<CudaStream>,
}

impl GpuState {
    fn new(
        device: &Device,
        plan: &ExecutionPlan,
        precision: Precision,
    ) -> Result<GpuState, ExecuteError> {
        let ctx = &device.ctx;
        let streams = plan
            .streams
            .iter()
            .map(|slot| {
                ctx.new_stream().cuda(|| {
                    format!(
                        "creating the {} stream of rank {}",
                        slot.kind.name(),
                        slot.rank
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut needs_blas = vec![false; streams.len()];
        let (mut a_len, mut b_len, mut c_len, mut copy_max) = (0u64, 0u64, 0u64, 0u64);
        for planned in &plan.tasks {
            for launch in &planned.launches {
                match launch {
                    Launch::Gemm { shape, layout } => {
                        ColumnMajorCall::for_shape(shape, *layout)?;
                        needs_blas[planned.stream as usize] = true;
                        a_len = a_len.max(shape.batch * shape.m * shape.k);
                        b_len = b_len.max(shape.batch * shape.k * shape.n);
                        c_len = c_len.max(shape.batch * shape.m * shape.n);
                    }
                    Launch::DeviceCopy { bytes } => copy_max = copy_max.max(*bytes),
                    Launch::Spin { .. } | Launch::Collective { .. } => {}
                }
            }
        }
        let blas = streams
            .iter()
            .zip(&needs_blas)
            .map(|(stream, &needed)| {
                needed
                    .then(|| {
                        CudaBlas::new(stream.clone())
                            .cublas(|| "creating a cuBLAS handle per stream".into())
                    })
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;

        let l2 = device.info.l2_cache_bytes.max(1 << 20);
        let set_bytes = (a_len + b_len + c_len) * 2;
        let mut sets = if set_bytes == 0 {
            0
        } else {
            gpu::timing::slots_covering(4 * l2, set_bytes, MAX_GEMM_SETS)
        };
        let copy_pool = if copy_max == 0 {
            0
        } else {
            copy_max.max(4 * l2).min(COPY_POOL_MAX_BYTES)
        };
        let (free_bytes, _) = ctx
            .mem_get_info()
            .cuda(|| "querying free memory for the executor's scratch".into())?;
        let budget = free_bytes as u64 / 2;
        while sets > 1 && sets * set_bytes + 2 * copy_pool > budget {
            sets -= 1;
        }
        let needed = sets * set_bytes + 2 * copy_pool;
        if needed > budget {
            return Err(ExecuteError::Unsupported(format!(
                "scratch for the largest GEMM and copy needs {needed} bytes, more than half of the {free_bytes} bytes free"
            )));
        }
        let stream = &device.stream;
        let lengths = (sets, a_len, b_len, c_len);
        let gemm_sets = match precision {
            Precision::Fp16 => GemmScratch::Fp16(gemm_scratch::<f16>(stream, lengths)?),
            // `plan` refuses FP8 scenarios; bf16 is the format of their
            // other GEMMs.
            Precision::Bf16 | Precision::Fp8 => {
                GemmScratch::Bf16(gemm_scratch::<bf16>(stream, lengths)?)
            }
        };
        let pool = |name: &str| -> Result<Option<CudaSlice<u8>>, GpuError> {
            if copy_pool == 0 {
                return Ok(None);
            }
            stream
                .alloc_zeros::<u8>(copy_pool as usize)
                .map(Some)
                .cuda(|| format!("allocating the {copy_pool}-byte copy {name}"))
        };
        let copy_source = pool("source")?;
        let copy_target = pool("target")?;
        stream
            .synchronize()
            .cuda(|| "filling the executor's scratch".into())?;
        let gate_stream = ctx
            .new_stream()
            .cuda(|| "creating the gate stream".into())?;
        Ok(GpuState {
            streams,
            blas,
            gemm_sets,
            next_set: 0,
            copy_source,
            copy_target,
            copy_cursor: 0,
            gate_stream,
        })
    }

    /// Issues one iteration behind a gate of `gate_ns` (0: no spin, just an event).
    fn issue(
        &mut self,
        device: &Device,
        plan: &ExecutionPlan,
        spin: &SpinKernel,
        gate_ns: u64,
    ) -> Result<Issued, ExecuteError> {
        let ctx = &device.ctx;
        let issue_started = Instant::now();
        spin.launch(&self.gate_stream, gate_ns)?;
        let gate = timing_event(ctx, "the start gate")?;
        gate.record(&self.gate_stream)
            .cuda(|| "recording the start gate".into())?;
        for stream in &self.streams {
            stream
                .wait(&gate)
                .cuda(|| "holding a stream at the start gate".into())?;
        }
        let mut events: Vec<Option<(CudaEvent, CudaEvent)>> =
            (0..plan.tasks.len()).map(|_| None).collect();
        let mut gpu_waited_for_host = Vec::new();
        for planned in &plan.tasks {
            let index = planned.task as usize;
            let stream = self.streams[planned.stream as usize].clone();
            let what = || format!("task #{index} ({})", planned.kind.name());
            for &waited in &planned.waits {
                let (_, end) = events[waited as usize]
                    .as_ref()
                    .expect("the plan check ensures waits refer to issued tasks");
                stream
                    .wait(end)
                    .cuda(|| format!("making {} wait on task #{waited}", what()))?;
            }
            let start = timing_event(ctx, "a task start")?;
            let end = timing_event(ctx, "a task end")?;
            start
                .record(&stream)
                .cuda(|| format!("recording the start of {}", what()))?;
            for launch in &planned.launches {
                self.launch(planned.stream as usize, launch, spin).map_err(
                    |error| match error {
                        ExecuteError::Gpu(GpuError::Cuda { context, source }) => {
                            ExecuteError::Gpu(GpuError::Cuda {
                                context: format!("{context} for {}", what()),
                                source,
                            })
                        }
                        other => other,
                    },
                )?;
            }
            end.record(&stream)
                .cuda(|| format!("recording the end of {}", what()))?;
            // Behind a gate, a start already passed means the GPU reached
            // this task before the host had finished issuing it.
            if gate_ns > 0
                && start
                    .try_is_complete()
                    .cuda(|| format!("asking whether {} had started", what()))?
            {
                gpu_waited_for_host.push(planned.task);
            }
            events[index] = Some((start, end));
        }
        let issue_ns = u64::try_from(issue_started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let events = events
            .into_iter()
            .map(|pair| pair.expect("the plan check ensures every task is issued"))
            .collect();
        Ok(Issued {
            gate,
            events,
            issue_ns,
            gpu_waited_for_host,
        })
    }

    fn launch(
        &mut self,
        stream_index: usize,
        launch: &Launch,
        spin: &SpinKernel,
    ) -> Result<(), ExecuteError> {
        let stream = &self.streams[stream_index];
        match launch {
            Launch::Spin { duration_ns } => spin.launch(stream, *duration_ns)?,
            Launch::Gemm { shape, layout } => {
                let call = ColumnMajorCall::for_shape(shape, *layout)?;
                let blas = self.blas[stream_index]
                    .as_ref()
                    .expect("a handle exists for every stream with GEMMs");
                let index = self.next_set;
                self.next_set = (index + 1) % self.gemm_sets.len();
                // SAFETY: every set holds at least batch·m·k, batch·k·n and
                // batch·m·n elements for every GEMM of the plan (sized in `new`).
                let launched = match &mut self.gemm_sets {
                    GemmScratch::Fp16(sets) => unsafe {
                        gemm::launch(blas, &call, &mut sets[index])
                    },
                    GemmScratch::Bf16(sets) => unsafe {
                        gemm::launch(blas, &call, &mut sets[index])
                    },
                };
                launched.cublas(|| format!("launching a {} GEMM", gemm::describe(shape)))?;
            }
            Launch::DeviceCopy { bytes } => {
                let (Some(source), Some(target)) = (&self.copy_source, &mut self.copy_target)
                else {
                    unreachable!("a copy pool exists when the plan has copies")
                };
                let pool = source.len();
                let mut left = *bytes as usize;
                while left > 0 {
                    let size = left.min(pool);
                    if self.copy_cursor + size > pool {
                        self.copy_cursor = 0;
                    }
                    let range = self.copy_cursor..self.copy_cursor + size;
                    let from = source.slice(range.clone());
                    let mut to = target.slice_mut(range);
                    stream
                        .memcpy_dtod(&from, &mut to)
                        .cuda(|| format!("launching a device copy of {size} bytes"))?;
                    // Next copy starts at a fresh 256-byte-aligned offset.
                    self.copy_cursor = (self.copy_cursor + size).next_multiple_of(256);
                    left -= size;
                }
            }
            Launch::Collective { .. } => {
                return Err(ExecuteError::Unsupported(
                    "NCCL collectives across GPUs are planned but not implemented".into(),
                ))
            }
        }
        Ok(())
    }
}
