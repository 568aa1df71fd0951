//! Who made a profile, on what: the UTC date (formatted here from
//! `std::time`, no date crate), the host CPU from `/proc/cpuinfo`, the
//! NVIDIA kernel driver version from `/proc/driver/nvidia/version`, and the
//! CUDA driver API version from `cuDriverGetVersion`.
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use std::time::{SystemTime, UNIX_EPOCH};

/// "calibrate x.y.z (clustersim)" for `Provenance::tool`.
pub fn tool() -> String {
    format!("clustersim calibrate {}", env!("CARGO_PKG_VERSION"))
}

/// Now, as ISO-8601 UTC ("2025-01-31T12:34:56Z").
pub fn utc_now() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(seconds)
}

/// Seconds since the Unix epoch as ISO-8601 UTC.
pub fn format_utc(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let second_of_day = unix_seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        (second_of_day / 60) % 60,
        second_of_day % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The first "model name" in a `/proc/cpuinfo` text, with the number of
/// logical CPUs listed ("AMD EPYC 7742 64-Core Processor (256 logical CPUs)").
pub fn cpu_from_cpuinfo(text: &str) -> Option<String> {
    let model = text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(key, _)| key.trim() == "model name")
        .map(|(_, value)| value.trim().to_string())?;
    let logical = text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| key.trim() == "processor")
        .count();
    Some(if logical > 0 {
        format!("{model} ({logical} logical CPUs)")
    } else {
        model
    })
}

/// This host's CPU, if `/proc/cpuinfo` says.
pub fn host_cpu() -> Option<String> {
    cpu_from_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").ok()?)
}

/// The version in `/proc/driver/nvidia/version`'s first line: its first
/// word made of digits and dots with at least one dot, so both the
/// proprietary ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06
/// Sun …") and the open module's form ("NVRM version: NVIDIA UNIX Open
/// Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)") read.
pub fn driver_from_proc(text: &str) -> Option<String> {
    let line = text.lines().next()?;
    let after = line
        .split_once("NVRM version:")
        .map_or(line, |(_, rest)| rest);
    after
        .split_whitespace()
        .find(|word| is_version(word))
        .map(str::to_string)
}

/// "580.159.04": digits separated by single dots, at least two parts.
fn is_version(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

/// The NVIDIA kernel driver version, if the driver exposes it.
pub fn nvidia_driver_version() -> Option<String> {
    driver_from_proc(&std::fs::read_to_string("/proc/driver/nvidia/version").ok()?)
}

/// The CUDA version the driver supports ("13.0"), from `cuDriverGetVersion`.
/// Only call after the driver library was found.
pub fn cuda_driver_api_version() -> Option<String> {
    let mut code = 0;
    // SAFETY: writes one int; the caller checked the driver library loads.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut code) }
        .result()
        .ok()?;
    Some(format!("{}.{}", code / 1000, (code % 1000) / 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_are_formatted_from_unix_seconds() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(format_utc(4_107_542_399), "2100-02-28T23:59:59Z");
        assert!(utc_now().ends_with('Z'));
    }

    #[test]
    fn cpu_and_driver_are_read_from_proc_text() {
        let cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC 7742 64-Core Processor\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7742 64-Core Processor\n";
        assert_eq!(
            cpu_from_cpuinfo(cpuinfo).unwrap(),
            "AMD EPYC 7742 64-Core Processor (2 logical CPUs)"
        );
        assert!(cpu_from_cpuinfo("flags: sse").is_none());
        let version = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:00 UTC 2025\nGCC version: gcc 12";
        assert_eq!(driver_from_proc(version).unwrap(), "580.65.06");
    }

    #[test]
    fn open_kernel_module_driver_version_is_read() {
        // The lab H100's first line, trailing spaces included.
        let open = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \nGCC version:  gcc version 14.3.0 (GCC) \n";
        assert_eq!(driver_from_proc(open).unwrap(), "580.159.04");
        let aarch64 = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release Build  (dvs-builder@U16-I1-N08-12-3)  Thu Jan 23 23:28:51 UTC 2025";
        assert_eq!(driver_from_proc(aarch64).unwrap(), "570.86.15");
        assert!(
            driver_from_proc("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64").is_none()
        );
        assert!(driver_from_proc("").is_none());
        assert!(!is_version("x86_64") && !is_version("1.") && !is_version("580"));
    }
}
