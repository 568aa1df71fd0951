//! Each bound of [`super`] exercised with crafted findings on the H100 SXM
//! datasheet (989 TFLOP/s dense bf16, 3.35 TB/s HBM, 50 MiB L2, 450 GB/s
//! NVLink per direction).

use super::*;
use profile::Source;

const MIB: u64 = 1 << 20;

fn h100() -> Datasheet {
    topologies::datasheet_for_device("NVIDIA H100 80GB HBM3").unwrap()
}

/// Built through serde so optional fields added later need no change here.
fn gemm(size: u64, dtype: &str, time_ns: u64) -> GemmMeasurement {
    serde_json::from_value(serde_json::json!({
        "batch": 1, "m": size, "n": size, "k": size,
        "dtype": dtype, "time_ns": time_ns, "source": "measured"
    }))
    .unwrap()
}

fn copy(bytes: u64, time_ns: u64) -> MemoryMeasurement {
    MemoryMeasurement {
        kernel: "copy".into(),
        bytes,
        time_ns,
        source: Source::Measured,
    }
}

fn collective(group_size: u32, bytes: u64, time_ns: u64) -> CollectiveMeasurement {
    CollectiveMeasurement {
        op: "all_reduce".into(),
        group_size,
        bytes,
        time_ns,
        source: Source::Measured,
    }
}

fn pcie(transfer: Transfer, bytes: u64, time_ns: u64) -> PcieMeasurement {
    PcieMeasurement {
        transfer,
        bytes,
        time_ns,
        spread_ns: 0,
    }
}

/// What the lab H100 plausibly gives: 785 TFLOP/s, 3.07 TB/s, 53.7 GB/s.
fn plausible() -> Findings {
    Findings {
        gemm: vec![gemm(1024, "bf16", 20_000), gemm(8192, "bf16", 1_400_000)],
        memory: vec![copy(2 * MIB, 500), copy(2048 * MIB, 700_000)],
        collectives: vec![collective(1, 256 * MIB, 200_000)],
        pcie: vec![
            pcie(Transfer::HostToDevicePinned, 256 * MIB, 5_000_000),
            pcie(Transfer::DeviceToHostPinned, 256 * MIB, 5_000_000),
            pcie(Transfer::HostToDevicePageable, 256 * MIB, 400_000_000),
            pcie(Transfer::BidirectionalPinned, 512 * MIB, 6_000_000),
        ],
        ..Findings::default()
    }
}

fn only(problems: Vec<Implausibility>) -> Implausibility {
    assert_eq!(problems.len(), 1, "{problems:#?}");
    problems.into_iter().next().unwrap()
}

#[test]
fn plausible_findings_pass_every_bound() {
    assert_eq!(check(&plausible(), Some(&h100())), vec![]);
    assert_eq!(check(&plausible(), None), vec![]);
    // A 2 MiB copy faster than HBM is served from L2: not a problem.
    assert!(per_second((2 * MIB) as f64, 500) > h100().gpu.hbm_bandwidth_bytes_per_s);
}

#[test]
fn a_gemm_faster_than_the_datasheet_peak_is_named_with_its_rate() {
    let mut findings = plausible();
    // 2·4096³ FLOP in 100 µs = 1374.4 TFLOP/s > 989.
    findings.gemm.push(gemm(4096, "fp16", 100_000));
    let problem = only(check(&findings, Some(&h100())));
    assert_eq!(problem.measurement, "cuBLAS fp16 GEMM 4096x4096x4096");
    assert_eq!(problem.time_ns, 100_000);
    assert_eq!(problem.achieved, "1374.4 TFLOP/s");
    let Bound::AboveDatasheet {
        datasheet,
        efficiency,
    } = &problem.bound
    else {
        panic!("{problem:?}");
    };
    assert_eq!(
        datasheet,
        "H100-SXM5-80GB datasheet dense fp16 peak 989.0 TFLOP/s"
    );
    assert!((efficiency - 1374.389534592 / 989.0).abs() < 1e-6);
    let text = problem.to_string();
    for part in [
        "cuBLAS fp16 GEMM 4096x4096x4096",
        "100000 ns",
        "1374.4 TFLOP/s",
        "989.0 TFLOP/s",
        "efficiency 1.390 > 1",
    ] {
        assert!(text.contains(part), "{text}");
    }
}

#[test]
fn a_large_gemm_below_a_fifth_of_peak_is_implausible() {
    let mut findings = plausible();
    // 8192³ in 6 ms = 183 TFLOP/s = 0.185 of 989.
    findings.gemm[1] = gemm(8192, "bf16", 6_000_000);
    let problem = only(check(&findings, Some(&h100())));
    assert!(problem
        .measurement
        .contains("8192x8192x8192 (large-GEMM efficiency)"));
    assert!(
        matches!(problem.bound, Bound::BelowFloor { ref floor } if floor.contains("0.2 of the H100-SXM5-80GB"))
    );
    // 5 ms = 0.222 of peak: plausible.
    findings.gemm[1] = gemm(8192, "bf16", 5_000_000);
    assert_eq!(check(&findings, Some(&h100())), vec![]);
}

#[test]
fn a_copy_faster_than_hbm_is_an_efficiency_above_one() {
    let mut findings = plausible();
    // 2 GiB in 500 µs = 4295 GB/s > 3350 (the H200's bandwidth on an H100).
    findings.memory[1] = copy(2048 * MIB, 500_000);
    let problem = only(check(&findings, Some(&h100())));
    assert_eq!(
        problem.measurement,
        "device-to-device copy moving 2147483648 bytes (read + written)"
    );
    assert_eq!(problem.achieved, "4295.0 GB/s");
    assert!(matches!(problem.bound, Bound::AboveDatasheet { efficiency, .. } if efficiency > 1.28));
    // A mid-size copy beyond L2 (128 MiB moved) is held to HBM too.
    let mut findings = plausible();
    findings.memory.push(copy(128 * MIB, 10_000));
    assert!(only(check(&findings, Some(&h100())))
        .measurement
        .contains("134217728 bytes"));
    // The largest copy is held to HBM even when it fits in L2.
    let mut findings = plausible();
    findings.memory = vec![copy(2 * MIB, 100)];
    assert!(matches!(
        only(check(&findings, Some(&h100()))).bound,
        Bound::AboveDatasheet { .. }
    ));
}

#[test]
fn hbm_efficiency_below_thirty_percent_is_implausible() {
    let mut findings = plausible();
    // 2 GiB in 2.5 ms = 859 GB/s = 0.256 of 3350.
    findings.memory[1] = copy(2048 * MIB, 2_500_000);
    let problem = only(check(&findings, Some(&h100())));
    assert!(problem.measurement.contains("(HBM efficiency)"));
    assert!(
        problem.achieved.contains("0.256 of the datasheet"),
        "{}",
        problem.achieved
    );
    assert!(matches!(problem.bound, Bound::BelowFloor { .. }));
}

#[test]
fn a_collective_faster_than_its_bytes_allow_is_caught() {
    // One GPU: 256 MiB copied (512 MiB moved) in 100 µs = 5.4 TB/s > 3.35.
    let mut findings = plausible();
    findings.collectives = vec![collective(1, 256 * MIB, 100_000)];
    let problem = only(check(&findings, Some(&h100())));
    assert_eq!(
        problem.measurement,
        "NCCL all_reduce of 268435456 bytes over 1 GPU(s)"
    );
    assert!(problem.to_string().contains("local copy"), "{problem}");
    // A 1 MiB one-GPU collective may hit L2: not held to HBM.
    findings.collectives = vec![collective(1, MIB, 100)];
    assert_eq!(check(&findings, Some(&h100())), vec![]);
    // Eight GPUs: 1 GiB x 7/8 in 1.5 ms = 626 GB/s per rank > 450 GB/s NVLink.
    findings.collectives = vec![collective(8, 1024 * MIB, 1_500_000)];
    let problem = only(check(&findings, Some(&h100())));
    assert!(
        problem
            .to_string()
            .contains("NVLink bandwidth per direction"),
        "{problem}"
    );
    // 2.5 ms = 376 GB/s: what NVLink SHARP gives, plausible.
    findings.collectives = vec![collective(8, 1024 * MIB, 2_500_000)];
    assert_eq!(check(&findings, Some(&h100())), vec![]);
}

#[test]
fn pcie_rates_outside_one_to_128_gb_per_s_are_implausible() {
    let mut findings = plausible();
    // 256 MiB in 1 ms = 268 GB/s one way.
    findings.pcie[0] = pcie(Transfer::HostToDevicePinned, 256 * MIB, 1_000_000);
    let problem = only(check(&findings, None));
    assert_eq!(
        problem.measurement,
        "PCIe host-to-device pinned copy of 268435456 bytes"
    );
    assert!(matches!(problem.bound, Bound::AboveCeiling { .. }));
    // Both directions: 512 MiB in 3 ms = 179 GB/s, 89.5 per direction: fine;
    // in 2 ms = 134 per direction: too fast.
    let mut findings = plausible();
    findings.pcie[3] = pcie(Transfer::BidirectionalPinned, 512 * MIB, 3_000_000);
    assert_eq!(check(&findings, None), vec![]);
    findings.pcie[3] = pcie(Transfer::BidirectionalPinned, 512 * MIB, 2_000_000);
    assert!(only(check(&findings, None))
        .achieved
        .contains("per direction"));
    // Pinned device-to-host at 0.5 GB/s: below the floor; slow pageable is not checked.
    let mut findings = plausible();
    findings.pcie[1] = pcie(Transfer::DeviceToHostPinned, 256 * MIB, 536_870_912);
    findings.pcie[2] = pcie(Transfer::HostToDevicePageable, 256 * MIB, 536_870_912);
    let problem = only(check(&findings, None));
    assert!(problem.measurement.contains("device-to-host pinned"));
    assert!(matches!(problem.bound, Bound::BelowFloor { ref floor } if floor == "1.0 GB/s"));
}

#[test]
fn without_a_datasheet_only_pcie_is_checked_and_every_problem_is_listed() {
    let mut findings = plausible();
    findings.gemm.push(gemm(4096, "bf16", 1));
    findings.memory.push(copy(4096 * MIB, 1));
    assert_eq!(check(&findings, None), vec![]);
    let problems = check(&findings, Some(&h100()));
    assert_eq!(problems.len(), 2, "{problems:#?}");
}
