//! Mixtures of experts from the command line (issue 17): `simulate --ep`
//! with its JSON, `--explain` rows and routing skew; `collective --op
//! all_to_all`; bad expert flags exit 2 with the field named.

use crate::common;
use common::{clustersim, text, MIXTRAL_T1_P4_D16};

/// [`MIXTRAL_T1_P4_D16`] with full recomputation, the distributed optimizer
/// and its experts over 8 ranks (`--ep 8`, the last two words).
fn mixtral() -> Vec<&'static str> {
    let extra = [
        "--recompute",
        "full",
        "--distributed-optimizer",
        "--ep",
        "8",
    ];
    [&MIXTRAL_T1_P4_D16[..], &extra[..]].concat()
}

fn json_of(extra: &[&str]) -> serde_json::Value {
    let mut args = mixtral();
    args.extend_from_slice(extra);
    args.push("--json");
    let out = clustersim(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).unwrap()
}

#[test]
fn simulate_with_ep_reports_the_all_to_alls_and_the_routing() {
    let uniform = json_of(&[]);
    assert!(
        uniform["exposed_communication_s"]["expert_parallel_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(uniform["expert_parallel"], 8);
    let text_of = uniform.to_string();
    assert!(text_of.contains("\"busiest_rank_load\":1.0"), "{text_of}");
    let skewed = json_of(&["--expert-imbalance", "skew:4"]);
    assert!(skewed.to_string().contains("\"imbalance\":\"skew:4\""));
    let time = |v: &serde_json::Value| v["iteration_time_s"].as_f64().unwrap();
    assert!(time(&skewed) > time(&uniform));
}

#[test]
fn explain_lists_the_moe_kernels_and_all_to_alls() {
    let mut args = mixtral();
    args.push("--explain");
    let out = clustersim(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for row in [
        "moe_router",
        "moe_permute",
        "expert_all_to_all",
        "expert_fc1",
        "expert_fc2.wgrad",
        "moe_unpermute.bwd",
    ] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }
}

#[test]
fn the_collective_command_prices_an_all_to_all() {
    let out = clustersim(&[
        "collective",
        "--op",
        "all_to_all",
        "--topology",
        "dgx-h100-superpod",
        "--gpus",
        "8",
        "--min-bytes",
        "1G",
        "--max-bytes",
        "1G",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("all_to_all") && stdout.contains("p2p"),
        "{stdout}"
    );
}

#[test]
fn bad_expert_flags_exit_2_naming_the_field() {
    for (flag, value, field) in [
        ("--ep", "3", "ep:"),
        ("--ep", "0", "ep:"),
        ("--etp", "3", "etp:"),
        ("--expert-imbalance", "skew:nan", "expert_imbalance:"),
        (
            "--expert-imbalance",
            "/no/such/histogram",
            "expert_imbalance:",
        ),
    ] {
        let mut args = mixtral();
        args.truncate(args.len() - 2);
        args.extend([flag, value]);
        let out = clustersim(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {value}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stderr).contains(field), "{}", text(&out.stderr));
    }
}

#[test]
fn the_summary_says_mixtures_of_experts_are_not_validated() {
    let out = clustersim(&mixtral());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("accuracy            NOT VALIDATED for mixtures of experts"),
        "{stdout}"
    );
    // A dense model's summary has no such line.
    let dense = clustersim(&["simulate"]);
    assert!(!text(&dense.stdout).contains("NOT VALIDATED"));
}

#[test]
fn deepep_and_overlapped_pairs_show_in_json_and_explain_and_refuse_by_name() {
    // DualPipeV on 2 stages (m = 64/16 = 4 ≥ 2p) with recompute off, as
    // pair_overlap needs.
    fn base<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = mixtral();
        let set = |args: &mut Vec<&str>, flag: &str, value: &'static str| {
            let at = args.iter().position(|a| *a == flag).unwrap();
            args[at + 1] = value;
        };
        set(&mut args, "--pp", "2");
        set(&mut args, "--recompute", "none");
        args.extend_from_slice(&["--schedule", "dualpipev", "--chunks", "2"]);
        args.extend_from_slice(extra);
        args
    }
    let run = |extra: &[&str]| clustersim(&base(extra));
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut extra = extra.to_vec();
        extra.push("--json");
        let out = run(&extra);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_str(&text(&out.stdout)).unwrap()
    };
    let plain = json(&[]);
    assert_eq!(plain["moe_dispatcher"], "nccl");
    assert_eq!(plain["pair_overlap"], false);
    let both = json(&["--moe-dispatcher", "deepep", "--pair-overlap"]);
    assert_eq!(both["moe_dispatcher"], "deepep");
    assert_eq!(both["pair_overlap"], true);
    let time = |v: &serde_json::Value| v["iteration_time_s"].as_f64().unwrap();
    assert!(time(&both) < time(&plain));
    let explain = run(&["--moe-dispatcher", "deepep", "--pair-overlap", "--explain"]);
    assert_eq!(explain.status.code(), Some(0));
    let out = text(&explain.stdout);
    assert!(out.contains("MoE dispatcher: DeepEP"), "{out}");
    assert!(out.contains("F&B pairs overlapped"), "{out}");
    assert!(out.contains("84.8% of the SMs"), "{out}");
    // pair_overlap without a pair schedule: exit 2 naming the key.
    let mut args = mixtral();
    args.push("--pair-overlap");
    let refused = clustersim(&args);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("pair_overlap: only with the schedules that run F&B pairs")
    );
}

#[test]
fn a_sweep_over_ep_and_etp_names_both_and_each_layout_is_what_simulate_gives() {
    let sweep = [
        "sweep",
        "--model",
        "mixtral-8x7b",
        "--topology",
        "dgx-h100-superpod",
        "--gpus",
        "64",
        "--global-batch",
        "256",
        "--tp",
        "2",
        "--pp",
        "2",
        "--ep",
        "4,8",
        "--etp",
        "1,2",
        "--sequence-parallel",
        "--recompute",
        "full",
        "--schedule",
        "1f1b",
        "--max-microbatch",
        "1",
        "--precision",
        "bf16",
        "--distributed-optimizer",
        "--ignore-memory",
        "--json",
        "-",
    ];
    let out = clustersim(&sweep);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&out.stderr);
    assert!(report.contains("ep ∈ {4,8} · etp ∈ {1,2}"), "{report}");
    assert!(report.contains("  ep etp "), "{report}");
    let json: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(
        json["sweep"]["expert_tensor_parallel"],
        serde_json::json!([1, 2])
    );
    let results = json["results"].as_array().unwrap();
    // t 2, p 2, d 16: ep 4 and 8 each with etp 1 and 2 (ep·etp divides t·d = 32).
    assert_eq!(results.len(), 4, "{json}");
    let etp_2_ep_8 = results
        .iter()
        .find(|r| r["layout"]["expert_parallel"] == 8 && r["layout"]["expert_tensor_parallel"] == 2)
        .expect("the ep 8, etp 2 layout");
    let simulated = json_of_with(&[
        "--tp",
        "2",
        "--pp",
        "2",
        "--dp",
        "16",
        "--ep",
        "8",
        "--etp",
        "2",
        "--global-batch",
        "256",
        "--microbatch-size",
        "1",
    ]);
    assert_eq!(
        etp_2_ep_8["iteration_time_s"], simulated["iteration_time_s"],
        "{etp_2_ep_8}\n{simulated}"
    );
}

/// `simulate` of Mixtral 8x7B on dgx-h100-superpod with `extra` (bf16, full
/// recompute, sequence parallelism and the distributed optimizer, as the
/// sweep above runs it).
fn json_of_with(extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "simulate",
        "--model",
        "mixtral-8x7b",
        "--topology",
        "dgx-h100-superpod",
        "--recompute",
        "full",
        "--precision",
        "bf16",
        "--sequence-parallel",
        "--distributed-optimizer",
        "--schedule",
        "1f1b",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = clustersim(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_str(&text(&out.stdout)).unwrap()
}
