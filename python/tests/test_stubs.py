"""The type stubs name exactly the flags the command line declares."""

import pathlib
import subprocess
import sys

import clustersim

GENERATOR = pathlib.Path(__file__).resolve().parents[1] / "generate_stubs.py"


def test_the_stubs_are_generated_from_todays_flags():
    check = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_every_stub_keyword_is_a_flag_simulate_accepts():
    from clustersim import _native

    flags = {a["name"].replace("-", "_") for a in _native.arguments(["simulate"])}
    stubs = (pathlib.Path(clustersim.__file__).with_suffix(".pyi")).read_text()
    for flag in flags - {"json", "scenario"}:
        assert f"    {flag}: " in stubs, flag
