//! The GPUs' clocks, power and temperature, read with `nvidia-smi` before the
//! first GPU stage and after the last one, for the profile's provenance:
//! short bursts run at boost clock and cool, so they flatter results by
//! 5–10% against sustained training, and the reader should be able to see
//! at which clocks a profile was timed.
//!
//! nvidia-smi is a subprocess (no NVML binding): missing, failing, hanging
//! past [`NVIDIA_SMI_TIMEOUT`] or printing something unexpected is recorded
//! as `unavailable` with the reason, never an error of the run.

use crate::provenance;
use profile::{GpuState, GpuStateSample};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The fields asked for, in the order they are parsed.
pub const NVIDIA_SMI_QUERY: &str =
    "clocks.sm,clocks.mem,clocks.max.sm,power.draw,power.limit,temperature.gpu";

/// How long nvidia-smi may take before it is killed.
pub const NVIDIA_SMI_TIMEOUT: Duration = Duration::from_secs(15);

/// Reads every GPU's state now; never fails (see the module docs).
pub fn read_gpu_state() -> GpuStateSample {
    let read_at = provenance::utc_now();
    match run_nvidia_smi().and_then(|text| parse_nvidia_smi(&text)) {
        Ok(gpus) => GpuStateSample {
            read_at,
            gpus,
            unavailable: None,
        },
        Err(reason) => GpuStateSample {
            read_at,
            gpus: Vec::new(),
            unavailable: Some(reason),
        },
    }
}

/// Runs `nvidia-smi --query-gpu=… --format=csv,noheader,nounits` and returns
/// its standard output, or why not.
fn run_nvidia_smi() -> Result<String, String> {
    let mut child = Command::new("nvidia-smi")
        .arg(format!("--query-gpu={NVIDIA_SMI_QUERY}"))
        .arg("--format=csv,noheader,nounits")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("nvidia-smi could not be started: {error}"))?;
    let started = Instant::now();
    // The output is a few lines, far below a pipe's buffer: waiting first
    // and reading after cannot block the child.
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > NVIDIA_SMI_TIMEOUT => {
                // Best effort: the process may have exited in between.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "nvidia-smi did not answer within {} s and was stopped",
                    NVIDIA_SMI_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(error) => return Err(format!("waiting for nvidia-smi failed: {error}")),
        }
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_string(&mut stdout)
            .map_err(|error| format!("reading nvidia-smi's output failed: {error}"))?;
    }
    if let Some(mut pipe) = child.stderr.take() {
        // Only for the message; a read failure leaves it empty.
        let _ = pipe.read_to_string(&mut stderr);
    }
    if !status.success() {
        let detail = stderr
            .lines()
            .chain(stdout.lines())
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("no message");
        return Err(format!("nvidia-smi failed ({status}): {detail}"));
    }
    Ok(stdout)
}

/// Parses nvidia-smi's `csv,noheader,nounits` answer to [`NVIDIA_SMI_QUERY`]:
/// one line per GPU, six comma-separated fields. "[N/A]", "N/A" and
/// "[Not Supported]" read as `None`; anything else unparsable, a wrong field
/// count or no line at all is an error naming the line.
pub fn parse_nvidia_smi(text: &str) -> Result<Vec<GpuState>, String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return Err("nvidia-smi printed no GPU".into());
    }
    lines
        .iter()
        .map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let [sm, mem, max_sm, draw, limit, temperature] = fields[..] else {
                return Err(format!(
                    "unexpected nvidia-smi line (want 6 fields: {NVIDIA_SMI_QUERY}): '{line}'"
                ));
            };
            let bad =
                |field: &str| format!("unexpected value '{field}' in nvidia-smi line '{line}'");
            Ok(GpuState {
                sm_clock_mhz: number::<u32>(sm).map_err(|_| bad(sm))?,
                memory_clock_mhz: number::<u32>(mem).map_err(|_| bad(mem))?,
                max_sm_clock_mhz: number::<u32>(max_sm).map_err(|_| bad(max_sm))?,
                power_draw_w: number::<f64>(draw).map_err(|_| bad(draw))?,
                power_limit_w: number::<f64>(limit).map_err(|_| bad(limit))?,
                temperature_c: number::<i32>(temperature).map_err(|_| bad(temperature))?,
            })
        })
        .collect()
}

/// A field: `None` for the driver's "not available" words, a finite number,
/// or an error.
fn number<T: std::str::FromStr + Into<f64> + Copy>(field: &str) -> Result<Option<T>, ()> {
    let unavailable = field.trim_matches(|c| c == '[' || c == ']');
    if ["N/A", "Not Supported", "Unknown Error", "Not Available"]
        .iter()
        .any(|word| unavailable.eq_ignore_ascii_case(word))
    {
        return Ok(None);
    }
    let value = field.parse::<T>().map_err(|_| ())?;
    if value.into().is_finite() {
        Ok(Some(value))
    } else {
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_nvidia_smi_lines_parse() {
        // The lab H100 at idle, then just after GEMMs on an H200, as
        // `nvidia-smi --query-gpu=… --format=csv,noheader,nounits` prints them.
        let text = "435, 2619, 1980, 100.52, 700.00, 39\n1980, 3201, 1980, 612.31, 700.00, 61\n";
        let gpus = parse_nvidia_smi(text).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(
            gpus[0],
            GpuState {
                sm_clock_mhz: Some(435),
                memory_clock_mhz: Some(2619),
                max_sm_clock_mhz: Some(1980),
                power_draw_w: Some(100.52),
                power_limit_w: Some(700.0),
                temperature_c: Some(39),
            }
        );
        assert_eq!(gpus[1].sm_clock_mhz, Some(1980));
    }

    #[test]
    fn unavailable_fields_are_none_and_garbage_is_an_error() {
        let gpus = parse_nvidia_smi("345, 3201, 1980, [N/A], [Not Supported], 33\r\n").unwrap();
        assert_eq!(gpus[0].power_draw_w, None);
        assert_eq!(gpus[0].power_limit_w, None);
        assert_eq!(gpus[0].temperature_c, Some(33));
        for bad in [
            "",
            "\n\n",
            "435, 2619, 1980, 100.52, 700.00",
            "435, 2619, 1980, 100.52, 700.00, 39, 1",
            "435 MHz, 2619, 1980, 100.52, 700.00, 39",
            "435, 2619, 1980, NaN, 700.00, 39",
            "No devices were found",
        ] {
            let error = parse_nvidia_smi(bad).unwrap_err();
            assert!(!error.is_empty(), "{bad:?}");
        }
        let error = parse_nvidia_smi("435, 2619, 1980, fast, 700.00, 39").unwrap_err();
        assert!(error.contains("'fast'"), "{error}");
    }

    #[test]
    fn reading_never_fails_and_says_why_when_it_cannot() {
        // On a machine without nvidia-smi (the CI), the sample says so; with
        // one, it lists at least one GPU. Either way it is dated.
        let sample = read_gpu_state();
        assert!(sample.read_at.ends_with('Z'));
        match &sample.unavailable {
            Some(reason) => {
                assert!(reason.contains("nvidia-smi"), "{reason}");
                assert!(sample.gpus.is_empty());
            }
            None => assert!(!sample.gpus.is_empty()),
        }
    }
}
