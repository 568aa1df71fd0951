//! Hardware work queues: `CUDA_DEVICE_MAX_CONNECTIONS`.
//!
//! The driver gives each context this many hardware work queues (default 8,
//! at most 32). With fewer queues than busy streams, streams share a queue
//! and a stream blocked on an event holds back the others behind it: false
//! dependencies the simulator does not have. The executor uses one stream
//! per (rank, stream kind) plus a gate stream, often more than 8.
//!
//! The driver reads the variable when it initialises, so it must be in the
//! environment before the first CUDA call of the process. Setting it later
//! (as an earlier version did inside [`crate::execute`]) may do nothing, and
//! `std::env::set_var` is only sound before other threads run. Hence:
//! - the `clustersim` binary calls [`request_in_environment`] first thing in
//!   `main` for `execute`, before any thread or CUDA call;
//! - [`crate::execute`] only reads the variable ([`observe`]) and says in the
//!   notes what is known ([`assess`]): the value, whether the driver had
//!   already been initialised in this process when it looked (then the value
//!   read may not be the one in effect), and whether the plan's streams fit;
//! - the executor's GPU tests run in-process after other CUDA use, so they
//!   must be started with `CUDA_DEVICE_MAX_CONNECTIONS=32` in the environment
//!   (they fail, saying so, without it).
#![allow(unsafe_code)] // calls into CUDA, the allocator or the OS

use serde_json::json;

/// The variable the driver reads.
pub const VARIABLE: &str = "CUDA_DEVICE_MAX_CONNECTIONS";
/// What the executor asks for: the driver's maximum.
pub const REQUESTED: u32 = 32;
/// The driver's default when the variable is unset.
pub const DRIVER_DEFAULT: u32 = 8;

/// Sets [`VARIABLE`] to [`REQUESTED`] unless it is set; returns whether it
/// set it. Call it at the start of `main`, before any other thread exists
/// and before any CUDA call, or it may have no effect.
pub fn request_in_environment() -> bool {
    if std::env::var_os(VARIABLE).is_some() {
        return false;
    }
    std::env::set_var(VARIABLE, REQUESTED.to_string());
    true
}

/// What the process looked like when [`crate::execute`] started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// The variable's value now (`None`: unset, or not valid Unicode).
    pub setting: Option<String>,
    /// Its value in the environment the process was started with
    /// (`/proc/self/environ`); `None` when that cannot be read.
    pub initial_setting: Option<Option<String>>,
    /// Whether the CUDA driver had already been initialised in this process
    /// (`None`: unknown, e.g. no driver).
    pub driver_initialised: Option<bool>,
}

/// Reads the variable, the process's initial environment and whether the
/// driver was initialised already (without initialising it).
pub fn observe() -> Observed {
    Observed {
        setting: std::env::var(VARIABLE).ok(),
        initial_setting: initial_setting(),
        driver_initialised: driver_initialised(),
    }
}

/// The variable in the environment this process was started with (Linux's
/// `/proc/self/environ`, read up to 1 MiB).
fn initial_setting() -> Option<Option<String>> {
    use std::io::Read;
    const CAP: u64 = 1 << 20;
    let mut bytes = Vec::new();
    std::fs::File::open("/proc/self/environ")
        .ok()?
        .take(CAP)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(setting_in_environ(&bytes))
}

/// [`VARIABLE`]'s value in a NUL-separated `NAME=value` block (the first
/// one, as `getenv` finds it).
fn setting_in_environ(block: &[u8]) -> Option<String> {
    let prefix = format!("{VARIABLE}=");
    block
        .split(|&byte| byte == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// Whether `cuInit` has run in this process: before it, the driver answers
/// `cuDeviceGetCount` with `CUDA_ERROR_NOT_INITIALIZED`. `None` when no
/// driver loads or it answers anything else.
fn driver_initialised() -> Option<bool> {
    use cudarc::driver::sys;
    if !gpu::detect::CudaLibrary::Driver.is_present() {
        return None;
    }
    let mut count: std::ffi::c_int = 0;
    // SAFETY: the driver library loads (checked above); the call writes one
    // int and initialises nothing.
    match unsafe { sys::cuDeviceGetCount(&mut count) } {
        sys::CUresult::CUDA_SUCCESS => Some(true),
        sys::CUresult::CUDA_ERROR_NOT_INITIALIZED => Some(false),
        _ => None,
    }
}

/// What the notes say about hardware queues for a plan with `streams`
/// streams (the gate stream included), and a warning when streams may share
/// queues or the setting cannot be vouched for.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// Written to the notes as `hardware_queues`.
    pub notes: serde_json::Value,
    /// One line, when the run may have false dependencies between streams or
    /// the setting in effect is unknown.
    pub warning: Option<String>,
}

/// Judges `observed` for a plan using `streams` streams.
pub fn assess(observed: &Observed, streams: usize) -> Assessment {
    let parsed = observed.setting.as_deref().map(|text| {
        text.trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=32).contains(n))
    });
    let queues: Option<u32> = match parsed {
        None => Some(DRIVER_DEFAULT),
        Some(valid) => valid,
    };
    // Whether the value read now is the one the driver took: read before
    // the driver started, or unchanged since the process started.
    let in_effect = match observed.driver_initialised {
        Some(false) => Some(true),
        Some(true) => Some(observed.initial_setting.as_ref() == Some(&observed.setting)),
        None => None,
    };
    let mut problems = Vec::new();
    if let (Some(text), Some(None)) = (&observed.setting, parsed) {
        problems.push(format!(
            "{VARIABLE}={text:?} is not a number from 1 to 32; how many hardware queues the driver uses is unknown"
        ));
    }
    if in_effect == Some(false) {
        problems.push(format!(
            "the CUDA driver was initialised in this process before {VARIABLE} took its present value, so the number of hardware queues in effect is unknown"
        ));
    } else if let Some(queues) = queues {
        if streams > queues as usize {
            let why = if observed.setting.is_none() {
                format!("{VARIABLE} is unset, so ")
            } else {
                String::new()
            };
            problems.push(format!(
                "{why}the driver has {queues} hardware queues for the plan's {streams} streams (gate included): streams share queues and a stream waiting on an event can hold back another (dependencies the simulator does not have)"
            ));
        }
    }
    let warning = (!problems.is_empty()).then(|| {
        let advice = if streams > REQUESTED as usize {
            format!("{streams} streams exceed the driver's maximum of {REQUESTED} queues: execute a layout with fewer ranks")
        } else {
            format!("start the process with {VARIABLE}={REQUESTED} in its environment (`clustersim execute` sets it itself when unset)")
        };
        format!("{}; {advice}", problems.join("; "))
    });
    Assessment {
        notes: json!({
            "variable": VARIABLE,
            "setting": observed.setting,
            "queues": queues,
            "streams": streams,
            "driver_initialised_before": observed.driver_initialised,
            "setting_known_in_effect": in_effect,
            "remark": warning,
        }),
        warning,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(
        setting: Option<&str>,
        initial: Option<Option<&str>>,
        driver: Option<bool>,
    ) -> Observed {
        Observed {
            setting: setting.map(str::to_string),
            initial_setting: initial.map(|value| value.map(str::to_string)),
            driver_initialised: driver,
        }
    }

    #[test]
    fn thirty_two_queues_read_before_the_driver_started_is_clean() {
        let verdict = assess(&observed(Some("32"), Some(None), Some(false)), 19);
        assert_eq!(verdict.warning, None);
        assert_eq!(verdict.notes["queues"], 32);
        assert_eq!(verdict.notes["setting_known_in_effect"], true);
        assert!(verdict.notes["remark"].is_null());
    }

    #[test]
    fn unset_with_more_streams_than_the_default_queues_is_a_warning() {
        let verdict = assess(&observed(None, Some(None), Some(false)), 19);
        let warning = verdict.warning.unwrap();
        assert!(warning.contains("unset"), "{warning}");
        assert!(warning.contains("19 streams"), "{warning}");
        assert!(warning.contains("8 hardware queues"), "{warning}");
        assert!(warning.contains("=32"), "{warning}");
        assert!(!warning.contains('\n'));
        assert_eq!(verdict.notes["queues"], 8);
        assert_eq!(verdict.notes["remark"], warning.as_str());
        // Unset with no more streams than queues: nothing to warn about.
        assert_eq!(
            assess(&observed(None, Some(None), Some(false)), 8).warning,
            None
        );
    }

    #[test]
    fn a_driver_initialised_before_a_change_is_never_claimed_to_have_taken_it() {
        // Set by set_var after the driver started: unknown, said so.
        let verdict = assess(&observed(Some("32"), Some(None), Some(true)), 5);
        assert!(verdict
            .warning
            .unwrap()
            .contains("initialised in this process before"));
        assert_eq!(verdict.notes["setting_known_in_effect"], false);
        // In the environment since the process started: the driver took it.
        let inherited = assess(&observed(Some("32"), Some(Some("32")), Some(true)), 19);
        assert_eq!(inherited.warning, None);
        assert_eq!(inherited.notes["setting_known_in_effect"], true);
        // Initial environment unreadable: not vouched for.
        let unknown = assess(&observed(Some("32"), None, Some(true)), 5);
        assert_eq!(unknown.notes["setting_known_in_effect"], false);
        assert!(unknown.warning.is_some());
        // No driver to ask: nothing claimed either way.
        let no_driver = assess(&observed(Some("32"), None, None), 5);
        assert!(no_driver.notes["setting_known_in_effect"].is_null());
    }

    #[test]
    fn nonsense_values_and_too_many_streams_are_named() {
        for text in ["lots", "0", "33", ""] {
            let warning = assess(&observed(Some(text), Some(None), Some(false)), 4)
                .warning
                .unwrap();
            assert!(
                warning.contains("not a number from 1 to 32"),
                "{text}: {warning}"
            );
        }
        let warning = assess(&observed(Some("32"), Some(None), Some(false)), 40)
            .warning
            .unwrap();
        assert!(warning.contains("maximum of 32"), "{warning}");
        assert!(warning.contains("40 streams"), "{warning}");
        let fewer = assess(&observed(Some("4"), Some(None), Some(false)), 6)
            .warning
            .unwrap();
        assert!(fewer.contains("4 hardware queues"), "{fewer}");
        assert!(!fewer.contains("is unset"), "{fewer}");
    }

    #[test]
    fn the_initial_environment_block_is_searched_by_exact_name() {
        let block = b"PATH=/bin\0XCUDA_DEVICE_MAX_CONNECTIONS=1\0CUDA_DEVICE_MAX_CONNECTIONS=32\0";
        assert_eq!(setting_in_environ(block).as_deref(), Some("32"));
        assert_eq!(setting_in_environ(b"PATH=/bin\0"), None);
        assert_eq!(setting_in_environ(b""), None);
    }
}
