//! How many tasks a scenario's graph gets, estimated before it is built:
//! the host-memory check (`sim::host_memory`) refuses a simulation whose
//! estimate × [`BYTES_PER_TASK`] exceeds what the machine has, scenario
//! validation refuses only graphs past 32-bit task ids (or past
//! `CLUSTERSIM_MAX_TASKS` when that is set), and lowering sizes the graph
//! with the same estimate.

use crate::bucket_sizes::{layers_per_bucket, CPU_ADAM_TILE_PARAMS, DEFAULT_ZERO2_BUCKET_PARAMS};
use crate::kinds::Recompute;
use crate::layout::Layout;
use crate::options::TrainingOptions;
use crate::resolved::Scenario;
use models::sharding::{parameters_of_layers, parameters_on_rank};
use models::ModelSpec;

/// The most tasks a graph can hold: task ids are `u32`
/// ([`crate::task_columns::TaskColumns::push`]). Not a memory guess: memory
/// is `sim::host_memory`'s to judge.
pub const MAX_TASKS: u64 = u32::MAX as u64;

/// Peak resident bytes per task of [`estimated_task_count`]: the task's
/// columns, its CSR edges (written in place by lowering's second edge
/// pass), the engine's start, end and in-degree, and the metrics' per-rank
/// index. `/usr/bin/time` peak RSS of the 1T model (t=8 p=64, B = 512 d):
/// 454,208 KiB on 3,072 GPUs (d=6, 6,488,064 estimated tasks) = 71.7 B;
/// 4,773,760 KiB on 32,768 (d=64, 69,206,016) = 70.6 B; 9,539,888 KiB on
/// 65,536 (d=128, 138,412,032) = 70.6 B; rounded up to 72 (the petgraph
/// engine with its eager Timeline peaked at 1,275,208 KiB on 3,072 GPUs, 201 B).
pub const BYTES_PER_TASK: u64 = 72;

/// Peak resident bytes per task of [`estimated_task_count`] in full
/// expansion kept as the representative's graph (`sim::replicated_run`),
/// beyond that graph (the representative's share at [`BYTES_PER_TASK`]) and
/// [`BYTES_PER_GPU`]: every task's start (8 B) and the allocator's slack.
/// `/usr/bin/time` peak RSS of the 1T model (t=8 p=64, B = 512 d,
/// `--no-symmetry`): 569,508 KiB on 24,576 GPUs (d=48, 51,904,512
/// estimated tasks) less 77.9 MB and 20.9 MB = 9.3 B; 1,988,688 KiB on
/// 100,352 (d=196, 211,943,424) less 77.9 MB and 85.3 MB = 8.8 B; rounded
/// up to 10.
pub const BYTES_PER_REPLICATED_TASK: u64 = 10;

/// Peak address space per task in full expansion kept as the
/// representative's graph, beyond that graph and [`ADDRESS_BYTES_PER_GPU`]
/// (as [`BYTES_PER_REPLICATED_TASK`]): the 1T model above on 24,576 GPUs
/// runs under `ulimit -v 600000` (614.4 MB) and aborts under 560,000 KiB:
/// (614.4 MB − 1,081,345 × 111 B − 24,576 × 1,040 B) ÷ 51,904,512 = 9.0 B;
/// on 100,352 GPUs it runs under `ulimit -v 2050000` (2,099 MB): 8.9 B;
/// rounded up to 12 (mappings come in pages).
pub const ADDRESS_BYTES_PER_REPLICATED_TASK: u64 = 12;

/// [`BYTES_PER_REPLICATED_TASK`] under `--contention` (the event loop over
/// the representative's graph, `engine::replicated_flows`): every task's
/// start and predecessors left, each flow task's end, the starts laid out
/// again by full id at the end, the fabric and the route cache.
/// `/usr/bin/time` peak RSS of the 1T model on `selene:12544`: 1,163,232
/// KiB on 24,576 GPUs (d=48) less 77.9 MB and 20.9 MB = 21.0 B; 4,244,032
/// KiB on 100,352 (d=196) less 77.9 MB and 85.3 MB = 19.7 B; rounded up
/// to 22.
pub const BYTES_PER_REPLICATED_FLOW_TASK: u64 = 22;

/// [`ADDRESS_BYTES_PER_REPLICATED_TASK`] under `--contention`: the 1T
/// model on `selene:12544` at 24,576 GPUs runs under `ulimit -v 1200000`
/// (1,228.8 MB) and aborts under 1,100,000 KiB: (1,228.8 MB − 120.0 MB −
/// 25.6 MB) ÷ 51,904,512 = 20.9 B; rounded up to 24 (mappings come in
/// pages).
pub const ADDRESS_BYTES_PER_REPLICATED_FLOW_TASK: u64 = 24;

/// Peak resident bytes per GPU beyond [`BYTES_PER_TASK`] (rank groups,
/// placement, per-rank metrics), which matter where tasks per GPU are few:
/// the tiny model on 1,000,000 GPUs (t=1 p=2 d=500,000, B=1,000,000,
/// 24,000,000 estimated tasks, `cli/tests/reliability/topo1m.json`) peaks at
/// 2,508,972 KiB RSS: (2.569 GB − 24 M × 72 B) ÷ 10⁶ = 841 B, rounded to 850.
pub const BYTES_PER_GPU: u64 = 850;

/// Peak address space per task (what `ulimit -v` limits): the 1T model on
/// 3,072 GPUs runs under `ulimit -v 700000` (716.8 MB) = 110.5 B a task,
/// rounded to 111.
pub const ADDRESS_BYTES_PER_TASK: u64 = 111;

/// Peak address space per GPU beyond [`ADDRESS_BYTES_PER_TASK`]: the tiny
/// model on 1,000,000 GPUs above runs under `ulimit -v 3600000` (3.686 GB)
/// and aborts under 3,300,000 KiB: 3.686 GB − 24 M × 111 B = 1,022 B, rounded
/// to 1,040.
pub const ADDRESS_BYTES_PER_GPU: u64 = 1_040;

/// The environment variable that sets a task limit below [`MAX_TASKS`]
/// (none by default; the CLI fuzzer sets one to keep every run small).
pub const TASK_LIMIT_VARIABLE: &str = "CLUSTERSIM_MAX_TASKS";

/// The task limit in force: [`MAX_TASKS`], or the whole number in
/// `CLUSTERSIM_MAX_TASKS` when that is smaller. Anything else in the
/// variable is ignored.
pub fn task_limit() -> u64 {
    static LIMIT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var(TASK_LIMIT_VARIABLE)
            .ok()
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map_or(MAX_TASKS, |limit| limit.min(MAX_TASKS))
    })
}

/// How finely gradients and the optimizer step are cut up: the tasks a
/// scenario gets beyond one per pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GradientSplits {
    /// ZeRO-Offload: gradient buckets of every backward, each with its
    /// reduce-scatter and copies to the host (0 without offload).
    pub offload_buckets: u64,
    /// CPU Adam tiles per rank and iteration, each with its upload (0 without offload).
    pub adam_tiles: u64,
    /// Overlapped gradient reduction with buckets: gradient buckets of each
    /// chunk's last backward, each with its all-reduce (0 otherwise).
    pub reduce_buckets: u64,
    /// ZeRO-3: units (layers) per chunk, each pass cut into them with an
    /// all-gather (and a reduce-scatter) each (0 otherwise).
    pub sharded_units: u64,
    /// ZeRO-2: gradient buckets of every backward, each with its reduce-scatter (0 otherwise).
    pub sharded_buckets: u64,
    /// The schedule splits every backward into an input- and a
    /// weight-gradient pass (zero-bubble schedules): one more pass each.
    pub split_backward: bool,
    /// A mixture of experts' MoE layers in the largest chunk: with a host
    /// lane every forward (and full recompute) is cut at each one's token
    /// dispatcher synchronization into one more segment, a pass's tasks
    /// each (`sim::cost::host_syncs`).
    pub host_sync_segments: u64,
    /// DualPipe's overlapped F&B pairs (`pair_overlap`): the MoE layers in
    /// the largest chunk, each cutting a pair's forward and backward at its
    /// dispatch and combine into more pieces, with their all-to-all tasks
    /// (0 without pair overlap).
    pub pair_overlap_layers: u64,
}

impl GradientSplits {
    /// The splits of `model` under `layout` and `options` (saturating; any
    /// layout, even one validation refuses).
    pub fn of(model: &ModelSpec, layout: &Layout, options: &TrainingOptions) -> GradientSplits {
        let sharding = layout.sharding();
        let per_layer = parameters_of_layers(model, sharding, 1, false, false);
        let layers = u32::try_from(model.layers).unwrap_or(u32::MAX);
        let buckets = |bucket_params: u64, layers: u32| -> u64 {
            layers.div_ceil(layers_per_bucket(bucket_params, per_layer, layers)) as u64
        };
        let mut splits = GradientSplits::default();
        // A layout with more chunks than layers is refused by validation
        // anyway; it counts no ZeRO-Offload splits.
        if let Some(offload) = options
            .offload
            .filter(|_| u64::from(layout.chunks.get()) <= model.layers)
        {
            splits.offload_buckets = buckets(offload.bucket_params, layers).max(1);
            // Each bucket's shard is rounded up to whole parameters per rank.
            let shard = parameters_on_rank(model, sharding, 0)
                .div_ceil(layout.data_parallel.get() as u64)
                .saturating_add(splits.offload_buckets);
            splits.adam_tiles = shard.div_ceil(CPU_ADAM_TILE_PARAMS);
        }
        // The most layers a chunk builds (`ZeroStage::layers_per_chunk`: the
        // uneven split counts the embedding and the loss as layers).
        let per_chunk = u32::try_from(sharding.layers_per_chunk(model.layers)).unwrap_or(u32::MAX);
        if model.moe.is_some() {
            splits.host_sync_segments = per_chunk as u64;
            if options.pair_overlap {
                splits.pair_overlap_layers = per_chunk as u64;
            }
        }
        if let Some(bucket_params) = options.grad_reduce_bucket_params {
            splits.reduce_buckets = buckets(bucket_params, per_chunk).max(1);
        }
        if options.overlap_param_gather && layout.replicas() > 1 {
            // The first forward of every chunk in buckets, each with its all-gather.
            let bucket = options.grad_reduce_bucket_params.unwrap_or(u64::MAX);
            splits.sharded_buckets = buckets(bucket, per_chunk).max(1);
        }
        if options.sharding >= crate::zero_stage::ZeroStage::Gradients && layout.replicas() > 1 {
            if options.sharding == crate::zero_stage::ZeroStage::Full {
                splits.sharded_units = per_chunk.max(1) as u64;
            } else {
                let bucket = options
                    .grad_reduce_bucket_params
                    .unwrap_or(DEFAULT_ZERO2_BUCKET_PARAMS);
                splits.sharded_buckets = buckets(bucket, per_chunk).max(1);
            }
        }
        splits
    }
}

/// About how many tasks a simulation of `layout` builds: for every replica,
/// stage, chunk, microbatch and pass (forward, backward, and a recompute when
/// there is one) a compute task per tensor rank and the tensor all-reduce,
/// plus the host lane's two issue tasks when the host is simulated; a
/// backward cut into gradient buckets counts each bucket as a pass, with its
/// collectives and copies, and CPU Adam tiles count with their uploads;
/// times the iterations simulated. Saturating: it only has to be compared.
pub fn estimated_task_count(
    layout: &Layout,
    recompute: Recompute,
    simulates_host: bool,
    iterations: u32,
    splits: GradientSplits,
) -> u64 {
    let microbatches = u64::from(layout.microbatches.get());
    estimated_task_count_at(
        layout,
        microbatches,
        recompute,
        simulates_host,
        iterations,
        splits,
    )
}

/// [`estimated_task_count`] at `microbatches` microbatches per pipeline:
/// validation estimates a layout whose batch gives none (a problem it has
/// already listed) at 0.
pub(super) fn estimated_task_count_at(
    layout: &Layout,
    microbatches: u64,
    recompute: Recompute,
    simulates_host: bool,
    iterations: u32,
    splits: GradientSplits,
) -> u64 {
    let product = |factors: &[u64]| factors.iter().fold(1u64, |a, &b| a.saturating_mul(b));
    let (t, p, d) = (
        layout.tensor_parallel.get() as u64,
        layout.pipeline_parallel.get() as u64,
        // Every context-parallel rank's tensor group runs every pass.
        layout.replicas() as u64,
    );
    let (v, m) = (u64::from(layout.chunks.get()), microbatches);
    let offload = splits.offload_buckets > 0;
    // An offloaded backward is its buckets, counted below; ZeRO-Offload
    // programs have no host lane (yet).
    let passes = if recompute == Recompute::None { 2 } else { 3 } - offload as u64
        + splits.split_backward as u64;
    let per_pass = t + 1 + 2 * (simulates_host && !offload) as u64;
    let per_iteration = [
        product(&[d, p, v, m, passes, per_pass]),
        // ZeRO-Offload: every backward's buckets (a pass, a reduce-scatter
        // per tensor rank, a copy per rank) and the tiles (Adam and upload per rank).
        product(&[m, splits.offload_buckets, d * per_pass + t + d * t]),
        product(&[2, d, t, splits.adam_tiles]),
        // Overlapped reduction: the last backward's buckets and their all-reduces.
        product(&[d, p, v, splits.reduce_buckets, per_pass + t]),
        // ZeRO-3: every pass's units with their all-gathers, reduce-scatters
        // and HSDP all-reduces; ZeRO-2: every backward's buckets.
        product(&[d, p, v, m, passes, splits.sharded_units, per_pass + 3 * t]),
        product(&[d, p, v, m, splits.sharded_buckets, per_pass + 2 * t]),
        // Host synchronizations: each forward's (and full recompute's) extra
        // segments, with their all-to-all task.
        if simulates_host && !offload {
            product(&[
                d,
                p,
                v,
                m,
                1 + (recompute == Recompute::Full) as u64,
                splits.host_sync_segments,
                per_pass + 1,
            ])
        } else {
            0
        },
        // Overlapped pairs: per MoE layer, a forward's and a backward's
        // pieces and all-to-alls (measured: 5 tasks a layer and pass with a
        // host lane at t = 1; counted as per_pass + 1).
        product(&[d, p, v, m, 2, splits.pair_overlap_layers, per_pass + 1]),
    ]
    .into_iter()
    .fold(0u64, u64::saturating_add);
    product(&[per_iteration, iterations.max(1) as u64])
}

impl Scenario {
    /// [`estimated_task_count`] of this validated scenario.
    pub fn estimated_tasks(&self) -> u64 {
        estimated_task_count(
            &self.layout,
            self.recompute,
            self.stack.host.is_some(),
            self.iterations,
            GradientSplits {
                split_backward: self.schedule.splits_backward(),
                ..GradientSplits::of(&self.model, &self.layout, &self.options)
            },
        )
    }
}
