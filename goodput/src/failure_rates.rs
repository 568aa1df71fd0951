//! Failure rates per component, each with its public source, and the job's
//! failure rate: the sum over components of rate × how many of that
//! component the job holds.
//!
//! Failures are taken as independent and exponential (a constant rate), the
//! assumption of the series model in Meta's study (arXiv 2410.21680: a job's
//! MTTF falls as the inverse of its node count) and of Young's and Daly's
//! intervals. A job is interrupted by the first failure of any component it
//! holds.
//!
//! # What the sources give, and what they do not
//!
//! - Meta, "Revisiting Reliability in Large-Scale Machine Learning Research
//!   Clusters" (Kokolis et al., arXiv 2410.21680, HPCA 2025): a failure rate
//!   per *node* of all causes together, 6.50 failures per 1000 node-days on
//!   RSC-1 and 2.34 on RSC-2 (A100 nodes of 8 GPUs). This crate's default.
//!   The paper's per-cause breakdown (IB links, filesystem mounts, GPU
//!   memory, PCIe, ...) is given as shares of failures in figures, which I
//!   could not read as text; no per-component rate is taken from it.
//! - NCSA Delta, "Story of Two GPUs" (Cui et al., arXiv 2503.11901, SC'25):
//!   per-GPU mean time between uncorrectable GPU-memory errors, A100 and
//!   H100. A subset of what Meta's node rate already counts: do not add it
//!   to a node rate without knowing the overlap.
//! - ByteDance, MegaScale (Jiang et al., arXiv 2402.15627, NSDI'24): reports
//!   the run's effective training time and automatic recoveries, not a rate
//!   per component; nothing is taken from it here.
//! - Shanghai AI Lab, Acme (Hu et al., arXiv 2403.07648, NSDI'24): counts of
//!   failed jobs by cause, without the component-hours they were observed
//!   over, so no rate per component-hour follows; nothing is taken from it.
//! - Alibaba HPN (Qian et al., SIGCOMM 2024, doi 10.1145/3651890.3672265),
//!   §2.3, read in the paper's text: "0.057% of NIC-ToR links fail each
//!   month, and about 0.051% of ToR switches encounter critical errors and
//!   crashes", from its production clusters: a rate per NIC link and per
//!   leaf (ToR) switch ([`ALIBABA_HPN_NIC_LINK`], [`ALIBABA_HPN_TOR_SWITCH`];
//!   the `hpn-network` preset). Meta's all-cause node rate counts failures
//!   whose jobs ended on a node, IB link failures among them (its figures),
//!   so adding `hpn-network` to a Meta preset counts some link failures
//!   twice: an upper bound.
//! - Software faults and hangs: no rate per component-hour found as text (the
//!   shares ByteDance's ByteRobust gives have no exposure beside them).
//!   [`Component::Software`] exists so a caller can supply one; no default.

use serde::Serialize;

use crate::error::{invalid, GoodputError, Problems};

/// The parts of a cluster whose failure interrupts a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// A GPU's logic (SMs, GSP, NVLink, PCIe on the GPU side); one per GPU.
    Gpu,
    /// A GPU's memory (HBM uncorrectable errors); one per GPU.
    GpuMemory,
    /// A network interface card; `nics_per_node` per node.
    Nic,
    /// A whole node, all causes together (the unit Meta reports); one per node.
    Node,
    /// A network switch; `switches` per job.
    Switch,
    /// Software faults and hangs, counted per node (rate per node-hour).
    Software,
}

impl Component {
    /// Every component, in report order.
    pub const ALL: [Component; 6] = [
        Component::Gpu,
        Component::GpuMemory,
        Component::Nic,
        Component::Node,
        Component::Switch,
        Component::Software,
    ];

    /// The component named `name` as a report writes it.
    pub fn named(name: &str) -> Option<Component> {
        Component::ALL.into_iter().find(|c| c.name() == name)
    }

    /// The component's name as written in a report.
    pub fn name(self) -> &'static str {
        match self {
            Component::Gpu => "gpu",
            Component::GpuMemory => "gpu_memory",
            Component::Nic => "nic",
            Component::Node => "node",
            Component::Switch => "switch",
            Component::Software => "software",
        }
    }
}

/// A sourced default: a component's failure rate and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailureRateDefault {
    /// The component the rate is per.
    pub component: Component,
    /// Failures per component-hour.
    pub failures_per_component_hour: f64,
    /// The public source, the exact figure and where it was read.
    pub source: &'static str,
}

const HOURS_PER_DAY: f64 = 24.0;

/// A month's hours on average: 365.25 × 24 ÷ 12.
const HOURS_PER_MONTH: f64 = 730.5;

/// Meta RSC-1, all causes, per node: 6.50 failures per 1000 node-days.
///
/// Source: Kokolis et al., "Revisiting Reliability in Large-Scale Machine
/// Learning Research Clusters", arXiv 2410.21680 (HPCA 2025), the failure
/// rate r_f of RSC-1 in the paper's failure model (job MTTF against GPU
/// count). The figure "6.50 (RSC-1) and 2.34 (RSC-2) failures per 1000
/// node-days" was read as quoted by secondary sources (public notes that
/// reproduce the paper's MTTF projections with it: 1.8 h at 16,384 GPUs,
/// 0.23 h at 131,072), not from the paper's own text, which the search tools
/// returned only to its introduction; the section or table number is not
/// verified. As a check, 2048 nodes × 6.50/1000 per day gives an MTTF of
/// 24/13.3 = 1.80 h, the paper's projection at 16,384 GPUs.
pub const META_RSC1_NODE: FailureRateDefault = FailureRateDefault {
    component: Component::Node,
    failures_per_component_hour: 6.50 / 1000.0 / HOURS_PER_DAY,
    source: "Kokolis et al., Revisiting Reliability in Large-Scale ML Research Clusters, arXiv 2410.21680 (HPCA 2025): RSC-1 failure rate r_f = 6.50 failures per 1000 node-days (A100, 8 GPUs per node), all causes; figure as quoted by secondary sources, section not verified",
};

/// Meta RSC-2, all causes, per node: 2.34 failures per 1000 node-days.
///
/// Source: as [`META_RSC1_NODE`], the RSC-2 figure of the same sentence.
pub const META_RSC2_NODE: FailureRateDefault = FailureRateDefault {
    component: Component::Node,
    failures_per_component_hour: 2.34 / 1000.0 / HOURS_PER_DAY,
    source: "Kokolis et al., Revisiting Reliability in Large-Scale ML Research Clusters, arXiv 2410.21680 (HPCA 2025): RSC-2 failure rate r_f = 2.34 failures per 1000 node-days (A100, 8 GPUs per node), all causes; figure as quoted by secondary sources, section not verified",
};

/// NCSA Delta A100 (40 GB HBM2e): per-GPU MTBE of 283,271 h for
/// uncorrectable memory errors.
///
/// Source: Cui et al., "Story of Two GPUs: Characterizing the Resilience of
/// Hopper H100 and Ampere A100 GPUs", arXiv 2503.11901 v4 (SC'25). The
/// abstract (read as text) says "3.2x lower per-GPU MTBE for memory errors"
/// on H100; the hour figures 283,271 (A100) and 88,768 (H100) were read as
/// quoted by secondary notes on the paper's memory-error analysis, not from
/// its own table, whose number is not verified. An error is not always a job
/// failure: the paper reports row remapping and containment alleviating most
/// H100 uncorrectable errors, so this rate is an upper bound on the
/// job-interrupting memory rate.
pub const DELTA_A100_GPU_MEMORY: FailureRateDefault = FailureRateDefault {
    component: Component::GpuMemory,
    failures_per_component_hour: 1.0 / 283_271.0,
    source: "Cui et al., Story of Two GPUs, arXiv 2503.11901 v4 (SC'25): A100 per-GPU MTBE 283,271 h for uncorrectable memory errors (abstract: H100 has 3.2x lower per-GPU MTBE); hour figure as quoted by secondary notes, table not verified",
};

/// NCSA Delta H100 (96 GB HBM3, GH200): per-GPU MTBE of 88,768 h for
/// uncorrectable memory errors. Source: as [`DELTA_A100_GPU_MEMORY`].
pub const DELTA_H100_GPU_MEMORY: FailureRateDefault = FailureRateDefault {
    component: Component::GpuMemory,
    failures_per_component_hour: 1.0 / 88_768.0,
    source: "Cui et al., Story of Two GPUs, arXiv 2503.11901 v4 (SC'25): H100 per-GPU MTBE 88,768 h for uncorrectable memory errors (abstract: 3.2x lower than A100); hour figure as quoted by secondary notes, table not verified",
};

/// Alibaba HPN: 0.057 % of NIC-ToR links fail each month.
///
/// Source: Qian et al., "Alibaba HPN: A Data Center Network for Large
/// Language Model Training", ACM SIGCOMM 2024 (doi 10.1145/3651890.3672265),
/// §2.3, read in the paper's text: "In our operating clusters, as shown in
/// Figure 5, 0.057% of NIC-ToR links fail each month". A link is a NIC port
/// with its optics and cable to the leaf switch; counted here once per NIC
/// (one port each, as the topologies' single-homed rails are; HPN's NICs
/// have two, to two ToRs). 5.7e-4 ÷ 730.5 h = 7.80e-7 per link-hour.
pub const ALIBABA_HPN_NIC_LINK: FailureRateDefault = FailureRateDefault {
    component: Component::Nic,
    failures_per_component_hour: 0.057 / 100.0 / HOURS_PER_MONTH,
    source: "Qian et al., Alibaba HPN, SIGCOMM 2024 (doi 10.1145/3651890.3672265), section 2.3: \"0.057% of NIC-ToR links fail each month\" (paper's text), per NIC link",
};

/// Alibaba HPN: about 0.051 % of ToR switches crash each month.
///
/// Source: as [`ALIBABA_HPN_NIC_LINK`], the same sentence: "about 0.051% of
/// ToR switches encounter critical errors and crashes". Counted per leaf
/// switch the job's NICs connect to; in a single-homed rail (no dual ToR, as
/// HPN builds) a leaf's crash stops every job on it. 5.1e-4 ÷ 730.5 h =
/// 6.98e-7 per switch-hour. Spine switches: no rate found; not counted.
pub const ALIBABA_HPN_TOR_SWITCH: FailureRateDefault = FailureRateDefault {
    component: Component::Switch,
    failures_per_component_hour: 0.051 / 100.0 / HOURS_PER_MONTH,
    source: "Qian et al., Alibaba HPN, SIGCOMM 2024 (doi 10.1145/3651890.3672265), section 2.3: \"about 0.051% of ToR switches encounter critical errors and crashes\" each month (paper's text), per leaf switch",
};

/// One component's rate in a reliability spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComponentRate {
    /// The component the rate is per.
    pub component: Component,
    /// Failures per component-hour.
    pub failures_per_component_hour: f64,
    /// Where the rate comes from ("user" when the caller set it).
    pub source: String,
}

impl From<FailureRateDefault> for ComponentRate {
    fn from(rate: FailureRateDefault) -> Self {
        Self {
            component: rate.component,
            failures_per_component_hour: rate.failures_per_component_hour,
            source: rate.source.to_string(),
        }
    }
}

/// The failure rates a job is exposed to, summed over components.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReliabilitySpec {
    /// The rates, in the order they are reported.
    pub rates: Vec<ComponentRate>,
}

/// The names of the built-in reliability presets, in order.
pub const PRESET_NAMES: [&str; 3] = ["meta-rsc1", "meta-rsc2", "hpn-network"];

impl ReliabilitySpec {
    /// Built-in presets by name, joined by commas (their rates summed):
    /// `meta-rsc1` (the default) or `meta-rsc2`, all causes per node, and
    /// `hpn-network`, NIC links and leaf switches.
    pub fn preset(names: &str) -> Result<Self, GoodputError> {
        let mut rates: Vec<ComponentRate> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for name in names.split(',').map(str::trim) {
            let preset: &[FailureRateDefault] = match name {
                "meta-rsc1" => &[META_RSC1_NODE],
                "meta-rsc2" => &[META_RSC2_NODE],
                "hpn-network" => &[ALIBABA_HPN_NIC_LINK, ALIBABA_HPN_TOR_SWITCH],
                _ => {
                    return Err(invalid(
                        "reliability.preset",
                        format!(
                            "unknown preset `{name}`; known: {} (join several with commas)",
                            PRESET_NAMES.join(", ")
                        ),
                    ))
                }
            };
            let node_presets = ["meta-rsc1", "meta-rsc2"];
            let clash = seen.iter().find(|earlier| {
                **earlier == name
                    || (node_presets.contains(earlier) && node_presets.contains(&name))
            });
            if let Some(earlier) = clash {
                return Err(invalid(
                    "reliability.preset",
                    format!("`{name}` after `{earlier}` counts the same failures twice"),
                ));
            }
            seen.push(name);
            rates.extend(preset.iter().map(|&rate| ComponentRate::from(rate)));
        }
        Ok(Self { rates })
    }

    /// No failures at all: the run takes its work plus its checkpoints.
    pub fn none() -> Self {
        Self { rates: Vec::new() }
    }

    fn validate(&self, problems: &mut Problems) {
        for (i, rate) in self.rates.iter().enumerate() {
            problems.non_negative(
                &format!("reliability.rates[{i}].failures_per_component_hour"),
                rate.failures_per_component_hour,
            );
        }
    }
}

impl Default for ReliabilitySpec {
    fn default() -> Self {
        Self {
            rates: vec![META_RSC1_NODE.into()],
        }
    }
}

/// How many of each component a job holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct JobComponents {
    /// GPUs in the job.
    pub gpus: u64,
    /// GPUs per node; `gpus` must be a whole number of nodes.
    pub gpus_per_node: u64,
    /// NICs per node (compute fabric; storage NICs if their failure stops
    /// the job too).
    pub nics_per_node: u64,
    /// Switches whose failure stops the job (no default derivation: give
    /// the count the fabric has, or 0 when switch failures are not modeled).
    pub switches: u64,
}

impl JobComponents {
    /// Nodes in the job, or an error when the GPUs are not whole nodes.
    pub fn nodes(&self) -> Result<u64, GoodputError> {
        let mut problems = Problems::new();
        problems.nonzero("gpus", self.gpus);
        problems.nonzero("gpus_per_node", self.gpus_per_node);
        problems.finish()?;
        if !self.gpus.is_multiple_of(self.gpus_per_node) {
            return Err(invalid(
                "gpus",
                format!(
                    "{} GPUs are not a whole number of {}-GPU nodes",
                    self.gpus, self.gpus_per_node
                ),
            ));
        }
        Ok(self.gpus / self.gpus_per_node)
    }

    /// How many of `component` the job holds.
    pub fn count(&self, component: Component) -> Result<u64, GoodputError> {
        let nodes = self.nodes()?;
        Ok(match component {
            Component::Gpu | Component::GpuMemory => self.gpus,
            Component::Node | Component::Software => nodes,
            Component::Nic => {
                crate::error::checked_product("nics_per_node", nodes, self.nics_per_node)?
            }
            Component::Switch => self.switches,
        })
    }
}

/// One component's share of the job's failure rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateShare {
    /// The component.
    pub component: Component,
    /// How many of it the job holds.
    pub count: u64,
    /// Failures per hour this component contributes to the job.
    pub job_failures_per_hour: f64,
    /// The rate's source.
    pub source: String,
}

/// The job's failure rate and its breakdown by component.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobFailureRate {
    /// Failures per second of the whole job (the λ of the closed form).
    pub failures_per_s: f64,
    /// The job's mean time to failure in hours (infinite when λ = 0, written
    /// as `null` in JSON).
    pub mttf_hours: Option<f64>,
    /// Each component's share, in the spec's order.
    pub shares: Vec<RateShare>,
}

/// The job's failure rate: Σ rate × count over the spec's components.
pub fn job_failure_rate(
    spec: &ReliabilitySpec,
    job: &JobComponents,
) -> Result<JobFailureRate, GoodputError> {
    let mut problems = Problems::new();
    spec.validate(&mut problems);
    problems.finish()?;
    let mut shares = Vec::with_capacity(spec.rates.len());
    let mut per_hour = 0.0;
    for rate in &spec.rates {
        let count = job.count(rate.component)?;
        let job_failures_per_hour = rate.failures_per_component_hour * count as f64;
        per_hour += job_failures_per_hour;
        shares.push(RateShare {
            component: rate.component,
            count,
            job_failures_per_hour,
            source: rate.source.clone(),
        });
    }
    if spec.rates.is_empty() {
        // Still check the job's counts, so a bad job is an error either way.
        job.nodes()?;
    }
    Ok(JobFailureRate {
        failures_per_s: per_hour / 3600.0,
        mttf_hours: (per_hour > 0.0).then(|| 1.0 / per_hour),
        shares,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(gpus: u64) -> JobComponents {
        JobComponents {
            gpus,
            gpus_per_node: 8,
            nics_per_node: 8,
            switches: 0,
        }
    }

    #[test]
    fn meta_rsc1_reproduces_the_papers_projection_at_16k_gpus() {
        let rate = job_failure_rate(&ReliabilitySpec::default(), &job(16_384)).unwrap();
        let mttf = rate.mttf_hours.unwrap();
        assert!((mttf - 1.8).abs() < 0.01, "{mttf}");
    }

    #[test]
    fn rates_scale_with_component_counts() {
        let spec = ReliabilitySpec {
            rates: vec![
                DELTA_H100_GPU_MEMORY.into(),
                ComponentRate {
                    component: Component::Nic,
                    failures_per_component_hour: 1e-6,
                    source: "user".into(),
                },
            ],
        };
        let small = job_failure_rate(&spec, &job(64)).unwrap();
        let large = job_failure_rate(&spec, &job(128)).unwrap();
        assert!((large.failures_per_s / small.failures_per_s - 2.0).abs() < 1e-12);
        assert_eq!(large.shares[1].count, 128);
    }

    #[test]
    fn partial_nodes_and_zero_gpus_are_errors() {
        assert!(job_failure_rate(&ReliabilitySpec::default(), &job(12)).is_err());
        assert!(job_failure_rate(&ReliabilitySpec::none(), &job(0)).is_err());
    }

    #[test]
    fn hpn_network_rates_are_per_link_and_per_leaf_switch() {
        let spec = ReliabilitySpec::preset("meta-rsc1, hpn-network").unwrap();
        assert_eq!(spec.rates.len(), 3);
        // 16,384 GPUs on 2048 nodes of 8 NICs: 16,384 links; 512 leaves.
        let job = JobComponents {
            switches: 512,
            ..job(16_384)
        };
        let rate = job_failure_rate(&spec, &job).unwrap();
        let per_hour: Vec<f64> = rate
            .shares
            .iter()
            .map(|s| s.job_failures_per_hour)
            .collect();
        assert!((per_hour[1] - 16_384.0 * 0.057e-2 / 730.5).abs() < 1e-12);
        assert!((per_hour[2] - 512.0 * 0.051e-2 / 730.5).abs() < 1e-12);
        // The network adds 2.4 % to Meta's node rate at this size.
        let share = (per_hour[1] + per_hour[2]) / per_hour[0];
        assert!((0.023..0.025).contains(&share), "{share}");
        for bad in ["hpn", "meta-rsc1,meta-rsc2", "hpn-network,hpn-network", ""] {
            assert!(ReliabilitySpec::preset(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_rates_means_no_failures() {
        let rate = job_failure_rate(&ReliabilitySpec::none(), &job(8)).unwrap();
        assert_eq!(rate.failures_per_s, 0.0);
        assert_eq!(rate.mttf_hours, None);
    }
}
