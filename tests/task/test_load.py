"""Loader details: workload line forms, nested solution paths, task arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kloop.errors import BadInput
from kloop.task.load import load_solution, load_task, load_task_arg, write_solution_dir
from kloop.task.schema import BuildSpec, Solution, SourceFile


def test_bare_workload_lines_and_blank_lines(rmsnorm_copy: Path) -> None:
    path = rmsnorm_copy / "workloads.jsonl"
    bare = [json.dumps(json.loads(line)["workload"]) for line in path.read_text().splitlines()]
    path.write_text("\n" + "\n\n".join(bare) + "\n\n")
    task = load_task(rmsnorm_copy)
    assert [w.axes["tokens"] for w in task.workloads] == [1, 17, 64, 200, 256]
    lines = path.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if '"tokens": 64' in line)
    assert index == 5
    lines[index] = lines[index].replace('"tokens": 64', '"tokens": 64, "bogus": 1')
    path.write_text("\n".join(lines))
    with pytest.raises(BadInput, match="unknown axis 'bogus'") as caught:
        load_task(rmsnorm_copy)
    assert caught.value.where.endswith("workloads.jsonl:6")  # line numbers count blank lines


def test_nested_source_paths_round_trip(tmp_path: Path) -> None:
    solution = Solution(
        name="nested", definition="d", author="me",
        spec=BuildSpec(language="cuda", target_hardware=["cuda"], entry_point="src/kernel.cu::run"),
        sources=[SourceFile(path="src/kernel.cu", content="// kernel\n"),
                 SourceFile(path="include/util.h", content="#pragma once\n")],
    )  # fmt: skip
    folder = write_solution_dir(solution, tmp_path / "sol")
    assert (folder / "include" / "util.h").read_text() == "#pragma once\n"
    assert load_solution(folder) == solution
    with pytest.raises(ValueError, match="escapes its directory"):
        SourceFile(path="src/../../x.cu", content="x")
    with pytest.raises(ValueError, match="is absolute"):
        SourceFile(path="C:\\x.cu", content="x")


def test_inline_content_wins_over_files(rmsnorm_copy: Path) -> None:
    manifest = json.loads((rmsnorm_copy / "baseline" / "solution.json").read_text())
    manifest["sources"] = [{"path": "main.py", "content": "def run(x, weight):\n    return x\n"}]
    (rmsnorm_copy / "baseline" / "solution.json").write_text(json.dumps(manifest))
    assert load_solution(rmsnorm_copy / "baseline").sources[0].content.endswith("return x\n")


def test_task_argument_forms(examples_dir: Path, shared_fixtures: Path) -> None:
    assert load_task_arg(examples_dir / "topk_rows").name == "topk_rows_v4096_k8"
    fib = load_task_arg(None, fib_root=shared_fixtures / "flashinfer-trace", definition="gemm_n4096_k4096")
    assert fib.root == shared_fixtures / "flashinfer-trace" and fib.baseline is None
    with pytest.raises(BadInput, match="no task given"):
        load_task_arg(None)
    with pytest.raises(BadInput, match="must be a directory"):
        load_task_arg(examples_dir / "rmsnorm" / "definition.json")
