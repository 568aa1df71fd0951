//! Prints a digest of the task graphs lowering builds for a scenario file:
//! every task's fields, every CSR row (targets and reasons, in row order),
//! every group and work, for full expansion and, where symmetry applies,
//! the representative replica. Two builds of lowering that print the same
//! lines built byte-identical graphs.
//!
//!     cargo run --release -p sim --example graph_digest -- scenario.json

use sim::scenario::ScenarioFile;
use std::hash::{Hash, Hasher};

/// FNV-1a, 64-bit: a fixed hash, the same in every run and build.
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ byte as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
}

fn digest(label: &str, graph: &sim::task_graph::TaskGraph) {
    let mut tasks = Fnv(0xcbf2_9ce4_8422_2325);
    for task in graph.tasks() {
        format!("{task:?}").hash(&mut tasks);
    }
    let mut edges = Fnv(0xcbf2_9ce4_8422_2325);
    for (from, to, why) in graph.edges() {
        (from.0, to.0, format!("{why:?}")).hash(&mut edges);
    }
    let mut groups = Fnv(0xcbf2_9ce4_8422_2325);
    for ranks in graph.groups() {
        ranks
            .iter()
            .map(|r| r.0)
            .collect::<Vec<u32>>()
            .hash(&mut groups);
    }
    let mut works = Fnv(0xcbf2_9ce4_8422_2325);
    for work in graph.works() {
        format!("{work:?}").hash(&mut works);
    }
    println!(
        "{label}: tasks {} edges {} groups {} works {} | {:016x} {:016x} {:016x} {:016x} | replica map {}",
        graph.task_count(),
        graph.edge_count(),
        graph.groups().len(),
        graph.works().len(),
        tasks.finish(),
        edges.finish(),
        groups.finish(),
        works.finish(),
        graph.replica_map().map_or("none".to_string(), |m| { let mut h = Fnv(0xcbf2_9ce4_8422_2325); format!("{m:?}").hash(&mut h); format!("{:016x}", h.finish()) }),
    );
}

/// One message and exit status 2 (bad input).
fn refuse(message: String) -> ! {
    eprintln!("graph_digest: {message}");
    std::process::exit(2)
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        refuse("usage: graph_digest SCENARIO.json".to_string())
    };
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|error| refuse(format!("{path}: {error}")));
    let file: ScenarioFile =
        serde_json::from_str(&text).unwrap_or_else(|error| refuse(format!("{path}: {error}")));
    let scenario = file
        .or(ScenarioFile::embedded_default())
        .resolve()
        .unwrap_or_else(|error| refuse(format!("{path}: {error}")));
    let plan = sim::plan::Plan::of(&scenario);
    let start = std::time::Instant::now();
    let full = sim::lowering::lower(&scenario, &plan);
    eprintln!("full lowering {:?}", start.elapsed());
    digest("full", &full);
    drop(full);
    if sim::symmetry::symmetric_replicas(&scenario).is_ok() {
        let start = std::time::Instant::now();
        let representative = sim::lowering::lower_representative(&scenario, &plan);
        eprintln!("representative lowering {:?}", start.elapsed());
        digest("representative", &representative);
    }
}
