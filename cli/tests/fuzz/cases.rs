//! The fuzzer's cases (see `../fuzz.rs`): for each subcommand, a command
//! line over seed files (`seeds.rs`), mutated most of the time
//! (`mutate.rs`), with flags (`flags.rs`).

use super::flags::{
    extreme, option_flags, output_path, picture_flags, scenario_flags, value, Flags,
};
use super::mutate::{mutate, mutate_text, nudge, Json, Rng};
use super::seeds::Seeds;

/// One command to run: its arguments, the files it reads (written into the
/// case's folder first) and the files it may write there.
pub struct Case {
    pub args: Vec<String>,
    pub files: Vec<(String, Vec<u8>)>,
    pub outputs: Vec<String>,
}

/// Adds `file` (a seed, mutated 1–3 times most of the time) as `name`.
fn add_file(case: &mut Case, name: &str, seed: &Json, mutate_percent: u64, rng: &mut Rng) {
    let mut doc = seed.clone();
    let mutated = rng.chance(mutate_percent);
    if mutated {
        for _ in 0..=rng.below(3) {
            mutate(&mut doc, rng);
        }
    }
    let mut bytes = doc.render().into_bytes();
    if mutated && rng.chance(15) {
        mutate_text(&mut bytes, rng);
    }
    case.files.push((name.to_string(), bytes));
}

/// Adds a timeline: JSON lines are mutated one line at a time.
fn add_timeline(
    case: &mut Case,
    seeds: &Seeds,
    name: &str,
    mutate_percent: u64,
    rng: &mut Rng,
) -> String {
    let (seed_name, text) = rng.pick(&seeds.timelines);
    let file = format!(
        "{name}{}",
        if seed_name.ends_with(".jsonl") {
            ".jsonl"
        } else {
            ".json"
        }
    );
    if seed_name.ends_with(".jsonl") {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        if rng.chance(mutate_percent) {
            let i = if rng.chance(50) {
                0
            } else {
                rng.below(lines.len())
            };
            let mut doc = Json::parse(&lines[i]);
            mutate(&mut doc, rng);
            lines[i] = doc.render();
        }
        let mut bytes = lines.join("\n").into_bytes();
        if rng.chance(mutate_percent / 10) {
            mutate_text(&mut bytes, rng);
        }
        case.files.push((file.clone(), bytes));
    } else {
        add_file(case, &file, &Json::parse(text), mutate_percent, rng);
    }
    file
}

/// Model, topology, profile and stack files, mutated now and then, so that
/// scenarios and flags can name them.
fn add_spec_files(case: &mut Case, seeds: &Seeds, rng: &mut Rng) {
    add_file(case, "model.json", rng.pick(&seeds.models), 15, rng);
    add_file(case, "config.json", rng.pick(&seeds.hf_configs), 25, rng);
    add_file(case, "topology.json", rng.pick(&seeds.topologies), 15, rng);
    add_file(case, "profile.json", rng.pick(&seeds.profiles), 15, rng);
    add_file(case, "stack.json", rng.pick(&seeds.stacks), 15, rng);
    add_expert_histogram(case, rng);
    add_routing_trace(case, rng);
    add_seq_len_trace(case, rng);
}

/// An expert-imbalance histogram (`--expert-imbalance experts.txt`): token
/// counts for Mixtral's 8 experts, or a wrong count, a zero, a negative,
/// an overflow or a word among them.
fn add_expert_histogram(case: &mut Case, rng: &mut Rng) {
    let experts = *rng.pick(&[8usize, 8, 8, 4, 0, 9]);
    let counts: Vec<String> = (0..experts)
        .map(|_| match rng.below(12) {
            0 => rng
                .pick(&["0", "-3", "1e999", "NaN", "18446744073709551616", "x"])
                .to_string(),
            _ => (1 + rng.below(5000)).to_string(),
        })
        .collect();
    let separator = *rng.pick(&[" ", ",", "\n"]);
    case.files
        .push(("experts.txt".into(), counts.join(separator).into_bytes()));
}

/// A routing trace (`--routing-trace trace.txt`): up to four iterations of
/// expert histograms, a comment or a blank line among them.
fn add_routing_trace(case: &mut Case, rng: &mut Rng) {
    let mut lines = Vec::new();
    for _ in 0..rng.below(5) {
        let experts = *rng.pick(&[8usize, 8, 8, 8, 4, 0]);
        let line: Vec<String> = (0..experts)
            .map(|_| match rng.below(20) {
                0 => rng.pick(&["0", "-3", "1e999", "x"]).to_string(),
                _ => (1 + rng.below(5000)).to_string(),
            })
            .collect();
        let separator = *rng.pick(&[" ", ","]);
        lines.push(line.join(separator));
        if rng.chance(20) {
            lines.push(rng.pick(&["# comment", ""]).to_string());
        }
    }
    case.files
        .push(("trace.txt".into(), lines.join("\n").into_bytes()));
}

/// A sequence-length trace (`--seq-len-trace lengths.txt`): up to four
/// iterations' tokens per sample, now and then one that is not a length
/// or one the layout refuses, a comment or a blank line among them.
fn add_seq_len_trace(case: &mut Case, rng: &mut Rng) {
    let mut lines = Vec::new();
    for _ in 0..rng.below(5) {
        let length = match rng.below(20) {
            0 => rng
                .pick(&["0", "-5", "1.5", "x", "18446744073709551616", "4097"])
                .to_string(),
            _ => rng
                .pick(&["128", "512", "1024", "2048", "4096"])
                .to_string(),
        };
        lines.push(length);
        if rng.chance(20) {
            lines.push(rng.pick(&["# comment", ""]).to_string());
        }
    }
    case.files
        .push(("lengths.txt".into(), lines.join("\n").into_bytes()));
}

/// A scenario file (mutated most of the time) and maybe a few flags over
/// it, or flags alone. Returns the flags and whether the scenario is the
/// embedded default (1024 GPUs: its trace is 700 MB, its execution plan 10 GB).
fn scenario_input(
    seeds: &Seeds,
    case: &mut Case,
    allow_default: bool,
    rng: &mut Rng,
) -> (Flags, bool) {
    add_spec_files(case, seeds, rng);
    let mut flags = Flags(Vec::new());
    if !rng.chance(50) {
        scenario_flags(&mut flags, rng);
        return (flags, false);
    }
    // Seed 1 is the embedded default.
    let index = if allow_default {
        rng.below(seeds.scenarios.len())
    } else {
        *rng.pick(&[0, 2, 3, 4, 5])
    };
    add_file(case, "scenario.json", &seeds.scenarios[index], 70, rng);
    flags.push("scenario.json", None);
    if rng.chance(30) {
        // A few flags overriding the file.
        let mut overrides = Flags(Vec::new());
        scenario_flags(&mut overrides, rng);
        overrides.0.retain(|_| rng.chance(30));
        flags.0.extend(overrides.0);
    }
    (flags, index == 1)
}

/// A Megatron-LM argument list (`--megatron-args`), its arguments nudged,
/// dropped, repeated or replaced, sometimes damaged as text.
fn megatron_args(seeds: &Seeds, case: &mut Case, flags: &mut Flags, rng: &mut Rng) {
    const REPLACEMENTS: [&str; 10] = [
        "--fp16",
        "--recompute-granularity",
        "full",
        "--num-experts",
        "--num-layers-per-virtual-pipeline-stage",
        "--pipeline-model-parallel-size",
        "--position-embedding-type",
        "yarn",
        "--moe-token-dispatcher-type",
        "flex",
    ];
    let mut lines = rng.pick(&seeds.megatron_args).clone();
    for _ in 0..=rng.below(4) {
        let i = rng.below(lines.len());
        match rng.below(4) {
            0 => lines[i] = nudge(&lines[i], rng),
            1 => drop(lines.remove(i)),
            2 => lines.insert(i, lines[i].clone()),
            _ => lines[i] = rng.pick(&REPLACEMENTS).to_string(),
        }
    }
    add_lines_file(case, flags, "--megatron-args", "megatron.args", &lines, rng);
    if rng.chance(50) {
        flags.push("--dp", Some(rng.pick(&["1", "2", "8", "0"]).to_string()));
    }
}

/// Writes `lines` as the file `name` (damaged as text one time in ten) and
/// passes it with `flag`.
fn add_lines_file(
    case: &mut Case,
    flags: &mut Flags,
    flag: &str,
    name: &str,
    lines: &[String],
    rng: &mut Rng,
) {
    let mut bytes = lines.join("\n").into_bytes();
    if rng.chance(10) {
        mutate_text(&mut bytes, rng);
    }
    case.files.push((name.to_string(), bytes));
    flags.push(flag, Some(name.to_string()));
}

/// A torchtitan TOML or Megatron-Bridge YAML, its lines' numbers nudged,
/// lines dropped or repeated, sometimes damaged as text.
fn framework_file(seeds: &Seeds, case: &mut Case, flags: &mut Flags, rng: &mut Rng) {
    let (flag, name, lines) = rng.pick(&seeds.framework_files);
    let mut lines = lines.clone();
    for _ in 0..=rng.below(4) {
        let i = rng.below(lines.len());
        match rng.below(3) {
            0 => {
                if let Some((key, value)) = lines[i].split_once(&['=', ':'][..]) {
                    lines[i] = format!(
                        "{key}{} {}",
                        if lines[i].contains('=') { " =" } else { ":" },
                        nudge(value.trim(), rng)
                    );
                }
            }
            1 => drop(lines.remove(i)),
            _ => lines.insert(i, lines[i].clone()),
        }
    }
    add_lines_file(case, flags, flag, name, &lines, rng);
    if *flag == "--bridge-config" && rng.chance(70) {
        flags.push("--model", Some("llama3-8b".into()));
    }
    if rng.chance(70) {
        flags.push("--dp", Some(rng.pick(&["1", "2", "8", "0"]).to_string()));
    }
}

fn simulate(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let (mut flags, large) = scenario_input(seeds, case, true, rng);
    if !large && rng.chance(10) {
        megatron_args(seeds, case, &mut flags, rng);
    } else if !large && rng.chance(10) {
        framework_file(seeds, case, &mut flags, rng);
    }
    match rng.below(6) {
        0 => flags.push("--json", None),
        1 => flags.push("--explain", None),
        2 => flags.push("--max-model-size", None),
        _ => {}
    }
    if rng.chance(20) {
        flags.push("--no-symmetry", None);
    }
    if large {
        return flags;
    }
    // Slow GPUs, NICs and NVLinks and a spread of GPU speeds (issue 35), some
    // outside the layout, not slow-downs or too wide.
    if rng.chance(8) {
        let slow = value(&["3:1.2", "0:2", "9999:2", "1:0.5"], rng);
        flags.push("--slow-rank", Some(slow));
    }
    if rng.chance(8) {
        let slow = value(&["3:2", "0:1.5", "9999:2", "x:2", "1:101"], rng);
        flags.push("--slow-nic", Some(slow));
    }
    if rng.chance(8) {
        let slow = value(&["3:2", "0:1.5", "9999:2", "x:2", "1:101"], rng);
        flags.push("--slow-nvlink", Some(slow));
    }
    if rng.chance(8) {
        let slow = value(&["3:2", "0:1.5", "9999:2", "x:2", "1:101"], rng);
        flags.push("--slow-pcie", Some(slow));
    }
    if rng.chance(8) {
        let slow = value(&["3:2", "8:1.5", "9999:2", "x:2", "1:101"], rng);
        flags.push("--slow-uplink", Some(slow));
    }
    if rng.chance(8) {
        let spread = value(
            &[
                "lognormal:0.05",
                "lognormal:0.5",
                "lognormal:0",
                "normal:1",
                "lognormal:nan",
            ],
            rng,
        );
        flags.push("--rank-spread", Some(spread));
    }
    // A routing trace (issue 35), or a file that is not one.
    if rng.chance(8) {
        let trace = value(
            &["trace.txt", "experts.txt", "missing.txt", "model.json"],
            rng,
        );
        flags.push("--routing-trace", Some(trace));
    }
    // A sequence-length trace (issue 35), or a file that is not one.
    if rng.chance(8) {
        let trace = value(&["lengths.txt", "trace.txt", "missing.txt"], rng);
        flags.push("--seq-len-trace", Some(trace));
    }
    if rng.chance(30) {
        let name = if rng.chance(70) {
            "out.json"
        } else {
            "out.jsonl"
        };
        flags.push("--timeline", Some(output_path(name, case, rng)));
    }
    picture_flags(&mut flags, case, rng);
    flags
}

/// `run-plan`: a scenario (not the 1024-GPU default) and a training
/// target, with failure, checkpoint, recovery, storage, energy and
/// Monte-Carlo flags.
fn run_plan(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let (mut flags, _) = scenario_input(seeds, case, false, rng);
    if rng.chance(85) {
        flags.push("--tokens", Some(value(&["1B", "15T", "2.5M", "300G"], rng)));
    } else {
        flags.push("--steps", Some(value(&["100", "1", "250000"], rng)));
    }
    // Valid values only: `Flags::spoil` makes some of them extreme.
    let choices: [(&str, &[&str], u64); 16] = [
        (
            "--failures",
            &["meta-rsc1,hpn-network", "meta-rsc1", "meta-rsc2", "none"],
            30,
        ),
        ("--checkpoint-every", &["optimal", "50", "30min", "2h"], 30),
        (
            "--recovery",
            &["full-restart", "hot-spares", "in-memory", "fewer-replicas"],
            30,
        ),
        ("--spare-swap-s", &["60", "0"], 15),
        ("--repair-s", &["14400", "600"], 50),
        ("--storage-node-write-gbps", &["4", "0.5"], 8),
        ("--storage-read-gbps", &["40", "400"], 8),
        ("--reschedule-s", &["3600", "0"], 10),
        ("--node-training-w", &["6500", "10200"], 40),
        ("--gpu-idle-w", &["70", "100"], 8),
        ("--pue", &["1.2", "1.58"], 8),
        ("--price-per-gpu-hour", &["4.9", "2"], 15),
        ("--trials", &["0", "10", "200"], 60),
        ("--trial-seed", &["7", "0"], 10),
        (
            "--failure-rate",
            &["software:2e-5", "gpu:1e-6", "disk:1", "node:-1", "nic:x"],
            10,
        ),
        (
            "--failure-distribution",
            &["exponential", "weibull:0.7", "weibull:3", "weibull:0.1"],
            10,
        ),
    ];
    for (flag, values, percent) in choices {
        if rng.chance(percent) {
            flags.push(flag, Some(value(values, rng)));
        }
    }
    if rng.chance(10) {
        flags.push("--async-checkpoint", None);
    }
    if rng.chance(8) {
        let slow = value(&["3:1.2", "0:2", "1:1.5"], rng);
        let flag = *rng.pick(&[
            "--slow-rank",
            "--slow-nic",
            "--slow-nvlink",
            "--slow-pcie",
            "--slow-uplink",
        ]);
        flags.push(flag, Some(slow));
    }
    if rng.chance(8) {
        flags.push(
            "--rank-spread",
            Some(value(&["lognormal:0.03", "lognormal:0.6"], rng)),
        );
    }
    // The case's routing trace (`add_spec_files`), or a file that is not one.
    if rng.chance(6) {
        let trace = value(&["trace.txt", "experts.txt", "missing.txt"], rng);
        flags.push("--routing-trace", Some(trace));
    }
    // The case's sequence-length trace, or a file that is not one (with a
    // routing trace: refused as a conflict).
    if rng.chance(6) {
        let trace = value(&["lengths.txt", "model.json", "missing.txt"], rng);
        flags.push("--seq-len-trace", Some(trace));
    }
    if rng.chance(10) {
        flags.push("--ignore-memory", None);
    }
    if rng.chance(30) {
        flags.push("--json", None);
    }
    if rng.chance(8) {
        let flag = *rng.pick(&["--plot-interval", "--plot-gpus"]);
        flags.push(flag, Some(output_path("plan.svg", case, rng)));
    }
    flags
}

fn collective(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    add_spec_files(case, seeds, rng);
    let mut flags = Flags(Vec::new());
    let ops = [
        "all_reduce",
        "reduce_scatter",
        "all_gather",
        "broadcast",
        "send_recv",
        "all_to_all",
    ];
    for (flag, valid, percent) in [
        ("--op", &ops[..], 70),
        (
            "--topology",
            &[
                "selene",
                "topology.json",
                "dgx2-v100-x8",
                "dgx-h100-superpod",
            ][..],
            60,
        ),
        ("--profile", &["profile.json", "h200"][..], 20),
        ("--gpus", &["1", "2", "8", "16", "64"][..], 70),
        ("--gpus-per-node", &["1", "2", "8"][..], 30),
        ("--min-bytes", &["8", "1K", "1M"][..], 40),
        ("--max-bytes", &["1M", "1G", "8G"][..], 40),
        ("--factor", &["2", "4", "10"][..], 30),
        ("--algorithm", &["ring", "tree"][..], 30),
        ("--nccl", &["2.12", "2.21"][..], 30),
    ] {
        if rng.chance(percent) {
            flags.push(flag, Some(value(valid, rng)));
        }
    }
    flags
}

fn timeline(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let file = add_timeline(case, seeds, "timeline", 75, rng);
    let mut flags = Flags(vec![(file, None)]);
    picture_flags(&mut flags, case, rng);
    flags
}

fn compare(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let (first, second) = match rng.below(3) {
        0 => (80, 0),
        1 => (0, 80),
        _ => (60, 60),
    };
    let a = add_timeline(case, seeds, "a", first, rng);
    let b = add_timeline(case, seeds, "b", second, rng);
    let mut flags = Flags(vec![(a, None), (b, None)]);
    if rng.chance(50) {
        flags.push("--max-error", Some(value(&["0", "5", "50", "1e9"], rng)));
    }
    if rng.chance(20) {
        flags.push("--worst", Some(value(&["0", "1", "100"], rng)));
    }
    if rng.chance(20) {
        flags.push("--plot", Some(output_path("out.svg", case, rng)));
    }
    flags
}

/// `--json`, `--csv`, `--plot`, `--top` of `sweep` and `sweep merge`.
fn sweep_outputs(flags: &mut Flags, case: &mut Case, rng: &mut Rng) {
    if rng.chance(30) {
        let json = if rng.chance(20) {
            "-".to_string()
        } else {
            output_path("out.json", case, rng)
        };
        flags.push("--json", Some(json));
    }
    if rng.chance(20) {
        flags.push("--csv", Some(output_path("out.csv", case, rng)));
    }
    if rng.chance(20) {
        flags.push("--plot", Some(output_path("out.svg", case, rng)));
    }
    if rng.chance(20) {
        flags.push("--top", Some(value(&["0", "3", "1000"], rng)));
    }
}

fn sweep(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    add_spec_files(case, seeds, rng);
    let mut flags = Flags(Vec::new());
    flags.push("--model", Some(value(&["tiny", "model.json"], rng)));
    flags.push(
        "--topology",
        Some(value(
            &["dgx-a100", "topology.json", "dgx-h100-superpod"],
            rng,
        )),
    );
    flags.push("--gpus", Some(value(&["1", "2", "4", "8"], rng)));
    flags.push("--global-batch", Some(value(&["2", "4", "8", "16"], rng)));
    for (flag, valid, percent) in [
        ("--max-microbatch", &["1", "2", "4"][..], 70),
        ("--max-chunks", &["1", "2"][..], 70),
        (
            "--schedule",
            &[
                "1f1b",
                "gpipe,interleaved",
                "1f1b,1f1b",
                "looped-bfs,1f1b",
                "zb-v,dualpipev",
                "dualpipe",
            ][..],
            40,
        ),
        ("--recompute", &["none", "full,selective"][..], 40),
        ("--tp", &["1", "2"][..], 20),
        ("--pp", &["1", "2"][..], 20),
        (
            "--shard",
            &["0/3", "2/3", "3/3", "0/0", "1/4294967295", "0/1", "/", "1"][..],
            30,
        ),
        ("--profile", &["profile.json"][..], 10),
        ("--stack", &["stack.json", "megatron-core-2024"][..], 10),
        // The sweep's lists: cp degrees, ZeRO stages, precisions, optimizers.
        (
            "--cp",
            &["1,2", "2", "1,2,4", "3,1", "0", "4294967295", ","][..],
            25,
        ),
        ("--max-cp", &["1", "2", "8", "0", "4294967295"][..], 10),
        ("--zero-stage", &["1,3", "0,1,2,3", "3,9", "1,"][..], 20),
        (
            "--precision",
            &["bf16,fp8", "fp16,bf16,fp8", "fp8,fp9"][..],
            20,
        ),
        (
            "--optimizer",
            &["adam,adam8bit", "lion,sgd,adafactor", "adam,adagrad"][..],
            15,
        ),
    ] {
        if rng.chance(percent) {
            flags.push(flag, Some(value(valid, rng)));
        }
    }
    for switch in [
        "--allow-cross-node-tp",
        "--ignore-memory",
        "--no-symmetry",
        "--microbatch-groups",
        "--prune",
    ] {
        if rng.chance(15) {
            flags.push(switch, None);
        }
    }
    option_flags(&mut flags, false, rng);
    sweep_outputs(&mut flags, case, rng);
    flags
}

fn sweep_merge(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let mut flags = Flags(vec![("merge".into(), None)]);
    let mutated = rng.below(seeds.shards.len());
    for (i, shard) in seeds.shards.iter().enumerate() {
        if i != mutated && rng.chance(10) {
            continue; // a missing shard
        }
        let name = format!("shard{i}.json");
        add_file(case, &name, shard, if i == mutated { 90 } else { 0 }, rng);
        flags.push(&name, None);
        if rng.chance(5) {
            flags.push(&name, None); // the same shard twice
        }
    }
    sweep_outputs(&mut flags, case, rng);
    flags
}

fn validate(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let name = if rng.chance(65) {
        add_file(case, "cases.json", rng.pick(&seeds.dev_sets), 90, rng);
        "cases.json"
    } else {
        let mut lines: Vec<String> = seeds.csv.lines().map(str::to_string).collect();
        for _ in 0..=rng.below(2) {
            let row = rng.below(lines.len());
            let mut fields: Vec<String> = lines[row].split(',').map(str::to_string).collect();
            let field = rng.below(fields.len());
            match rng.below(4) {
                0 => {
                    fields.remove(field);
                }
                1 => fields.push("1".into()),
                2 => fields[field] = value(&["1", "2", "1024", "0"], rng),
                _ => fields[field] = extreme(rng),
            }
            lines[row] = fields.join(",");
        }
        let mut bytes = lines.join("\n").into_bytes();
        if rng.chance(15) {
            mutate_text(&mut bytes, rng);
        }
        case.files.push(("runs.csv".into(), bytes));
        "runs.csv"
    };
    let mut flags = Flags(vec![(name.into(), None)]);
    if rng.chance(30) {
        flags.push("--json", None);
    }
    flags
}

fn plot_bubble(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    add_spec_files(case, seeds, rng);
    let mut flags = Flags(vec![("bubble".into(), None)]);
    flags.push("--model", Some(value(&["tiny", "model.json"], rng)));
    flags.push(
        "--topology",
        Some(value(&["dgx-a100", "topology.json"], rng)),
    );
    for (flag, valid) in [
        ("--tp", &["1"][..]),
        ("--pp", &["2", "4"][..]),
        ("--dp", &["1"][..]),
    ] {
        flags.push(flag, Some(value(valid, rng)));
    }
    flags.push(
        "--microbatches",
        Some(value(&["4,8", "2", "4,0", "8,4294967295"], rng)),
    );
    flags.push("--out", Some(output_path("out.svg", case, rng)));
    case.outputs.push("bubble.svg".into());
    flags
}

fn execute_dry_run(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let (mut flags, _) = scenario_input(seeds, case, false, rng);
    flags.push("--mode", Some(value(&["synthetic", "real"], rng)));
    flags.push("--dry-run", None);
    if rng.chance(50) {
        flags.push("--plan", Some(output_path("out.plan.json", case, rng)));
    }
    case.outputs.push("measured.json".into());
    flags
}

/// `import-trace` of a Timeline (mutated a third of the time) with a
/// scenario (mutated 30 % of the time): a case of rank 0's seconds per
/// class of task.
fn import_trace(seeds: &Seeds, case: &mut Case, rng: &mut Rng) -> Flags {
    let trace = add_timeline(case, seeds, "trace", 35, rng);
    let scenario = rng.pick(&seeds.scenarios).clone();
    add_file(case, "scenario.json", &scenario, 30, rng);
    let mut flags = Flags(vec![(trace, None)]);
    flags.push("--scenario", Some("scenario.json".into()));
    flags.push("--out", Some(output_path("cases.json", case, rng)));
    if rng.chance(20) {
        flags.push("--id", Some(value(&["run", "", "x y"], rng)));
    }
    flags
}

/// The `index`th case of the run seeded with `seed`: a pure function of both.
pub fn generate(seeds: &Seeds, seed: u64, index: u64) -> Case {
    let mut rng = Rng::new(seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let mut case = Case {
        args: Vec::new(),
        files: Vec::new(),
        outputs: Vec::new(),
    };
    type Template = fn(&Seeds, &mut Case, &mut Rng) -> Flags;
    let templates: &[(&str, Template, usize)] = &[
        ("simulate", simulate, 30),
        ("collective", collective, 6),
        ("timeline", timeline, 10),
        ("compare", compare, 12),
        ("sweep", sweep, 10),
        ("sweep", sweep_merge, 7),
        ("validate", validate, 12),
        ("plot", plot_bubble, 3),
        ("execute", execute_dry_run, 4),
        ("run-plan", run_plan, 6),
        ("import-trace", import_trace, 3),
    ];
    let total: usize = templates.iter().map(|t| t.2).sum();
    let mut ticket = rng.below(total);
    let (command, template) = templates
        .iter()
        .find_map(|&(name, template, weight)| {
            if ticket < weight {
                Some((name, template))
            } else {
                ticket -= weight;
                None
            }
        })
        .expect("a template");
    let mut flags = template(seeds, &mut case, &mut rng);
    if rng.chance(35) {
        flags.spoil(1 + rng.below(2), &mut rng);
    }
    case.args.push(command.to_string());
    case.args.extend(flags.into_args(&mut rng));
    case
}
