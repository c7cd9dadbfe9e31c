"""The shipped KernelBench examples load, keep their licence, and their baselines verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.task.load import load_task

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "examples" / "kernelbench"
NAMES = [line.split()[0] for line in (HERE / "make.sh").read_text().split("<<'LIST'\n")[1].split("LIST")[0].splitlines()]


def test_every_example_loads_and_names_its_kernelbench_source() -> None:
    assert 5 <= len(NAMES) <= 8 and (HERE / "conv2d_relu_biasadd_weights" / "weights.safetensors").exists()
    assert "MIT License" in (HERE / "problems" / "LICENSE").read_text()
    levels = set()
    for name in NAMES:
        task = load_task(HERE / name)
        assert task.baseline is not None and task.definition.name == f"kb_{name}"
        assert "KernelBench" in task.definition.description
        levels.add(next(p.name.split("_")[0] for p in (HERE / "problems").glob("level*")
                        if p.name.split("_", 1)[1].split(".")[0] in task.definition.description))  # fmt: skip
    assert levels == {"level1", "level2", "level3"}


def _verify(task: Path, solution: Path) -> dict:
    """`kloop verify --no-timing --json -`'s verdict, from the same call in this process (the command
    has its own tests; a subprocess imported torch again, 3-4 s of CPU)."""
    from kloop.verify import VerifyOptions, verify

    result = verify(load_task(task), solution, VerifyOptions(device="cpu", timing=False))
    return json.loads(result.model_dump_json())


def test_a_real_kernelbench_baseline_verifies_from_the_checkout() -> None:
    verdict = _verify(HERE / "cross_entropy", HERE / "cross_entropy" / "baseline")
    assert verdict["status"] == "PASSED" and len(verdict["workloads"]) >= 3


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_example_baseline_verifies(name: str) -> None:
    assert _verify(HERE / name, HERE / name / "baseline")["status"] == "PASSED"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["conv2d_relu_biasadd", "conv2d_relu_biasadd_weights"])
def test_the_worked_solutions_with_parameters_verify(name: str) -> None:
    task = HERE / name
    assert _verify(task, task / "solutions" / "python_functional")["status"] == "PASSED"
