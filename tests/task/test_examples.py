"""The example tasks load, and their baselines and solutions are correct against the reference."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from kloop.task.inputs import heldout_workloads, make_inputs
from kloop.task.load import Task, load_solution, load_task, pack_solution, write_solution_dir
from kloop.task.reference import outputs_as_dict, run_reference
from kloop.task.schema import ComparatorName, Language, Solution
from kloop.task.shapes import comparator_for, tensor_shapes, tolerance_for
from kloop.task.tunables import render_tunables

EXAMPLES = ["rmsnorm", "silu_and_mul", "topk_rows"]


def _import_python(solution: Solution, folder: Path) -> Any:
    path = folder / solution.entry_file
    spec = importlib.util.spec_from_file_location(f"example_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, solution.entry_symbol)


def _call(task: Task, solution: Solution, fn: Any, inputs: dict[str, Any], axes: dict[str, int]) -> dict[str, Any]:
    """Call by the agreed convention: value-returning, or destination-passing into poisoned buffers."""
    if not solution.spec.destination_passing_style:
        return outputs_as_dict(task.definition, fn(*inputs.values()))
    shapes = tensor_shapes(task.definition, axes)
    outs = {n: torch.full(shapes[n], float("nan")) for n in task.definition.outputs}
    fn(*inputs.values(), *outs.values())
    return outs


def _check_against_reference(task: Task, solution: Solution, fn: Any) -> int:
    workloads = task.workloads + heldout_workloads(task.definition, task.workloads, seed=7, count=2)
    for workload in workloads:
        inputs = make_inputs(task.definition, workload, seed=123, task_root=task.root)
        expected = run_reference(task.definition, {k: v.double() for k, v in inputs.items()})
        axes = {**task.definition.const_axes, **workload.axes}
        got = _call(task, solution, fn, inputs, axes)
        for name, ref in expected.items():
            out = got[name]
            assert str(out.dtype) == f"torch.{task.definition.outputs[name].dtype.value}" and out.shape == ref.shape
            if comparator_for(task.definition, name) is not ComparatorName.ALLCLOSE:
                out, ref = out.sort(dim=-1).values, ref.sort(dim=-1).values
            tol = tolerance_for(task.definition, name)
            assert torch.allclose(out.double(), ref.double(), atol=tol.atol, rtol=tol.rtol), (solution.name, name, workload.axes)
    return len(workloads)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_layout(examples_dir: Path, name: str) -> None:
    task = load_task(examples_dir / name)
    assert task.readme and "kloop verify" in task.readme
    assert 3 <= len(task.workloads) <= 6
    [var_axis] = task.definition.var_axes
    assert len({w.axes[var_axis] for w in task.workloads}) == len(task.workloads)
    assert task.baseline is not None and task.baseline.spec.language is Language.PYTHON
    languages = {load_solution(p).spec.language for p in task.extra_solutions}
    assert languages == {Language.PYTHON, Language.CPP}
    for path in task.extra_solutions:
        assert load_solution(path).definition == task.definition.name


@pytest.mark.parametrize("name", EXAMPLES)
def test_python_baseline_and_solution_match_the_reference(examples_dir: Path, name: str) -> None:
    task = load_task(examples_dir / name)
    for folder in [examples_dir / name / "baseline", examples_dir / name / "solutions" / "python_vectorized"]:
        solution = load_solution(folder)
        assert _check_against_reference(task, solution, _import_python(solution, folder)) == len(task.workloads) + 2


def test_tunable_solution_renders_defaults_and_configs(examples_dir: Path) -> None:
    folder = examples_dir / "silu_and_mul" / "solutions" / "cpp_tuned"
    raw = load_solution(folder, render_defaults=False)
    assert "${GRAIN}" in raw.sources[0].content and raw.kloop.tunables == {"GRAIN": [16, 4, 64]}
    default = load_solution(folder)
    assert "${GRAIN}" not in default.sources[0].content
    assert "kGrainRows = 16;" in default.sources[0].content and default.kloop.config == {"GRAIN": 16}
    wide = render_tunables(raw, {"GRAIN": 64})
    assert "kGrainRows = 64;" in wide.sources[0].content and not wide.kloop.tunables
    assert wide.content_hash() != default.content_hash()


def test_boolean_tunables_are_spelled_for_each_language(examples_dir: Path) -> None:
    """`True` in Python/Triton sources (where `true` is a NameError), `true` in C++."""
    raw = load_solution(examples_dir / "silu_and_mul" / "solutions" / "cpp_tuned", render_defaults=False)
    python_source = raw.sources[0].model_copy(update={"path": "main.py", "content": "FAST = ${FAST}\n"})
    cpp_source = raw.sources[0].model_copy(update={"content": "constexpr bool kFast = ${FAST};\n"})
    settings = raw.kloop.model_copy(update={"tunables": {"FAST": [True, False]}})
    solution = raw.model_copy(update={"sources": [python_source, cpp_source], "kloop": settings})
    rendered = render_tunables(solution, {"FAST": True})
    assert rendered.sources[0].content == "FAST = True\n"
    assert rendered.sources[1].content == "constexpr bool kFast = true;\n"


def test_write_solution_dir_round_trips(examples_dir: Path, tmp_path: Path) -> None:
    packed = pack_solution(examples_dir / "rmsnorm" / "solutions" / "cpp_fused")
    assert packed.sources[0].content.startswith("// Fused RMSNorm")
    out = write_solution_dir(packed, tmp_path / "copy")
    manifest = json.loads((out / "solution.json").read_text())
    assert manifest["sources"] == [{"path": "kernel.cpp"}]  # contents live in the files
    assert load_solution(out).content_hash() == packed.content_hash()
    fib_file = tmp_path / "packed.json"
    fib_file.write_text(packed.model_dump_json())
    assert load_solution(fib_file) == packed


@pytest.mark.slow
@pytest.mark.parametrize(("name", "solution_dir"), [("rmsnorm", "cpp_fused"), ("silu_and_mul", "cpp_tuned"), ("topk_rows", "cpp_select")])
def test_cpp_solutions_build_and_match_the_reference(examples_dir: Path, tmp_path: Path, name: str, solution_dir: str) -> None:
    from torch.utils.cpp_extension import load

    task = load_task(examples_dir / name)
    solution = load_solution(examples_dir / name / "solutions" / solution_dir)
    src = write_solution_dir(solution, tmp_path / "src")
    module = load(f"kloop_example_{name}", [str(src / s.path) for s in solution.sources], build_directory=str(tmp_path))
    assert _check_against_reference(task, solution, getattr(module, solution.entry_symbol)) == len(task.workloads) + 2


def test_cli_pack_writes_a_solution_flashinfer_bench_accepts(examples_dir: Path, tmp_path: Path) -> None:
    import subprocess

    from flashinfer_bench.data import Solution as FibSolution

    kloop = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kloop"
    out = tmp_path / "packed.json"
    proc = subprocess.run(
        [str(kloop), "task", "pack", str(examples_dir / "silu_and_mul/solutions/cpp_tuned"), "-o", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    fib = FibSolution.model_validate_json(out.read_text())
    assert "kGrainRows = 16;" in fib.sources[0].content  # the default configuration, not a placeholder
    assert load_solution(out).content_hash() == load_solution(examples_dir / "silu_and_mul/solutions/cpp_tuned").content_hash()
