//! Energy, cost and emissions of a run: GPU power by utilization, node
//! overhead, PUE, price per GPU-hour and grid carbon intensity, each an
//! input, with a sourced default where one was found.
//!
//! # The model
//!
//! - A GPU draws `idle_w + utilization × (tdp_w − idle_w)`: linear between
//!   idle and TDP. **Assumption**: no source read here supports the linear
//!   form; it is a first-order model, and `utilization` is the fraction of
//!   the idle-to-TDP span a training step draws (1.0 = at TDP), not SM
//!   occupancy. GPUs draw that while computing (useful and recomputed work)
//!   and idle power during checkpoints and restarts.
//! - Each node adds `node_overhead_w` (CPUs, memory, NICs, NVSwitches, fans)
//!   for the whole wall-clock time. Fabric switches outside the nodes are
//!   `fabric_w` in total (no default).
//! - Facility energy = IT energy × PUE; emissions = facility energy × grid
//!   intensity; cost = GPU-hours × price per GPU-hour.
//!
//! # Defaults and their sources
//!
//! - TDP: NVIDIA's datasheets, "Max Thermal Design Power" row: A100 SXM4
//!   400 W, H100 SXM5 700 W, H200 SXM 700 W, B200 (HGX) 1000 W
//!   ([`GpuKind::tdp_w`]).
//! - Idle power: no default (no public source found): an input, and an error
//!   when missing.
//! - Node overhead, 8-GPU Hopper nodes: NVIDIA DGX H100/H200 user guide,
//!   "maximum system power 10.2 kW" (six 3300 W PSUs), minus 8 × 700 W of
//!   GPUs = 4600 W. An upper bound (both figures are maxima). No default for
//!   other GPUs.
//! - PUE: 1.58, Uptime Institute's industry average for 2023 (Uptime
//!   Institute Intelligence, "Large data centers are mostly more efficient,
//!   analysis confirms", UII Update 221, 23 Nov 2023: "In 2023, industry
//!   average PUE stood at 1.58").
//! - Carbon intensity: 480 g CO2/kWh, the world's power generation in 2023
//!   per Ember, Global Electricity Review 2024 ("record low of 480 gCO2/kWh,
//!   down from 486 gCO2/kWh in 2022"; read in a summary of the review, not in
//!   Ember's own text; Ember counts life-cycle emissions, CO2e).
//! - Price per GPU-hour: no default; cost is `null` without one.
//!
//! # Without an idle power: measured node power
//!
//! Where no GPU idle power is given, a node draws `node_training_w` for the
//! whole wall-clock time (its checkpoints and restarts too: an upper bound,
//! no idle figure being sourced). On 8-GPU Hopper nodes it defaults to
//! 76 % of the 10.2 kW rating, 7,752 W: Newkirk et al., "Empirically-Calibrated
//! H100 Node Power Models for Reducing Uncertainty in AI Training Energy
//! Estimation" (arXiv 2506.14551, 17 Jun 2025), abstract: "even computationally
//! intensive workloads operate at only 76% of the 10.2 kW TDP rating".

use serde::Serialize;

use crate::closed_form::ExpectedRun;
use crate::error::{invalid, GoodputError, Problems};

/// GPUs with a datasheet TDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    /// NVIDIA A100 SXM4 (40 or 80 GB).
    A100Sxm,
    /// NVIDIA H100 SXM5 80 GB.
    H100Sxm,
    /// NVIDIA H200 SXM 141 GB.
    H200Sxm,
    /// NVIDIA B200 (HGX B200).
    B200,
}

/// A default value and where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sourced {
    /// The quantity, with its unit in the name.
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// The public source and the exact figure.
    pub source: &'static str,
}

impl GpuKind {
    /// The GPU a device name names (`H100-SXM5-80GB`, `A100-SXM4-40GB`,
    /// `H200-SXM-141GB`, `B200`), or `None` for one without an entry here.
    pub fn from_device_name(name: &str) -> Option<GpuKind> {
        let name = name.to_ascii_uppercase();
        if name.starts_with("A100-SXM") {
            Some(GpuKind::A100Sxm)
        } else if name.starts_with("H100-SXM") {
            Some(GpuKind::H100Sxm)
        } else if name.starts_with("H200") {
            Some(GpuKind::H200Sxm)
        } else if name == "B200" {
            Some(GpuKind::B200)
        } else {
            None
        }
    }

    /// The measured power of one 8-GPU node of this GPU while training,
    /// where a source gives one (Hopper: [`HOPPER_NODE_TRAINING_W`]).
    pub fn node_training_w(self) -> Option<Sourced> {
        match self {
            GpuKind::H100Sxm | GpuKind::H200Sxm => Some(HOPPER_NODE_TRAINING_W),
            GpuKind::A100Sxm | GpuKind::B200 => None,
        }
    }

    /// The datasheet TDP, watts, and its source.
    pub fn tdp_w(self) -> Sourced {
        let (value, source) = match self {
            GpuKind::A100Sxm => (400.0, "NVIDIA A100 Tensor Core GPU datasheet, A100 SXM column: Max TDP Power 400W (read via pages citing the datasheet)"),
            GpuKind::H100Sxm => (700.0, "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column: Max Thermal Design Power (TDP) up to 700W (configurable) (read via pages citing the datasheet)"),
            GpuKind::H200Sxm => (700.0, "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column: Max Thermal Design Power (TDP) up to 700W (configurable) (read via pages citing the datasheet)"),
            GpuKind::B200 => (1000.0, "NVIDIA HGX B200 specifications: B200 at 1,000 W per GPU (read via pages citing NVIDIA's HGX specifications)"),
        };
        Sourced {
            name: "gpu_tdp_w",
            value,
            source,
        }
    }

    /// The default node overhead for 8-GPU nodes of this GPU, where sourced.
    pub fn node_overhead_w(self) -> Option<Sourced> {
        match self {
            GpuKind::H100Sxm | GpuKind::H200Sxm => Some(Sourced {
                name: "node_overhead_w",
                value: HOPPER_DGX_MAX_W - 8.0 * 700.0,
                source: "NVIDIA DGX H100/H200 user guide: maximum system power 10.2 kW (six 3300 W PSUs, 4+2 redundant; read via a page citing the guide), minus 8 x 700 W GPU TDP = 4600 W per node (an upper bound: both are maxima)",
            }),
            GpuKind::A100Sxm | GpuKind::B200 => None,
        }
    }
}

const HOPPER_DGX_MAX_W: f64 = 10_200.0;

/// Measured wall power of an 8-GPU H100 node while training.
pub const HOPPER_NODE_TRAINING_W: Sourced = Sourced {
    name: "node_training_w",
    value: 0.76 * HOPPER_DGX_MAX_W,
    source: "Newkirk et al., Empirically-Calibrated H100 Node Power Models (arXiv 2506.14551, 17 Jun 2025), abstract: \"even computationally intensive workloads operate at only 76% of the 10.2 kW TDP rating\" (8x H100 node): 0.76 x 10,200 W",
};

/// Uptime Institute's 2023 industry-average PUE.
pub const DEFAULT_PUE: Sourced = Sourced {
    name: "pue",
    value: 1.58,
    source: "Uptime Institute Intelligence, Large data centers are mostly more efficient, analysis confirms (UII Update 221, 23 Nov 2023): \"In 2023, industry average PUE stood at 1.58\" (from the Uptime Institute Global Data Center Survey)",
};

/// Ember's 2023 world-average carbon intensity of power generation.
pub const DEFAULT_CARBON_G_PER_KWH: Sourced = Sourced {
    name: "carbon_g_co2e_per_kwh",
    value: 480.0,
    source: "Ember, Global Electricity Review 2024: carbon intensity of global power generation 480 gCO2/kWh in 2023, down from 486 in 2022 (life-cycle, CO2e; read via a summary of the review)",
};

/// The energy and price inputs of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnergyInputs {
    /// The GPU, for its datasheet TDP and, on Hopper, the node overhead
    /// (`None`: a GPU without a datasheet entry here; give `gpu_tdp_w`).
    pub gpu: Option<GpuKind>,
    /// GPU power when idle, watts. No default: required.
    pub gpu_idle_w: Option<f64>,
    /// Override of the datasheet TDP, watts.
    pub gpu_tdp_w: Option<f64>,
    /// Fraction of the idle-to-TDP span drawn while training, in [0, 1].
    pub training_utilization: f64,
    /// Override of the node overhead, watts per node (required where the
    /// GPU has no default).
    pub node_overhead_w: Option<f64>,
    /// Wall power of one node while training, watts: used when no GPU idle
    /// power is given (default on Hopper: [`HOPPER_NODE_TRAINING_W`]).
    pub node_training_w: Option<f64>,
    /// Fabric switches outside the nodes, watts in total (0 when not modeled).
    pub fabric_w: f64,
    /// Override of the PUE.
    pub pue: Option<f64>,
    /// Price per GPU-hour in the caller's currency; no default.
    pub price_per_gpu_hour: Option<f64>,
    /// Override of the grid's carbon intensity, g CO2e per kWh.
    pub carbon_g_co2e_per_kwh: Option<f64>,
}

/// Energy, cost and emissions of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnergyReport {
    /// GPUs × wall-clock hours (every allocated hour, down time included).
    pub gpu_hours: f64,
    /// How power was modeled: `per_gpu` (idle, TDP and node overhead) or
    /// `per_node` (measured node power for the whole wall-clock time).
    pub power_model: &'static str,
    /// One GPU's power while training, watts (`per_gpu` only).
    pub gpu_training_w: Option<f64>,
    /// One GPU's power while idle (checkpoints, restarts), watts (`per_gpu` only).
    pub gpu_idle_w: Option<f64>,
    /// One node's power while training, watts (`per_node` only).
    pub node_training_w: Option<f64>,
    /// IT energy (GPUs, nodes, fabric), MWh.
    pub it_energy_mwh: f64,
    /// Facility energy (IT × PUE), MWh.
    pub facility_energy_mwh: f64,
    /// GPU-hours × price, or `null` without a price.
    pub cost: Option<f64>,
    /// Facility energy × carbon intensity, tonnes CO2e.
    pub emissions_t_co2e: f64,
    /// Every value used, with its source ("input" when the caller set it).
    pub values: Vec<SourcedValue>,
}

/// A value the energy model used, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourcedValue {
    /// The quantity, with its unit.
    pub name: &'static str,
    /// Its value.
    pub value: f64,
    /// Its source, or "input".
    pub source: String,
}

fn pick(input: Option<f64>, default: Sourced, values: &mut Vec<SourcedValue>) -> f64 {
    let (value, source) = match input {
        Some(value) => (value, "input".to_string()),
        None => (default.value, default.source.to_string()),
    };
    values.push(SourcedValue {
        name: default.name,
        value,
        source,
    });
    value
}

fn input(name: &'static str, value: f64, values: &mut Vec<SourcedValue>) -> f64 {
    values.push(SourcedValue {
        name,
        value,
        source: "input".to_string(),
    });
    value
}

/// The power model a run's inputs resolve to.
#[derive(Debug, Clone, Copy)]
enum Power {
    /// GPUs between idle and TDP, plus each node's overhead.
    PerGpu {
        training_w: f64,
        idle_w: f64,
        overhead_w: f64,
    },
    /// One node's measured power for the whole wall-clock time.
    PerNode { node_w: f64 },
}

fn per_gpu_power(
    inputs: &EnergyInputs,
    idle_w: f64,
    values: &mut Vec<SourcedValue>,
) -> Result<Power, GoodputError> {
    let idle_w = input("gpu_idle_w", idle_w, values);
    let tdp_w = match (inputs.gpu_tdp_w, inputs.gpu) {
        (_, Some(gpu)) => pick(inputs.gpu_tdp_w, gpu.tdp_w(), values),
        (Some(w), None) => input("gpu_tdp_w", w, values),
        (None, None) => {
            return Err(invalid(
                "energy.gpu_tdp_w",
                "no datasheet TDP for this GPU here; give it (watts)",
            ))
        }
    };
    let overhead_w = match (
        inputs.node_overhead_w,
        inputs.gpu.and_then(GpuKind::node_overhead_w),
    ) {
        (Some(w), _) => input("node_overhead_w", w, values),
        (None, Some(default)) => pick(None, default, values),
        (None, None) => {
            return Err(invalid(
                "energy.node_overhead_w",
                "no sourced node overhead for this GPU; give it (watts per node)",
            ))
        }
    };
    let utilization = input("training_utilization", inputs.training_utilization, values);
    let mut problems = Problems::new();
    problems.non_negative("energy.gpu_idle_w", idle_w);
    problems.positive("energy.gpu_tdp_w", tdp_w);
    problems.non_negative("energy.node_overhead_w", overhead_w);
    problems.within("energy.training_utilization", utilization, 0.0, 1.0);
    if idle_w.is_finite() && tdp_w.is_finite() && idle_w > tdp_w {
        problems.push(
            "energy.gpu_idle_w",
            format!("idle {idle_w} W is above TDP {tdp_w} W"),
        );
    }
    problems.finish()?;
    Ok(Power::PerGpu {
        training_w: idle_w + utilization * (tdp_w - idle_w),
        idle_w,
        overhead_w,
    })
}

fn per_node_power(
    inputs: &EnergyInputs,
    values: &mut Vec<SourcedValue>,
) -> Result<Power, GoodputError> {
    let default = inputs.gpu.and_then(GpuKind::node_training_w);
    let node_w = match (inputs.node_training_w, default) {
        (Some(w), _) => input("node_training_w", w, values),
        (None, Some(default)) => pick(None, default, values),
        (None, None) => {
            return Err(invalid(
                "energy.gpu_idle_w",
                "no measured node power for this GPU here; give the GPU's idle power (watts) \
                 or the node's power while training (watts)",
            ))
        }
    };
    let mut problems = Problems::new();
    problems.positive("energy.node_training_w", node_w);
    problems.finish()?;
    Ok(Power::PerNode { node_w })
}

/// The energy, cost and emissions of a run of `gpus` GPUs on `nodes` nodes
/// whose expected times are `run`.
pub fn energy_report(
    inputs: &EnergyInputs,
    gpus: u64,
    nodes: u64,
    run: &ExpectedRun,
) -> Result<EnergyReport, GoodputError> {
    let mut values = Vec::new();
    let power = match inputs.gpu_idle_w {
        Some(idle_w) => per_gpu_power(inputs, idle_w, &mut values)?,
        None => per_node_power(inputs, &mut values)?,
    };
    let pue = pick(inputs.pue, DEFAULT_PUE, &mut values);
    let carbon = pick(
        inputs.carbon_g_co2e_per_kwh,
        DEFAULT_CARBON_G_PER_KWH,
        &mut values,
    );
    let fabric_w = input("fabric_w", inputs.fabric_w, &mut values);
    let mut problems = Problems::new();
    problems.non_negative("energy.fabric_w", fabric_w);
    problems.within("energy.pue", pue, 1.0, 10.0);
    problems.non_negative("energy.carbon_g_co2e_per_kwh", carbon);
    if let Some(price) = inputs.price_per_gpu_hour {
        problems.non_negative("energy.price_per_gpu_hour", price);
        input("price_per_gpu_hour", price, &mut values);
    }
    problems.finish()?;
    let computing_s = run.work_s + run.lost_work_s;
    let idle_s = run.checkpoint_s + run.restart_s;
    let (gpu_joules, node_w) = match power {
        Power::PerGpu {
            training_w,
            idle_w,
            overhead_w,
        } => (
            gpus as f64 * (training_w * computing_s + idle_w * idle_s),
            overhead_w,
        ),
        Power::PerNode { node_w } => (0.0, node_w),
    };
    let other_joules = (nodes as f64 * node_w + fabric_w) * run.wall_clock_s;
    let it_mwh = (gpu_joules + other_joules) / 3.6e9;
    let facility_mwh = it_mwh * pue;
    let gpu_hours = gpus as f64 * run.wall_clock_s / 3600.0;
    let (power_model, gpu_training_w, gpu_idle_w, node_training_w) = match power {
        Power::PerGpu {
            training_w, idle_w, ..
        } => ("per_gpu", Some(training_w), Some(idle_w), None),
        Power::PerNode { node_w } => ("per_node", None, None, Some(node_w)),
    };
    Ok(EnergyReport {
        gpu_hours,
        power_model,
        gpu_training_w,
        gpu_idle_w,
        node_training_w,
        it_energy_mwh: it_mwh,
        facility_energy_mwh: facility_mwh,
        cost: inputs.price_per_gpu_hour.map(|price| price * gpu_hours),
        // MWh × g/kWh = 1e3 kWh × g/kWh = kg; / 1e3 → tonnes: MWh × g/kWh / 1e3.
        emissions_t_co2e: facility_mwh * carbon / 1e3,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> ExpectedRun {
        ExpectedRun {
            wall_clock_s: 3600.0,
            work_s: 3000.0,
            checkpoint_s: 200.0,
            lost_work_s: 200.0,
            restart_s: 200.0,
            interruptions: 1.0,
            goodput: 3000.0 / 3600.0,
        }
    }

    fn inputs() -> EnergyInputs {
        EnergyInputs {
            gpu: Some(GpuKind::H100Sxm),
            gpu_idle_w: Some(100.0),
            gpu_tdp_w: None,
            training_utilization: 1.0,
            node_overhead_w: None,
            node_training_w: None,
            fabric_w: 0.0,
            pue: Some(1.0),
            price_per_gpu_hour: Some(2.0),
            carbon_g_co2e_per_kwh: None,
        }
    }

    #[test]
    fn one_node_for_an_hour() {
        let report = energy_report(&inputs(), 8, 1, &run()).unwrap();
        // GPUs: 8 × (700 W × 3200 s + 100 W × 400 s); node: 4600 W × 3600 s.
        let joules = 8.0 * (700.0 * 3200.0 + 100.0 * 400.0) + 4600.0 * 3600.0;
        assert!((report.it_energy_mwh - joules / 3.6e9).abs() < 1e-12);
        assert_eq!(report.gpu_hours, 8.0);
        assert_eq!(report.cost, Some(16.0));
        assert!((report.emissions_t_co2e - report.facility_energy_mwh * 0.48).abs() < 1e-12);
    }

    #[test]
    fn without_an_idle_power_hopper_nodes_draw_their_measured_power_and_others_are_refused() {
        let mut no_idle = inputs();
        no_idle.gpu_idle_w = None;
        let report = energy_report(&no_idle, 8, 1, &run()).unwrap();
        assert_eq!(report.power_model, "per_node");
        // One node at 7,752 W for the hour's wall clock, PUE as given.
        let expected_mwh = 7752.0 * 3600.0 / 3.6e9;
        assert!((report.it_energy_mwh - expected_mwh).abs() < 1e-12);
        let mut a100 = no_idle.clone();
        a100.gpu = Some(GpuKind::A100Sxm);
        let text = energy_report(&a100, 8, 1, &run()).unwrap_err().to_string();
        assert!(text.contains("gpu_idle_w"), "{text}");
        a100.node_training_w = Some(6500.0);
        assert_eq!(
            energy_report(&a100, 8, 1, &run()).unwrap().node_training_w,
            Some(6500.0)
        );
        let mut with_idle = inputs();
        with_idle.gpu = Some(GpuKind::A100Sxm);
        assert!(energy_report(&with_idle, 8, 1, &run()).is_err());
        with_idle.node_overhead_w = Some(3000.0);
        assert!(energy_report(&with_idle, 8, 1, &run()).is_ok());
    }
}
