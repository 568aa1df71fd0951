"""Running one ``clustersim`` command in this process, and turning keyword
arguments into its flags.

Every public function of the package comes through :func:`run`: the command
line's own parser reads the flags, so a Python call accepts, refuses and
fails exactly as the command does, with the same messages. Keyword names are
the long flags with ``_`` for ``-`` (``global_batch=512`` is
``--global-batch 512``); the flags a subcommand takes are read from the
command line itself (``_native.arguments``), never listed here.
"""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import _native


class ClustersimError(Exception):
    """A clustersim command failed; the message is the command's own."""

    exit_code: int = 1


class InputError(ClustersimError, ValueError):
    """The input was refused (the command line's exit code 2): a flag, a
    file, a layout or a memory check, named in the message."""

    exit_code = 2


class SimulationError(ClustersimError, RuntimeError):
    """The simulator failed on valid input (exit code 1): a bug to report."""

    exit_code = 1


def run(args: Sequence[str]) -> str:
    """Runs ``clustersim ARGS…`` and returns what it wrote to standard
    output; raises :class:`InputError` (exit 2) or :class:`SimulationError`
    (exit 1) with the command's message."""
    code, stdout, message = _native.run([os.fspath(a) for a in args])
    if code == 0:
        return stdout.decode("utf-8")
    error = InputError if code == 2 else SimulationError
    raise error(message or f"clustersim exited with {code}")


def _arguments(subcommand: Sequence[str]) -> Dict[str, Dict[str, Any]]:
    described = _native.arguments(list(subcommand))
    if described is None:
        raise InputError(f"clustersim has no subcommand {' '.join(subcommand)!r}")
    return {info["name"].replace("-", "_"): info for info in described}


class Arguments:
    """Builds one command line from keyword arguments, writing any mapping
    given for a file (a model, a scenario, a fit) to a temporary JSON file
    that lives until :meth:`close`."""

    def __init__(self, subcommand: Sequence[str], reserved: Sequence[str] = ()):
        self.subcommand = list(subcommand)
        self.known = _arguments(subcommand)
        self.reserved = set(reserved)
        self.argv: List[str] = list(subcommand)
        self._folder: Optional[tempfile.TemporaryDirectory] = None

    def __enter__(self) -> "Arguments":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def temporary_path(self, name: str) -> str:
        """A path in this call's temporary folder (for an output the package
        reads back)."""
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="clustersim-")
        return os.path.join(self._folder.name, name)

    def add_positional(self, value: Any, name: str) -> None:
        if value is not None:
            self.argv.append(self._value_text(name, value))

    def add_flag(self, flag: str, value: Optional[str] = None) -> None:
        self.argv.append(f"--{flag}" if value is None else f"--{flag}={value}")

    def add_options(self, options: Mapping[str, Any]) -> None:
        """Adds ``--flag value`` for every keyword; ``None`` leaves a flag
        out. Unknown keywords are refused, naming the nearest flag."""
        for key, value in options.items():
            info = self.known.get(key)
            if info is None or info["kind"] == "positional" or key in self.reserved:
                raise InputError(self._unknown(key))
            if value is None:
                continue
            flag = info["name"]
            kind = info["kind"]
            if kind == "switch":
                if not isinstance(value, bool):
                    raise InputError(f"{key} takes True or False, not {value!r}")
                if value:
                    self.add_flag(flag)
            elif kind == "boolean":
                if not isinstance(value, bool):
                    raise InputError(f"{key} takes True or False, not {value!r}")
                self.add_flag(flag, "true" if value else "false")
            else:
                self.argv.append(f"--{flag}")
                self.argv.append(self._value_text(key, value))

    def _unknown(self, key: str) -> str:
        command = " ".join(self.subcommand)
        names = [n for n, i in self.known.items() if i["kind"] != "positional" and n not in self.reserved]
        near = difflib.get_close_matches(key, names, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        return f"clustersim.{self.subcommand[0]}() has no option {key!r}{hint}; {command} takes: {', '.join(sorted(names))}"

    def _value_text(self, key: str, value: Any) -> str:
        if isinstance(value, bool):
            raise InputError(f"{key} takes a value, not {value!r}")
        if isinstance(value, Mapping):
            path = self.temporary_path(f"{key}.json")
            with open(path, "w", encoding="utf-8") as file:
                json.dump(value, file)
            return path
        if isinstance(value, (list, tuple)):
            return ",".join(self._value_text(key, item) for item in value)
        if isinstance(value, (int, float, str)):
            return str(value)
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        raise InputError(f"{key} takes a number, a string, a path, a list of them or a dict, not {type(value).__name__}")
