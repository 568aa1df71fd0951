//! Turns measurements into a [`Profile`]: the base profile ([`base_profile`])
//! with every measured list appended (a memory class it timed replacing the
//! base's entries of that class) and exactly the scalar quantities that
//! were measured replaced, each with `source: measured` and a note saying
//! how. Everything else keeps its original value, source and note.
//!
//! Efficiencies are the measured rate over the timed GPU's own datasheet
//! (never the base profile's GPU when they differ, never clamped): every
//! measurement is first held to the bounds of [`crate::plausibility`], and
//! one out of bounds fails the run. The profile names the timed GPU (its
//! datasheet name, or the driver's name for a GPU without a datasheet) and
//! its id ends in `-calibrated`. Remarks go to `provenance.remarks`. The
//! result must pass `Profile::validate`.

use crate::collectives::{self, Collective};
use crate::cpu_adam;
use crate::error::CalibrateError;
pub use crate::findings::Findings;
use crate::pcie::{self, Transfer};
use crate::plausibility;
use crate::provenance;
use profile::{GemmMeasurement, Profile, Provenance, Quantity, Source};
use topologies::Datasheet;

pub use crate::base_profile::{
    base_profile, closest_builtin, datasheet_gpu, BaseProfile, BuiltinMatch, DetectedGpu,
};

fn measured(value: f64, note: String) -> Quantity {
    Quantity {
        value,
        source: Source::Measured,
        note,
    }
}

fn gb_per_s(bytes_per_s: f64) -> String {
    format!("{:.1} GB/s", bytes_per_s / 1e9)
}

/// The datasheet measurements of `detected` are divided by: its own, unless
/// the GPU has none or its SM count differs (a MIG slice, another board);
/// each case is said in a remark.
fn applicable_datasheet(
    detected: &DetectedGpu,
    sm_count: Option<u32>,
    remarks: &mut Vec<String>,
) -> Option<Datasheet> {
    let Some(sheet) = &detected.datasheet else {
        remarks.push(format!(
            "no datasheet for {} in the catalogue: large_gemm_efficiency and hbm_efficiency were not computed (they keep the base profile's values) and rates were not checked against a datasheet",
            detected.device_name
        ));
        return None;
    };
    match sm_count {
        Some(sms) if sms != sheet.gpu.sm_count => {
            remarks.push(format!(
                "{} reports {sms} SMs but the {} datasheet has {}: not that datasheet's GPU (a MIG slice or another board?), so no efficiency relative to it was computed",
                detected.device_name, sheet.gpu.name, sheet.gpu.sm_count
            ));
            None
        }
        _ => Some(sheet.clone()),
    }
}

/// A slug of a device name for a profile id ("NVIDIA GeForce RTX 4090" →
/// "nvidia-geforce-rtx-4090").
fn slug(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "gpu".into()
    } else {
        slug.into()
    }
}

/// `gemm.fp8_relative_efficiency` from one run: the largest square FP8 GEMM's
/// rate over the datasheet's dense FP8 peak, divided by the large-GEMM
/// efficiency measured in the same run (`large_gemm`: that GEMM and its
/// efficiency), so that the simulator's FP8 model (FP8 peak ×
/// `large_gemm_efficiency` × this) gives back the measured FP8 rate.
/// `None` when no square FP8 GEMM was timed; `Some(Err(remark))` when one
/// was but the ratio cannot be written (no large-GEMM efficiency in this
/// run, no FP8 peak, or a ratio above 1, which the schema does not take).
pub fn fp8_relative_efficiency(
    gemms: &[GemmMeasurement],
    sheet: &Datasheet,
    large_gemm: Option<(&GemmMeasurement, f64)>,
) -> Option<Result<Quantity, String>> {
    let fp8 = gemms
        .iter()
        .filter(|g| g.dtype == "fp8" && g.batch == 1 && g.m == g.n && g.n == g.k)
        .max_by_key(|g| g.m)?;
    let not_written = |why: String| {
        Some(Err(format!(
            "gemm.fp8_relative_efficiency not computed: {why}; it keeps the base profile's value"
        )))
    };
    let Some(peak) = sheet.peak_flops_per_s("fp8") else {
        return not_written(format!("the {} datasheet has no FP8 peak", sheet.gpu.name));
    };
    let Some((reference, reference_efficiency)) = large_gemm else {
        return not_written("no large-GEMM efficiency was measured in this run".into());
    };
    let rate = plausibility::gemm_flops_per_s(fp8);
    let fp8_efficiency = rate / peak;
    let relative = fp8_efficiency / reference_efficiency;
    let layout = |g: &GemmMeasurement| g.layout.clone().unwrap_or_else(|| "?".into());
    let note = format!(
        "cuBLASLt FP8 {}x{}x{} GEMM ({}, FP8 inputs, bf16 output, random inputs, median {} ns) ran at {:.0} TFLOP/s = {:.4} of the {} datasheet dense FP8 peak {:.0} TFLOP/s; divided by this run's large-GEMM efficiency {:.4} (cuBLAS {} {}x{}x{} {}, median {} ns)",
        fp8.m,
        fp8.n,
        fp8.k,
        layout(fp8),
        fp8.time_ns,
        rate / 1e12,
        fp8_efficiency,
        sheet.gpu.name,
        peak / 1e12,
        reference_efficiency,
        reference.dtype,
        reference.m,
        reference.n,
        reference.k,
        layout(reference),
        reference.time_ns
    );
    if !(relative > 0.0 && relative <= 1.0) {
        return not_written(format!(
            "the ratio came out {relative:.4}, outside (0, 1]: {note}"
        ));
    }
    Some(Ok(measured(relative, note)))
}

/// Builds the calibrated profile. `provenance` carries the device fields
/// (and the GPU state before and after); tool, created, method, statistic and
/// remarks are filled here.
pub fn write_profile(
    base: BaseProfile,
    findings: Findings,
    mut provenance: Provenance,
    warmup: u32,
) -> Result<Profile, CalibrateError> {
    let BaseProfile {
        mut profile,
        reason,
        detected,
    } = base;
    let mut remarks = findings.remarks.clone();
    let datasheet = detected
        .as_ref()
        .and_then(|gpu| applicable_datasheet(gpu, provenance.sm_count, &mut remarks));
    let problems = plausibility::check(&findings, datasheet.as_ref());
    if !problems.is_empty() {
        return Err(CalibrateError::Implausible { problems });
    }

    // GEMM efficiency from the largest square GEMM (bf16 first).
    let mut large_gemm_measured = None;
    if let (Some((largest, flops_per_s)), Some(sheet)) =
        (plausibility::large_gemm(&findings.gemm), datasheet.as_ref())
    {
        if let Some(peak) = sheet.peak_flops_per_s(&largest.dtype) {
            large_gemm_measured = Some((largest.clone(), flops_per_s / peak));
            profile.gemm.large_gemm_efficiency = measured(
                flops_per_s / peak,
                format!(
                    "cuBLAS {} {}x{}x{} GEMM (fp32 accumulate, random inputs, median {} ns) ran at {:.0} TFLOP/s of the {} datasheet dense peak {:.0} TFLOP/s",
                    largest.dtype,
                    largest.m,
                    largest.n,
                    largest.k,
                    largest.time_ns,
                    flops_per_s / 1e12,
                    sheet.gpu.name,
                    peak / 1e12
                ),
            );
        }
    }
    if let Some(sheet) = datasheet.as_ref() {
        let bf16 = large_gemm_measured
            .as_ref()
            .map(|(gemm, efficiency)| (gemm, *efficiency));
        match fp8_relative_efficiency(&findings.gemm, sheet, bf16) {
            Some(Ok(relative)) => profile.gemm.fp8_relative_efficiency = Some(relative),
            Some(Err(remark)) => remarks.push(remark),
            None => {}
        }
    }
    if let Some(overhead_ns) = findings.kernel_overhead_ns {
        profile.gemm.kernel_overhead_ns = measured(
            overhead_ns as f64,
            format!(
                "span of {} back-to-back empty kernels enqueued behind a gate (one event pair), divided by their number: the launch-to-launch gap as the GPU sees it, median of 5",
                findings.kernel_overhead_launches
            ),
        );
    }
    profile.gemm.measured.extend(findings.gemm);
    // A base profile's sustained run describes another run: never kept.
    profile.gemm.sustained_run = findings.sustained;

    // HBM efficiency from the largest device-to-device copy.
    if let (Some(copy), Some(sheet)) = (
        plausibility::large_copy(&findings.memory),
        datasheet.as_ref(),
    ) {
        let rate = copy.bytes as f64 / (copy.time_ns as f64 * 1e-9);
        profile.memory.hbm_efficiency = measured(
            rate / sheet.gpu.hbm_bandwidth_bytes_per_s,
            format!(
                "device-to-device copy moving {} bytes (read + written, median {} ns) reached {} of the {} datasheet {}",
                copy.bytes,
                copy.time_ns,
                gb_per_s(rate),
                sheet.gpu.name,
                gb_per_s(sheet.gpu.hbm_bandwidth_bytes_per_s)
            ),
        );
    }
    // A class this run timed replaces the base profile's entries of it (the
    // embedded profiles carry the lab H100's classes, scaled by bandwidth).
    profile.memory.measured.retain(|base| {
        !findings
            .memory
            .iter()
            .any(|timed| timed.kernel == base.kernel)
    });
    profile.memory.measured.extend(findings.memory);

    // NVLink bus bandwidth only from a real multi-GPU all-reduce.
    if let Some(largest) = collectives::largest_all_reduce(&findings.collectives) {
        if let Some(bus) = collectives::bus_bandwidth_bytes_per_s(Collective::AllReduce, largest) {
            profile.communication.nvlink_bus_bandwidth_bytes_per_s = measured(
                bus,
                format!(
                    "NCCL bf16 all-reduce of {} bytes over {} local GPUs: median {} ns, bus bandwidth = bytes/time x 2(n-1)/n",
                    largest.bytes, largest.group_size, largest.time_ns
                ),
            );
        }
    }
    profile.communication.measured.extend(findings.collectives);

    // PCIe: pinned rates at the largest size; the others in the note.
    let rate_of = |transfer: Transfer| pcie::largest(&findings.pcie, transfer);
    let context = |transfer: Transfer| {
        rate_of(transfer)
            .map(|m| {
                format!(
                    "; {} {} bytes: {}",
                    transfer.name(),
                    m.bytes,
                    gb_per_s(m.bytes_per_s())
                )
            })
            .unwrap_or_default()
    };
    let both = context(Transfer::BidirectionalPinned);
    if let Some(h2d) = rate_of(Transfer::HostToDevicePinned) {
        profile.pcie.host_to_device_bytes_per_s = measured(
            h2d.bytes_per_s(),
            format!(
                "event-timed cuMemcpyHtoDAsync of {} bytes from pinned host memory (median){}{}",
                h2d.bytes,
                context(Transfer::HostToDevicePageable),
                both
            ),
        );
    }
    if let Some(d2h) = rate_of(Transfer::DeviceToHostPinned) {
        profile.pcie.device_to_host_bytes_per_s = measured(
            d2h.bytes_per_s(),
            format!(
                "event-timed cuMemcpyDtoHAsync of {} bytes into pinned host memory (median){}{}",
                d2h.bytes,
                context(Transfer::DeviceToHostPageable),
                both
            ),
        );
    }

    if let Some(best) = cpu_adam::best(&findings.cpu_adam) {
        profile.cpu_adam.params_per_s = measured(
            cpu_adam::params_per_s(best),
            format!(
                "fp32 Adam step (bias-corrected, rayon) over {} parameters on this host: best rate at {} threads, median of the timed steps",
                best.params, best.threads
            ),
        );
    }
    profile.cpu_adam.measured.extend(findings.cpu_adam);

    // The profile describes the timed GPU, whatever it started from.
    let base_id = profile.id.clone();
    profile.id = format!("{base_id}-calibrated");
    if let Some(gpu) = &detected {
        let timed_gpu = datasheet
            .as_ref()
            .map_or_else(|| gpu.device_name.clone(), |sheet| sheet.gpu.name.clone());
        if profile.gpu != timed_gpu {
            remarks.push(format!(
                "the base profile '{base_id}' describes {} but the timed GPU is {}: the profile is written for {timed_gpu}, and the quantities not measured are {}'s",
                profile.gpu, gpu.device_name, profile.gpu
            ));
            let stem = datasheet
                .as_ref()
                .map_or_else(|| slug(&gpu.device_name), |sheet| sheet.id.to_string());
            profile.id = format!("{stem}-calibrated");
            profile.gpu = timed_gpu;
        }
    }

    let repeats = provenance.repeats.unwrap_or(0);
    let method = format!(
        "timed by clustersim calibrate ({}); each entry is the median of {repeats} repeats after {warmup} warm-up runs (GEMM spread_ns = interquartile range); started from {reason}; quantities not measured keep the base profile's source",
        if findings.stages.is_empty() {
            "nothing".to_string()
        } else {
            findings.stages.join(", ")
        },
    );
    provenance.tool = provenance::tool();
    provenance.created = provenance::utc_now();
    provenance.method = method;
    provenance.statistic = Some("median".into());
    provenance.remarks = remarks;
    profile.provenance = provenance;
    profile.validate("calibrated profile")?;
    Ok(profile)
}

#[cfg(test)]
#[path = "profile_writer_tests.rs"]
mod tests;
