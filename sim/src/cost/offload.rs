//! ZeRO-Offload costs off the GPU: copies over the PCIe host link and the CPU
//! Adam step.
//!
//! **PCIe.** A copy of `bytes` takes `pcie.latency_ns` (topology) plus
//! `bytes ÷ (rate ÷ sharing)`, where `rate` is the profile's achieved rate for
//! that direction (`pcie.device_to_host_bytes_per_s`,
//! `pcie.host_to_device_bytes_per_s`) and `sharing` is the number of the job's
//! GPUs behind one host link (`pcie.gpus_per_host_link`, capped by the job's
//! GPUs on the node). This is a closed form, not a flow model: it assumes every
//! GPU behind a link copies at the same time, which data-parallel symmetry
//! makes true for ZeRO-Offload (all ranks offload the same buckets and upload
//! the same tiles in lockstep); a lone copy would get the whole link. The two
//! directions are independent (PCIe is full duplex).
//!
//! **CPU Adam.** The profile's `cpu_adam` says how fast the whole host updates
//! parameters: the `measured` table (seconds per step by parameter count, e.g.
//! ZeRO-Offload Table 4 on the DGX-2 host) interpolated piecewise linearly by
//! parameters, through the origin below its first row and at its last row's
//! rate above it (constant throughput); without a table, `params_per_s`.
//! Table rows timed with a different thread count than the host's cores are
//! scaled linearly by cores. With `g` GPUs of the job on a node, each GPU's
//! optimizer process gets `1/g` of the cores, so a GPU's step of `S` parameters
//! takes as long as the whole host takes for `g·S` (all `g` step at once).

use profile::CpuAdamProfile;

/// Seconds the whole host (`cores` cores) takes for one Adam step over `params` parameters.
pub fn cpu_adam_host_seconds(profile: &CpuAdamProfile, cores: u32, params: u64) -> f64 {
    if params == 0 {
        return 0.0;
    }
    let mut rows: Vec<(f64, f64)> = profile
        .measured
        .iter()
        .filter(|row| row.params > 0 && row.time_ns > 0)
        .map(|row| {
            let threads = if row.threads == 0 { cores } else { row.threads };
            let seconds = row.time_ns as f64 * 1e-9 * threads as f64 / cores.max(1) as f64;
            (row.params as f64, seconds)
        })
        .collect();
    let params = params as f64;
    if rows.is_empty() {
        return params / profile.params_per_s.value;
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (first, last) = (rows[0], rows[rows.len() - 1]);
    if params <= first.0 {
        return first.1 * params / first.0;
    }
    if params >= last.0 {
        return last.1 * params / last.0;
    }
    for pair in rows.windows(2) {
        let ((p0, t0), (p1, t1)) = (pair[0], pair[1]);
        if params <= p1 {
            if p1 == p0 {
                return t1;
            }
            return t0 + (t1 - t0) * (params - p0) / (p1 - p0);
        }
    }
    unreachable!("params lies inside the table's range")
}

/// Seconds one GPU's optimizer process takes for `tile_params` of its
/// `step_params`-parameter step while `sharing_gpus` GPUs of the node step at once.
pub fn cpu_adam_tile_seconds(
    profile: &CpuAdamProfile,
    cores: u32,
    tile_params: u64,
    step_params: u64,
    sharing_gpus: u32,
) -> f64 {
    if tile_params == 0 || step_params == 0 {
        return 0.0;
    }
    let host_params = step_params.saturating_mul(sharing_gpus.max(1) as u64);
    cpu_adam_host_seconds(profile, cores, host_params) * tile_params as f64 / step_params as f64
}

/// Seconds of one copy of `bytes` over a host link shared by `sharing_gpus`
/// GPUs copying at once, at `rate_bytes_per_s` achieved per direction.
pub fn pcie_seconds(bytes: u64, rate_bytes_per_s: f64, sharing_gpus: u32, latency_ns: u64) -> f64 {
    pcie_seconds_through(bytes, rate_bytes_per_s, sharing_gpus, 1.0, latency_ns)
}

/// The same through a GPU link that delivers 1/`link_slowdown` of the rate
/// (a slow PCIe link, `crate::slow_link`): the copy runs at the slower of
/// its own link and its share of the host link, rate ÷ max(sharing,
/// slowdown). At a slowdown of 1 it is [`pcie_seconds`] exactly.
pub fn pcie_seconds_through(
    bytes: u64,
    rate_bytes_per_s: f64,
    sharing_gpus: u32,
    link_slowdown: f64,
    latency_ns: u64,
) -> f64 {
    if bytes == 0 {
        return 0.0;
    }
    let slowest_share = (sharing_gpus.max(1) as f64).max(link_slowdown);
    latency_ns as f64 * 1e-9 + bytes as f64 * slowest_share / rate_bytes_per_s
}

#[cfg(test)]
mod tests {
    use super::*;
    use profile::Profile;

    fn v100() -> CpuAdamProfile {
        Profile::builtin("v100-32gb").unwrap().cpu_adam
    }

    #[test]
    fn table_rows_are_reproduced_and_interpolated_by_params() {
        let profile = v100();
        // ZeRO-Offload Table 4 (DGX-2 host, 48 cores): 1B 0.22 s, 2B 0.51 s, 10B 2.57 s.
        assert!((cpu_adam_host_seconds(&profile, 48, 1_000_000_000) - 0.22).abs() < 1e-12);
        assert!((cpu_adam_host_seconds(&profile, 48, 10_000_000_000) - 2.57).abs() < 1e-12);
        let mid = cpu_adam_host_seconds(&profile, 48, 1_500_000_000);
        assert!((mid - (0.22 + 0.51) / 2.0).abs() < 1e-12, "{mid}");
        // Below the table: the first row's rate; above: the last row's rate.
        assert!((cpu_adam_host_seconds(&profile, 48, 500_000_000) - 0.11).abs() < 1e-12);
        assert!((cpu_adam_host_seconds(&profile, 48, 13_000_000_000) - 2.57 * 1.3).abs() < 1e-9);
        // Half the cores, twice the time.
        assert!((cpu_adam_host_seconds(&profile, 24, 1_000_000_000) - 0.44).abs() < 1e-12);
    }

    #[test]
    fn without_a_table_the_host_rate_is_used() {
        let mut profile = v100();
        profile.measured.clear();
        let seconds = cpu_adam_host_seconds(&profile, 48, 3_890_000_000);
        assert!((seconds - 1.0).abs() < 1e-12);
    }

    #[test]
    fn gpus_sharing_a_host_each_take_as_long_as_the_host_for_all_of_them() {
        let profile = v100();
        // 16 GPUs with 625M parameters each: the host updates 10B in 2.57 s.
        let step = 625_000_000;
        let whole = cpu_adam_tile_seconds(&profile, 48, step, step, 16);
        assert!((whole - 2.57).abs() < 1e-12);
        let tile = cpu_adam_tile_seconds(&profile, 48, step / 5, step, 16);
        assert!((tile * 5.0 - whole).abs() < 1e-12);
    }

    #[test]
    fn a_shared_host_link_divides_its_rate() {
        let alone = pcie_seconds(12_000_000_000, 12e9, 1, 1000);
        assert!((alone - 1.000001).abs() < 1e-12);
        let shared = pcie_seconds(12_000_000_000, 12e9, 2, 1000);
        assert!((shared - 2.000001).abs() < 1e-12);
        assert_eq!(pcie_seconds(0, 12e9, 2, 1000), 0.0);
        // A link at 1/3 of the rate behind an uplink shared by 2: the link
        // sets the pace; at 1/1.5 the uplink's share still does.
        let slow = pcie_seconds_through(12_000_000_000, 12e9, 2, 3.0, 1000);
        assert!((slow - (1e-6 + 3.0)).abs() < 1e-12);
        let mild = pcie_seconds_through(12_000_000_000, 12e9, 2, 1.5, 1000);
        assert_eq!(mild, shared);
    }
}
