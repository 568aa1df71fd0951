"""clustersim: simulate GPU clusters training large transformer models before
buying time on them.

Every function runs the ``clustersim`` command of the same name in this
process, with the same flags as keyword arguments (``global_batch=512`` is
``--global-batch 512``, ``sequence_parallel=True`` is
``--sequence-parallel=true``, a list is a comma-separated value), and
returns its ``--json`` document::

    import clustersim
    r = clustersim.simulate(model="llama3-70b", topology="dgx-h100-ib",
                            tp=8, pp=4, dp=16, global_batch=512, precision="bf16")
    print(r.iteration_time_s, r.mfu_percent)

A model, topology, profile, stack, scenario or fit may be a preset's name, a
file's path or a dict (written to a temporary JSON file for the call).
Refused input raises :class:`InputError` (a ``ValueError``) with the command's
message; ``help(clustersim.simulate)`` and ``clustersim simulate --help`` list
the options.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from . import _native
from ._command import Arguments, ClustersimError, InputError, SimulationError, run
from ._results import Result, as_result, sweep_frame, sweep_records

__version__ = _native.__version__

__all__ = [
    "ClustersimError",
    "InputError",
    "SimulationError",
    "Result",
    "simulate",
    "timeline",
    "sweep",
    "run_plan",
    "validate",
    "fit",
    "presets",
    "show",
    "cli",
]


def cli(*args: str) -> str:
    """Runs any command (``clustersim.cli("collective", "--gpus", "16")``)
    and returns its standard output as text."""
    return run(list(args))


def simulate(scenario: Any = None, **options: Any) -> Result:
    """One training iteration (``clustersim simulate … --json``): iteration
    time, throughput, MFU, bubble, communication, memory and the expected
    range. ``scenario`` is a scenario file or dict; options override it."""
    with Arguments(["simulate"], reserved=["json"]) as command:
        command.add_positional(scenario, "scenario")
        command.add_options(options)
        command.add_flag("json")
        return as_result(json.loads(run(command.argv)))


def timeline(scenario: Any = None, **options: Any) -> Result:
    """The simulated Timeline of one iteration (``simulate --timeline``): its
    tasks with rank, stream, kind and integer-nanosecond start and end."""
    with Arguments(["simulate"], reserved=["json", "timeline"]) as command:
        command.add_positional(scenario, "scenario")
        command.add_options(options)
        path = command.temporary_path("timeline.json")
        command.argv += ["--timeline", path]
        run(command.argv)
        with open(path, encoding="utf-8") as file:
            return as_result(json.load(file))


def sweep(scenario: Any = None, records: bool = False, **options: Any) -> Any:
    """Every valid layout for ``gpus`` GPUs, memory-checked, simulated and
    ranked (``clustersim sweep``): a pandas DataFrame, one row per simulated
    layout in ranked order (the sweep's header, counts and rejections in
    ``frame.attrs``), or a list of dicts with ``records=True`` or without
    pandas. ``scenario`` (a file or dict) is the base: its model, topology,
    batch and options, and its GPU count as the default ``gpus``."""
    with Arguments(["sweep"], reserved=["json"]) as command:
        command.add_positional(scenario, "scenario")
        command.add_options(options)
        path = command.temporary_path("sweep.json")
        command.argv += ["--json", path]
        run(command.argv)
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
    rows = sweep_records(document)
    return rows if records else sweep_frame(document, rows)


def run_plan(scenario: Any = None, **options: Any) -> Result:
    """The whole training run (``clustersim run-plan … --json``): expected
    time to train with failures, checkpoints and restarts, goodput, energy and
    cost, every value with its source. Give ``tokens`` (e.g. ``"15T"``) or
    ``steps``; the other options are the command's flags."""
    with Arguments(["run-plan"], reserved=["json"]) as command:
        command.add_positional(scenario, "scenario")
        command.add_options(options)
        command.add_flag("json")
        return as_result(json.loads(run(command.argv)))


def validate(file: Any, fit: Any = None) -> Any:
    """Published measurements run through the simulator (``clustersim
    validate FILE --json``): the document with ``kind``, ``summary`` and
    ``rows`` (each with ``measured``, ``predicted`` and ``error_percent``)."""
    with Arguments(["validate"], reserved=["json"]) as command:
        command.add_positional(file, "file")
        command.add_options({"fit": fit})
        command.add_flag("json")
        return as_result(json.loads(run(command.argv)))


def fit(cases: Any, out: Any = None, params: Optional[Sequence[str]] = None) -> Result:
    """Learns the factors a set of measured runs identifies (``clustersim
    fit CASES --out FIT.json``) and returns FIT.json; ``out`` keeps a copy
    where ``simulate(fit=…)`` and the command line read it (the returned dict
    may be passed as ``fit=`` too)."""
    with Arguments(["fit"], reserved=["json", "out"]) as command:
        command.add_positional(cases, "cases")
        command.add_options({"params": params})
        target = out if out is not None else command.temporary_path("fit.json")
        command.argv += ["--out", str(target), "--json"]
        return as_result(json.loads(run(command.argv)))


def presets(kind: Optional[str] = None) -> Result:
    """The built-in models, topologies, profiles and stacks (``clustersim
    presets --json``)."""
    document = as_result(json.loads(run(["presets", "--json"])))
    return document if kind is None else document[kind]


def show(name: str, kind: Optional[str] = None) -> Result:
    """One preset as the JSON a user would edit (``clustersim presets --show
    NAME``); ``kind`` (model, topology, profile, stack) where a name is
    ambiguous."""
    argv = ["presets", "--show", name]
    if kind is not None:
        argv += ["--kind", kind]
    return as_result(json.loads(run(argv)))
