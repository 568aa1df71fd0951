//! Reproducers from the fuzzers (`cli/tests/reliability/`, see the
//! reliability report): every bad input gives exit code 2 and one message
//! naming what is wrong — never a panic, an abort or a silently absurd number.

use std::process::Output;

use crate::common;
use common::clustersim;

fn input(name: &str) -> String {
    common::input("reliability", name)
}

/// Asserts exit 2 and one message (one `error:`; scenario validation lists
/// its problems one per line under it) containing every one of `needles`.
fn assert_refused(output: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(
        stderr.matches("error:").count(),
        1,
        "one message expected: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} missing from: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn the_valid_timeline_compares_with_itself() {
    let t = input("t.json");
    let output = clustersim(&["compare", &t, &t, "--max-error", "0"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("(+0.00%)"));
}

/// P3, P4, O1, N3: degenerate timelines are refused by `compare` (either
/// side) and by `timeline`, naming the field.
#[test]
fn degenerate_timelines_are_refused_by_compare_and_timeline() {
    let t = input("t.json");
    let cases = [
        ("tl-tp0.json", "header.layout.tensor_parallel is 0"),
        ("tl-pp0.json", "header.layout.pipeline_parallel is 0"),
        ("tl-rank9.json", "header.groups[0] holds rank 9"),
        ("tl-ngpus0.json", "header.n_gpus is 0"),
        ("tl-iter.json", "no iteration 1"),
        ("tl-iter2.json", "no iteration 1"),
        ("tl-empty.json", "no tasks"),
    ];
    let trace = std::env::temp_dir().join(format!("reliability-{}.trace.json", std::process::id()));
    let trace = trace.display().to_string();
    for (name, message) in cases {
        let bad = input(name);
        assert_refused(&clustersim(&["compare", &bad, &t]), &[name, message]);
        assert_refused(&clustersim(&["compare", &t, &bad]), &[name, message]);
        assert_refused(
            &clustersim(&["timeline", &bad, "--trace", &trace]),
            &[name, message],
        );
        assert!(
            !std::path::Path::new(&trace).exists(),
            "{name}: half-written trace"
        );
    }
}

/// N7: `compare --max-error` must be a finite number ≥ 0.
#[test]
fn compare_refuses_a_max_error_that_is_not_a_finite_non_negative_number() {
    let t = input("t.json");
    for bad in ["NaN", "inf", "-inf", "-1"] {
        let flag = format!("--max-error={bad}");
        assert_refused(&clustersim(&["compare", &t, &t, &flag]), &["--max-error"]);
    }
}

/// N7: `collective --factor` below 2 is refused, not silently replaced by 2.
#[test]
fn collective_refuses_a_factor_below_2() {
    for bad in ["0", "1"] {
        let output = clustersim(&["collective", "--factor", bad, "--max-bytes", "32"]);
        assert_refused(
            &output,
            &["--factor must be at least 2", &format!("got {bad}")],
        );
        assert!(output.stdout.is_empty(), "rows printed for --factor {bad}");
    }
}

/// O2, N6: a shard count of 0 or 4294967295 is refused before anything is
/// sized by it, and the message prints the count as written (no wrap).
#[test]
fn sweep_merge_refuses_absurd_shard_counts() {
    let zero = input("shard-count-zero.json");
    let max = input("shard-count-max.json");
    let output = clustersim(&["sweep", "merge", &zero]);
    assert_refused(&output, &["file 1 names shard 0/0", "n ≥ 1"]);
    assert!(!String::from_utf8_lossy(&output.stderr).contains("4294967295"));
    assert_refused(
        &clustersim(&["sweep", "merge", &max]),
        &["need shards 0/4294967295 … 4294967294/4294967295 exactly once each, got 0/4294967295 (1 file given)"],
    );
    assert_refused(
        &clustersim(&["sweep", "merge", &max, &zero]),
        &["file 2 names shard 0/0"],
    );
}

/// H1: every input file is read up to a cap (256 MiB; timelines 4 GiB); an
/// endless file is refused after the cap, naming the file and the cap.
#[test]
fn endless_input_files_are_refused_naming_the_file_and_the_cap() {
    let layout = ["--tp", "1", "--pp", "1", "--dp", "1", "--global-batch", "1"];
    let with_layout = |flags: &[&str]| -> Vec<String> {
        ["simulate"]
            .iter()
            .chain(flags)
            .chain(&layout)
            .map(|s| s.to_string())
            .collect()
    };
    let cases: Vec<Vec<String>> = vec![
        with_layout(&["--model", "tiny", "--topology", "/dev/zero"]),
        with_layout(&["--model", "/dev/zero", "--topology", "dgx-a100"]),
        with_layout(&[
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--profile",
            "/dev/zero",
        ]),
        with_layout(&[
            "--model",
            "tiny",
            "--topology",
            "dgx-a100",
            "--stack",
            "/dev/zero",
        ]),
        with_layout(&["/dev/zero"]),
        vec!["validate".into(), "/dev/zero".into()],
        vec!["sweep".into(), "merge".into(), "/dev/zero".into()],
    ];
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_refused(&clustersim(&args), &["/dev/zero", "larger than 256 MiB"]);
    }
}

/// H1: files over the cap are refused from their size, before reading:
/// a sparse 257 MiB model and a sparse 5 GiB timeline.
#[test]
fn files_over_the_cap_are_refused_before_reading() {
    let dir = std::env::temp_dir().join(format!("clustersim-reliability-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sparse = |name: &str, bytes: u64| -> String {
        let path = dir.join(name);
        std::fs::File::create(&path)
            .unwrap()
            .set_len(bytes)
            .unwrap();
        path.display().to_string()
    };
    let model = sparse("model.json", (256 << 20) + 1);
    assert_refused(
        &clustersim(&[
            "simulate",
            "--model",
            &model,
            "--topology",
            "dgx-a100",
            "--tp",
            "1",
            "--pp",
            "1",
            "--dp",
            "1",
            "--global-batch",
            "1",
        ]),
        &[&model, "larger than 256 MiB"],
    );
    let t = input("t.json");
    for name in ["big.json", "big.jsonl"] {
        let big = sparse(name, 5 << 30);
        assert_refused(
            &clustersim(&["compare", &t, &big]),
            &[&big, "larger than 4 GiB"],
        );
        let trace = dir.join("big.trace.json").display().to_string();
        assert_refused(
            &clustersim(&["timeline", &big, "--trace", &trace]),
            &[&big, "larger than 4 GiB"],
        );
        std::fs::remove_file(&big).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// O4: a sweep over a 1,000,000-GPU topology under a 4 GB address-space
/// limit is refused up front, naming a layout, the memory it needs and the
/// limit, instead of aborting inside an allocation; a single simulation
/// likewise.
#[test]
fn layouts_larger_than_the_memory_left_are_refused_not_aborted() {
    if !std::path::Path::new("/proc/self/limits").exists() {
        eprintln!("skipped: no /proc/self/limits (not Linux)");
        return;
    }
    let limited = common::clustersim_under_4gb;
    let topology = input("topo1m.json");
    let sweep = limited(&format!(
        "sweep --model tiny --topology {topology} --gpus 1000000 --global-batch 1000000 --top 3"
    ));
    assert_refused(
        &sweep,
        &["cannot be simulated on this machine", "GB", "ulimit -v"],
    );
    let layout = format!(
        "simulate --model tiny --topology {topology} --tp 1 --pp 2 --dp 500000 --global-batch 4000000"
    );
    // Twenty times the microbatches: 1.92 G tasks in every replica, past
    // even the few bytes a task full expansion from one replica's graph takes.
    let simulate = limited(&format!(
        "simulate --model tiny --topology {topology} --tp 1 --pp 2 --dp 500000 --global-batch 80000000 --no-symmetry"
    ));
    assert_refused(&simulate, &["needs about", "ulimit -v"]);
    // Every one of the 500,000 replicas (92.5 M tasks) fits, kept as one
    // replica's graph (`sim::replicated_run`; built, it was refused here).
    let full = limited(&format!("{layout} --no-symmetry"));
    assert!(
        full.status.success(),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );
    let stdout = String::from_utf8_lossy(&full.stdout);
    assert!(
        stdout.contains("full (every replica): --no-symmetry"),
        "{stdout}"
    );
    // One representative of the 500,000 identical replicas fits (symmetry).
    let symmetric = limited(&layout);
    let stdout = String::from_utf8_lossy(&symmetric.stdout);
    assert!(
        symmetric.status.success(),
        "{}",
        String::from_utf8_lossy(&symmetric.stderr)
    );
    assert!(
        stdout.contains("symmetric: 1 of 500000 identical data-parallel replicas"),
        "{stdout}"
    );
}

/// Found by `tests/fuzz.rs`: ZeRO-Offload's gradient buckets and CPU Adam
/// tiles count toward the task estimate, so these graphs are refused before
/// they are built. Before, the first passed validation as 32 M tasks and
/// grew past 24 GB; the second aborted allocating 1.6·10⁹ tiles (4 GiB).
/// Run under a 4 GB address-space cap (as the fuzzer runs): with no fixed
/// task cap, whether a graph is refused is the memory check's to say.
#[test]
fn offload_buckets_and_adam_tiles_count_toward_the_task_limit() {
    if !std::path::Path::new("/proc/self/limits").exists() {
        eprintln!("skipped: no /proc/self/limits (not Linux)");
        return;
    }
    let clustersim = |args: &[&str]| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 4000000 && exec {} \"$@\"",
                env!("CARGO_BIN_EXE_clustersim")
            ))
            .arg("clustersim")
            .args(args)
            .output()
            .expect("sh runs")
    };
    let offload = [
        "--topology",
        "dgx2-v100",
        "--tp",
        "1",
        "--pp",
        "1",
        "--zero-offload",
    ];
    let buckets = [
        &[
            "simulate",
            "--model",
            "gpt2-1b",
            "--dp",
            "2",
            "--global-batch",
            "1000000",
        ][..],
        &offload,
        &["--delayed-update", "--offload-bucket-params", "1000000"],
    ]
    .concat();
    assert_refused(&clustersim(&buckets), &["tasks per simulation"]);
    let dir = std::env::temp_dir().join(format!("clustersim-tiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("huge.json");
    std::fs::write(
        &model,
        r#"{"name":"x","layers":16384,"hidden":1048576,"heads":8,"seq_len":256,"vocab":51200}"#,
    )
    .unwrap();
    let model = model.display().to_string();
    let tiles = [
        &[
            "simulate",
            "--model",
            &model,
            "--dp",
            "1",
            "--global-batch",
            "1",
        ][..],
        &offload,
    ]
    .concat();
    assert_refused(&clustersim(&tiles), &["tasks per simulation"]);
}

/// Found by `tests/fuzz.rs`: `sweep --max-chunks 60000000` generated every v
/// up to it (an abort allocating 6 GiB); no v above the model's layers can be
/// valid, so none is tried.
#[test]
fn sweep_tries_no_more_chunks_than_the_model_has_layers() {
    let output = clustersim(&[
        "sweep",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--gpus",
        "2",
        "--global-batch",
        "2",
        "--max-microbatch",
        "1",
        "--recompute",
        "none",
        "--max-chunks",
        "60000000",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // (t, p) ∈ {(1,1), (1,2), (2,1)} × (gpipe, 1f1b, interleaved v = 2, 3, 4).
    assert!(stdout.contains("15 layouts examined"), "{stdout}");
}

/// Found by `tests/fuzz.rs`: a published value near f64::MAX overflowed the
/// relative error to −inf %, and one near 0 made it +inf %.
#[test]
fn validate_gives_finite_errors_or_a_reason_for_extreme_published_values() {
    let dir = std::env::temp_dir().join(format!("clustersim-published-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cases.json");
    std::fs::write(
        &path,
        r#"{"cases":[{"id":"x","model":{"layers":4,"hidden":512,"heads":8,"seq_len":256,"vocab":51200},
            "layout":{"tp":1,"pp":1,"dp":1,"chunks":1,"microbatch_size":1,"global_batch":1},
            "measured":{"iteration_time_s_full_recompute":1e308,"tflops_per_gpu":5e-324}}]}"#,
    )
    .unwrap();
    let output = clustersim(&["validate", &path.display().to_string()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(!stdout.contains("inf"), "{stdout}");
    assert!(stdout.contains("-100.0%"), "{stdout}");
    assert!(
        stdout.contains("published value 5e-324 is too small for a finite relative error"),
        "{stdout}"
    );
}

/// Found by `tests/fuzz.rs`: a layout whose durations do not fit integer
/// nanoseconds (here a GPU of 8 FLOP/s) was reported by `sweep` as a
/// deadlock, exit 1; it is the user's input, exit 2, as in `simulate`.
#[test]
fn sweep_refuses_durations_beyond_integer_nanoseconds_as_bad_input() {
    let mut topology = serde_json::to_value(topologies::preset("dgx-a100").unwrap()).unwrap();
    topology["gpu"]["peak"]["fp16_flops_per_s"] = 8.into();
    let dir = std::env::temp_dir().join(format!("clustersim-slow-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("topology.json");
    std::fs::write(&path, topology.to_string()).unwrap();
    let output = clustersim(&[
        "sweep",
        "--model",
        "tiny",
        "--topology",
        &path.display().to_string(),
        "--profile",
        "a100-80gb",
        "--gpus",
        "1",
        "--global-batch",
        "1",
    ]);
    assert_refused(&output, &["cannot simulate t=1 p=1 d=1", "out of range"]);
}

/// Found by `tests/fuzz.rs`: a vTrain row measured at 5e-324 ms printed
/// +inf % errors and an infinite mean; the row is refused with its reason.
#[test]
fn validate_refuses_a_vtrain_row_too_small_for_a_finite_error() {
    let csv = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../validation/vtrain-single-node.csv"),
    )
    .unwrap();
    let mut lines: Vec<String> = csv.lines().take(3).map(str::to_string).collect();
    let last = lines.pop().unwrap();
    let (row, _) = last.rsplit_once(',').unwrap();
    lines.push(format!("{row},5e-324"));
    let dir = std::env::temp_dir().join(format!(
        "clustersim-reliability-vtrain-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("runs.csv");
    std::fs::write(&path, lines.join("\n")).unwrap();
    let output = clustersim(&["validate", &path.display().to_string()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(!stdout.contains("inf%"), "{stdout}");
    assert!(
        stdout.contains("measured 5e-324 ms is too small for a finite relative error"),
        "{stdout}"
    );
}

/// `clustersim … | head` closes stdout early: the program ends by SIGPIPE
/// like any Unix tool, without a panic message (it used to panic in
/// `println!` with "failed printing to stdout: Broken pipe").
#[test]
fn a_closed_stdout_ends_the_program_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    // 600 kB of JSON, far more than a pipe holds.
    let csv = common::repository_root().join("validation/vtrain-single-node.csv");
    let mut child = Command::new(common::clustersim_binary())
        .args(["validate", csv.to_str().expect("UTF-8 path"), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clustersim starts");
    let mut first = [0u8; 1];
    child
        .stdout
        .take()
        .expect("piped")
        .read_exact(&mut first)
        .expect("some output");
    // The read end is dropped here, with most of the table still unwritten.
    let output = child.wait_with_output().expect("clustersim ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        output.status.signal(),
        Some(libc_sigpipe()),
        "{:?}: {stderr}",
        output.status
    );
}

/// SIGPIPE's number on Linux (the tests do not link libc).
fn libc_sigpipe() -> i32 {
    13
}

/// Round 3, F4: the V-shaped schedules and DualPipe take their documented
/// default of 2 chunks on the command line as in a scenario file
/// (`R4-zbv-scenario.json`).
#[test]
fn f4_v_schedules_take_two_chunks_on_the_command_line_too() {
    let base = [
        "simulate",
        "--model",
        "tiny",
        "--topology",
        "dgx-a100",
        "--tp",
        "1",
        "--pp",
        "2",
        "--dp",
        "1",
        "--global-batch",
        "4",
        "--json",
    ];
    let from_file = clustersim(&["simulate", &input("round3/R4-zbv-scenario.json"), "--json"]);
    assert_eq!(from_file.status.code(), Some(0));
    let file: serde_json::Value = serde_json::from_slice(&from_file.stdout).unwrap();
    assert!(file["scenario"].as_str().unwrap().contains("v=2"), "{file}");
    for schedule in ["zb-v", "dualpipev", "dualpipe"] {
        let mut args = base.to_vec();
        args.extend(["--schedule", schedule]);
        let out = clustersim(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{schedule}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            json["scenario"].as_str().unwrap().contains("v=2"),
            "{schedule}: {json}"
        );
    }
    // Interleaved has no default v: it still asks for one.
    let mut args = base.to_vec();
    args.extend(["--schedule", "interleaved"]);
    assert_refused(
        &clustersim(&args),
        &["interleaved schedule needs chunks ≥ 2"],
    );
}

/// Round 3, F8 and F9: a sweep shard with an impossible layout (microbatch
/// size or data parallelism 0) or an impossible record (iteration time 0,
/// 2e11 % of peak) is refused naming the field, for `--csv` and `--json`
/// alike; the round's valid shards still merge.
#[test]
fn f8_f9_impossible_sweep_shards_are_refused_naming_the_field() {
    for (shard, says) in [
        ("round3/R9/shard0-dropped-mbs0.json", "microbatch_size is 0"),
        ("round3/R9/shard0-dropped-dp0.json", "data_parallel is 0"),
        (
            "round3/R10/shard0-iteration-time-0.json",
            "iteration_time_s 0",
        ),
        (
            "round3/R10/shard0-percent-of-peak-2e11.json",
            "percent_of_peak",
        ),
    ] {
        let partner = if shard.contains("R9") {
            "round3/R9/shard1.json"
        } else {
            "round3/R10/sshard1.json"
        };
        for output in [["--csv", "-"], ["--json", "-"]] {
            let mut args = vec!["sweep", "merge"];
            let (a, b) = (input(shard), input(partner));
            args.extend([a.as_str(), b.as_str()]);
            args.extend(output);
            assert_refused(&clustersim(&args), &[says]);
        }
    }
    let merged = clustersim(&[
        "sweep",
        "merge",
        &input("round3/R9/shard0.json"),
        &input("round3/R9/shard1.json"),
        "--json",
        "-",
    ]);
    assert_eq!(
        merged.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
}
