"""The verifier on the shipped examples and on FlashInfer-Trace fixture files (CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.task.load import load_fib_task, load_task
from kloop.verify import VerifyOptions, VerifyStatus, verify

HERE = Path(__file__).parent


def options(tmp_path: Path, **extra: object) -> VerifyOptions:
    base = {"device": "cpu", "timeout_s": 120, "iterations": 5, "rounds": 2, "heldout": 1, "log_dir": tmp_path}
    return VerifyOptions(**{**base, **extra})


def test_rmsnorm_example_python_solution_passes_with_speedup(examples_dir: Path, tmp_path: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    result = verify(task, examples_dir / "rmsnorm" / "solutions" / "python_vectorized", options(tmp_path, workloads=2))
    assert result.passed, result.reasons
    assert result.summary.speedup_geomean is not None and result.summary.speedup_ci is not None
    assert all(w.baseline_latency_ms for w in result.workloads if not w.heldout)


def test_rmsnorm_baseline_verifies_against_its_own_reference(examples_dir: Path, tmp_path: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    result = verify(task, examples_dir / "rmsnorm" / "baseline", options(tmp_path, workloads=1, timing=False))
    assert result.passed, result.reasons


@pytest.mark.slow
@pytest.mark.parametrize("example", ["rmsnorm/solutions/cpp_fused", "silu_and_mul/solutions/cpp_tuned",
                                     "topk_rows/solutions/cpp_select"])  # fmt: skip
def test_cpp_examples_build_and_pass(examples_dir: Path, tmp_path: Path, example: str) -> None:
    task = load_task(examples_dir / example.split("/")[0])
    result = verify(task, examples_dir / example, options(tmp_path, workloads=2, build_timeout_s=900))
    assert result.passed, result.reasons


def test_fib_gemm_fixture_python_solution_passes(shared_fixtures: Path, tmp_path: Path) -> None:
    task = load_fib_task(shared_fixtures / "flashinfer-trace", "gemm_n4096_k4096")
    result = verify(task, HERE / "solutions" / "gemm_python", options(tmp_path, workloads=1, heldout=0, timing=False))
    assert result.passed, result.reasons
    assert result.workloads[0].max_rel_error is not None


def test_fib_cuda_solution_on_cpu_is_a_compile_error(shared_fixtures: Path, tmp_path: Path) -> None:
    root = shared_fixtures / "flashinfer-trace"
    task = load_fib_task(root, "gemm_n4096_k4096")
    result = verify(task, root / "solutions" / "example_agent_solution.json", options(tmp_path, workloads=1))
    assert result.status is VerifyStatus.COMPILE_ERROR
    assert result.failed_checks() == ["build"]


def test_the_definitions_heldout_count_is_honoured(tmp_path: Path) -> None:
    """`kloop.heldout.count` in the task is the task author's word, over the verifier's default."""
    import json
    import shutil

    task_dir = shutil.copytree(Path(__file__).parent / "tasks" / "rmsnorm_tiny", tmp_path / "task")
    definition = json.loads((task_dir / "definition.json").read_text())
    definition["kloop"]["heldout"]["count"] = 3
    (task_dir / "definition.json").write_text(json.dumps(definition))
    solution = Path(__file__).parent / "redteam" / "honest_value"
    result = verify(load_task(task_dir), solution, options(tmp_path, timing=False, speedup=False))
    assert result.passed, result.reasons
    # input-coverage workloads (`heldout-coverage-<regime>-...`) are held out too, but not drawn by this count
    assert sum(w.heldout and not w.uuid.startswith("heldout-coverage-") for w in result.workloads) == 3
