//! `clustersim collective`: predicted time, algorithm bandwidth and bus
//! bandwidth of one collective over a size range, in nccl-tests' columns, with
//! the algorithm and protocol NCCL's tuner picks and the latency term, under
//! the NCCL version `--nccl` names.

use crate::exit::user_error;
use crate::stdout::{out, outln};
use clap::Args;
use profile::Profile;
use sim::collective::{Algorithm, CollectiveOp, GroupShape, LinkRates, NcclVersion};
use studies::nccl_tests::{format_nccl_tests_table, nccl_tests_table, size_sweep};
use topologies::TopologySpec;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples (compare with nccl-tests' all_reduce_perf -b 8 -e 1G -f 2 -g 8):\n  clustersim collective --gpus 8\n  clustersim collective --op all_reduce --gpus 64 --min-bytes 1M --max-bytes 8G\n  clustersim collective --op all_gather --gpus 16 --gpus-per-node 2 --algorithm ring\n  clustersim collective --topology dgx-h100-superpod --gpus 8 --nccl 2.21"
)]
pub struct CollectiveArgs {
    /// all_reduce, reduce_scatter, all_gather, broadcast, send_recv or all_to_all.
    #[arg(long, default_value = "all_reduce", value_parser = ["all_reduce", "reduce_scatter", "all_gather", "broadcast", "send_recv", "all_to_all"])]
    pub op: String,
    /// Topology preset or file (≤ 256 MiB).
    #[arg(long, default_value = "selene")]
    pub topology: String,
    /// Calibration profile: a built-in or a file (≤ 256 MiB). Default: the built-in
    /// for the topology's GPU.
    #[arg(long)]
    pub profile: Option<String>,
    /// GPUs in the group (consecutive ranks, filling nodes in order).
    #[arg(long, default_value_t = 8)]
    pub gpus: u32,
    /// GPUs of the group on each node (default: the node's size).
    #[arg(long)]
    pub gpus_per_node: Option<u32>,
    /// Smallest size in bytes (suffixes K, M, G allowed).
    #[arg(long, default_value = "8", value_parser = parse_bytes)]
    pub min_bytes: u64,
    /// Largest size in bytes (suffixes K, M, G allowed).
    #[arg(long, default_value = "1G", value_parser = parse_bytes)]
    pub max_bytes: u64,
    /// Size multiplication factor between rows (at least 2).
    #[arg(long, default_value_t = 2)]
    pub factor: u64,
    /// Force ring or tree instead of NCCL's tuner choice (the tuner still picks the
    /// protocol for that algorithm; a tree is all-reduce only, other operations run rings).
    #[arg(long, value_parser = ["ring", "tree"])]
    pub algorithm: Option<String>,
    /// Whose tuner picks and costs the (algorithm, protocol) pair: 2.12 (NVIDIA/nccl
    /// v2.12.12-1, 2022: no LL128 on Hopper, Volta's LL cap for it) or 2.21 (v2.21.5-1,
    /// 2024: LL128 on Hopper over NVLink, Hopper's LL cap, its latencies). Simulations
    /// take the version from the software stack (megatron-core-2024: 2.21; others 2.12).
    /// Neither models NVLS, CollNet or per-channel caps.
    #[arg(long, default_value = "2.12", value_parser = ["2.12", "2.21"])]
    pub nccl: String,
    /// Print the table as one JSON document (the group, the topology, profile
    /// and NCCL version, and a row per size: time in integer nanoseconds,
    /// bandwidths in bytes per second) instead of nccl-tests' columns.
    #[arg(long)]
    pub json: bool,
}

fn parse_bytes(text: &str) -> Result<u64, String> {
    let (digits, scale) = match text.trim().chars().last() {
        Some('K' | 'k') => (&text[..text.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&text[..text.len() - 1], 1 << 20),
        Some('G' | 'g') => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    let value: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a byte count like 8, 64K, 1M or 1G"))?;
    value
        .checked_mul(scale)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("'{text}' is out of range"))
}

pub fn run(args: CollectiveArgs) -> anyhow::Result<()> {
    let topology = TopologySpec::resolve(&args.topology).map_err(user_error)?;
    let profile = match &args.profile {
        Some(name) => Profile::resolve(name).map_err(user_error)?,
        None => Profile::default_for_gpu(&topology.gpu.name).ok_or_else(|| {
            user_error(format!(
                "no built-in profile for {}; pass --profile",
                topology.gpu.name
            ))
        })?,
    };
    let op = CollectiveOp::ALL
        .into_iter()
        .find(|op| op.name() == args.op)
        .expect("clap restricts --op");
    let per_node = args.gpus_per_node.unwrap_or(topology.node.gpus_per_node);
    let mut problems = Vec::new();
    if args.gpus == 0 {
        problems.push("--gpus must be at least 1".to_string());
    }
    if per_node == 0 || per_node > topology.node.gpus_per_node {
        problems.push(format!(
            "--gpus-per-node must be 1..={} for {}",
            topology.node.gpus_per_node, topology.name
        ));
    } else if !args.gpus.is_multiple_of(per_node) && args.gpus > per_node {
        problems.push(format!(
            "--gpus {} is not a multiple of --gpus-per-node {per_node}",
            args.gpus
        ));
    }
    let nodes = args.gpus.div_ceil(per_node.max(1));
    if nodes > topology.nodes {
        problems.push(format!(
            "{} GPUs at {per_node} per node need {nodes} nodes; {} has {}",
            args.gpus, topology.name, topology.nodes
        ));
    }
    if args.min_bytes > args.max_bytes {
        problems.push("--min-bytes is larger than --max-bytes".into());
    }
    if args.factor < 2 {
        problems.push(format!("--factor must be at least 2, got {}", args.factor));
    }
    if !problems.is_empty() {
        return Err(user_error(problems.join("; ")));
    }
    let group = GroupShape::new(nodes, args.gpus.min(per_node));
    let nccl = NcclVersion::parse(&args.nccl).expect("clap restricts --nccl");
    let rates = LinkRates::from(&topology, &profile).with_nccl(nccl);
    let algorithm = args.algorithm.as_deref().map(|a| {
        if a == "tree" {
            Algorithm::Tree
        } else {
            Algorithm::Ring
        }
    });
    let sizes = size_sweep(args.min_bytes, args.max_bytes, args.factor);
    let rows = nccl_tests_table(op, &sizes, &group, &rates, algorithm);
    if args.json {
        let mut document = studies::nccl_tests::nccl_tests_json(op, &group, &rows);
        document["schema_version"] = crate::schema_versions::COLLECTIVE.into();
        document["topology"] = topology.name.clone().into();
        document["profile"] = profile.id.clone().into();
        document["nccl"] = nccl.name().into();
        return outln!("{}", serde_json::to_string_pretty(&document)?);
    }
    outln!(
        "# topology {} · profile {} · NCCL {} tuner ({})",
        topology.name,
        profile.id,
        nccl.name(),
        nccl.release()
    )?;
    out!("{}", format_nccl_tests_table(op, &group, &rows))?;
    Ok(())
}
