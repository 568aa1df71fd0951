//! What a calibration starts from: the embedded default of the detected GPU
//! (or a stand-in, said in the reason), and the detected GPU's own datasheet
//! (`topologies::datasheets`), which measurements are divided by. A GPU the
//! catalogue does not know has no datasheet: its run still measures, but no
//! efficiency relative to a datasheet is computed; another GPU's datasheet is
//! never used.

use crate::error::CalibrateError;
use profile::Profile;
use topologies::Datasheet;

/// The GPU a run timed, as the driver names it, with its datasheet if the
/// catalogue has one.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectedGpu {
    /// e.g. "NVIDIA H100 80GB HBM3".
    pub device_name: String,
    pub datasheet: Option<Datasheet>,
}

impl DetectedGpu {
    /// Looks the device name up in the datasheet catalogue.
    pub fn from_device_name(device_name: &str) -> Self {
        Self {
            device_name: device_name.to_string(),
            datasheet: topologies::datasheet_for_device(device_name),
        }
    }
}

/// The profile measurements start from, and why that one.
#[derive(Debug, Clone)]
pub struct BaseProfile {
    pub profile: Profile,
    /// e.g. "embedded default h200 (detected NVIDIA H200)".
    pub reason: String,
    /// The timed GPU; `None` for a CPU-only run.
    pub detected: Option<DetectedGpu>,
}

/// Picks the base: `requested` (a built-in name or a profile file) wins;
/// otherwise the embedded default for the detected device name, or the
/// closest stand-in; otherwise (CPU-only) `h200`.
pub fn base_profile(
    detected_gpu: Option<&str>,
    requested: Option<&str>,
) -> Result<BaseProfile, CalibrateError> {
    let detected = detected_gpu.map(DetectedGpu::from_device_name);
    if let Some(name) = requested {
        return Ok(BaseProfile {
            profile: Profile::resolve(name)?,
            reason: format!("base profile '{name}' as requested"),
            detected,
        });
    }
    let (id, reason) = match detected_gpu {
        Some(device) => {
            let found = closest_builtin(device);
            let reason = if found.exact {
                format!("embedded default {} (detected {device})", found.profile_id)
            } else {
                format!(
                    "embedded default {} as the closest stand-in: detected {device} has no embedded profile, so unmeasured quantities are another GPU's",
                    found.profile_id
                )
            };
            (found.profile_id, reason)
        }
        None => ("h200", "embedded default h200 (no GPU timed)".to_string()),
    };
    let profile = Profile::builtin(id).ok_or_else(|| {
        CalibrateError::Profile(profile::ProfileError::Unknown {
            message: input_file::named::unknown("profile", id, &Profile::builtin_names()),
        })
    })?;
    Ok(BaseProfile {
        profile,
        reason,
        detected,
    })
}

/// Which embedded default profile a device name maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinMatch {
    /// Name for `profile::Profile::builtin`.
    pub profile_id: &'static str,
    /// False when the GPU has no embedded profile and this is a stand-in.
    pub exact: bool,
}

/// The embedded profile for a driver device name: the one whose GPU is the
/// device's datasheet GPU ("NVIDIA H100 80GB HBM3" → `h100-sxm`). A
/// catalogued GPU without one gets the embedded profile of the same
/// architecture with the nearest HBM bandwidth (then of any architecture);
/// an unknown GPU gets `h200`; both with `exact: false`.
pub fn closest_builtin(device_name: &str) -> BuiltinMatch {
    let stand_in = BuiltinMatch {
        profile_id: "h200",
        exact: false,
    };
    let Some(sheet) = topologies::datasheet_for_device(device_name) else {
        return stand_in;
    };
    let builtins: Vec<(&'static str, Datasheet)> = Profile::builtin_names()
        .into_iter()
        .filter_map(|name| {
            let gpu = Profile::builtin(name)?.gpu;
            Some((name, topologies::datasheet(&gpu)?))
        })
        .collect();
    if let Some((name, _)) = builtins.iter().find(|(_, b)| b.gpu.name == sheet.gpu.name) {
        return BuiltinMatch {
            profile_id: name,
            exact: true,
        };
    }
    let distance = |other: &Datasheet| {
        let bandwidth = (other.gpu.hbm_bandwidth_bytes_per_s / sheet.gpu.hbm_bandwidth_bytes_per_s)
            .ln()
            .abs();
        (other.architecture != sheet.architecture, bandwidth)
    };
    builtins
        .iter()
        .min_by(|a, b| {
            distance(&a.1)
                .partial_cmp(&distance(&b.1))
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .map_or(stand_in, |(name, _)| BuiltinMatch {
            profile_id: name,
            exact: false,
        })
}

/// The datasheet GPU a profile names (its `gpu` field, e.g. "H200").
pub fn datasheet_gpu(profile_gpu: &str) -> Option<topologies::GpuSpec> {
    topologies::datasheet(profile_gpu).map(|sheet| sheet.gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_map_to_their_embedded_profile_or_a_named_stand_in() {
        let exact = |profile_id| BuiltinMatch {
            profile_id,
            exact: true,
        };
        let stand_in = |profile_id| BuiltinMatch {
            profile_id,
            exact: false,
        };
        assert_eq!(closest_builtin("NVIDIA H100 80GB HBM3"), exact("h100-sxm"));
        assert_eq!(closest_builtin("NVIDIA H200"), exact("h200"));
        assert_eq!(closest_builtin("NVIDIA A100-SXM4-80GB"), exact("a100-80gb"));
        assert_eq!(closest_builtin("Tesla V100-SXM3-32GB"), exact("v100-32gb"));
        assert_eq!(closest_builtin("NVIDIA A100-SXM4-40GB"), exact("a100-40gb"));
        assert_eq!(closest_builtin("NVIDIA H100 PCIe"), exact("h100-pcie"));
        assert_eq!(
            closest_builtin("Tesla V100-SXM2-32GB"),
            stand_in("v100-32gb")
        );
        assert_eq!(closest_builtin("NVIDIA B200"), exact("b200"));
        assert_eq!(closest_builtin("NVIDIA GB200"), exact("gb200"));
        assert_eq!(closest_builtin("NVIDIA GeForce RTX 4090"), stand_in("h200"));
    }

    #[test]
    fn an_h100_starts_from_h100_sxm_with_its_own_datasheet() {
        let base = base_profile(Some("NVIDIA H100 80GB HBM3"), None).unwrap();
        assert_eq!(base.profile.id, "h100-sxm");
        assert_eq!(base.profile.gpu, "H100-SXM5-80GB");
        assert!(base.reason.contains("detected NVIDIA H100 80GB HBM3"));
        let sheet = base.detected.unwrap().datasheet.unwrap();
        assert_eq!(sheet.gpu.hbm_bandwidth_bytes_per_s, 3350e9);
        // A requested base keeps the detected GPU's datasheet.
        let requested = base_profile(Some("NVIDIA H100 80GB HBM3"), Some("h200")).unwrap();
        assert_eq!(requested.profile.id, "h200");
        assert_eq!(
            requested.detected.unwrap().datasheet.unwrap().gpu.name,
            "H100-SXM5-80GB"
        );
        let unknown = base_profile(Some("NVIDIA GeForce RTX 4090"), None).unwrap();
        assert!(unknown.reason.contains("closest stand-in"));
        assert!(unknown.detected.unwrap().datasheet.is_none());
        assert!(base_profile(None, None).unwrap().detected.is_none());
    }

    #[test]
    fn every_embedded_profile_has_a_datasheet_gpu() {
        for name in Profile::builtin_names() {
            let profile = Profile::builtin(name).unwrap();
            assert!(datasheet_gpu(&profile.gpu).is_some(), "{}", profile.gpu);
        }
    }
}
