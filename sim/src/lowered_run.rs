//! Which graph a simulation lowers, and what it stands for: every replica,
//! the representative replica alone ([`crate::symmetry`]), or the
//! representative with the replicas stragglers touch
//! ([`crate::symmetry_exceptions`]); the stragglers as that graph numbers
//! its ranks, the replica weights the metrics count, and full expansion's
//! task and edge counts.

use crate::lowering::lower;
use crate::plan::Plan;
use crate::straggler::Stragglers;
use crate::symmetry::{self, Expansion, FullCounts, SimulationMode};
use crate::symmetry_exceptions::{self as exceptions, ExceptionReplicas};
use scenario::Scenario;
use taskgraph::task_graph::TaskGraph;

/// A lowered graph and the mode it was lowered in.
pub(crate) struct LoweredRun {
    pub graph: TaskGraph,
    pub mode: SimulationMode,
    /// With exceptions: the replicas lowered and the stragglers moved onto them.
    exceptions: Option<ExceptionReplicas>,
}

impl LoweredRun {
    /// Lowers `scenario` as `expansion` asks with `stragglers`: with
    /// exceptions where they apply and the lowered graph allows renumbering
    /// replicas, else symmetric where that is exact, else in full.
    pub fn lower(
        scenario: &Scenario,
        plan: &Plan,
        expansion: Expansion,
        stragglers: &Stragglers,
    ) -> LoweredRun {
        let (mode, exception_replicas) = symmetry::planned_mode(
            scenario,
            symmetry::symmetric_replicas_in(scenario, plan),
            expansion,
            stragglers,
        );
        let graph = match (mode, &exception_replicas) {
            (SimulationMode::Exceptions { .. }, Some(replicas)) => {
                let graph = crate::lowering::lower_with_exceptions(
                    scenario,
                    plan,
                    replicas.representative(),
                );
                if !exceptions::groups_allow_renumbering(&graph, replicas) {
                    drop(graph);
                    return LoweredRun::full(scenario, plan);
                }
                graph
            }
            (SimulationMode::Symmetric { .. }, _) => {
                crate::lowering::lower_representative(scenario, plan)
            }
            _ => lower(scenario, plan),
        };
        LoweredRun {
            graph,
            mode,
            exceptions: exception_replicas,
        }
    }

    fn full(scenario: &Scenario, plan: &Plan) -> LoweredRun {
        LoweredRun {
            graph: lower(scenario, plan),
            mode: SimulationMode::Full,
            exceptions: None,
        }
    }

    /// The stragglers as the lowered graph numbers its ranks: `given`, or
    /// with exceptions those moved onto the lowered replicas.
    pub fn stragglers<'a>(&'a self, given: &'a Stragglers) -> &'a Stragglers {
        self.exceptions
            .as_ref()
            .map_or(given, |replicas| &replicas.stragglers)
    }

    /// What each lowered replica counts for in the metrics (`None`: every
    /// replica is lowered).
    pub fn weights(&self) -> Option<Vec<u32>> {
        match (&self.mode, &self.exceptions) {
            (SimulationMode::Symmetric { replicas }, _) => Some(vec![*replicas]),
            (SimulationMode::Exceptions { .. }, Some(replicas)) => Some(replicas.weights()),
            _ => None,
        }
    }

    /// Full expansion's task and edge counts.
    pub fn full_counts(&self, plan: &Plan, weights: Option<&[u32]>) -> (usize, usize) {
        match weights {
            None => (self.graph.task_count(), self.graph.edge_count()),
            Some(weights) => {
                let lowered = self
                    .exceptions
                    .as_ref()
                    .map_or(plan.representative, |replicas| replicas.representative());
                let full = FullCounts::of(&self.graph, lowered, weights);
                (full.tasks, full.edges)
            }
        }
    }
}
