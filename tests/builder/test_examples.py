"""The shipped example solutions build and agree with their definitions' references."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kloop.builder import build_solution
from kloop.task.inputs import make_inputs
from kloop.task.load import load_solution, load_task
from kloop.task.reference import load_reference


def _agree(examples_dir: Path, task_name: str, solution_name: str, cache: Path) -> None:
    task = load_task(examples_dir / task_name)
    built = build_solution(load_solution(examples_dir / task_name / "solutions" / solution_name), device="cpu",
                           cache_dir=cache)
    reference = load_reference(task.definition)
    inputs = make_inputs(task.definition, task.workloads[0], seed=1234, task_root=task.root)
    expected = reference(*inputs.values())
    expected = expected if isinstance(expected, tuple) else (expected,)
    if built.destination_passing:
        outputs = tuple(torch.empty_like(t) for t in expected)
        built.fn(*inputs.values(), *outputs)
    else:
        got = built.fn(*inputs.values())
        outputs = got if isinstance(got, tuple) else (got,)
    for out, ref in zip(outputs, expected, strict=True):
        assert out.shape == ref.shape and out.dtype == ref.dtype
        assert torch.allclose(out, ref, atol=1e-4, rtol=1e-4)


def test_rmsnorm_python_example(examples_dir: Path, build_cache: Path) -> None:
    _agree(examples_dir, "rmsnorm", "python_vectorized", build_cache)


@pytest.mark.slow
def test_rmsnorm_cpp_example(examples_dir: Path, build_cache: Path) -> None:
    """A full PyTorch C++ extension build (~40-120 s here), hence slow."""
    _agree(examples_dir, "rmsnorm", "cpp_fused", build_cache)
