//! Exit codes: 0 success, 2 bad input (a [`UserError`]: a clear one-line
//! message naming what is wrong), 1 anything else. Never a backtrace.

use std::process::ExitCode;

/// An error caused by the user's input (flags, files, layouts, missing GPU).
#[derive(Debug)]
pub struct UserError(pub String);

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

/// Shorthand for a user error from anything printable.
pub fn user_error(message: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UserError(message.to_string()))
}

/// A simulation error: out-of-range input is the user's (exit 2), a
/// deadlock is a lowering bug (exit 1).
pub fn simulation_error(error: sim::SimulationError) -> anyhow::Error {
    match error {
        sim::SimulationError::OutOfRange { .. } | sim::SimulationError::Fabric(_) => {
            user_error(error)
        }
        other => anyhow::Error::new(other),
    }
}

/// Exit 2 when a simulation of `scenario` run as `expansion` asks, with
/// `stragglers` (in the mode they leave it, or kept as the representative's
/// graph: [`sim::host_memory::Footprint`]), would not fit this machine's
/// memory.
pub fn check_host_memory_of(
    scenario: &sim::scenario::Scenario,
    expansion: sim::Expansion,
    stragglers: &sim::straggler::Stragglers,
) -> anyhow::Result<()> {
    let footprint = sim::host_memory::Footprint::of(scenario, expansion, stragglers);
    sim::host_memory::check_fits_this_machine_for(scenario, footprint).map_err(user_error)
}

/// A command line clap refused (an unknown flag, a missing value): exit 2
/// with clap's own message, usage and hint.
#[derive(Debug)]
pub struct UsageError(pub clap::Error);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.0.render().to_string();
        f.write_str(text.strip_prefix("error: ").unwrap_or(&text).trim_end())
    }
}

impl std::error::Error for UsageError {}

/// The exit-2 error of a command line clap refused.
pub fn usage_error(error: clap::Error) -> anyhow::Error {
    anyhow::Error::new(UsageError(error))
}

/// The exit code of an error: 2 for the user's input, 1 for anything else.
pub fn code_of(error: &anyhow::Error) -> u8 {
    if error.downcast_ref::<UserError>().is_some() || error.downcast_ref::<UsageError>().is_some() {
        2
    } else {
        1
    }
}

/// Prints the error (if any) and picks the exit code.
pub fn report(result: anyhow::Result<()>) -> ExitCode {
    let Err(error) = result else {
        return ExitCode::SUCCESS;
    };
    match error.downcast_ref::<UsageError>() {
        // Clap's message as clap prints it (styled on a terminal).
        Some(UsageError(usage)) => {
            let _ = usage.print();
        }
        None => eprintln!("error: {error:#}"),
    }
    ExitCode::from(code_of(&error))
}
