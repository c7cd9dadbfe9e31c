"""Shapes, tolerances, FLOPs and bytes; the restricted expression evaluator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.task.expr import ExpressionError, evaluate, names_in
from kloop.task.load import load_fib_task, load_task
from kloop.task.schema import Definition
from kloop.task.shapes import (
    comparator_for,
    flops_for,
    min_bytes_for,
    resolve_axes,
    tensor_shapes,
    tolerance_for,
)


def test_axes_shapes_flops_and_bytes_of_rmsnorm(examples_dir: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    axes = resolve_axes(task.definition, task.workloads[2])
    assert axes == {"hidden": 2048, "tokens": 64}
    assert tensor_shapes(task.definition, axes) == {"x": (64, 2048), "weight": (2048,), "y": (64, 2048)}
    assert flops_for(task.definition, axes) == 4 * 64 * 2048
    assert min_bytes_for(task.definition, axes) == 4 * (64 * 2048 * 2 + 2048)


def test_default_tolerances_follow_design(shared_fixtures: Path) -> None:
    gemm = load_fib_task(shared_fixtures / "flashinfer-trace", "gemm_n4096_k4096").definition
    tol = tolerance_for(gemm, "C")
    assert (tol.atol, tol.rtol, tol.matched_ratio, tol.exact) == (1e-2, 1e-2, 1.0, False)
    assert flops_for(gemm, {"M": 2, "N": 3, "K": 4}) is None
    data = json.loads(gemm.model_dump_json())
    for dtype, expected in [("float32", 1e-4), ("bfloat16", 1e-2), ("float8_e5m2", 1e-1)]:
        data["outputs"]["C"]["dtype"] = dtype
        assert tolerance_for(Definition.model_validate(data), "C").atol == expected
    data["outputs"]["C"]["dtype"] = "int32"
    assert tolerance_for(Definition.model_validate(data), "C").exact


def test_definition_overrides_tolerance_and_comparator(shared_fixtures: Path) -> None:
    data = json.loads((shared_fixtures / "flashinfer-trace/definitions/gemm_n4096_k4096.json").read_text())
    data["kloop"] = {
        "tolerance": {"atol": 0.05, "matched_ratio": 0.99},
        "output_tolerance": {"C": {"max_error_cap": 0.5}},
        "comparators": {"C": "sorted_allclose"},
        "flops": "2 * M * N * K",
    }
    definition = Definition.model_validate(data)
    tol = tolerance_for(definition, "C")
    assert (tol.atol, tol.rtol, tol.matched_ratio, tol.max_error_cap) == (0.05, 1e-2, 0.99, 0.5)
    assert comparator_for(definition, "C").value == "sorted_allclose"
    assert flops_for(definition, {"M": 2, "N": 4096, "K": 4096}) == 2 * 2 * 4096 * 4096


@pytest.mark.parametrize(
    ("text", "value"),
    [("2 * M * N", 24), ("M // 2 + N % 3", 2), ("max(M, N) ** 2", 16), ("M < N <= 4", True),
     ("M if M > 2 else N", 3), ("not (M == 3) or N == 4", True), ("ceil(M / 2)", 2)],
)
def test_evaluator_arithmetic(text: str, value: object) -> None:
    assert evaluate(text, {"M": 3, "N": 4}) == value


@pytest.mark.parametrize(
    "text",
    ["__import__('os')", "M.__class__", "[M for M in (1,)]", "open('x')", "lambda: 1", "'a' * 3",
     "2 ** 10 ** 10", "M[0]", "f(M)", "M := 3", "1 +", "min(M, key=N)"],
)
def test_evaluator_refuses_anything_else(text: str) -> None:
    with pytest.raises(ExpressionError):
        evaluate(text, {"M": 3, "N": 4})


def test_names_in_excludes_functions_and_unknown_names_fail() -> None:
    assert names_in("max(a, b) * c") == {"a", "b", "c"}
    with pytest.raises(ExpressionError, match="unknown name 'z'"):
        evaluate("z + 1", {})
    with pytest.raises(ExpressionError, match="failed"):
        evaluate("M / 0", {"M": 1})


def test_flops_that_divide_by_zero_are_bad_input(examples_dir: Path) -> None:
    data = json.loads((examples_dir / "rmsnorm/definition.json").read_text())
    data["kloop"]["flops"] = "hidden / (tokens - tokens)"
    with pytest.raises(BadInput, match="kloop.flops"):
        flops_for(Definition.model_validate(data), {"tokens": 3, "hidden": 2048})


@pytest.mark.parametrize("text", ["-" * 1998 + "1", "(" * 600 + "1" + ")" * 600, "((9 ** 64) ** 64) ** 64", "M" + " + M" * 1000])
def test_evaluator_bounds_hostile_expressions(text: str) -> None:
    with pytest.raises(ExpressionError):
        evaluate(text, {"M": 3})
