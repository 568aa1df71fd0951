//! `clustersim run-plan`: from one simulated iteration to the whole training
//! run (issue 35). The scenario is simulated once for its failure-free
//! iteration time, tokens per iteration and the bytes each rank checkpoints
//! (its weights and optimizer states); the `goodput` crate adds failures,
//! checkpoints, restarts, energy and cost. Every default comes from the
//! `goodput` crate with its source, and the report lists each value used.

use super::fewer_replicas::DegradedRun;
use super::run_plan_parse::{parse_count, parse_interval};
use super::run_plan_report::{write_charts, write_summary, Charts};
use super::run_plan_scale::scale_inputs;
use super::scenario_args::ScenarioArgs;
use crate::exit::user_error;
use clap::{Args, ValueEnum};
use goodput::checkpoint::{CheckpointMode, StorageSpec};
use goodput::energy::GpuKind;
use goodput::failure_rates::ReliabilitySpec;
use goodput::recovery::{RecoveryPolicy, RestartSpec};
use goodput::{IntervalChoice, MonteCarloSpec, RunPlan, TrainingTarget};
use sim::scenario::Scenario;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  clustersim run-plan --model llama3.1-405b --topology dgx-h100-superpod:2048 --tp 8 --cp 2 --pp 16 \\
      --dp 64 --schedule interleaved --chunks 2 --account-for-embedding-in-pipeline-split \\
      --account-for-loss-in-pipeline-split --global-batch 2048 --tokens 15T --plot-interval interval.svg
  clustersim run-plan scenario.json --steps 100000 --failures none --json

Defaults and their sources (each printed with the report):
  failures        meta-rsc1: 6.50 failures per 1000 node-days (Kokolis et al., arXiv 2410.21680)
  storage         DGX SuperPOD H100 RA V11 Table 6, Better: 4 GB/s write, 8 GB/s read per node;
                  20 GB/s write, 40 GB/s read per 32 nodes
  detection       600 s: PyTorch's NCCL timeout (an upper bound; a crash surfaces sooner)
  initialization  300 s: torchtitan's init timeout (an upper bound)
  rescheduling    0 s: no public figure (--reschedule-s to add the scheduler's wait)
  node power      Hopper: 7,752 W per 8-GPU node while training (76 % of 10.2 kW, arXiv 2506.14551)
  PUE             1.58 (Uptime Institute, 2023 industry average)
  carbon          480 g CO2e/kWh (Ember, world 2023)
  price           none (--price-per-gpu-hour; cost is omitted without it)")]
pub struct RunPlanArgs {
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Train on this many tokens (suffixes K, M, B, G, T: 15T), rounded up to whole iterations.
    #[arg(long, value_name = "N", value_parser = parse_count, required_unless_present = "steps", conflicts_with = "steps")]
    pub tokens: Option<u64>,
    /// Train for this many iterations (optimizer steps).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub steps: Option<u64>,
    /// Failure rates: meta-rsc1 (default) or meta-rsc2 (Meta's two research
    /// clusters, all causes per node), hpn-network (Alibaba HPN's NIC-link and
    /// leaf-switch rates, per link and per leaf the job's NICs use), several
    /// joined by commas (meta-rsc1,hpn-network: an upper bound, as Meta's
    /// node rate already counts some link failures), or none.
    #[arg(long, value_name = "PRESET[,PRESET]", default_value = "meta-rsc1")]
    pub failures: String,
    /// A failure rate of your own, added to the presets': COMPONENT:RATE in
    /// failures per component-hour, the component one of gpu, gpu_memory
    /// (one each per GPU), nic (per NIC), node, software (per node) or switch
    /// (per leaf switch the job uses); e.g. software:2e-5 for a hang every
    /// 50,000 node-hours. Repeat for several; the report names each "input".
    #[arg(long = "failure-rate", value_name = "COMPONENT:RATE", value_parser = super::run_plan_parse::parse_failure_rate)]
    pub failure_rates: Vec<goodput::failure_rates::ComponentRate>,
    /// Where checkpoints fall: optimal (the interval minimizing expected time,
    /// in whole iterations), N (every N iterations) or a time (30min, 2h, 600s).
    #[arg(long, value_name = "optimal|N|TIME", default_value = "optimal", value_parser = parse_interval)]
    pub checkpoint_every: IntervalChoice,
    /// Asynchronous checkpoints: training waits for the copy to host memory
    /// (at the profile's device-to-host PCIe rate) while the write to storage overlaps.
    #[arg(long)]
    pub async_checkpoint: bool,
    /// How a failure is recovered from.
    #[arg(long, value_enum, default_value_t = Recovery::FullRestart)]
    pub recovery: Recovery,
    /// Hot spares: seconds to bring a spare node into the job.
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub spare_swap_s: f64,
    /// Fewer replicas: seconds from a node's failure until it is repaired
    /// and the job grows back (needed: no public figure was found).
    #[arg(long, value_name = "S")]
    pub repair_s: Option<f64>,
    /// Storage write bandwidth per node, GB/s (default 4).
    #[arg(long, value_name = "GB/s")]
    pub storage_node_write_gbps: Option<f64>,
    /// Storage read bandwidth per node, GB/s (default 8).
    #[arg(long, value_name = "GB/s")]
    pub storage_node_read_gbps: Option<f64>,
    /// Storage write bandwidth of the whole system, GB/s (default 20 per 32 nodes).
    #[arg(long, value_name = "GB/s")]
    pub storage_write_gbps: Option<f64>,
    /// Storage read bandwidth of the whole system, GB/s (default 40 per 32 nodes).
    #[arg(long, value_name = "GB/s")]
    pub storage_read_gbps: Option<f64>,
    /// Seconds from a failure to the job knowing of it (default 600).
    #[arg(long, value_name = "S")]
    pub detection_s: Option<f64>,
    /// Seconds the scheduler takes to replace a node (default 0: no public figure).
    #[arg(long, value_name = "S", default_value_t = 0.0)]
    pub reschedule_s: f64,
    /// Seconds of process start and communicator set-up before the checkpoint load (default 300).
    #[arg(long, value_name = "S")]
    pub initialization_s: Option<f64>,
    /// GPU power when idle, watts: models power per GPU between idle and TDP
    /// (with --utilization) plus each node's overhead, instead of measured node power.
    #[arg(long, value_name = "W")]
    pub gpu_idle_w: Option<f64>,
    /// Override of the GPU's datasheet TDP, watts.
    #[arg(long, value_name = "W")]
    pub gpu_tdp_w: Option<f64>,
    /// With --gpu-idle-w: the share of the idle-to-TDP span a training step draws.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.9)]
    pub utilization: f64,
    /// A node's power while training, watts (default on 8-GPU Hopper nodes: 7,752).
    #[arg(long, value_name = "W")]
    pub node_training_w: Option<f64>,
    /// Power usage effectiveness (default 1.58).
    #[arg(long)]
    pub pue: Option<f64>,
    /// Price per GPU-hour (any currency); cost is omitted without it.
    #[arg(long, value_name = "PRICE")]
    pub price_per_gpu_hour: Option<f64>,
    /// Grid carbon intensity, g CO2e per kWh (default 480).
    #[arg(long, value_name = "G")]
    pub carbon_g_per_kwh: Option<f64>,
    /// Monte-Carlo trials over the run (0: closed form only).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub trials: u32,
    /// Seed of the Monte-Carlo (same seed, same report).
    #[arg(long, default_value_t = 0)]
    pub trial_seed: u64,
    /// The distribution of the times between failures the Monte-Carlo
    /// draws, at the job's MTBF: `exponential` (the closed form's), or
    /// `weibull:K`, a renewal process of shape K (0.1–10). Schroeder and
    /// Gibson (DSN 2006) found HPC systems' times between failures Weibull
    /// with a decreasing hazard, K < 1: failures cluster after a restart.
    /// The closed form, its goodput and the optimal interval stay exponential.
    #[arg(
        long,
        value_name = "exponential|weibull:K",
        default_value = "exponential",
        value_parser = goodput::failure_distribution::FailureDistribution::parse
    )]
    pub failure_distribution: goodput::failure_distribution::FailureDistribution,
    /// A GPU slow for the whole run: rank R's compute kernels take F times as
    /// long (repeat for several; see `simulate --slow-rank`).
    #[arg(long = "slow-rank", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_rank)]
    pub slow_ranks: Vec<sim::straggler::SlowRank>,
    /// A slow link for the whole run: the NIC rank R sends through delivers
    /// 1/F of its bandwidth (repeat for several; see `simulate --slow-nic`).
    #[arg(long = "slow-nic", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_nic)]
    pub slow_nics: Vec<sim::slow_link::SlowNic>,
    /// A slow NVLink for the whole run: rank R's GPU at 1/F of its NVLink
    /// bandwidth (repeat for several; see `simulate --slow-nvlink`).
    #[arg(long = "slow-nvlink", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_nvlink)]
    pub slow_nvlinks: Vec<sim::slow_link::SlowNvlink>,
    /// A slow PCIe link for the whole run: rank R's GPU at 1/F of its PCIe
    /// bandwidth (repeat for several; see `simulate --slow-pcie`).
    #[arg(long = "slow-pcie", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_pcie)]
    pub slow_pcies: Vec<sim::slow_link::SlowPcie>,
    /// Slow switch uplinks: the cables from the leaf switch above rank R's
    /// NIC up to the next level of the fat tree run at 1/F of their
    /// bandwidth (2 for optics trained at half speed). A leaf serves one NIC
    /// rail of a block of nodes (a = switch radix ÷ 2 of them); every
    /// collective or transfer whose nodes span several blocks and that has a
    /// member on that rail in that block runs its network tier at the NIC's
    /// rate ÷ F. Every replica is then simulated. Repeat for several leaves;
    /// with --contention the leaf's up and down cables carry 1/F instead.
    #[arg(long = "slow-uplink", value_name = "R:F", value_parser = super::slow_ranks::parse_slow_uplink)]
    pub slow_uplinks: Vec<sim::slow_uplink::SlowUplink>,
    /// A spread of GPU speeds for the whole run: every rank's kernels take
    /// the profile's time × e^(SIGMA·Z), drawn per rank from --seed (see
    /// `simulate --rank-spread`).
    #[arg(long = "rank-spread", value_name = "lognormal:SIGMA", value_parser = super::slow_ranks::parse_rank_spread)]
    pub rank_spread: Option<sim::rank_spread::RankSpread>,
    /// Simulate with the factors a `clustersim fit` learned (FIT.json).
    #[arg(long, value_name = "FIT.json")]
    pub fit: Option<PathBuf>,
    /// A mixture-of-experts run's routing, iteration by iteration (see
    /// `simulate --routing-trace`): every line simulated, the run planned at
    /// the trace's mean iteration time, the distribution reported.
    #[arg(long = "routing-trace", value_name = "FILE")]
    pub routing_trace: Option<PathBuf>,
    /// Sequence lengths, iteration by iteration (see `simulate
    /// --seq-len-trace`): every length simulated, the run planned at the
    /// trace's mean iteration time and mean tokens per iteration, the
    /// distribution reported.
    #[arg(
        long = "seq-len-trace",
        value_name = "FILE",
        conflicts_with = "routing_trace"
    )]
    pub seq_len_trace: Option<PathBuf>,
    /// Plan a layout that does not fit in GPU memory anyway (refused otherwise).
    #[arg(long)]
    pub ignore_memory: bool,
    /// Print the report as one JSON document (schemas/run-plan.schema.json).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub charts: Charts,
}

/// Recovery policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Recovery {
    /// Reschedule, initialize and load the last checkpoint from storage.
    FullRestart,
    /// A spare node replaces the failed one in --spare-swap-s.
    HotSpares,
    /// Snapshots in peers' memory, copied at the node's NIC rate per GPU.
    InMemory,
    /// Restart at once without the failed node's data-parallel replicas,
    /// train on the rest (their throughput simulated) until --repair-s,
    /// then save and grow back.
    FewerReplicas,
}

pub fn run(args: RunPlanArgs) -> anyhow::Result<()> {
    let fit = args.fit.as_deref().map(super::fit::load).transpose()?;
    let mut scenario = args.scenario.resolve()?;
    if let Some(record) = &fit {
        record.values().apply(&mut scenario);
    }
    args.charts.check()?;
    let stragglers = super::slow_ranks::stragglers_of(
        &scenario,
        super::slow_ranks::SlowFlags {
            ranks: &args.slow_ranks,
            nics: &args.slow_nics,
            nvlinks: &args.slow_nvlinks,
            pcies: &args.slow_pcies,
            uplinks: &args.slow_uplinks,
        },
        args.rank_spread,
    )?;
    let expansion = sim::Expansion::Auto;
    crate::exit::check_host_memory_of(&scenario, expansion, &stragglers)?;
    let report = sim::simulate_with_stragglers(&scenario, expansion, &stragglers)
        .map_err(crate::exit::simulation_error)?;
    let peak = report.peak_memory();
    if !args.ignore_memory && !report.memory.iter().all(|stage| stage.fits) {
        return Err(user_error(format!(
            "the layout does not fit: stage {} needs {:.1} GiB of {:.1} GiB per GPU, so the run \
             cannot start (try recompute, more pipeline stages or context parallelism, or \
             --ignore-memory to plan it anyway)",
            peak.stage,
            peak.total_bytes as f64 / f64::from(1u32 << 30),
            peak.capacity_bytes as f64 / f64::from(1u32 << 30)
        )));
    }
    let degraded = match args.recovery {
        Recovery::FewerReplicas if !stragglers.is_empty() => {
            return Err(user_error(
                "--recovery fewer-replicas with --slow-rank, --slow-nic, --slow-nvlink or --rank-spread is not built: which replicas drop out decides whether the slow ones stay",
            ))
        }
        Recovery::FewerReplicas if args.repair_s.is_none() => {
            return Err(user_error(
                "--recovery fewer-replicas needs --repair-s S: the time to repair a node (no public figure was found)",
            ))
        }
        Recovery::FewerReplicas => Some(super::fewer_replicas::degraded_run(
            &args.scenario,
            fit.as_ref(),
            &scenario,
            report.metrics.iteration_time_s,
        )?),
        _ => None,
    };
    let trace = super::run_plan_trace::planned_trace(
        &args,
        fit.as_ref(),
        &scenario,
        expansion,
        &stragglers,
        &report,
    )?;
    // An asynchronous checkpoint waits for every rank's copy to host: the
    // slowest PCIe link sets it.
    let slowest_pcie = stragglers
        .pcies()
        .iter()
        .map(|slow| slow.factor)
        .fold(1.0, f64::max);
    let mut plan = plan_of(&args, &scenario, &report, degraded.as_ref(), slowest_pcie)?;
    if let Some(trace) = &trace {
        trace.apply(&mut plan);
    }
    let measured_node_power = plan.energy.gpu.and_then(GpuKind::node_training_w).is_some();
    if !measured_node_power && args.gpu_idle_w.is_none() && args.node_training_w.is_none() {
        return Err(user_error(format!(
            "no measured node power for {} nodes here: give --node-training-w W (a node's power \
             while training) or --gpu-idle-w W (with the datasheet TDP{})",
            scenario.topology.gpu.name,
            if plan.energy.gpu.is_none() {
                " given as --gpu-tdp-w W"
            } else {
                ""
            }
        )));
    }
    let evaluated = goodput::evaluate(&plan).map_err(|e| user_error(with_flags(&e.to_string())))?;
    let scale = match &args.charts.plot_gpus {
        Some(_) => scale_inputs(&args, fit.as_ref(), &scenario)?,
        None => Vec::new(),
    };
    let notes = write_charts(&args.charts, &plan, &evaluated, &scenario, &scale)?;
    let sources = sources_used(&args, degraded.as_ref());
    if args.json {
        let mut document = serde_json::to_value(&evaluated)?;
        document["schema_version"] = crate::schema_versions::RUN_PLAN.into();
        document["scenario"] = scenario.title().into();
        document["plan"] = serde_json::to_value(&plan)?;
        document["sources"] = serde_json::to_value(&sources)?;
        if !stragglers.ranks().is_empty() {
            document["slow_ranks"] = serde_json::to_value(stragglers.ranks())?;
        }
        if !stragglers.nics().is_empty() {
            document["slow_nics"] = serde_json::to_value(stragglers.nics())?;
        }
        if !stragglers.nvlinks().is_empty() {
            document["slow_nvlinks"] = serde_json::to_value(stragglers.nvlinks())?;
        }
        if !stragglers.pcies().is_empty() {
            document["slow_pcies"] = serde_json::to_value(stragglers.pcies())?;
        }
        if !stragglers.uplinks().is_empty() {
            document["slow_uplinks"] = serde_json::to_value(stragglers.uplinks())?;
        }
        if let Some(drawn) = stragglers.spread() {
            document["rank_spread"] = super::slow_ranks::SpreadSummary::of(drawn).json();
        }
        if let Some(trace) = &trace {
            let (key, value) = trace.json();
            document[key] = value;
        }
        return crate::stdout::outln!("{}", serde_json::to_string_pretty(&document)?);
    }
    write_summary(
        &scenario,
        &plan,
        &evaluated,
        &sources,
        &notes,
        trace.as_ref(),
        super::slow_ranks::slow_parts(&stragglers).as_deref(),
    )
}

/// The run plan of a simulated scenario: the defaults
/// (`goodput::defaults::default_plan`), then each flag given. `slowest_pcie`
/// divides an asynchronous checkpoint's copy to host (the slowest rank's
/// PCIe link, 1 when none is slow): the checkpoint model copies each rank's
/// shard at the full per-GPU rate, without the switch uplink's sharing that
/// ZeRO-Offload's copies take, so a slow link divides it by its whole factor.
fn plan_of(
    args: &RunPlanArgs,
    scenario: &Scenario,
    report: &sim::SimulationReport,
    degraded: Option<&DegradedRun>,
    slowest_pcie: f64,
) -> anyhow::Result<RunPlan> {
    let gpus = u64::from(scenario.layout.gpus());
    // A job smaller than a node holds part of one.
    let gpus_per_node = u64::from(scenario.topology.node.gpus_per_node).min(gpus);
    if gpus % gpus_per_node != 0 {
        return Err(user_error(format!(
            "run-plan needs whole nodes: {gpus} GPUs on nodes of {gpus_per_node}"
        )));
    }
    let fabric = &scenario.topology.fabric;
    let run = studies::run_plan_input::simulated_run(scenario, report);
    let target = match (args.tokens, args.steps) {
        (Some(tokens), _) => TrainingTarget::Tokens(tokens),
        (None, Some(steps)) => TrainingTarget::Iterations(steps),
        (None, None) => return Err(user_error("--tokens N or --steps N is needed")),
    };
    let mut plan = goodput::defaults::default_plan(&run, target);
    let gbps = |flag: Option<f64>, default: f64| flag.map_or(default, |gb| gb * 1e9);
    let storage = plan.storage;
    plan.storage = StorageSpec {
        per_node_write_bytes_per_s: gbps(
            args.storage_node_write_gbps,
            storage.per_node_write_bytes_per_s,
        ),
        per_node_read_bytes_per_s: gbps(
            args.storage_node_read_gbps,
            storage.per_node_read_bytes_per_s,
        ),
        aggregate_write_bytes_per_s: gbps(
            args.storage_write_gbps,
            storage.aggregate_write_bytes_per_s,
        ),
        aggregate_read_bytes_per_s: gbps(
            args.storage_read_gbps,
            storage.aggregate_read_bytes_per_s,
        ),
    };
    if args.async_checkpoint {
        plan.checkpoint_mode = CheckpointMode::Asynchronous {
            host_copy_bytes_per_s: scenario.profile.pcie.device_to_host_bytes_per_s.value
                / slowest_pcie,
        };
    }
    let nodes = gpus / gpus_per_node;
    plan.switches = leaf_switches(scenario, nodes);
    // A job on one node sends nothing through its NICs: their links'
    // failures do not stop it.
    if nodes <= 1 {
        plan.nics_per_node = 0;
    }
    plan.reliability = match args.failures.as_str() {
        "none" => ReliabilitySpec::none(),
        name => {
            ReliabilitySpec::preset(name).map_err(|e| user_error(format!("--failures: {e}")))?
        }
    };
    plan.reliability
        .rates
        .extend(args.failure_rates.iter().cloned());
    plan.recovery = match args.recovery {
        Recovery::FullRestart => RecoveryPolicy::FullRestart,
        Recovery::HotSpares => RecoveryPolicy::HotSpares {
            swap_s: args.spare_swap_s,
        },
        Recovery::InMemory => RecoveryPolicy::InMemory {
            peer_bytes_per_s: fabric.nic_bandwidth_bytes_per_s * f64::from(fabric.nics_per_node)
                / gpus_per_node as f64,
            replacement_s: args.reschedule_s,
        },
        Recovery::FewerReplicas => RecoveryPolicy::FewerReplicas {
            repair_s: args.repair_s.expect("checked with the policy"),
            degraded_work_rate: degraded.expect("simulated for this policy").work_rate,
        },
    };
    plan.restart = RestartSpec {
        detection_s: args.detection_s.unwrap_or(plan.restart.detection_s),
        reschedule_s: args.reschedule_s,
        initialization_s: args
            .initialization_s
            .unwrap_or(plan.restart.initialization_s),
    };
    plan.interval = args.checkpoint_every;
    let energy = &mut plan.energy;
    energy.gpu_idle_w = args.gpu_idle_w;
    energy.gpu_tdp_w = args.gpu_tdp_w;
    energy.training_utilization = args.utilization;
    energy.node_training_w = args.node_training_w;
    energy.pue = args.pue;
    energy.price_per_gpu_hour = args.price_per_gpu_hour;
    energy.carbon_g_co2e_per_kwh = args.carbon_g_per_kwh;
    plan.monte_carlo = MonteCarloSpec {
        trials: args.trials,
        seed: args.trial_seed,
        failure_distribution: args.failure_distribution,
    };
    Ok(plan)
}

/// The plan's field names in a `goodput` error, followed by the flag that sets each.
fn with_flags(message: &str) -> String {
    const FLAGS: [(&str, &str); 13] = [
        (
            "storage.per_node_write_bytes_per_s",
            "--storage-node-write-gbps",
        ),
        (
            "storage.per_node_read_bytes_per_s",
            "--storage-node-read-gbps",
        ),
        (
            "storage.aggregate_write_bytes_per_s",
            "--storage-write-gbps",
        ),
        ("storage.aggregate_read_bytes_per_s", "--storage-read-gbps"),
        ("restart.detection_s", "--detection-s"),
        ("restart.reschedule_s", "--reschedule-s"),
        ("restart.initialization_s", "--initialization-s"),
        ("recovery.swap_s", "--spare-swap-s"),
        ("recovery.repair_s", "--repair-s"),
        ("energy.pue", "--pue"),
        ("energy.gpu_idle_w", "--gpu-idle-w"),
        ("energy.training_utilization", "--utilization"),
        ("energy.carbon_g_co2e_per_kwh", "--carbon-g-per-kwh"),
    ];
    FLAGS
        .iter()
        .fold(message.to_string(), |text, (field, flag)| {
            text.replace(field, &format!("{flag} ({field})"))
        })
}

/// A default or input the plan used outside the energy model, and its source.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SourcedInput {
    pub name: &'static str,
    pub value: f64,
    pub source: String,
}

/// The leaf switches a job of `nodes` nodes connects to: one per NIC rail
/// for each block of radix ÷ 2 nodes under the rail-optimized placement
/// ([`topologies::fat_tree::fat_tree_of`]); none on one node.
fn leaf_switches(scenario: &Scenario, nodes: u64) -> u64 {
    match topologies::fat_tree::fat_tree_of(&scenario.topology) {
        Ok(Some((tree, _))) if nodes > 1 => {
            u64::from(scenario.topology.fabric.nics_per_node) * nodes.div_ceil(tree.arity)
        }
        _ => 0,
    }
}

/// Storage and restart values with their sources ("input" when a flag set them).
pub fn sources_used(args: &RunPlanArgs, degraded: Option<&DegradedRun>) -> Vec<SourcedInput> {
    use goodput::defaults as d;
    let entry = |flag: Option<f64>, default: &goodput::energy::Sourced, scale: f64| SourcedInput {
        name: default.name,
        value: flag.map_or(default.value, |v| v * scale),
        source: flag.map_or(default.source.to_string(), |_| "input".to_string()),
    };
    let mut sources = vec![
        entry(args.storage_node_write_gbps, &d::STORAGE_NODE_WRITE, 1e9),
        entry(args.storage_node_read_gbps, &d::STORAGE_NODE_READ, 1e9),
        entry(
            args.storage_write_gbps.map(|v| v * d::NODES_PER_SU),
            &d::STORAGE_SU_WRITE,
            1e9,
        ),
        entry(
            args.storage_read_gbps.map(|v| v * d::NODES_PER_SU),
            &d::STORAGE_SU_READ,
            1e9,
        ),
        entry(args.detection_s, &d::DETECTION, 1.0),
        entry(args.initialization_s, &d::INITIALIZATION, 1.0),
        SourcedInput {
            name: "reschedule_s",
            value: args.reschedule_s,
            source: if args.reschedule_s == 0.0 {
                "no public figure found: 0 unless --reschedule-s".to_string()
            } else {
                "input".to_string()
            },
        },
    ];
    if let (Some(run), Some(repair_s)) = (degraded, args.repair_s) {
        sources.push(SourcedInput {
            name: "repair_s",
            value: repair_s,
            source: "input".to_string(),
        });
        sources.push(SourcedInput {
            name: "degraded_work_rate",
            value: run.work_rate,
            source: format!(
                "simulated: {} of {} data-parallel replicas left after a node failure, {:.3} s per iteration of a batch {}/{} as large",
                run.remaining, run.replicas, run.iteration_time_s, run.remaining, run.replicas
            ),
        });
    }
    sources
}
