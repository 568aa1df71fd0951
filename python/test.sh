#!/usr/bin/env bash
# Builds the Python package's wheel (maturin), installs it into a fresh
# virtual environment under target/, and runs its pytest suite there: what
# `pip install` of the wheel gives a user. Needs python3 (3.9 or later) and
# PyPI for maturin, pytest and pandas. Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/python-test-venv
rm -rf "$venv" target/wheels
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" pytest pandas
"$venv/bin/maturin" build --quiet --release --strip --manifest-path python/Cargo.toml --out target/wheels
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check target/wheels/clustersim-*.whl
# From the repository's root, so `import clustersim` is the installed wheel,
# not the source folder python/clustersim.
"$venv/bin/python" -m pytest -q python/tests
