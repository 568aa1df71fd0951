//! A criterion measurement of the benchmark thread's CPU time (Linux:
//! `/proc/thread-self/schedstat`, first field, nanoseconds on a CPU), so an
//! engine's events per CPU-second can be compared on a shared, loaded
//! machine where wall time mostly measures waiting for a core.

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

/// Nanoseconds this thread has run on a CPU.
fn thread_cpu_ns() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("/proc/thread-self/schedstat (Linux) gives the thread's CPU time");
    text.split_whitespace()
        .next()
        .and_then(|field| field.parse().ok())
        .expect("schedstat starts with nanoseconds on a CPU")
}

/// CPU time of the measuring thread.
pub struct CpuTime;

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, started: u64) -> u64 {
        thread_cpu_ns() - started
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, _typical_ns: f64, values: &mut [f64]) -> &'static str {
        for value in values {
            *value *= 1e-6;
        }
        "ms CPU"
    }

    fn scale_throughputs(
        &self,
        _typical_ns: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let elements = match *throughput {
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => n,
            Throughput::Bits(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => n,
        } as f64;
        for value in values {
            *value = elements / (*value * 1e-9) * 1e-6;
        }
        "Melem/CPU-s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}
