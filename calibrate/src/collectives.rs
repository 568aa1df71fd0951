//! NCCL collectives (all-reduce, reduce-scatter, all-gather, all-to-all)
//! over a size sweep on every local GPU, through cudarc's NCCL binding: one
//! communicator per GPU from `ncclCommInitAll`, driven from this thread
//! inside `ncclGroupStart`/`ncclGroupEnd`. NCCL has no all-to-all call: as
//! nccl-tests' `alltoall_perf` (`src/alltoall.cu`) and PyTorch's
//! `all_to_all_single` do, each rank issues an `ncclSend` and an `ncclRecv`
//! of 1/n of its buffer to and from every rank, inside the same group.
//!
//! `bytes` is the full buffer (nccl-tests' "size"): the all-reduce payload,
//! the reduce-scatter input, the all-gather output, the all-to-all send
//! buffer; bf16 elements. A
//! repeat's time is the slowest rank's event-timed span. With one GPU NCCL
//! reduces to a local copy: the entries are recorded with `group_size: 1`
//! and multi-GPU rates stay those of the embedded default (topology).

use crate::error::{CalibrateError, NcclContextExt};
use cudarc::driver::{CudaEvent, CudaSlice};
use cudarc::nccl::{Comm, ReduceOp};
use gpu::detect::{CudaLibrary, Device};
use gpu::error::CudaContextExt;
use gpu::timing::{self, Summary};
use half::bf16;
use profile::{CollectiveMeasurement, Source};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

/// The collectives timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Collective {
    AllReduce,
    ReduceScatter,
    AllGather,
    /// Grouped send/recv of 1/n of the buffer to every rank.
    AllToAll,
}

impl Collective {
    pub const ALL: [Collective; 4] = [
        Collective::AllReduce,
        Collective::ReduceScatter,
        Collective::AllGather,
        Collective::AllToAll,
    ];

    /// The name written to `CollectiveMeasurement::op`.
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllGather => "all_gather",
            Collective::AllToAll => "all_to_all",
        }
    }

    /// Bus-bandwidth factor (nccl-tests): algorithm bandwidth × this is what
    /// each link carries in a ring.
    pub fn bus_factor(self, group_size: u32) -> f64 {
        let n = group_size.max(1) as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::ReduceScatter | Collective::AllGather | Collective::AllToAll => {
                (n - 1.0) / n
            }
        }
    }
}

/// Buffer sizes in bytes.
pub fn sizes_bytes(quick: bool) -> Vec<u64> {
    if quick {
        vec![MIB, 64 * MIB, 256 * MIB]
    } else {
        vec![64 * KIB, MIB, 8 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB]
    }
}

/// Bus bandwidth of a measurement, `None` for a single GPU.
pub fn bus_bandwidth_bytes_per_s(op: Collective, measured: &CollectiveMeasurement) -> Option<f64> {
    let factor = op.bus_factor(measured.group_size);
    (factor > 0.0).then(|| measured.bytes as f64 / (measured.time_ns as f64 * 1e-9) * factor)
}

/// "major.minor.patch" of the loaded NCCL.
pub fn nccl_version() -> Option<String> {
    let code = cudarc::nccl::result::get_nccl_version().ok()?;
    Some(decode_nccl_version(code))
}

/// NCCL's version code: major·10000 + minor·100 + patch since 2.9,
/// major·1000 + minor·100 + patch before.
pub fn decode_nccl_version(code: i32) -> String {
    if code >= 10000 {
        format!("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100)
    }
}

/// One rank's send and receive buffers.
struct RankBuffers {
    send: CudaSlice<bf16>,
    recv: CudaSlice<bf16>,
}

/// Issues one collective on every rank inside an NCCL group.
fn launch_group(
    comms: &[Comm],
    buffers: &mut [RankBuffers],
    op: Collective,
    what: &str,
) -> Result<(), CalibrateError> {
    cudarc::nccl::group_start().nccl(|| format!("starting the NCCL group for {what}"))?;
    let mut first_error = None;
    let ranks = comms.len();
    for (comm, rank) in comms.iter().zip(buffers.iter_mut()) {
        let issued = match op {
            Collective::AllToAll => {
                all_to_all(comm, rank, ranks).map(|()| cudarc::nccl::result::NcclStatus::Success)
            }
            Collective::AllReduce => comm.all_reduce(&rank.send, &mut rank.recv, &ReduceOp::Sum),
            Collective::ReduceScatter => {
                comm.reduce_scatter(&rank.send, &mut rank.recv, &ReduceOp::Sum)
            }
            Collective::AllGather => comm.all_gather(&rank.send, &mut rank.recv),
        };
        if let Err(error) = issued {
            first_error.get_or_insert(error);
        }
    }
    // Always close the group, even after a failed call.
    let ended = cudarc::nccl::group_end();
    if let Some(error) = first_error {
        return Err(error).nccl(|| format!("issuing {what}"));
    }
    ended.nccl(|| format!("ending the NCCL group for {what}"))?;
    Ok(())
}

/// One rank's share of an all-to-all: an `ncclSend` and an `ncclRecv` of
/// `len / ranks` elements to and from every rank, in rank order.
fn all_to_all(
    comm: &Comm,
    rank: &mut RankBuffers,
    ranks: usize,
) -> Result<(), cudarc::nccl::result::NcclError> {
    let share = rank.send.len() / ranks.max(1);
    for peer in 0..ranks {
        let range = peer * share..(peer + 1) * share;
        comm.send(&rank.send.slice(range.clone()), peer as i32)?;
        comm.recv(&mut rank.recv.slice_mut(range), peer as i32)?;
    }
    Ok(())
}

/// The buffer a collective of `size_bytes` over `group_size` GPUs really
/// uses: whole bf16 elements, divisible among the ranks (at least one each).
pub fn buffer_bytes(size_bytes: u64, group_size: u32) -> u64 {
    let ranks = group_size.max(1) as u64;
    (size_bytes / 2 / ranks * ranks).max(ranks) * 2
}

/// Times every collective at every size over all `devices`, pushing each
/// entry into `measured` as it is done (so an error keeps the ones before
/// it); `on_step` after each (op, size).
pub fn time_collectives(
    devices: &[Device],
    sizes_bytes: &[u64],
    warmup: u32,
    repeats: u32,
    on_step: impl FnMut(),
    measured: &mut Vec<CollectiveMeasurement>,
) -> Result<(), CalibrateError> {
    CudaLibrary::Nccl.require("collectives")?;
    let group_size = devices.len() as u32;
    let streams = devices.iter().map(|d| d.stream.clone()).collect();
    let comms = Comm::from_devices(streams)
        .nccl(|| format!("creating NCCL communicators for {group_size} GPU(s)"))?;
    let timed = time_with(
        &comms,
        devices,
        sizes_bytes,
        warmup,
        repeats,
        on_step,
        measured,
    );
    // cudarc aborts each communicator on drop and panics if that fails;
    // after an NCCL error that is not unlikely, and it must not end the run.
    let aborted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(comms)));
    match (timed, aborted) {
        (Err(error), _) => Err(error),
        (Ok(()), Err(_)) => Err(CalibrateError::Nccl {
            context: format!("aborting the NCCL communicators of {group_size} GPU(s)"),
            code: "ncclCommAbort failed".into(),
        }),
        (Ok(()), Ok(())) => Ok(()),
    }
}

fn time_with(
    comms: &[Comm],
    devices: &[Device],
    sizes_bytes: &[u64],
    warmup: u32,
    repeats: u32,
    mut on_step: impl FnMut(),
    measured: &mut Vec<CollectiveMeasurement>,
) -> Result<(), CalibrateError> {
    let group_size = devices.len() as u32;
    for op in Collective::ALL {
        for &size_bytes in sizes_bytes {
            let what = format!(
                "{} of {size_bytes} bytes over {group_size} GPU(s)",
                op.name()
            );
            let elems = (buffer_bytes(size_bytes, group_size) / 2) as usize;
            let shard = elems / group_size as usize;
            let (send_len, recv_len) = match op {
                Collective::AllReduce => (elems, elems),
                Collective::ReduceScatter => (elems, shard),
                Collective::AllGather => (shard, elems),
                Collective::AllToAll => (elems, elems),
            };
            let mut buffers = devices
                .iter()
                .map(|device| {
                    let alloc = |len: usize| {
                        device.stream.alloc_zeros::<bf16>(len).cuda(|| {
                            format!(
                                "allocating buffers on GPU {} for {what}",
                                device.info.ordinal
                            )
                        })
                    };
                    Ok(RankBuffers {
                        send: alloc(send_len)?,
                        recv: alloc(recv_len)?,
                    })
                })
                .collect::<Result<Vec<_>, CalibrateError>>()?;
            for _ in 0..warmup {
                launch_group(comms, &mut buffers, op, &what)?;
            }
            let mut spans: Vec<Vec<(CudaEvent, CudaEvent)>> = Vec::new();
            for _ in 0..repeats {
                let mut pairs = Vec::with_capacity(devices.len());
                for device in devices {
                    let start = timing::timing_event(&device.ctx, &what)?;
                    start
                        .record(&device.stream)
                        .cuda(|| format!("recording the start of {what}"))?;
                    pairs.push((start, timing::timing_event(&device.ctx, &what)?));
                }
                launch_group(comms, &mut buffers, op, &what)?;
                for (device, (_, end)) in devices.iter().zip(pairs.iter()) {
                    end.record(&device.stream)
                        .cuda(|| format!("recording the end of {what}"))?;
                }
                spans.push(pairs);
            }
            let mut samples = Vec::with_capacity(spans.len());
            for pairs in &spans {
                let mut slowest_ns = 1;
                for (start, end) in pairs {
                    let elapsed = start
                        .elapsed_ms(end)
                        .cuda(|| format!("reading the elapsed time of {what}"))?;
                    slowest_ns = slowest_ns.max(timing::ms_to_ns(elapsed));
                }
                samples.push(slowest_ns);
            }
            let summary = Summary::from_samples(&samples).expect("repeats ≥ 1 (validated)");
            measured.push(CollectiveMeasurement {
                op: op.name().into(),
                group_size,
                bytes: elems as u64 * 2,
                time_ns: summary.median_ns,
                source: Source::Measured,
            });
            drop(spans);
            drop(buffers);
            for device in devices {
                device
                    .stream
                    .synchronize()
                    .cuda(|| format!("freeing the buffers of {what}"))?;
            }
            on_step();
        }
    }
    Ok(())
}

/// The all-reduce with the most bytes.
pub fn largest_all_reduce(measured: &[CollectiveMeasurement]) -> Option<&CollectiveMeasurement> {
    measured
        .iter()
        .filter(|m| m.op == Collective::AllReduce.name())
        .max_by_key(|m| m.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nccl_version_codes_decode_old_and_new_style() {
        assert_eq!(decode_nccl_version(22703), "2.27.3");
        assert_eq!(decode_nccl_version(2804), "2.8.4");
    }

    #[test]
    fn buffers_are_whole_bf16_elements_divisible_among_ranks() {
        assert_eq!(buffer_bytes(1 << 20, 1), 1 << 20);
        assert_eq!(buffer_bytes(1 << 20, 8), 1 << 20);
        assert_eq!(buffer_bytes(1000, 3), 996);
        assert_eq!(buffer_bytes(1, 4), 8);
        assert_eq!(buffer_bytes(1 << 20, 0), 1 << 20);
    }

    #[test]
    fn bus_bandwidth_follows_nccl_tests_factors() {
        let entry = |group_size| CollectiveMeasurement {
            op: "all_reduce".into(),
            group_size,
            bytes: 1_000_000_000,
            time_ns: 1_000_000_000,
            source: Source::Measured,
        };
        let eight = bus_bandwidth_bytes_per_s(Collective::AllReduce, &entry(8)).unwrap();
        assert!((eight - 1.75e9).abs() < 1.0);
        assert!(bus_bandwidth_bytes_per_s(Collective::AllReduce, &entry(1)).is_none());
        assert_eq!(Collective::AllGather.bus_factor(4), 0.75);
        assert_eq!(Collective::AllToAll.bus_factor(8), 0.875);
        assert_eq!(Collective::AllToAll.name(), "all_to_all");
    }
}
