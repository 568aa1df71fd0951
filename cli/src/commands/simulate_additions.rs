//! What `simulate` adds beside the run's own summary when asked: what its
//! stragglers cost the step, and the routing and sequence-length traces,
//! each simulated; written as summary lines or `--json` objects.

use std::io::Write;

use sim::scenario::Scenario;
use sim::straggler::Stragglers;
use studies::fit::fit_file::FitRecord;

use super::routing_trace::TraceRun;
use super::seq_len_trace::SeqLenRun;
use super::simulate::SimulateArgs;
use super::slow_ranks::SlowRankCost;

/// The additions of one run (each only when asked).
pub struct Additions {
    pub slow_cost: Option<SlowRankCost>,
    pub routing: Option<TraceRun>,
    pub lengths: Option<SeqLenRun>,
}

impl Additions {
    /// Simulates the traces `args` names on `scenario` (`tokens_per_iteration`
    /// its untraced run's), beside the stragglers' `slow_cost`.
    pub fn of(
        args: &SimulateArgs,
        fit: Option<&FitRecord>,
        scenario: &Scenario,
        expansion: sim::Expansion,
        stragglers: &Stragglers,
        tokens_per_iteration: u64,
        slow_cost: Option<SlowRankCost>,
    ) -> anyhow::Result<Additions> {
        let routing = match &args.routing_trace {
            Some(path) => Some(super::routing_trace::run(
                scenario,
                expansion,
                stragglers,
                path,
                tokens_per_iteration,
            )?),
            None => None,
        };
        let lengths = match &args.seq_len_trace {
            Some(path) => Some(super::seq_len_trace::run(
                &args.scenario,
                fit,
                scenario,
                expansion,
                stragglers,
                path,
            )?),
            None => None,
        };
        Ok(Additions {
            slow_cost,
            routing,
            lengths,
        })
    }

    /// Their `--json` objects: `slow_ranks`, `routing_trace`, `seq_len_trace`.
    pub fn add_json(&self, summary: &mut serde_json::Value) {
        if let Some(cost) = &self.slow_cost {
            summary["slow_ranks"] = cost.json();
        }
        if let Some(trace) = &self.routing {
            summary["routing_trace"] = trace.json();
        }
        if let Some(lengths) = &self.lengths {
            summary["seq_len_trace"] = lengths.json();
        }
    }

    /// Their summary lines.
    pub fn write(&self, out: &mut impl Write) -> anyhow::Result<()> {
        if let Some(cost) = &self.slow_cost {
            writeln!(out, "  {:<20}{}", cost.label(), cost.line())?;
        }
        if let Some(trace) = &self.routing {
            let [first, second] = trace.lines();
            writeln!(out, "  routing trace       {first}")?;
            writeln!(out, "                      {second}")?;
        }
        if let Some(lengths) = &self.lengths {
            let [first, second] = lengths.lines();
            writeln!(out, "  sequence lengths    {first}")?;
            writeln!(out, "                      {second}")?;
        }
        Ok(())
    }
}
