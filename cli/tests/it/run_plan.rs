//! `clustersim run-plan` (issue 35): a whole training run from one simulated
//! iteration. The same inputs and seed give the same bytes; without failures
//! the run takes its work plus its checkpoints; the chosen checkpoint interval
//! sits at Daly's; every output follows `schemas/run-plan.schema.json`; bad
//! input is exit 2 with one message.

use crate::common::schema::assert_valid;
use crate::common::{clustersim, text};
use serde_json::Value;

/// A 405B-class dense model on 16,384 H100s (the README's worked example).
const LLAMA_405B: [&str; 22] = [
    "run-plan",
    "--model",
    "llama3.1-405b",
    "--topology",
    "dgx-h100-superpod:2048",
    "--tp",
    "8",
    "--cp",
    "2",
    "--pp",
    "16",
    "--dp",
    "64",
    "--schedule",
    "interleaved",
    "--chunks",
    "2",
    "--global-batch",
    "2048",
    "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split",
    "--json",
];

fn run(extra: &[&str]) -> (Vec<u8>, Value) {
    let args = [&LLAMA_405B[..], extra].concat();
    let output = clustersim(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let value = serde_json::from_slice(&output.stdout).unwrap();
    (output.stdout, value)
}

#[test]
fn the_same_inputs_and_seed_give_the_same_bytes_and_follow_the_schema() {
    let (first, value) = run(&["--tokens", "15T", "--price-per-gpu-hour", "4.916"]);
    let (second, _) = run(&["--tokens", "15T", "--price-per-gpu-hour", "4.916"]);
    assert_eq!(first, second);
    assert_valid("run-plan", "405B run plan", &value);
    let (other_seed, _) = run(&[
        "--tokens",
        "15T",
        "--price-per-gpu-hour",
        "4.916",
        "--trial-seed",
        "7",
    ]);
    assert_ne!(
        first, other_seed,
        "the Monte-Carlo's seed reaches its summary"
    );
    // 15 T tokens in iterations of 2048 × 8192 tokens, rounded up.
    assert_eq!(value["iterations"], 894_070);
    assert_eq!(value["plan"]["gpus"], 16_384);
    // One copy of the model states: 405 B parameters × (2 bytes of bf16
    // weights + 12 of fp32 master weights and Adam moments).
    let total = value["storage_checkpoint"]["total_bytes"].as_f64().unwrap();
    assert!((total / 405.85e9 / 14.0 - 1.0).abs() < 0.01, "{total}");
    let mean = value["monte_carlo"]["mean_wall_clock_s"].as_f64().unwrap();
    let closed = value["expected"]["wall_clock_s"].as_f64().unwrap();
    assert!(
        (mean / closed - 1.0).abs() < 0.02,
        "Monte-Carlo {mean} vs closed form {closed}"
    );
    let interval = &value["interval"];
    let (chosen, daly) = (
        interval["chosen_s"].as_f64().unwrap(),
        interval["daly_s"].as_f64().unwrap(),
    );
    let iteration_s = value["plan"]["iteration_time_s"].as_f64().unwrap();
    assert!(
        (chosen - daly).abs() <= iteration_s,
        "chosen {chosen} s, Daly {daly} s"
    );
    assert!(value["energy"]["cost"].as_f64().unwrap() > 0.0);
}

#[test]
fn weibull_failures_keep_the_closed_form_and_spread_the_monte_carlo() {
    // Shape 0.7 (a decreasing hazard, Schroeder and Gibson's finding) at the
    // job's MTBF: the closed form and the interval stay exponential; the
    // trials name their distribution, and clustered failures spread the
    // interruptions wider than the exponential's.
    let args = ["--tokens", "15T"];
    let (_, exponential) = run(&args);
    let (bytes, weibull) = run(&[&args[..], &["--failure-distribution", "weibull:0.7"]].concat());
    let (again, _) = run(&[&args[..], &["--failure-distribution", "weibull:0.7"]].concat());
    assert_eq!(bytes, again);
    assert_valid("run-plan", "Weibull failures", &weibull);
    assert_eq!(weibull["expected"], exponential["expected"]);
    assert_eq!(weibull["interval"], exponential["interval"]);
    let distribution = serde_json::json!({"kind": "weibull", "shape": 0.7});
    assert_eq!(weibull["monte_carlo"]["failure_distribution"], distribution);
    assert_eq!(
        weibull["plan"]["monte_carlo"]["failure_distribution"],
        distribution
    );
    assert_eq!(
        exponential["monte_carlo"]["failure_distribution"],
        serde_json::json!({"kind": "exponential"})
    );
    let spread = |value: &Value| {
        let mc = &value["monte_carlo"];
        mc["max_interruptions"].as_f64().unwrap() - mc["min_interruptions"].as_f64().unwrap()
    };
    assert!(spread(&weibull) > spread(&exponential));
    // The renewal theorem: as many failures on average, within 2 %.
    let mean = |value: &Value| value["monte_carlo"]["mean_interruptions"].as_f64().unwrap();
    assert!((mean(&weibull) / mean(&exponential) - 1.0).abs() < 0.02);
}

#[test]
fn without_failures_the_run_takes_its_work_plus_its_checkpoints() {
    let (_, value) = run(&[
        "--steps",
        "10000",
        "--failures",
        "none",
        "--checkpoint-every",
        "100",
        "--trials",
        "0",
    ]);
    assert_valid("run-plan", "no failures", &value);
    let expected = &value["expected"];
    let work = expected["work_s"].as_f64().unwrap();
    let checkpoints = expected["checkpoint_s"].as_f64().unwrap();
    let persist = value["storage_checkpoint"]["persist_s"].as_f64().unwrap();
    // 10,000 iterations, a checkpoint every 100: 100 checkpoints (the last one included).
    assert!(
        (checkpoints / persist - 100.0).abs() < 1e-6,
        "{checkpoints} s of {persist} s each"
    );
    let wall = expected["wall_clock_s"].as_f64().unwrap();
    assert!((wall - work - checkpoints).abs() < 1e-6 * wall);
    assert_eq!(expected["interruptions"], 0.0);
    assert!(value["monte_carlo"].is_null());
}

#[test]
fn the_summary_names_every_default_with_its_source_and_draws_its_charts() {
    let dir = std::env::temp_dir().join(format!("clustersim-run-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let interval = dir.join("interval.svg").display().to_string();
    let gpus = dir.join("gpus.svg").display().to_string();
    let args = [
        &LLAMA_405B[..21],
        &[
            "--tokens",
            "15T",
            "--plot-interval",
            &interval,
            "--plot-gpus",
            &gpus,
        ][..],
    ]
    .concat();
    let output = clustersim(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let summary = text(&output.stdout);
    for needle in [
        "expected time",
        "goodput",
        "interruptions expected",
        "arXiv 2410.21680",
        "RA-11333-001 V11",
        "Default value is 10 minutes for NCCL",
        "arXiv 2506.14551",
        "Uptime Institute",
        "Ember",
        "no --price-per-gpu-hour: no cost",
    ] {
        assert!(
            summary.contains(needle),
            "{needle} missing from:\n{summary}"
        );
    }
    for chart in [&interval, &gpus] {
        let svg = std::fs::read_to_string(chart).unwrap();
        assert!(svg.contains("expected days to train"), "{chart}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn network_failures_add_a_rate_per_nic_link_and_per_leaf_switch() {
    let (_, node) = run(&["--tokens", "15T", "--trials", "0"]);
    let (_, both) = run(&[
        "--tokens",
        "15T",
        "--trials",
        "0",
        "--failures",
        "meta-rsc1,hpn-network",
    ]);
    assert_valid("run-plan", "network failures", &both);
    let shares = both["failure_rate"]["shares"].as_array().unwrap();
    let of = |component: &str| {
        shares
            .iter()
            .find(|share| share["component"] == component)
            .unwrap_or_else(|| panic!("no {component} share in {shares:?}"))
    };
    // 2048 nodes of 8 NICs; 8 rails × 2048 / 32 nodes a leaf (radix 64).
    assert_eq!(of("nic")["count"], 16_384);
    assert_eq!(of("switch")["count"], 512);
    let per_hour = |share: &Value| share["job_failures_per_hour"].as_f64().unwrap();
    assert!((per_hour(of("nic")) - 16_384.0 * 0.057e-2 / 730.5).abs() < 1e-12);
    assert!((per_hour(of("switch")) - 512.0 * 0.051e-2 / 730.5).abs() < 1e-12);
    let mttf = |value: &Value| value["failure_rate"]["mttf_hours"].as_f64().unwrap();
    assert!(mttf(&both) < mttf(&node));
    assert!(mttf(&both) > 0.97 * mttf(&node));
}

#[test]
fn a_failure_rate_of_ones_own_is_counted_per_component() {
    // Software faults and hangs per node-hour, GPU failures per GPU-hour,
    // and no preset: 2048 × 2e-5 + 16,384 × 1e-6 failures an hour.
    let (_, value) = run(&[
        "--tokens",
        "15T",
        "--trials",
        "0",
        "--failures",
        "none",
        "--failure-rate",
        "software:2e-5",
        "--failure-rate",
        "gpu:1e-6",
    ]);
    assert_valid("run-plan", "own failure rates", &value);
    let shares = value["failure_rate"]["shares"].as_array().unwrap();
    let counts: Vec<(&str, u64)> = shares
        .iter()
        .map(|s| {
            (
                s["component"].as_str().unwrap(),
                s["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts, [("software", 2048), ("gpu", 16_384)]);
    assert!(shares
        .iter()
        .all(|s| s["source"] == "input (--failure-rate)"));
    let mttf = value["failure_rate"]["mttf_hours"].as_f64().unwrap();
    let expected = 1.0 / (2048.0 * 2e-5 + 16_384.0 * 1e-6);
    assert!((mttf / expected - 1.0).abs() < 1e-12, "{mttf} h");
}

#[test]
fn bad_run_plan_input_is_exit_2_with_one_message() {
    let cases: [(&[&str], &str); 10] = [
        (
            &["--tokens", "15T", "--failure-rate", "disk:1e-5"],
            "unknown component 'disk'",
        ),
        (
            &["--tokens", "15T", "--failure-rate", "node:-1"],
            "failures per component-hour from 0 to 1",
        ),
        (
            &["--tokens", "15T", "--failure-distribution", "weibull:0"],
            "weibull:K needs a shape K within [0.1, 10], got 0",
        ),
        (
            &["--tokens", "15T", "--failure-distribution", "lognormal:1"],
            "expected 'exponential' or 'weibull:K', got 'lognormal:1'",
        ),
        (&["--tokens", "0"], "not a count from 1"),
        (&["--tokens", "15X"], "the suffix is one of K, M, B, G, T"),
        (
            &["--tokens", "15T", "--checkpoint-every", "soon"],
            "optimal, a number of iterations, or a time",
        ),
        (
            &["--tokens", "15T", "--failures", "meteor"],
            "unknown preset `meteor`",
        ),
        (
            &["--tokens", "15T", "--pue", "0.5"],
            "--pue (energy.pue): must be within [1, 10]",
        ),
        (
            &["--tokens", "15T", "--storage-write-gbps=-1"],
            "--storage-write-gbps (storage.aggregate_write_bytes_per_s)",
        ),
    ];
    for (extra, needle) in cases {
        let output = clustersim(&[&LLAMA_405B[..], extra].concat());
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{needle:?} missing from {stderr}");
    }
    let a100 = clustersim(&[
        "run-plan",
        "--model",
        "gpt-22b",
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "4",
        "--steps",
        "10",
    ]);
    assert_eq!(a100.status.code(), Some(2));
    assert!(
        text(&a100.stderr).contains("give --node-training-w W"),
        "{}",
        text(&a100.stderr)
    );
    let missing_target = clustersim(&LLAMA_405B[..21]);
    assert_eq!(missing_target.status.code(), Some(2));
    // t8 p16 d128 without context parallelism holds 81.9 GiB of 80 per GPU.
    let too_big = clustersim(&[
        "run-plan",
        "--model",
        "llama3.1-405b",
        "--topology",
        "dgx-h100-superpod:2048",
        "--tp",
        "8",
        "--pp",
        "16",
        "--dp",
        "128",
        "--global-batch",
        "2048",
        "--account-for-embedding-in-pipeline-split",
        "--account-for-loss-in-pipeline-split",
        "--tokens",
        "15T",
    ]);
    assert_eq!(too_big.status.code(), Some(2));
    assert!(
        text(&too_big.stderr).contains("the layout does not fit"),
        "{}",
        text(&too_big.stderr)
    );
}

/// GPT 22B at t8 p2 d2 on 32 H100s: the layout the slow-part tests slow.
const GPT_22B_T8_P2_D2: [&str; 10] = [
    "--model",
    "gpt-22b",
    "--tp",
    "8",
    "--pp",
    "2",
    "--dp",
    "2",
    "--global-batch",
    "16",
];

/// `command` on [`GPT_22B_T8_P2_D2`] with `extra`.
fn on_22b(command: &str, extra: &[&str]) -> std::process::Output {
    clustersim(&[&[command][..], &GPT_22B_T8_P2_D2[..], extra].concat())
}

/// `simulate --json` on the 22B layout with `extra`: exit 0, valid against
/// the schema (failures name `case`).
fn simulate_22b_json(case: &str, extra: &[&str]) -> Value {
    let output = on_22b("simulate", &[extra, &["--json"][..]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_valid("simulate", case, &value);
    value
}

/// `run-plan --json` for 1 B tokens on the 22B layout with `extra`: exit 0,
/// valid against the schema.
fn run_plan_22b_json(case: &str, extra: &[&str]) -> Value {
    let plan_args = ["--tokens", "1B", "--node-training-w", "6500", "--json"];
    let output = on_22b("run-plan", &[&plan_args[..], extra].concat());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_valid("run-plan", case, &value);
    value
}

/// Each of `bad` given to `flag` on the 22B layout is exit 2 naming `flag`.
fn each_is_refused(flag: &str, bad: &[&str]) {
    for value in bad {
        let output = on_22b("simulate", &[flag, value]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
    }
}

/// `--slow-rank R:F` (issue 35 item 4): every rank simulated, the rank named
/// in `--json` with what it costs the step; a rank outside the layout is exit 2.
#[test]
fn a_slow_rank_is_named_with_what_it_costs_the_step() {
    let value = simulate_22b_json("--slow-rank", &["--slow-rank", "9:1.2"]);
    let slow = &value["slow_ranks"];
    assert_eq!(slow["ranks"][0]["rank"], 9);
    assert_eq!(slow["ranks"][0]["factor"], 1.2);
    assert_eq!(value["simulation_mode"], "full");
    let (with, without) = (
        value["iteration_time_s"].as_f64().unwrap(),
        slow["iteration_time_without_s"].as_f64().unwrap(),
    );
    assert!(with > without, "{with} vs {without}");
    assert!((slow["cost_s"].as_f64().unwrap() - (with - without)).abs() < 1e-12);
    let summary = text(&on_22b("simulate", &["--slow-rank", "9:1.2"]).stdout);
    assert!(
        summary.contains("slow ranks          rank 9 ×1.2: the iteration takes"),
        "{summary}"
    );
    each_is_refused("--slow-rank", &["32:1.2", "3:0.5", "3", "x:2"]);
}

/// `--slow-nic R:F` (issue 35 item 4): the NIC rank R sends through named
/// in `--json` (its node and index) with what it costs the step, in
/// `simulate` and `run-plan`, each valid against its schema; bad ones exit 2.
#[test]
fn a_slow_nic_is_named_with_what_it_costs_the_step() {
    let value = simulate_22b_json("--slow-nic", &["--slow-nic", "9:2"]);
    let nic = &value["slow_ranks"]["nics"][0];
    // Rank 9 is node 1's second GPU: NIC 8 + 1.
    assert_eq!(
        (&nic["rank"], &nic["node"], &nic["nic"], &nic["factor"]),
        (&9.into(), &1.into(), &9.into(), &2.0.into())
    );
    assert_eq!(value["simulation_mode"], "full");
    assert!(value["slow_ranks"]["cost_s"].as_f64().unwrap() > 0.0);
    let summary = text(&on_22b("simulate", &["--slow-nic", "9:2"]).stdout);
    assert!(
        summary.contains("slow NICs           NIC 9 (node 1, rank 9's) at 1/2 of its bandwidth: the iteration takes"),
        "{summary}"
    );
    let plan = run_plan_22b_json("--slow-nic", &["--slow-nic", "9:2"]);
    assert_eq!(plan["slow_nics"][0]["nic"], 9);
    each_is_refused("--slow-nic", &["32:2", "3:0.5", "3", "x:2"]);
}

/// `--slow-nvlink R:F`: the GPU named in `--json` with its node and what it
/// costs the step, in `simulate` and `run-plan`, each valid against its
/// schema; bad ones, and nodes whose GPUs talk over PCIe, exit 2.
#[test]
fn a_slow_nvlink_is_named_with_what_it_costs_the_step() {
    let value = simulate_22b_json("--slow-nvlink", &["--slow-nvlink", "9:2"]);
    let link = &value["slow_ranks"]["nvlinks"][0];
    assert_eq!(
        (&link["rank"], &link["node"], &link["factor"]),
        (&9.into(), &1.into(), &2.0.into())
    );
    // Rank 9's tensor group of 8 all-reduces over NVLink: it slows the step.
    assert!(value["slow_ranks"]["cost_s"].as_f64().unwrap() > 0.0);
    let both = ["--slow-nvlink", "9:2", "--slow-nic", "9:2"];
    let summary = text(&on_22b("simulate", &both).stdout);
    assert!(
        summary.contains("slow NICs, NVLinks  NIC 9 (node 1, rank 9's) at 1/2 of its bandwidth, NVLink of rank 9 (node 1) at 1/2 of its bandwidth: the iteration takes"),
        "{summary}"
    );
    let plan = run_plan_22b_json("--slow-nvlink", &["--slow-nvlink", "9:2"]);
    assert_eq!(plan["slow_nvlinks"][0]["rank"], 9);
    each_is_refused("--slow-nvlink", &["32:2", "3:0.5", "3", "x:2"]);
    let pcie = clustersim(&[
        "simulate",
        "--model",
        "gpt-22b",
        "--topology",
        "h100-pcie-cluster",
        "--tp",
        "8",
        "--pp",
        "1",
        "--dp",
        "1",
        "--global-batch",
        "16",
        "--slow-nvlink",
        "1:2",
    ]);
    assert_eq!(pcie.status.code(), Some(2), "{}", text(&pcie.stderr));
    assert!(
        text(&pcie.stderr).contains("no NVLink between GPUs"),
        "{}",
        text(&pcie.stderr)
    );
}

/// `--slow-pcie R:F`: the GPU named in `--json` with its node and what it
/// costs the step, in `simulate` and `run-plan`, each valid against its
/// schema; bad ones exit 2 naming the flag.
#[test]
fn a_slow_pcie_link_is_named_with_what_it_costs_the_step() {
    let value = simulate_22b_json("--slow-pcie", &["--slow-pcie", "9:4"]);
    let link = &value["slow_ranks"]["pcies"][0];
    assert_eq!(
        (&link["rank"], &link["node"], &link["factor"]),
        (&9.into(), &1.into(), &4.0.into())
    );
    // Rank 9's pipeline transfers and data-parallel ring cross nodes through
    // its PCIe link, a quarter of Gen4's line rate below the HDR NIC.
    assert!(value["slow_ranks"]["cost_s"].as_f64().unwrap() > 0.0);
    let summary = text(&on_22b("simulate", &["--slow-pcie", "9:4"]).stdout);
    assert!(
        summary.contains("slow PCIe links     PCIe link of rank 9 (node 1) at 1/4 of its bandwidth: the iteration takes"),
        "{summary}"
    );
    let plan = run_plan_22b_json("--slow-pcie", &["--slow-pcie", "9:4"]);
    assert_eq!(plan["slow_pcies"][0]["rank"], 9);
    each_is_refused("--slow-pcie", &["32:2", "3:0.5", "3", "x:2", "3:2,1:2"]);
    // An asynchronous checkpoint waits for the slowest rank's copy to host.
    let copy_s = |extra: &[&str]| {
        let flags = [&["--async-checkpoint"][..], extra].concat();
        run_plan_22b_json("--slow-pcie", &flags)["storage_checkpoint"]["copy_block_s"]
            .as_f64()
            .unwrap()
    };
    let (nominal, slowed) = (copy_s(&[]), copy_s(&["--slow-pcie", "9:4"]));
    assert!((slowed / nominal - 4.0).abs() < 1e-12, "{nominal} {slowed}");
}

/// `--rank-spread lognormal:SIGMA`: every GPU's speed drawn from --seed; the
/// slowest and fastest ranks named in `--json` (simulate and run-plan, each
/// valid against its schema) with what the spread costs; the same seed
/// gives the same bytes, another seed other factors; bad spreads exit 2.
#[test]
fn a_rank_spread_names_its_slowest_rank_and_repeats_with_its_seed() {
    let spread = ["--rank-spread", "lognormal:0.05"];
    let value = simulate_22b_json("--rank-spread", &spread);
    assert_eq!(value["simulation_mode"], "full");
    let drawn = &value["slow_ranks"]["spread"];
    assert_eq!((&drawn["sigma"], &drawn["seed"]), (&0.05.into(), &0.into()));
    let (slowest, fastest) = (
        drawn["slowest"]["factor"].as_f64().unwrap(),
        drawn["fastest"]["factor"].as_f64().unwrap(),
    );
    // 32 draws of a median-1 log-normal straddle 1.
    assert!(fastest < 1.0 && slowest > 1.0, "{fastest}..{slowest}");
    assert!(value["slow_ranks"]["cost_s"].as_f64().unwrap() > 0.0);
    assert_eq!(value["slow_ranks"]["ranks"], serde_json::json!([]));
    let spread_json = [&spread[..], &["--json"][..]].concat();
    let [first, again] = [0, 1].map(|_| on_22b("simulate", &spread_json));
    assert_eq!(first.stdout, again.stdout);
    let reseeded = simulate_22b_json(
        "--rank-spread --seed",
        &[&spread[..], &["--seed", "1"][..]].concat(),
    );
    assert_ne!(
        reseeded["slow_ranks"]["spread"]["slowest"],
        drawn["slowest"]
    );
    let summary = text(&on_22b("simulate", &spread).stdout);
    assert!(
        summary.contains("rank spread         GPU speeds log-normal σ 0.05 (seed 0), ×"),
        "{summary}"
    );
    let plan = run_plan_22b_json("--rank-spread", &spread);
    assert_eq!(plan["rank_spread"], *drawn);
    each_is_refused(
        "--rank-spread",
        &["lognormal:0", "lognormal:0.6", "normal:0.1", "lognormal:x"],
    );
}

/// `--recovery fewer-replicas --repair-s S`: the replicas one node failure
/// leaves are simulated, their work rate is (d − k)/d × T(d)/T(d − k), and
/// the degraded stretch and the regrow join the downtime; without
/// `--repair-s`, or with no replica to spare, exit 2.
#[test]
fn fewer_replicas_run_at_the_simulated_rate_of_the_replicas_left() {
    let layout = |dp: &'static str, batch: &'static str| {
        [
            "--model",
            "gpt-22b",
            "--tp",
            "8",
            "--pp",
            "2",
            "--dp",
            dp,
            "--global-batch",
            batch,
        ]
    };
    let iteration_s = |dp, batch| {
        let output = clustersim(&[&["simulate"][..], &layout(dp, batch)[..], &["--json"]].concat());
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let value: Value = serde_json::from_slice(&output.stdout).unwrap();
        value["iteration_time_s"].as_f64().unwrap()
    };
    let plan_args = ["--tokens", "1B", "--node-training-w", "6500", "--json"];
    let output = clustersim(
        &[
            &["run-plan"][..],
            &layout("2", "16")[..],
            &plan_args[..],
            &["--recovery", "fewer-replicas", "--repair-s", "3600"][..],
        ]
        .concat(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_valid("run-plan", "--recovery fewer-replicas", &value);
    // t·p = 16 GPUs a replica, 8 a node: a node failure takes one of the two.
    let rate = value["plan"]["recovery"]["degraded_work_rate"]
        .as_f64()
        .unwrap();
    let expected = 0.5 * iteration_s("2", "16") / iteration_s("1", "8");
    assert!((rate - expected).abs() < 1e-12, "{rate} vs {expected}");
    let checkpoint = &value["storage_checkpoint"];
    let (persist, restore) = (
        checkpoint["persist_s"].as_f64().unwrap(),
        checkpoint["restore_s"].as_f64().unwrap(),
    );
    // Initialization 300 s + restore; the deficit; the regrow: save, 300 s, restore.
    let exposed = value["recovery"]["downtime"]["exposed_s"].as_f64().unwrap();
    let by_hand = 300.0 + restore + (1.0 - rate) * 3600.0 + persist + 300.0 + restore;
    assert!((exposed - by_hand).abs() < 1e-9, "{exposed} vs {by_hand}");
    assert_eq!(value["recovery"]["downtime"]["immune_s"], 600.0);
    for (extra, message) in [
        (&["--recovery", "fewer-replicas"][..], "needs --repair-s"),
        (
            &["--recovery", "fewer-replicas", "--repair-s=-5"][..],
            "--repair-s",
        ),
    ] {
        let output = clustersim(
            &[
                &["run-plan"][..],
                &layout("2", "16")[..],
                &plan_args[..],
                extra,
            ]
            .concat(),
        );
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
        assert!(
            text(&output.stderr).contains(message),
            "{}",
            text(&output.stderr)
        );
    }
    let alone = clustersim(
        &[
            &["run-plan"][..],
            &layout("1", "8")[..],
            &plan_args[..],
            &["--recovery", "fewer-replicas", "--repair-s", "3600"][..],
        ]
        .concat(),
    );
    assert_eq!(alone.status.code(), Some(2));
    assert!(
        text(&alone.stderr).contains("leaving none"),
        "{}",
        text(&alone.stderr)
    );
}

#[test]
fn the_summary_names_the_slow_parts_the_run_is_planned_with() {
    // 32 GPUs on 4 nodes, all under one leaf per rail: the slow uplink
    // changes nothing here; the summary still names what was given.
    let summary = |extra: &[&str]| {
        let plan_args = ["--tokens", "1B", "--node-training-w", "6500"];
        let output = on_22b("run-plan", &[&plan_args[..], extra].concat());
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    assert!(!summary(&[]).contains("slow parts"));
    let named = summary(&["--slow-rank", "5:1.1", "--slow-uplink", "3:2"]);
    let line = named
        .lines()
        .find(|line| line.trim_start().starts_with("slow parts"))
        .unwrap_or_else(|| panic!("{named}"));
    assert!(line.contains("rank 5 ×1.1"), "{line}");
    assert!(line.contains("uplinks of leaf"), "{line}");
}
