//! The fuzzer's command-line flags (see `../fuzz.rs`): values that are
//! mostly valid and go together (layouts that fit, options that combine),
//! spoiled now and then with extremes.

use super::cases::Case;
use super::mutate::{Rng, BAD_TOKENS, NUMBERS, STRINGS};

/// A valid flag value (`Flags::spoil` makes some of them extreme).
pub fn value(valid: &[&str], rng: &mut Rng) -> String {
    rng.pick(valid).to_string()
}

/// An extreme or odd flag value.
pub fn extreme(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=5 => rng.pick(NUMBERS).to_string(),
        6 => rng.pick(BAD_TOKENS).to_string(),
        7 | 8 => rng.pick(STRINGS).to_string(),
        _ => rng
            .pick(&[
                "",
                "99999999999999999999999999999",
                "٣",
                "1K",
                "8G",
                "16E",
                "1e30",
            ])
            .to_string(),
    }
}

/// Where an output goes: usually a fresh file in the case's folder, rarely a
/// path that cannot be written.
pub fn output_path(name: &str, case: &mut Case, rng: &mut Rng) -> String {
    let path = if rng.chance(93) {
        name.to_string()
    } else {
        rng.pick(&[
            "/dev/full",
            "/dev/null",
            ".",
            "",
            "missing-dir/out.json",
            "model.json",
        ])
        .to_string()
    };
    case.outputs.push(path.clone());
    path
}

/// A list of flags with values (`None`: a switch), turned into arguments.
pub struct Flags(pub Vec<(String, Option<String>)>);

impl Flags {
    pub fn push(&mut self, flag: &str, value: Option<String>) {
        self.0.push((flag.to_string(), value));
    }

    /// Drops, repeats or spoils `count` flags.
    pub fn spoil(&mut self, count: usize, rng: &mut Rng) {
        for _ in 0..count {
            if self.0.is_empty() {
                return;
            }
            let i = rng.below(self.0.len());
            match rng.below(6) {
                // Positional arguments stay (without its scenario, `execute`
                // would plan the embedded default's 1024 GPUs).
                0 if self.0[i].0.starts_with("--") => {
                    self.0.remove(i);
                }
                1 => {
                    let copy = self.0[i].clone();
                    self.0.push(copy);
                }
                _ => self.0[i].1 = Some(extreme(rng)),
            }
        }
    }

    pub fn into_args(self, rng: &mut Rng) -> Vec<String> {
        let mut args = Vec::new();
        for (flag, value) in self.0 {
            // A command line cannot hold a NUL byte.
            let value = value.map(|v| v.replace('\0', "\u{1}"));
            match value {
                Some(value) if rng.chance(80) => args.extend([flag, value]),
                Some(value) => args.push(format!("{flag}={value}")),
                None => args.push(flag),
            }
        }
        args
    }
}

/// Training-option flags shared by `simulate`, `sweep`, `plot bubble` and
/// `execute`, in combinations that go together (`iterations` only where the
/// command takes it). Returns whether ZeRO-Offload is on (it needs pp = 1).
pub fn option_flags(flags: &mut Flags, iterations: bool, rng: &mut Rng) -> bool {
    let switch = |flags: &mut Flags, flag: &str, rng: &mut Rng| {
        let value = match flag.contains('=') {
            true => "",
            false => rng.pick(&["", "", "", "=true", "=false", "=true", "=maybe"]),
        };
        flags.push(&format!("{flag}{value}"), None);
    };
    match rng.below(10) {
        0..=4 => false,
        5..=7 => {
            for flag in [
                "--sequence-parallel",
                "--overlap-grad-reduce",
                "--grad-accumulation-fusion",
                "--async-tensor-allreduce",
                "--tp-comm-overlap",
                "--scatter-gather=false",
                "--contention",
                "--distributed-optimizer",
                "--overlap-param-gather",
            ] {
                if rng.chance(30) {
                    switch(flags, flag, rng);
                }
            }
            if rng.chance(30) {
                flags.push(
                    "--precision",
                    Some(value(&["fp16", "bf16", "bf16", "fp8", ""], rng)),
                );
            }
            if rng.chance(25) {
                flags.push(
                    "--zero-stage",
                    Some(value(&["0", "1", "2", "3", "3", "4", "full"], rng)),
                );
                if rng.chance(40) {
                    flags.push(
                        "--shard-group-size",
                        Some(value(&["1", "2", "3", "0"], rng)),
                    );
                }
                if rng.chance(30) {
                    for flag in ["--zero-quantized-weights", "--zero-quantized-gradients"] {
                        if rng.chance(50) {
                            switch(flags, flag, rng);
                        }
                    }
                    if rng.chance(50) {
                        flags.push(
                            "--zero-hpz-partition-size",
                            Some(value(&["1", "2", "8", "0", "3"], rng)),
                        );
                    }
                }
            }
            if rng.chance(20) {
                flags.push("--overlap-grad-reduce", None);
                flags.push(
                    "--grad-reduce-bucket-params",
                    Some(value(&["1000000", "1", "12500000"], rng)),
                );
            }
            if rng.chance(15) {
                switch(flags, "--optimizer-post-validation", rng);
            }
            if rng.chance(10) {
                flags.push("--powersgd-rank", Some(value(&["1", "4", "0", "x"], rng)));
            }
            false
        }
        _ => {
            switch(flags, "--zero-offload", rng);
            if rng.chance(60) {
                switch(flags, "--delayed-update", rng);
                if rng.chance(30) {
                    flags.push(
                        "--dpu-warmup-iterations",
                        Some(value(&["0", "1", "2"], rng)),
                    );
                }
            }
            if rng.chance(30) {
                flags.push(
                    "--offload-bucket-params",
                    Some(value(&["1000000", "500000000"], rng)),
                );
            }
            if iterations && rng.chance(30) {
                flags.push("--iterations", Some(value(&["1", "2", "5"], rng)));
            }
            if rng.chance(30) {
                switch(flags, "--contention", rng);
            }
            true
        }
    }
}

/// Layouts (t, p, d, B, chunks) that fit on 8 GPUs and divide 4 layers.
const LAYOUTS: &[(&str, &str, &str, &str, &str)] = &[
    ("1", "1", "1", "1", "1"),
    ("1", "1", "1", "8", "1"),
    ("2", "2", "1", "8", "1"),
    ("1", "2", "2", "4", "1"),
    ("2", "1", "2", "4", "1"),
    ("1", "4", "1", "8", "1"),
    ("4", "2", "1", "8", "1"),
    ("2", "2", "2", "8", "1"),
    ("1", "1", "8", "8", "1"),
    ("1", "2", "1", "4", "2"),
    ("2", "2", "1", "8", "2"),
];

/// Model, topology and layout flags for a scenario on a few GPUs.
pub fn scenario_flags(flags: &mut Flags, rng: &mut Rng) {
    let models = [
        "tiny",
        "tiny",
        "tiny",
        "model.json",
        "model.json",
        "gpt2-1b",
        "llama2-7b",
        "mixtral-8x7b",
        "config.json",
    ];
    flags.push("--model", Some(value(&models, rng)));
    let topologies = [
        "dgx-a100",
        "dgx-a100",
        "dgx-a100",
        "topology.json",
        "dgx2-v100",
        "dgx-h100-superpod",
        "dgx-h100-roce",
        "h100-pcie-cluster",
    ];
    flags.push("--topology", Some(value(&topologies, rng)));
    let mut options = Flags(Vec::new());
    let offload = option_flags(&mut options, true, rng);
    let &(tp, pp, dp, global_batch, chunks) = rng.pick(LAYOUTS);
    let pp = if offload { "1" } else { pp };
    for (flag, value) in [
        ("--tp", tp),
        ("--pp", pp),
        ("--dp", dp),
        ("--global-batch", global_batch),
    ] {
        flags.push(flag, Some(value.to_string()));
    }
    if chunks != "1" {
        flags.push("--chunks", Some(chunks.to_string()));
        // The V schedules need exactly 2 chunks (and dualpipev m ≥ 2p);
        // other counts must be refused with exit 2, never a panic.
        flags.push(
            "--schedule",
            Some(value(
                &[
                    "interleaved",
                    "interleaved",
                    "looped-bfs",
                    "zb-v",
                    "dualpipev",
                ],
                rng,
            )),
        );
    } else if rng.chance(5) {
        flags.push("--schedule", Some("dualpipe".to_string()));
    } else if rng.chance(40) {
        flags.push(
            "--schedule",
            Some(value(
                &["gpipe", "1f1b", "zb-h1", "zb-h2", "looped-bfs"],
                rng,
            )),
        );
    }
    // Interleaved microbatch groups (valid ones are N in [p, m]) and
    // Megatron-Core layouts of the 4-layer models (p·v = 2 or 4 stages;
    // then broken ones).
    if rng.chance(10) {
        flags.push(
            "--microbatch-group-size",
            Some(value(&["2", "4", "8", "3", "0", "4294967295"], rng)),
        );
    }
    if rng.chance(10) {
        flags.push(
            "--pipeline-layout",
            Some(value(
                &[
                    "Ett|ttL",
                    "Et|t|t|tL",
                    "Et*2|t*2L",
                    "(Et|tL)*1",
                    "E(t|)*3,tL",
                    "Ettt|tL",
                    "E|ttt|tL",
                    "Ett|ttmL",
                    "Ett|ttX",
                    "Et*4294967296|L",
                    "E(t*1000|)*100000L",
                    "((t)*2)*2",
                    "",
                    "|",
                    "*",
                ],
                rng,
            )),
        );
    }
    for (flag, valid, percent) in [
        ("--microbatch-size", &["1", "2"][..], 10),
        ("--recompute", &["none", "selective", "full"][..], 40),
        (
            "--profile",
            &["profile.json", "a100-80gb", "v100-32gb"][..],
            10,
        ),
        (
            "--stack",
            &["stack.json", "megatron-2022", "deepspeed-pipeline"][..],
            20,
        ),
        ("--seed", &["0", "7"][..], 5),
        ("--seq-len", &["64", "256", "0", "99999999999"][..], 8),
        ("--cp", &["1", "2", "4", "3", "0"][..], 10),
        // Mixtures of experts: expert parallelism and routing skew.
        ("--ep", &["1", "2", "8", "3", "0", "4294967295"][..], 10),
        ("--etp", &["1", "2", "0"][..], 5),
        (
            "--expert-imbalance",
            &[
                "uniform",
                "skew:2",
                "skew:0.5",
                "skew:x",
                "model.json",
                "experts.txt",
                "missing.txt",
            ][..],
            8,
        ),
        // DeepEP's dispatch and DualPipe's overlapped pairs.
        ("--moe-dispatcher", &["nccl", "deepep", "nvshmem"][..], 8),
        ("--pair-overlap", &["true", "false", "maybe"][..], 10),
        // Optimizers and bf16 gradient reduction (issue 36).
        (
            "--optimizer",
            &[
                "adam",
                "adafactor",
                "adam8bit",
                "lion",
                "sgd",
                "onebitadam",
                "onebitlamb",
                "adagrad",
            ][..],
            8,
        ),
        ("--grad-reduce-in-bf16", &["true", "false", "maybe"][..], 8),
        // CPU offloading of activations (issue 36 item 2).
        (
            "--cpu-offloading-num-layers",
            &["0", "1", "3", "99", "-1"][..],
            8,
        ),
        // Activation compression (issue 36 item 2).
        (
            "--activation-compression",
            &["2", "1.8", "1", "0.5", "65", "nan", "x"][..],
            8,
        ),
    ] {
        if rng.chance(percent) {
            flags.push(flag, Some(value(valid, rng)));
        }
    }
    flags.0.extend(options.0);
}

/// `--ranks` lists: valid ones first, then the rest.
const RANKS: &[&str] = &[
    "0",
    "0-1",
    "0,1,3",
    "3-3",
    " 1 , 2 ",
    "0-7",
    "0-1048575",
    "1-0",
    "0-1048576",
    "0-4294967295",
    "4294967295",
    "4294967296",
    "",
    ",",
    "a",
    "-1",
    "0--1",
    "0-",
];

/// `--plot`, `--trace`, `--ranks`, `--lanes-per-stream` (simulate, timeline).
pub fn picture_flags(flags: &mut Flags, case: &mut Case, rng: &mut Rng) {
    if rng.chance(40) {
        let name = if rng.chance(70) { "out.svg" } else { "out.png" };
        flags.push("--plot", Some(output_path(name, case, rng)));
    }
    if rng.chance(40) {
        flags.push("--trace", Some(output_path("out.trace.json", case, rng)));
    }
    if rng.chance(30) {
        let ranks = if rng.chance(70) { &RANKS[..6] } else { RANKS };
        flags.push("--ranks", Some(rng.pick(ranks).to_string()));
    }
    if rng.chance(20) {
        flags.push("--lanes-per-stream", None);
    }
}
