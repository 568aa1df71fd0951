//! PowerSGD (`--powersgd-rank R`, PyTorch DDP's `powerSGD_hook` after its
//! warm-up): which gradient matrices it compresses, the bytes of its three
//! all-reduces against the per-matrix ratio n·m / ((n + m)·r), the memory
//! of its error feedback, exactness under symmetry, and what it refuses.
//!
//! The hand model (`sharded_data_parallel.rs`), t = p = 1, d = 16 on two
//! nodes (selene), fp16 unfused: 2-byte gradients. Per layer, as
//! `nn.Linear` [out, in]: QKV [768, 256], projection [256, 256], fc1
//! [1024, 256], fc2 [256, 1024] (786,432 elements; 3,328 more in biases
//! and norms); the embedding [5000, 256] and positions [128, 256]; tied,
//! so no output matrix; the final norm's 512.

use sim::scenario::{Scenario, ScenarioFile, TrainingOptionsFile};
use sim::{Expansion, SimulationMode, SimulationReport};
use timeline::TaskKind;

const TOTAL: u64 = tests::HAND_MODEL_PARAMETERS;
const D: u32 = 16;
const MATRICES: u64 = 4 * 786_432 + 5000 * 256 + 128 * 256;
/// Σ n and Σ m over the compressed matrices (every one of them).
const ROWS: u64 = 4 * (768 + 256 + 1024 + 256) + 5000 + 128;
const COLUMNS: u64 = 4 * (256 + 256 + 256 + 1024) + 256 + 256;

fn file(rank: Option<u32>) -> ScenarioFile {
    let options = TrainingOptionsFile {
        gradient_accumulation_fusion: Some(false),
        powersgd_rank: rank,
        ..TrainingOptionsFile::default()
    };
    ScenarioFile {
        topology: Some("selene".into()),
        ..tests::hand_model_file(1, 1, D, options)
    }
}

fn run(rank: Option<u32>) -> (Scenario, SimulationReport) {
    let scenario = file(rank).resolve().expect("valid scenario");
    let report = sim::simulate(&scenario).expect("simulates");
    (scenario, report)
}

fn all_reduce(report: &SimulationReport) -> &timeline::TaskRecord {
    let reductions: Vec<_> = report
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::DataParallelAllReduce)
        .collect();
    assert_eq!(reductions.len(), 1);
    reductions[0]
}

#[test]
fn every_matrix_goes_as_two_rank_r_factors_and_the_vectors_whole() {
    assert_eq!(TOTAL - MATRICES, 4 * 3_328 + 512);
    let (_, adam) = run(None);
    assert_eq!(all_reduce(&adam).bytes, 2 * TOTAL);
    for rank in [1u64, 4] {
        let (_, report) = run(Some(rank as u32));
        // The uncompressed vectors, then P (Σ n·r) and Q (Σ m·r), 2 B each.
        let wire = 2 * ((TOTAL - MATRICES) + rank * (ROWS + COLUMNS));
        assert_eq!(all_reduce(&report).bytes, wire, "rank {rank}");
        // The matrices' ratio, n·m / ((n + m)·r) summed: 202× at rank 1.
        let ratio = MATRICES as f64 / (rank * (ROWS + COLUMNS)) as f64;
        if rank == 1 {
            assert!((ratio - 202.4).abs() < 0.1, "{ratio}");
        }
        // The hook's kernels on each rank: before the all-reduces the error
        // added (3·S), the clone (2·S), the vectors' buffer (2·U) and M·Q
        // (M); after them Gram-Schmidt (3·r·P), Mᵀ·P and P·Qᵀ (2·M), the
        // new error (3·S) and the vectors copied back (2·U); 2 B each.
        let (s, m, u) = (TOTAL, MATRICES, TOTAL - MATRICES);
        let before = 2 * (5 * s + 2 * u + m);
        let after = 2 * (3 * rank * rank * ROWS + 2 * m + 3 * s + 2 * u);
        let mut kernels: Vec<u64> = report
            .timeline()
            .tasks
            .iter()
            .filter(|t| t.kind == TaskKind::Compression)
            .map(|t| t.bytes)
            .collect();
        kernels.sort_unstable();
        kernels.dedup();
        let mut expected = vec![before, after];
        expected.sort_unstable();
        assert_eq!(kernels, expected, "rank {rank}");
        // Memory: the error feedback (the whole bucket) and P and Q, 2 B each.
        let extra = report.memory[0].gradient_bytes - adam.memory[0].gradient_bytes;
        assert_eq!(extra, 2 * (TOTAL + rank * (ROWS + COLUMNS)));
    }
}

#[test]
fn a_matrix_that_would_not_shrink_twice_is_sent_whole() {
    // At rank 64 the 128 × 256 positions ((384)·64·2 = 49,152 ≥ 32,768)
    // and the four 256 × 256 projections ((512)·64·2 = 65,536, not below
    // 65,536) are all-reduced whole; QKV, fc1, fc2 and the embedding are
    // still compressed.
    let (_, report) = run(Some(64));
    let whole = 128 * 256 + 4 * 256 * 256;
    let rows = ROWS - 128 - 4 * 256;
    let columns = COLUMNS - 256 - 4 * 256;
    let wire = 2 * ((TOTAL - MATRICES + whole) + 64 * (rows + columns));
    assert_eq!(all_reduce(&report).bytes, wire);
    assert_eq!(wire, 3_125_248);
}

#[test]
fn powersgd_stays_exact_under_symmetry() {
    let scenario = file(Some(4)).resolve().unwrap();
    let full = sim::simulate_with(&scenario, Expansion::Built).unwrap();
    let auto = sim::simulate_with(&scenario, Expansion::Auto).unwrap();
    assert_eq!(auto.mode, SimulationMode::Symmetric { replicas: D });
    assert_eq!(auto.metrics, full.metrics);
    assert_eq!(auto.memory, full.memory);
    assert_eq!(auto.timeline(), full.timeline());
}

#[test]
fn what_powersgd_refuses_names_its_key() {
    let refused = |edit: &dyn Fn(&mut ScenarioFile), expected: &str| {
        let mut file = file(Some(4));
        edit(&mut file);
        let error = file.resolve().expect_err(expected).to_string();
        assert!(error.contains(expected), "{error}");
    };
    refused(
        &|f| f.options.powersgd_rank = Some(0),
        "powersgd_rank: must be at least 1",
    );
    refused(
        &|f| f.options.distributed_optimizer = Some(true),
        "powersgd_rank: PowerSGD is a DDP comm hook",
    );
    refused(
        &|f| f.options.overlap_grad_reduce = Some(true),
        "add --overlap-grad-reduce=false",
    );
    refused(
        &|f| f.options.optimizer = Some(sim::scenario::Optimizer::OneBitAdam),
        "onebitadam and onebitlamb already replace the gradient all-reduce",
    );
    refused(
        &|f| f.model = Some(serde_json::json!("mixtral-8x7b")),
        "the gradient matrices of experts and latent attention are not modeled",
    );
}
