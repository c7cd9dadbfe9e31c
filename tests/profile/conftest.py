"""Fixtures for the profiler tests: the H200 Nsight Compute cases, read once per session."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from kloop.profile.read import read
from kloop.profile.schema import KernelProfile

FORMATS = ("report.ncu-rep", "details.csv", "details.base.csv", "raw.csv")
CASES = ("copy_vec4", "copy_strided", "transpose_conflict", "heavy_regs", "tiny_grid_sum", "fma_bound", "torch_mm_bf16", "triton_softmax")
DERIVED = Path(__file__).resolve().parents[1] / "fixtures" / "profile"


@pytest.fixture(scope="session")
def h200(shared_fixtures: Path) -> Path:
    return shared_fixtures / "ncu" / "h200"


@pytest.fixture(scope="session")
def labels(h200: Path) -> dict[str, dict]:
    return json.loads((h200 / "labels.json").read_text())["cases"]


@cache
def _read_cached(path: str) -> tuple[KernelProfile, ...]:
    return tuple(read(path))


@pytest.fixture(scope="session")
def read_case(h200: Path):
    """read_case(case, fmt) -> list[KernelProfile], cached across the session (reports are immutable)."""

    def reader(case: str, fmt: str) -> list[KernelProfile]:
        return [p.model_copy(deep=True) for p in _read_cached(str(h200 / case / fmt))]

    return reader


@pytest.fixture(scope="session")
def derived() -> Path:
    return DERIVED
