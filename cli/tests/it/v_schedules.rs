//! The V-shaped schedules from the command line: `--schedule zb-v` and
//! `dualpipev` (two chunks per stage on the V map) simulate, explain their
//! map and pairs, sweep on request, and refuse what they cannot build with
//! exit 2; `dualpipe` (two model copies) likewise.

use crate::common;
use common::{clustersim, stderr};

/// GPT-3 175B on 64 H100s (t=8, p=8), 128 microbatches, full recompute.
fn gpt3(schedule: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "simulate",
        "--model",
        "gpt3-175b",
        "--topology",
        "dgx-h100-superpod",
        "--tp",
        "8",
        "--pp",
        "8",
        "--dp",
        "1",
        "--global-batch",
        "128",
        "--recompute",
        "full",
        "--chunks",
        "2",
        "--schedule",
        schedule,
    ];
    args.extend_from_slice(extra);
    clustersim(&args)
}

fn json(schedule: &str) -> serde_json::Value {
    let output = gpt3(schedule, &["--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn zb_v_runs_with_less_bubble_than_interleaved_on_the_same_chunks_and_owes_more_weight_state() {
    let (interleaved, zb_v, dual) = (json("interleaved"), json("zb-v"), json("dualpipev"));
    let bubble = |v: &serde_json::Value| v["bubble_fraction"].as_f64().unwrap();
    assert!(
        bubble(&zb_v) < bubble(&interleaved),
        "{} vs {}",
        bubble(&zb_v),
        bubble(&interleaved)
    );
    // (DualPipeV, its pairs costed back to back, idles (p−1)(F+2B−3W): more
    // than ZB-V; on this case also more than interleaved, so no order is asserted.)
    // DualPipeV holds one chunk-microbatch of activations more than ZB-V
    // (2p+1 against 2p), but owes fewer deferred weight gradients (r+1
    // against 2r+1 on rank r), whose state — each linear layer's input and
    // output gradient, far more than a fully recomputed layer keeps — is
    // counted too: here ZB-V peaks higher.
    assert!(zb_v["peak_memory_bytes"].as_u64() > dual["peak_memory_bytes"].as_u64());
}

#[test]
fn explain_shows_the_v_map_and_the_pairs() {
    let output = gpt3("dualpipev", &["--explain"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    for needle in [
        "s0F0c1 s0I0c1 s0W0c1",
        "s0F15&B7c1 s0F8c1&B0",
        "V map (dualpipev): stage r holds virtual stages r and 2p−1−r",
        "Peak chunk-microbatches of activations per stage: 17 17 17 17 17 17 17 17",
        "overlap of the pair not modeled: costed as sequential",
    ] {
        assert!(text.contains(needle), "missing '{needle}' in:\n{text}");
    }
    let output = gpt3("zb-v", &["--explain"]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("Peak chunk-microbatches of activations per stage: 16 16 16 16 16 16 16 16")
    );
}

#[test]
fn sweep_tries_the_v_schedules_with_two_chunks_only() {
    let json_path = std::env::temp_dir().join(format!(
        "clustersim-v-schedules-sweep-{}.json",
        std::process::id()
    ));
    let output = clustersim(&[
        "sweep",
        "--model",
        "gpt3-175b",
        "--topology",
        "dgx-h100-superpod",
        "--gpus",
        "64",
        "--global-batch",
        "128",
        "--tp",
        "8",
        "--pp",
        "8",
        "--schedule",
        "interleaved,zb-v,dualpipev",
        "--recompute",
        "full",
        "--max-microbatch",
        "1",
        "--max-chunks",
        "3",
        "--json",
        json_path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = std::fs::read_to_string(&json_path).unwrap();
    std::fs::remove_file(&json_path).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let results = value["results"].as_array().expect("results");
    // interleaved v = 2 and 3 (96 layers on 8·3 = 24 virtual stages), zb-v and dualpipev at v = 2.
    let mut seen: Vec<(String, u64)> = results
        .iter()
        .map(|r| {
            (
                r["layout"]["schedule"].as_str().unwrap().to_string(),
                r["layout"]["chunks"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("dualpipev".to_string(), 2),
            ("interleaved".to_string(), 2),
            ("interleaved".to_string(), 3),
            ("zb-v".to_string(), 2)
        ]
    );
    // The issue's done-when: ZB-V beats interleaved on this realistic case
    // (deferred weight-gradient state counted in its memory, and it fits).
    let throughput = |schedule: &str| -> Vec<f64> {
        results
            .iter()
            .filter(|r| r["layout"]["schedule"] == schedule)
            .map(|r| r["samples_per_s"].as_f64().unwrap())
            .collect()
    };
    let zb_v = throughput("zb-v")[0];
    for interleaved in throughput("interleaved") {
        assert!(
            zb_v > interleaved,
            "zb-v {zb_v} vs interleaved {interleaved}"
        );
    }
}

#[test]
fn v_schedules_refuse_what_they_cannot_build() {
    for (args, needle) in [
        (
            &[
                "simulate",
                "--model",
                "tiny",
                "--pp",
                "2",
                "--dp",
                "1",
                "--schedule",
                "zb-v",
                "--chunks",
                "4",
            ][..],
            "got chunks = 4",
        ),
        (
            &[
                "simulate",
                "--model",
                "tiny",
                "--pp",
                "4",
                "--dp",
                "1",
                "--global-batch",
                "4",
                "--schedule",
                "dualpipev",
                "--chunks",
                "2",
            ][..],
            "dualpipev needs microbatches m = B/(b·d) = 4 ≥ 2 × pp = 8",
        ),
        (
            &[
                "simulate",
                "--model",
                "tiny",
                "--pp",
                "3",
                "--dp",
                "1",
                "--global-batch",
                "7",
                "--schedule",
                "dualpipe",
            ][..],
            "pp: dualpipe needs an even number of pipeline stages",
        ),
        (
            &[
                "simulate",
                "--model",
                "tiny",
                "--pp",
                "2",
                "--dp",
                "1",
                "--global-batch",
                "6",
                "--schedule",
                "dualpipe",
                "--distributed-optimizer",
            ][..],
            "distributed_optimizer: not built for dualpipe",
        ),
    ] {
        let output = clustersim(args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(needle), "{args:?}: {message}");
        assert!(!message.contains("panicked"), "{message}");
    }
}

#[test]
fn plot_bubble_draws_the_v_schedules_over_their_curves() {
    let svg = std::env::temp_dir().join(format!("clustersim-v-bubble-{}.svg", std::process::id()));
    let output = clustersim(&[
        "plot",
        "bubble",
        "--model",
        "gpt3-175b",
        "--tp",
        "8",
        "--pp",
        "4",
        "--dp",
        "1",
        "--global-batch",
        "8",
        "--recompute",
        "full",
        "--microbatches",
        "4,8",
        "--out",
        svg.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    let picture = std::fs::read_to_string(&svg).unwrap();
    std::fs::remove_file(&svg).unwrap();
    // ZB-V's curve is (p−1)/(6·m): 3/24 = 0.125 at m = 4; DualPipeV's (p−1)/(3·m)
    // at m = 8 (m = 4 < 2p is refused and reported as skipped).
    assert!(text.contains("ZB-V             m=4: "), "{text}");
    assert!(text.contains("(formula 0.1250)"), "{text}");
    assert!(text.contains("DualPipeV        m=8: "), "{text}");
    assert!(stderr(&output).contains("skipped DualPipeV m=4"));
    assert!(picture.contains("ZB-V&apos;s start skew (F = I = W)"));
    // DualPipe's (p−2)/(3·m): 2/24 = 0.0833 at m = 8 (m = 4 < 2p skipped).
    assert!(
        text.contains("DualPipe         m=8: ") && text.contains("(formula 0.0833)"),
        "{text}"
    );
    assert!(stderr(&output).contains("skipped DualPipe m=4"));
    assert!(picture.contains("(p−1−1)/(3·m) analytical: DualPipe (F = I = W)"));
}
