//! What a measurement may not be: faster than its datasheet allows (an
//! efficiency above 1) or outside what a healthy machine shows. Nothing is
//! clamped: a measurement out of bounds means a broken timer, a wrong
//! datasheet, a wrong GPU match or a sick machine, and the run fails with
//! [`CalibrateError::Implausible`](crate::CalibrateError::Implausible)
//! listing every such measurement (what was timed, its median time, the rate
//! it implies and the bound it broke).
//!
//! | measurement | bound |
//! |---|---|
//! | every GEMM | FLOP/s ≤ the datasheet's dense peak of its type |
//! | the largest square GEMM (large-GEMM efficiency) | ≥ [`MIN_LARGE_GEMM_EFFICIENCY`] of that peak |
//! | every copy or elementwise kernel moving ≥ 2× L2, and the largest copy | bytes/s ≤ datasheet HBM bandwidth |
//! | the largest copy (HBM efficiency) | ≥ [`MIN_HBM_EFFICIENCY`] of it |
//! | a one-GPU collective of ≥ L2 bytes (a local copy) | 2 × bytes/s ≤ HBM bandwidth |
//! | an n-GPU collective | bytes·(n−1)/n per second ≤ NVLink per direction (each rank receives at least that) |
//! | every PCIe copy, per direction | ≤ [`MAX_PCIE_BYTES_PER_S`] |
//! | pinned host↔device at the largest size (the profile's rates) | ≥ [`MIN_PCIE_BYTES_PER_S`] |
//!
//! Bounds that need a datasheet are skipped when the GPU has none (the
//! profile writer says so in a remark).

use crate::findings::Findings;
pub use crate::implausibility::{Bound, Implausibility};
use crate::memory_bandwidth;
use crate::pcie::{self, PcieMeasurement, Transfer};
use profile::{CollectiveMeasurement, GemmMeasurement, MemoryMeasurement};
use topologies::Datasheet;

/// Least plausible large-GEMM efficiency: cuBLAS reaches ~0.8 on every
/// tensor-core GPU; below 0.2 something else is running or the clock is stuck low.
pub const MIN_LARGE_GEMM_EFFICIENCY: f64 = 0.2;
/// Least plausible HBM efficiency of a large device-to-device copy (~0.9 seen).
pub const MIN_HBM_EFFICIENCY: f64 = 0.3;
/// Slowest plausible pinned PCIe copy: 1 GB/s (Gen3 x16 reaches ~12).
pub const MIN_PCIE_BYTES_PER_S: f64 = 1e9;
/// Fastest possible PCIe copy per direction: 128 GB/s, the Gen6 x16 line rate.
pub const MAX_PCIE_BYTES_PER_S: f64 = 128e9;

fn tflops(flops_per_s: f64) -> String {
    format!("{:.1} TFLOP/s", flops_per_s / 1e12)
}

fn gb_per_s(bytes_per_s: f64) -> String {
    format!("{:.1} GB/s", bytes_per_s / 1e9)
}

fn per_second(amount: f64, time_ns: u64) -> f64 {
    amount / (time_ns.max(1) as f64 * 1e-9)
}

/// FLOP/s of a timed GEMM (2·batch·m·n·k per run).
pub fn gemm_flops_per_s(gemm: &GemmMeasurement) -> f64 {
    let flops = 2.0 * gemm.batch as f64 * gemm.m as f64 * gemm.n as f64 * gemm.k as f64;
    per_second(flops, gemm.time_ns)
}

fn gemm_name(gemm: &GemmMeasurement) -> String {
    let batch = if gemm.batch > 1 {
        format!("{} x ", gemm.batch)
    } else {
        String::new()
    };
    format!(
        "cuBLAS {} GEMM {batch}{}x{}x{}",
        gemm.dtype, gemm.m, gemm.n, gemm.k
    )
}

/// The GEMM that defines the large-GEMM efficiency: the largest square
/// single GEMM, bf16 before fp16, with its FLOP/s.
pub fn large_gemm(measured: &[GemmMeasurement]) -> Option<(&GemmMeasurement, f64)> {
    ["bf16", "fp16"].into_iter().find_map(|dtype| {
        measured
            .iter()
            .filter(|g| g.dtype == dtype && g.batch == 1 && g.m == g.n && g.n == g.k)
            .max_by_key(|g| g.m)
            .map(|g| (g, gemm_flops_per_s(g)))
    })
}

/// The copy that defines the HBM efficiency: the one moving the most bytes.
pub fn large_copy(measured: &[MemoryMeasurement]) -> Option<&MemoryMeasurement> {
    measured
        .iter()
        .filter(|m| m.kernel == "copy")
        .max_by_key(|m| m.bytes)
}

/// Every measurement of `findings` out of bounds; empty when all are
/// plausible. `datasheet` is the timed GPU's (none: only the PCIe bounds).
pub fn check(findings: &Findings, datasheet: Option<&Datasheet>) -> Vec<Implausibility> {
    let mut problems = Vec::new();
    if let Some(sheet) = datasheet {
        check_gemms(&findings.gemm, sheet, &mut problems);
        check_memory(&findings.memory, sheet, &mut problems);
        check_collectives(&findings.collectives, sheet, &mut problems);
    }
    check_pcie(&findings.pcie, &mut problems);
    problems
}

fn check_gemms(gemms: &[GemmMeasurement], sheet: &Datasheet, problems: &mut Vec<Implausibility>) {
    for gemm in gemms {
        let Some(peak) = sheet.peak_flops_per_s(&gemm.dtype) else {
            continue;
        };
        let rate = gemm_flops_per_s(gemm);
        if rate > peak {
            problems.push(Implausibility {
                measurement: gemm_name(gemm),
                time_ns: gemm.time_ns,
                achieved: tflops(rate),
                bound: Bound::AboveDatasheet {
                    datasheet: format!(
                        "{} datasheet dense {} peak {}",
                        sheet.gpu.name,
                        gemm.dtype,
                        tflops(peak)
                    ),
                    efficiency: rate / peak,
                },
            });
        }
    }
    if let Some((gemm, rate)) = large_gemm(gemms) {
        let peak = sheet.peak_flops_per_s(&gemm.dtype).unwrap_or(f64::INFINITY);
        if rate < MIN_LARGE_GEMM_EFFICIENCY * peak {
            problems.push(Implausibility {
                measurement: format!("{} (large-GEMM efficiency)", gemm_name(gemm)),
                time_ns: gemm.time_ns,
                achieved: format!("{} = {:.3} of peak", tflops(rate), rate / peak),
                bound: Bound::BelowFloor {
                    floor: format!(
                        "{MIN_LARGE_GEMM_EFFICIENCY} of the {} datasheet dense {} peak {}",
                        sheet.gpu.name,
                        gemm.dtype,
                        tflops(peak)
                    ),
                },
            });
        }
    }
}

fn check_memory(
    memory: &[MemoryMeasurement],
    sheet: &Datasheet,
    problems: &mut Vec<Implausibility>,
) {
    let hbm = sheet.gpu.hbm_bandwidth_bytes_per_s;
    let largest = large_copy(memory);
    for entry in memory {
        // Smaller working sets may be served from L2, faster than HBM.
        let beyond_l2 = entry.bytes >= 2 * sheet.gpu.l2_cache_bytes;
        let is_largest = largest.is_some_and(|l| std::ptr::eq(l, entry));
        let rate = per_second(entry.bytes as f64, entry.time_ns);
        if (beyond_l2 || is_largest) && rate > hbm {
            problems.push(Implausibility {
                measurement: memory_name(entry),
                time_ns: entry.time_ns,
                achieved: gb_per_s(rate),
                bound: Bound::AboveDatasheet {
                    datasheet: format!(
                        "{} datasheet HBM bandwidth {}",
                        sheet.gpu.name,
                        gb_per_s(hbm)
                    ),
                    efficiency: rate / hbm,
                },
            });
        }
    }
    if let Some((bytes, rate)) = memory_bandwidth::largest_rate(memory, "copy") {
        if rate < MIN_HBM_EFFICIENCY * hbm {
            let time_ns = largest.map_or(0, |l| l.time_ns);
            problems.push(Implausibility {
                measurement: format!("device-to-device copy moving {bytes} bytes (HBM efficiency)"),
                time_ns,
                achieved: format!("{} = {:.3} of the datasheet", gb_per_s(rate), rate / hbm),
                bound: Bound::BelowFloor {
                    floor: format!(
                        "{MIN_HBM_EFFICIENCY} of the {} datasheet HBM bandwidth {}",
                        sheet.gpu.name,
                        gb_per_s(hbm)
                    ),
                },
            });
        }
    }
}

fn memory_name(entry: &MemoryMeasurement) -> String {
    if entry.kernel == "copy" {
        format!(
            "device-to-device copy moving {} bytes (read + written)",
            entry.bytes
        )
    } else {
        format!(
            "{} kernel moving {} bytes (read + written)",
            entry.kernel, entry.bytes
        )
    }
}

fn check_collectives(
    collectives: &[CollectiveMeasurement],
    sheet: &Datasheet,
    problems: &mut Vec<Implausibility>,
) {
    for entry in collectives {
        let n = entry.group_size.max(1) as f64;
        let measurement = format!(
            "NCCL {} of {} bytes over {} GPU(s)",
            entry.op, entry.bytes, entry.group_size
        );
        let (rate, limit, what) = if entry.group_size <= 1 {
            // A local copy: every byte read once and written once.
            if entry.bytes < sheet.gpu.l2_cache_bytes {
                continue;
            }
            (
                per_second(2.0 * entry.bytes as f64, entry.time_ns),
                sheet.gpu.hbm_bandwidth_bytes_per_s,
                "HBM bandwidth (a one-GPU collective is a local copy: 2 x bytes move)",
            )
        } else {
            // Each rank receives at least (n-1)/n of the buffer, ring or not.
            (
                per_second(entry.bytes as f64 * (n - 1.0) / n, entry.time_ns),
                sheet.nvlink_bandwidth_bytes_per_s,
                "NVLink bandwidth per direction (each rank receives at least bytes x (n-1)/n)",
            )
        };
        if rate > limit {
            problems.push(Implausibility {
                measurement,
                time_ns: entry.time_ns,
                achieved: gb_per_s(rate),
                bound: Bound::AboveDatasheet {
                    datasheet: format!("{} datasheet {what} {}", sheet.gpu.name, gb_per_s(limit)),
                    efficiency: rate / limit,
                },
            });
        }
    }
}

fn check_pcie(pcie: &[PcieMeasurement], problems: &mut Vec<Implausibility>) {
    for entry in pcie {
        let directions = if entry.transfer == Transfer::BidirectionalPinned {
            2.0
        } else {
            1.0
        };
        let rate = entry.bytes_per_s() / directions;
        if rate > MAX_PCIE_BYTES_PER_S {
            problems.push(Implausibility {
                measurement: format!(
                    "PCIe {} copy of {} bytes",
                    entry.transfer.name(),
                    entry.bytes
                ),
                time_ns: entry.time_ns,
                achieved: format!("{} per direction", gb_per_s(rate)),
                bound: Bound::AboveCeiling {
                    ceiling: format!(
                        "{} per direction (PCIe Gen6 x16 line rate)",
                        gb_per_s(MAX_PCIE_BYTES_PER_S)
                    ),
                },
            });
        }
    }
    for transfer in [Transfer::HostToDevicePinned, Transfer::DeviceToHostPinned] {
        if let Some(entry) = pcie::largest(pcie, transfer) {
            let rate = entry.bytes_per_s();
            if rate < MIN_PCIE_BYTES_PER_S {
                problems.push(Implausibility {
                    measurement: format!("PCIe {} copy of {} bytes", transfer.name(), entry.bytes),
                    time_ns: entry.time_ns,
                    achieved: gb_per_s(rate),
                    bound: Bound::BelowFloor {
                        floor: gb_per_s(MIN_PCIE_BYTES_PER_S),
                    },
                });
            }
        }
    }
}

#[cfg(test)]
#[path = "plausibility_tests.rs"]
mod tests;
