//! Will a simulation fit in this machine's memory? An estimate of what one
//! simulation holds, and what the process may still allocate, so that a
//! layout too large for the machine is refused with both numbers instead of
//! aborting half-way through an allocation.
//!
//! The estimate is [`Scenario::estimated_tasks`] × [`BYTES_PER_TASK`] plus
//! GPUs × [`BYTES_PER_GPU`] of resident memory, compared with free memory and
//! the cgroup limit, or [`ADDRESS_BYTES_PER_TASK`] and
//! [`ADDRESS_BYTES_PER_GPU`] of address space, compared with `ulimit -v`
//! (measured; all in `scenario/task_count.rs`). What the
//! process may allocate is the least of, where the system says (Linux):
//! `MemAvailable` in `/proc/meminfo`, the soft "Max address space" limit in
//! `/proc/self/limits` (`ulimit -v`) less what the process already maps, and
//! the cgroup v2 limit (`/sys/fs/cgroup/memory.max` less `memory.current`).
//! Where none is readable nothing is refused.

use crate::symmetry::SimulationMode;
use scenario::{
    Scenario, ADDRESS_BYTES_PER_GPU, ADDRESS_BYTES_PER_REPLICATED_FLOW_TASK,
    ADDRESS_BYTES_PER_REPLICATED_TASK, ADDRESS_BYTES_PER_TASK, BYTES_PER_GPU,
    BYTES_PER_REPLICATED_FLOW_TASK, BYTES_PER_REPLICATED_TASK, BYTES_PER_TASK,
};

/// About how many bytes simulating `scenario` keeps resident at its peak (saturating).
pub fn simulation_bytes(scenario: &Scenario) -> u64 {
    bytes_at(scenario, BYTES_PER_TASK, BYTES_PER_GPU)
}

/// About how much address space simulating `scenario` maps at its peak
/// (what `ulimit -v` limits; saturating).
pub fn address_space_bytes(scenario: &Scenario) -> u64 {
    bytes_at(scenario, ADDRESS_BYTES_PER_TASK, ADDRESS_BYTES_PER_GPU)
}

fn bytes_at(scenario: &Scenario, per_task: u64, per_gpu: u64) -> u64 {
    bytes_of(scenario.estimated_tasks(), scenario, per_task, per_gpu)
}

fn bytes_of(tasks: u64, scenario: &Scenario, per_task: u64, per_gpu: u64) -> u64 {
    tasks
        .saturating_mul(per_task)
        .saturating_add(u64::from(scenario.layout.gpus()).saturating_mul(per_gpu))
}

/// What limits the memory this process may still allocate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AvailableMemory {
    pub bytes: u64,
    /// Which limit it is: "free memory", "ulimit -v" or "cgroup limit".
    pub limit: &'static str,
}

/// The least of the limits the system reports (`None` where it reports none).
pub fn available() -> Option<AvailableMemory> {
    limits().into_iter().min_by_key(|available| available.bytes)
}

/// Every limit the system reports (each is checked with its own kind of bytes).
pub fn limits() -> Vec<AvailableMemory> {
    [
        (meminfo_available(), "free memory"),
        (address_space_left(), "ulimit -v"),
        (cgroup_left(), "cgroup limit"),
    ]
    .into_iter()
    .filter_map(|(bytes, limit)| bytes.map(|bytes| AvailableMemory { bytes, limit }))
    .collect()
}

/// A simulation that would not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this layout needs about {tasks} tasks per simulation, about {:.1} GB ({per_task} B a task, {per_gpu} B a GPU), but only {:.1} GB is available ({limit}); use fewer microbatches or GPUs, or a machine with more memory",
    *.needed_bytes as f64 / 1e9,
    *.available_bytes as f64 / 1e9
)]
pub struct DoesNotFit {
    pub tasks: u64,
    pub per_task: u64,
    pub per_gpu: u64,
    pub needed_bytes: u64,
    pub available_bytes: u64,
    pub limit: &'static str,
}

/// `Err` when simulating `scenario` needs more than `available` allows.
pub fn check_fits(
    scenario: &Scenario,
    available: Option<AvailableMemory>,
) -> Result<(), DoesNotFit> {
    check_fits_with(scenario, available, crate::symmetry::Expansion::Full)
}

/// [`check_fits`] for a simulation run as `expansion` asks: under symmetry
/// the graph holds one replica's tasks (1/(d·cp) of the estimate, rounded
/// up), the per-GPU arrays stay whole. `Expansion::Full` is estimated as a
/// graph of every replica, an upper bound where it runs from the
/// representative's graph ([`Footprint`] knows which).
pub fn check_fits_with(
    scenario: &Scenario,
    available: Option<AvailableMemory>,
    expansion: crate::symmetry::Expansion,
) -> Result<(), DoesNotFit> {
    check_fits_in(
        scenario,
        available,
        crate::symmetry::mode(scenario, expansion),
    )
}

/// [`check_fits`] for a simulation run in `mode` (its graph's share of the
/// estimate; the per-GPU arrays stay whole).
pub fn check_fits_in(
    scenario: &Scenario,
    available: Option<AvailableMemory>,
    mode: crate::symmetry::SimulationMode,
) -> Result<(), DoesNotFit> {
    let tasks = mode.lowered_tasks(scenario.estimated_tasks());
    let (per_task, per_gpu) = match limits_address_space(available) {
        true => (ADDRESS_BYTES_PER_TASK, ADDRESS_BYTES_PER_GPU),
        false => (BYTES_PER_TASK, BYTES_PER_GPU),
    };
    refuse_past(scenario, available, tasks, per_task, per_gpu)
}

/// Whether `available` is `ulimit -v`, which limits address space (the
/// others limit resident memory).
fn limits_address_space(available: Option<AvailableMemory>) -> bool {
    matches!(
        available,
        Some(AvailableMemory {
            limit: "ulimit -v",
            ..
        })
    )
}

/// `Err` when `tasks` at `per_task` bytes and the GPUs at `per_gpu` bytes
/// need more than `available`.
fn refuse_past(
    scenario: &Scenario,
    available: Option<AvailableMemory>,
    tasks: u64,
    per_task: u64,
    per_gpu: u64,
) -> Result<(), DoesNotFit> {
    let needed_bytes = bytes_of(tasks, scenario, per_task, per_gpu);
    match available {
        Some(available) if needed_bytes > available.bytes => Err(DoesNotFit {
            tasks,
            per_task,
            per_gpu,
            needed_bytes,
            available_bytes: available.bytes,
            limit: available.limit,
        }),
        _ => Ok(()),
    }
}

/// What a simulation holds while it runs, for the estimate. One gap: a run
/// estimated as [`Footprint::Replicated`] whose lowering then finds the
/// replica map does not describe it builds every replica (about 72 B a
/// task) past this estimate; no layout the tests know does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Footprint {
    /// A graph of `mode`'s share of the tasks.
    Graph(SimulationMode),
    /// Full expansion kept as the representative's graph
    /// ([`crate::replicated_run`]): that graph, a replica's share, plus a
    /// few bytes per task of every replica (more under `--contention`,
    /// whose event loop keeps each task's predecessors left and each flow
    /// task's end).
    Replicated { replicas: u32, contention: bool },
}

impl Footprint {
    /// The footprint of a run `expansion` asks for with `stragglers`.
    pub fn of(
        scenario: &Scenario,
        expansion: crate::symmetry::Expansion,
        stragglers: &crate::straggler::Stragglers,
    ) -> Footprint {
        let symmetric = crate::symmetry::symmetric_replicas(scenario);
        let alike = crate::symmetry::replicas_alike(scenario).is_ok();
        if crate::replicated_run::applies(scenario, symmetric, alike, expansion, stragglers) {
            return Footprint::Replicated {
                replicas: scenario.layout.replicas(),
                contention: scenario.options.network_contention,
            };
        }
        Footprint::Graph(crate::symmetry::mode_with_stragglers(
            scenario, expansion, stragglers,
        ))
    }

    /// The tasks the engine finishes in such a run, from the scenario's
    /// estimate: every replica's kept as one replica's graph, or the
    /// lowered replicas' (a progress bar's length).
    pub fn engine_tasks(self, scenario: &Scenario) -> u64 {
        match self {
            Footprint::Graph(mode) => mode.lowered_tasks(scenario.estimated_tasks()),
            Footprint::Replicated { .. } => scenario.estimated_tasks(),
        }
    }
}

/// [`check_fits_in`] for a run of `footprint`.
pub fn check_fits_footprint(
    scenario: &Scenario,
    available: Option<AvailableMemory>,
    footprint: Footprint,
) -> Result<(), DoesNotFit> {
    let (replicas, contention) = match footprint {
        Footprint::Graph(mode) => return check_fits_in(scenario, available, mode),
        Footprint::Replicated {
            replicas,
            contention,
        } => (replicas, contention),
    };
    let (per_full_task, per_graph_task, per_gpu) =
        match (limits_address_space(available), contention) {
            (true, false) => (
                ADDRESS_BYTES_PER_REPLICATED_TASK,
                ADDRESS_BYTES_PER_TASK,
                ADDRESS_BYTES_PER_GPU,
            ),
            (true, true) => (
                ADDRESS_BYTES_PER_REPLICATED_FLOW_TASK,
                ADDRESS_BYTES_PER_TASK,
                ADDRESS_BYTES_PER_GPU,
            ),
            (false, false) => (BYTES_PER_REPLICATED_TASK, BYTES_PER_TASK, BYTES_PER_GPU),
            (false, true) => (
                BYTES_PER_REPLICATED_FLOW_TASK,
                BYTES_PER_TASK,
                BYTES_PER_GPU,
            ),
        };
    // Every task's own bytes and its share of the representative's graph,
    // rounded up to whole bytes (the figure the refusal names).
    let per_task = per_full_task + per_graph_task.div_ceil(u64::from(replicas));
    let tasks = scenario.estimated_tasks();
    refuse_past(scenario, available, tasks, per_task, per_gpu)
}

/// [`check_fits_footprint`] against every limit this machine reports.
pub fn check_fits_this_machine_for(
    scenario: &Scenario,
    footprint: Footprint,
) -> Result<(), DoesNotFit> {
    limits()
        .into_iter()
        .try_for_each(|limit| check_fits_footprint(scenario, Some(limit), footprint))
}

/// [`check_fits_with`] against every limit this machine reports, each with
/// its own kind of bytes (what `simulate` refuses before building anything).
pub fn check_fits_this_machine(
    scenario: &Scenario,
    expansion: crate::symmetry::Expansion,
) -> Result<(), DoesNotFit> {
    limits()
        .into_iter()
        .try_for_each(|limit| check_fits_with(scenario, Some(limit), expansion))
}

fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo_available(&text)
}

/// `MemAvailable:  123456 kB` → bytes.
fn parse_meminfo_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

fn address_space_left() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let limit = parse_address_space_limit(&limits)?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let mapped = parse_status_kib(&status, "VmSize:")?.checked_mul(1024)?;
    Some(limit.saturating_sub(mapped))
}

/// The soft "Max address space" limit in bytes (`None` when unlimited).
fn parse_address_space_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line.trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn parse_status_kib(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn cgroup_left() -> Option<u64> {
    let max = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok()?;
    let max: u64 = max.trim().parse().ok()?; // "max": no limit
    let current: u64 = std::fs::read_to_string("/sys/fs/cgroup/memory.current")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(max.saturating_sub(current))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kernel_formats() {
        let meminfo =
            "MemTotal:       16384000 kB\nMemFree:  1000 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(parse_meminfo_available(meminfo), Some(8_192_000_000));
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax address space         4294967296           unlimited            bytes\n";
        assert_eq!(parse_address_space_limit(limits), Some(4_294_967_296));
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(parse_address_space_limit(unlimited), None);
        assert_eq!(
            parse_status_kib("VmSize:\t  123 kB\n", "VmSize:"),
            Some(123)
        );
    }

    #[test]
    fn a_layout_past_the_available_memory_is_refused_with_both_numbers() {
        let scenario = scenario::ScenarioFile::embedded_default()
            .resolve()
            .unwrap();
        let needed = simulation_bytes(&scenario);
        assert!(needed > 0);
        assert!(check_fits(&scenario, None).is_ok());
        let roomy = AvailableMemory {
            bytes: needed,
            limit: "free memory",
        };
        assert!(check_fits(&scenario, Some(roomy)).is_ok());
        let tight = AvailableMemory {
            bytes: needed - 1,
            limit: "ulimit -v",
        };
        let error = check_fits(&scenario, Some(tight)).unwrap_err();
        assert_eq!(error.needed_bytes, address_space_bytes(&scenario));
        assert!(error.needed_bytes > needed);
        let message = error.to_string();
        assert!(
            message.contains("ulimit -v") && message.contains("GB"),
            "{message}"
        );
    }

    #[test]
    fn full_expansion_from_one_replicas_graph_is_estimated_at_its_own_bytes() {
        use crate::straggler::Stragglers;
        use crate::symmetry::Expansion;
        let scenario = scenario::ScenarioFile::embedded_default()
            .resolve()
            .unwrap();
        let none = Stragglers::none();
        let replicated = Footprint::of(&scenario, Expansion::Full, &none);
        assert_eq!(
            replicated,
            Footprint::Replicated {
                replicas: 8,
                contention: false
            }
        );
        assert_eq!(
            Footprint::of(&scenario, Expansion::Built, &none),
            Footprint::Graph(SimulationMode::Full)
        );
        assert_eq!(
            Footprint::of(&scenario, Expansion::Auto, &none),
            Footprint::Graph(SimulationMode::Symmetric { replicas: 8 })
        );
        let tasks = scenario.estimated_tasks();
        let needed = |footprint| {
            let nothing = AvailableMemory {
                bytes: 0,
                limit: "free memory",
            };
            check_fits_footprint(&scenario, Some(nothing), footprint)
                .unwrap_err()
                .needed_bytes
        };
        let gpus = u64::from(scenario.layout.gpus());
        assert_eq!(
            needed(replicated),
            tasks * BYTES_PER_REPLICATED_TASK
                + tasks.div_ceil(8) * BYTES_PER_TASK
                + gpus * BYTES_PER_GPU
        );
        // 10 + 72 ÷ 8 bytes a task against 72.
        assert!(needed(replicated) < needed(Footprint::Graph(SimulationMode::Full)) / 3);
        // Under contention, its own bytes a task.
        let mut contended = scenario.clone();
        contended.options.network_contention = true;
        let footprint = Footprint::of(&contended, Expansion::Auto, &none);
        assert_eq!(
            footprint,
            Footprint::Replicated {
                replicas: 8,
                contention: true
            }
        );
        assert_eq!(
            needed(footprint) - needed(replicated),
            tasks * (BYTES_PER_REPLICATED_FLOW_TASK - BYTES_PER_REPLICATED_TASK)
        );
    }
}
