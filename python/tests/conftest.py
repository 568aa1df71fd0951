"""Shared fixtures: the repository's root (validation files, examples)."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def root() -> pathlib.Path:
    return ROOT
