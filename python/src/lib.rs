//! `clustersim._native`: the command line, callable from Python. Two
//! functions: [`run`] runs one `clustersim` command in this process (its
//! standard output kept, its error returned as text) and [`arguments`]
//! describes a subcommand's flags so the Python layer
//! (`clustersim/__init__.py`) can turn keyword arguments into them. The
//! Python layer does everything else; this module adds no behaviour of its
//! own, so a Python call prints, refuses and fails exactly as the command.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// Runs `clustersim ARGS…` (without the program's name) with the GIL
/// released; returns `(exit_code, stdout_bytes, error_message_or_None)`.
#[pyfunction]
fn run<'py>(py: Python<'py>, args: Vec<String>) -> (u8, Bound<'py, PyBytes>, Option<String>) {
    let argv = std::iter::once("clustersim".to_string()).chain(args);
    let captured = py.detach(|| clustersim_cli::run_captured(argv));
    (
        captured.exit_code,
        PyBytes::new(py, &captured.stdout),
        captured.error,
    )
}

/// The flags of a subcommand (`["simulate"]`, `["sweep", "merge"]`): a list
/// of dicts with `name`, `kind` (`switch`, `boolean`, `value`,
/// `positional`), `possible_values`, `value_name`, `help` and `required`;
/// `None` when there is no such subcommand.
#[pyfunction]
fn arguments<'py>(
    py: Python<'py>,
    subcommand: Vec<String>,
) -> PyResult<Option<Vec<Bound<'py, PyDict>>>> {
    let names: Vec<&str> = subcommand.iter().map(String::as_str).collect();
    let Some(infos) = clustersim_cli::arguments_of(&names) else {
        return Ok(None);
    };
    let mut described = Vec::with_capacity(infos.len());
    for info in infos {
        let dict = PyDict::new(py);
        dict.set_item("name", info.name)?;
        dict.set_item("kind", kind_name(info.kind))?;
        dict.set_item("possible_values", info.possible_values)?;
        dict.set_item("value_name", info.value_name)?;
        dict.set_item("help", info.help)?;
        dict.set_item("required", info.required)?;
        described.push(dict);
    }
    Ok(Some(described))
}

fn kind_name(kind: clustersim_cli::ArgumentKind) -> &'static str {
    match kind {
        clustersim_cli::ArgumentKind::Switch => "switch",
        clustersim_cli::ArgumentKind::Boolean => "boolean",
        clustersim_cli::ArgumentKind::Value => "value",
        clustersim_cli::ArgumentKind::Positional => "positional",
    }
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(run, module)?)?;
    module.add_function(wrap_pyfunction!(arguments, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
