"""GPU red team and GPU solutions through the CUDA timing path (run by bench/device_check.sh)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _gpu_redteam():
    spec = importlib.util.spec_from_file_location("gpu_redteam", REPO / "bench" / "gpu_redteam" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_redteam"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_gpu_redteam_cases_are_well_formed() -> None:
    module = _gpu_redteam()
    names = {c.name for c in module.CASES}
    assert {"attack_side_stream", "attack_l2_persist", "attack_lazy_launch", "attack_pointer_cache"} <= names
    assert all((c.path / "solution.json").is_file() for c in module.CASES)


@pytest.mark.gpu
def test_gpu_redteam_and_solutions(tmp_path: Path) -> None:
    rows = _gpu_redteam().check_all(tmp_path)
    bad = [r for r in rows if not r[2]]
    assert not bad, bad
