//! A deterministic mutation fuzzer for the whole CLI (issue 14, item 5).
//!
//! Each case takes valid inputs of every kind the binary reads (`fuzz/seeds.rs`):
//! models, topologies, profiles and stacks (the presets and committed JSON
//! files), scenarios (the embedded default, the examples, small ones with
//! every training option), timelines (`.json` and `.jsonl`) and sweep shards
//! made by the binary at start-up, `validate` inputs (dev-set rows, vTrain
//! CSV rows), import-trace's timelines and Megatron-LM argument lists (`--megatron-args`: the launch
//! scripts' lists, arguments nudged, dropped, repeated or replaced), torchtitan
//! TOMLs and Megatron-Bridge YAMLs (`--torchtitan`, `--bridge-config`). It
//! mutates them (`fuzz/mutate.rs`: numbers such as 0, −1, 2^32,
//! 2^64, 1e308, 1e999 and `NaN`, deleted, repeated and swapped keys, changed
//! types, deep nesting, truncated or damaged bytes) and runs one subcommand
//! on them (`fuzz/cases.rs`) with flag values that are mostly valid and go
//! together, and sometimes extreme (`fuzz/flags.rs`). The built binary runs
//! as a subprocess in a folder of its own, under a memory cap (`ulimit -v`,
//! 4 GiB, with `CLUSTERSIM_MAX_TASKS` lowering the product's task limit to
//! match) and a timeout (20 s). The property, for every case:
//!
//! - exit code 0, 1 or 2, never a signal (an abort, or a kill at the timeout:
//!   a hang) and never 101 (a panic);
//! - exit 1 only from `compare` above its `--max-error`;
//! - on exit 1 or 2, stderr is one message (`error: …`, once, after any
//!   notes), and no run prints `panicked at`, `RUST_BACKTRACE` or `memory
//!   allocation of`; on exit 0, no percentage or time on stdout is `inf` or `NaN`;
//! - outputs are whole (JSON parses, an SVG ends with `</svg>`, a PNG with
//!   its `IEND` chunk) and no temporary file is left beside them.
//!
//! Case `i` of seed `s` is a pure function of (`s`, `i`), so a failure replays
//! alone whatever ran beside it; cases run on one thread per core and
//! failures are reported in case order.
//!
//! Default (CI): 10,000 cases with seed 14, about 25 s on 2 cores in release
//! mode. Environment variables:
//!
//! ```sh
//! # a longer local run with another seed (about 2.5 s per 1,000 cases on 2 cores)
//! CLUSTERSIM_FUZZ_CASES=200000 CLUSTERSIM_FUZZ_SEED=7 cargo test --release -p cli --test fuzz -- --nocapture
//! # replay one failing case: prints its command, inputs and outcome, keeps its folder
//! CLUSTERSIM_FUZZ_SEED=7 CLUSTERSIM_FUZZ_CASE=1234 cargo test --release -p cli --test fuzz -- --nocapture
//! ```
//!
//! also `CLUSTERSIM_FUZZ_TIMEOUT_S` (20), `CLUSTERSIM_FUZZ_MEMORY_MIB` (4096; 0
//! for no cap), `CLUSTERSIM_FUZZ_JOBS` (the cores) and `CLUSTERSIM_FUZZ_VERBOSE=1`
//! (one line per case: exit code, time, command, error). A failure prints the
//! case's command line and inputs, and keeps them under
//! `target/tmp/fuzz-SEED/case-I/run/`, where `clustersim ARGS` (with
//! `CLUSTERSIM_MAX_TASKS=4000000`) reproduces it.

#[path = "fuzz/cases.rs"]
mod cases;
#[path = "fuzz/flags.rs"]
mod flags;
#[path = "fuzz/mutate.rs"]
mod mutate;
#[path = "fuzz/seeds.rs"]
mod seeds;

use cases::Case;
use seeds::Seeds;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The task limit the binary runs with (`CLUSTERSIM_MAX_TASKS`): ~0.7 GB a
/// simulation, so that a sweep's simulations on every core fit the cap.
const TASK_LIMIT: u64 = 4_000_000;

struct Config {
    seed: u64,
    cases: u64,
    only: Option<u64>,
    timeout: Duration,
    memory_mib: u64,
    jobs: usize,
    verbose: bool,
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    Some(
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={text:?} is not a whole number")),
    )
}

impl Config {
    fn from_env() -> Config {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Config {
            seed: env_number("CLUSTERSIM_FUZZ_SEED").unwrap_or(14),
            cases: env_number("CLUSTERSIM_FUZZ_CASES").unwrap_or(10_000),
            only: env_number("CLUSTERSIM_FUZZ_CASE"),
            timeout: Duration::from_secs(env_number("CLUSTERSIM_FUZZ_TIMEOUT_S").unwrap_or(20)),
            memory_mib: env_number("CLUSTERSIM_FUZZ_MEMORY_MIB").unwrap_or(4096),
            jobs: env_number("CLUSTERSIM_FUZZ_JOBS").map_or(cores, |n| n.max(1) as usize),
            verbose: env_number("CLUSTERSIM_FUZZ_VERBOSE").is_some_and(|v| v > 0),
        }
    }
}

/// How a run ended.
enum Outcome {
    Exited(i32),
    Signal(String),
    Hang,
}

struct Run {
    outcome: Outcome,
    stderr: String,
    elapsed: Duration,
}

/// Writes the case's files into `dir/run` and runs the binary there.
fn run_case(binary: &Path, dir: &Path, case: &Case, config: &Config) -> Run {
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    for (name, bytes) in &case.files {
        std::fs::write(run_dir.join(name), bytes).unwrap();
    }
    let stdout = std::fs::File::create(dir.join("stdout")).unwrap();
    let stderr = std::fs::File::create(dir.join("stderr")).unwrap();
    let mut command = if cfg!(unix) && config.memory_mib > 0 {
        let mut sh = Command::new("sh");
        let limit = format!(
            "ulimit -v {} 2>/dev/null; exec \"$0\" \"$@\"",
            config.memory_mib * 1024
        );
        sh.arg("-c").arg(limit).arg(binary);
        sh
    } else {
        Command::new(binary)
    };
    let started = Instant::now();
    let mut child = command
        .args(&case.args)
        .current_dir(&run_dir)
        .env("RUST_BACKTRACE", "0")
        // Simulations the product accepts stay under the memory cap (about
        // 170 B a task): its limit of 60 M tasks needs ~10 GB.
        .env(sim::scenario::TASK_LIMIT_VARIABLE, TASK_LIMIT.to_string())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("binary starts");
    let mut pause = Duration::from_millis(1);
    let outcome = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break match status.code() {
                Some(code) => Outcome::Exited(code),
                None => Outcome::Signal(format!("{status}")),
            };
        }
        if started.elapsed() > config.timeout {
            let _ = child.kill();
            let _ = child.wait();
            break Outcome::Hang;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let stderr = std::fs::read(dir.join("stderr")).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    Run {
        outcome,
        stderr,
        elapsed,
    }
}

/// The property; `Err` says what broke.
fn check(case: &Case, run: &Run, run_dir: &Path, config: &Config) -> Result<(), String> {
    let code = match &run.outcome {
        Outcome::Hang => {
            return Err(format!(
                "hang: still running after {:?}, killed",
                config.timeout
            ))
        }
        Outcome::Signal(status) => return Err(format!("killed by a signal ({status})")),
        Outcome::Exited(code) => *code,
    };
    for marker in [
        "panicked at",
        "RUST_BACKTRACE",
        "memory allocation of",
        "stack overflow",
    ] {
        if run.stderr.contains(marker) {
            return Err(format!("exit {code} and stderr says {marker:?}"));
        }
    }
    match code {
        0 => {
            // Silent nonsense: a percentage or a time that is not a number.
            let stdout = std::fs::read(run_dir.join("../stdout")).unwrap_or_default();
            let stdout = String::from_utf8_lossy(&stdout[..stdout.len().min(4 << 20)]);
            if let Some(found) = ["inf%", "NaN%", " inf s", " NaN s"]
                .iter()
                .find(|n| stdout.contains(**n))
            {
                return Err(format!("exit 0 but stdout prints {found:?}"));
            }
        }
        1 if case.args[0] != "compare" || !run.stderr.contains("exceeds --max-error") => {
            return Err("exit 1, which only `compare` over its --max-error may give".into())
        }
        1 | 2 => {
            // Notes (such as `plot bubble`'s skipped points) may come first.
            let at_line_start =
                run.stderr.starts_with("error: ") || run.stderr.contains("\nerror: ");
            if !at_line_start || run.stderr.matches("error:").count() != 1 {
                return Err(format!(
                    "exit {code} without exactly one `error: …` message on stderr"
                ));
            }
        }
        other => return Err(format!("exit code {other} (101 is a panic, 134 an abort)")),
    }
    check_outputs(case, run_dir)
}

/// No stray (temporary) files; outputs that exist are whole.
fn check_outputs(case: &Case, run_dir: &Path) -> Result<(), String> {
    for entry in std::fs::read_dir(run_dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let is_input = case.files.iter().any(|(file, _)| *file == name);
        if is_input {
            continue;
        }
        // A spoiled output flag names its own file.
        let named = case
            .args
            .iter()
            .any(|arg| *arg == name || arg.ends_with(&format!("={name}")));
        if !case.outputs.contains(&name) && !named {
            return Err(format!(
                "left {name:?} behind (not an output it was asked for)"
            ));
        }
        // Only outputs under their own names have a known format.
        let known =
            name.starts_with("out.") || ["bubble.svg", "measured.json"].contains(&name.as_str());
        let bytes = std::fs::read(run_dir.join(&name)).unwrap_or_default();
        if known && bytes.len() < 64 << 20 && !is_whole(&name, &bytes) {
            return Err(format!(
                "output {name} is not whole ({} bytes)",
                bytes.len()
            ));
        }
    }
    Ok(())
}

fn is_whole(name: &str, bytes: &[u8]) -> bool {
    let parses = |text: &[u8]| serde_json::from_slice::<serde::de::IgnoredAny>(text).is_ok();
    match Path::new(name).extension().and_then(|e| e.to_str()) {
        Some("json") => parses(bytes),
        Some("jsonl") => bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .all(parses),
        Some("svg") => bytes.trim_ascii_end().ends_with(b"</svg>"),
        Some("png") => {
            bytes.starts_with(b"\x89PNG\r\n\x1a\n")
                && bytes.len() >= 12
                && bytes[bytes.len() - 12..bytes.len() - 4] == *b"\0\0\0\0IEND"
        }
        Some("csv") => bytes.ends_with(b"\n"),
        _ => true,
    }
}

/// Arguments as a shell would need them quoted.
fn shell_words(args: &[String]) -> String {
    let quote = |arg: &String| {
        if !arg.is_empty()
            && arg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=,:".contains(c))
        {
            arg.clone()
        } else {
            format!("'{}'", arg.replace('\'', r"'\''"))
        }
    };
    args.iter().map(quote).collect::<Vec<_>>().join(" ")
}

fn shorten(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}… ({} bytes in all)", &text[..at], text.len()),
        None => text.to_string(),
    }
}

/// What to print about one case so that it can be replayed.
fn describe(index: u64, case: &Case, run: &Run, dir: &Path, config: &Config) -> String {
    let mut text = format!(
        "case {index} (seed {seed}, {:.2} s)\n  replay: CLUSTERSIM_FUZZ_SEED={seed} CLUSTERSIM_FUZZ_CASE={index} \
         cargo test --release -p cli --test fuzz -- --nocapture\n  by hand: cd {} && clustersim {}\n",
        run.elapsed.as_secs_f64(),
        dir.join("run").display(),
        shell_words(&case.args),
        seed = config.seed,
    );
    for (name, bytes) in &case.files {
        let content = String::from_utf8_lossy(bytes);
        text += &format!("  {name}: {}\n", shorten(&content, 400));
    }
    text + &format!("  stderr: {}\n", shorten(run.stderr.trim_end(), 1500))
}

/// What the cases found, shared by the worker threads.
#[derive(Default)]
struct Summary {
    /// (case, report), in the order they finished.
    failures: Vec<(u64, String)>,
    /// Per subcommand: cases, exit 0, exit 1, exit 2.
    exits: BTreeMap<String, [u64; 4]>,
    slowest: (Duration, u64),
}

/// Generates, runs and checks case `index`; keeps its folder if it fails.
fn fuzz_one(index: u64, seeds: &Seeds, root: &Path, config: &Config, summary: &Mutex<Summary>) {
    let binary = Path::new(env!("CARGO_BIN_EXE_clustersim"));
    let case = cases::generate(seeds, config.seed, index);
    let dir = root.join(format!("case-{index}"));
    let run = run_case(binary, &dir, &case, config);
    let verdict = check(&case, &run, &dir.join("run"), config);
    let code = match run.outcome {
        Outcome::Exited(code) => Some(code),
        _ => None,
    };
    if config.verbose {
        let error = run.stderr.lines().skip_while(|l| !l.contains("error"));
        println!(
            "case {index}: exit {} {:.2} s: {} | {}",
            code.map_or("-".into(), |c| c.to_string()),
            run.elapsed.as_secs_f64(),
            shorten(&shell_words(&case.args), 300),
            shorten(&error.take(3).collect::<Vec<_>>().join(" "), 300)
        );
    }
    let report = match &verdict {
        Err(why) => Some(format!(
            "{why}\n{}",
            describe(index, &case, &run, &dir, config)
        )),
        Ok(()) if config.only.is_some() => {
            println!("passes:\n{}", describe(index, &case, &run, &dir, config));
            None
        }
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&dir);
            None
        }
    };
    let mut summary = summary.lock().unwrap();
    if let Some(code @ 0..=2) = code {
        let counts = summary.exits.entry(case.args[0].clone()).or_default();
        counts[0] += 1;
        counts[1 + code as usize] += 1;
    }
    if run.elapsed > summary.slowest.0 {
        summary.slowest = (run.elapsed, index);
    }
    if let Some(report) = report {
        summary.failures.push((index, report));
    }
}

#[test]
fn the_cli_never_panics_aborts_or_hangs_on_mutated_inputs() {
    let config = Config::from_env();
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("fuzz-{}", config.seed));
    let indices: Vec<u64> = match config.only {
        // A replay leaves the other cases' folders alone.
        Some(index) => {
            let _ = std::fs::remove_dir_all(root.join(format!("case-{index}")));
            vec![index]
        }
        None => {
            let _ = std::fs::remove_dir_all(&root);
            (0..config.cases).collect()
        }
    };
    let seeds_dir = match config.only {
        Some(index) => root.join(format!("seeds-{index}")),
        None => root.join("seeds"),
    };
    let seeds = Seeds::build(Path::new(env!("CARGO_BIN_EXE_clustersim")), &seeds_dir);
    let started = Instant::now();
    let next = AtomicUsize::new(0);
    let summary = Mutex::new(Summary::default());
    std::thread::scope(|scope| {
        for _ in 0..config.jobs.min(indices.len()) {
            scope.spawn(|| {
                while let Some(&index) = indices.get(next.fetch_add(1, Ordering::Relaxed)) {
                    fuzz_one(index, &seeds, &root, &config, &summary);
                }
            });
        }
    });
    let Summary {
        mut failures,
        exits,
        slowest: (slow, slow_index),
    } = summary.into_inner().unwrap();
    failures.sort();
    println!(
        "fuzz: {} cases (seed {}) in {:.1} s on {} threads; slowest case {slow_index} ({:.2} s)",
        indices.len(),
        config.seed,
        started.elapsed().as_secs_f64(),
        config.jobs,
        slow.as_secs_f64()
    );
    for (command, [cases, ok, over, refused]) in exits {
        println!("  {command:<11} {cases:>6} cases: {ok} exit 0, {over} exit 1, {refused} exit 2");
    }
    for (_, text) in failures.iter().take(20) {
        println!("\nFAILED {text}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} fuzz cases broke the property (first: case {}); see the output above",
        failures.len(),
        indices.len(),
        failures[0].0
    );
}
