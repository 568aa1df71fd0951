//! What the collectives stage adds to the findings, apart from the GPU work
//! (so it runs, and is tested, without one): an NCCL error becomes a remark
//! and the run goes on with the entries measured before it; without an
//! error every (collective, size) must have been measured, or the run fails
//! naming the missing ones.

use crate::collectives::{buffer_bytes, Collective};
use crate::error::CalibrateError;
use crate::findings::Findings;
use profile::CollectiveMeasurement;

/// Runs `time` (which pushes each entry it measures) and records its
/// outcome in `findings`. `sizes_bytes` and `group_size` say what `time` was
/// asked for. Errors other than NCCL's are returned unchanged.
pub fn record_collectives(
    findings: &mut Findings,
    sizes_bytes: &[u64],
    group_size: u32,
    time: impl FnOnce(&mut Vec<CollectiveMeasurement>) -> Result<(), CalibrateError>,
) -> Result<(), CalibrateError> {
    let mut measured = Vec::new();
    let expected = Collective::ALL.len() * sizes_bytes.len();
    match time(&mut measured) {
        Err(CalibrateError::Nccl { context, code }) => {
            findings.remarks.push(format!(
                "collectives stopped by an NCCL error while {context}: {code}; the {} of {expected} entries measured before it are kept, and multi-GPU NVLink and network rates are the base profile's",
                measured.len()
            ));
            findings.collectives.extend(measured);
            findings.stages.push(format!(
                "NCCL collectives on {group_size} GPU(s), stopped by an NCCL error"
            ));
            return Ok(());
        }
        Err(other) => return Err(other),
        Ok(()) => {}
    }
    let missing = missing_entries(&measured, sizes_bytes, group_size);
    if !missing.is_empty() {
        return Err(CalibrateError::CollectivesIncomplete { expected, missing });
    }
    findings.collectives.extend(measured);
    findings
        .stages
        .push(format!("NCCL collectives on {group_size} GPU(s)"));
    if group_size == 1 {
        findings.remarks.push(
            "one local GPU: collectives were timed with group_size 1 (a local copy); multi-GPU NVLink and network rates are the base profile's (from the topology and published measurements)".into(),
        );
    }
    Ok(())
}

/// "all_reduce of 1048576 bytes" for every (collective, size) asked for that
/// `measured` lacks (with `group_size` ranks).
fn missing_entries(
    measured: &[CollectiveMeasurement],
    sizes_bytes: &[u64],
    group_size: u32,
) -> Vec<String> {
    let mut missing = Vec::new();
    for op in Collective::ALL {
        for &size in sizes_bytes {
            let bytes = buffer_bytes(size, group_size);
            let found = measured
                .iter()
                .any(|m| m.op == op.name() && m.bytes == bytes && m.group_size == group_size);
            if !found {
                missing.push(format!("{} of {bytes} bytes", op.name()));
            }
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use profile::Source;

    const SIZES: [u64; 2] = [1 << 20, 64 << 20];

    fn entry(op: Collective, size: u64) -> CollectiveMeasurement {
        CollectiveMeasurement {
            op: op.name().into(),
            group_size: 1,
            bytes: buffer_bytes(size, 1),
            time_ns: 10_000,
            source: Source::Measured,
        }
    }

    /// A timer that measures the first `count` entries in the stage's order,
    /// then returns `outcome`.
    fn timer(
        count: usize,
        outcome: Result<(), CalibrateError>,
    ) -> impl FnOnce(&mut Vec<CollectiveMeasurement>) -> Result<(), CalibrateError> {
        move |measured| {
            let all = Collective::ALL
                .iter()
                .flat_map(|&op| SIZES.iter().map(move |&size| entry(op, size)));
            measured.extend(all.take(count));
            outcome
        }
    }

    fn nccl_error() -> CalibrateError {
        CalibrateError::Nccl {
            context: "issuing reduce_scatter of 1048576 bytes over 1 GPU(s)".into(),
            code: "ncclSystemError".into(),
        }
    }

    #[test]
    fn an_nccl_error_becomes_a_remark_and_keeps_what_was_measured() {
        let mut findings = Findings::default();
        record_collectives(&mut findings, &SIZES, 1, timer(2, Err(nccl_error()))).unwrap();
        assert_eq!(findings.collectives.len(), 2);
        assert_eq!(findings.remarks.len(), 1);
        let remark = &findings.remarks[0];
        for part in [
            "NCCL error while issuing reduce_scatter of 1048576 bytes",
            "ncclSystemError",
            "2 of 8 entries",
        ] {
            assert!(remark.contains(part), "{remark}");
        }
        assert!(findings.stages[0].contains("stopped by an NCCL error"));
        // An error before anything was measured: still a remark.
        let mut findings = Findings::default();
        record_collectives(&mut findings, &SIZES, 8, timer(0, Err(nccl_error()))).unwrap();
        assert!(findings.collectives.is_empty());
        assert!(findings.remarks[0].contains("0 of 8 entries"));
    }

    #[test]
    fn other_errors_still_stop_the_run() {
        let mut findings = Findings::default();
        let error = CalibrateError::NoGpu("gone".into());
        let result = record_collectives(&mut findings, &SIZES, 1, timer(1, Err(error)));
        assert!(matches!(result, Err(CalibrateError::NoGpu(_))));
        assert!(findings.collectives.is_empty() && findings.remarks.is_empty());
    }

    #[test]
    fn without_an_error_every_entry_must_be_measured() {
        let mut findings = Findings::default();
        record_collectives(&mut findings, &SIZES, 1, timer(8, Ok(()))).unwrap();
        assert_eq!(findings.collectives.len(), 8);
        assert_eq!(
            findings.stages,
            vec!["NCCL collectives on 1 GPU(s)".to_string()]
        );
        assert!(findings.remarks[0].starts_with("one local GPU"));

        let mut findings = Findings::default();
        let error = record_collectives(&mut findings, &SIZES, 1, timer(6, Ok(()))).unwrap_err();
        let CalibrateError::CollectivesIncomplete { expected, missing } = &error else {
            panic!("expected CollectivesIncomplete, got {error}");
        };
        assert_eq!(*expected, 8);
        assert_eq!(
            missing,
            &vec![
                "all_to_all of 1048576 bytes".to_string(),
                "all_to_all of 67108864 bytes".to_string()
            ]
        );
        assert!(error
            .to_string()
            .contains("2 of 8 collective entries were not measured"));
        assert!(findings.collectives.is_empty());
    }
}
