"""The schema agrees with FlashInfer-Bench's own classes, on real FlashInfer-Trace files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from flashinfer_bench.data import Definition as FibDefinition
from flashinfer_bench.data import Solution as FibSolution
from flashinfer_bench.data import Trace as FibTrace
from flashinfer_bench.data import Workload as FibWorkload

from kloop.task.load import load_fib_task, load_solution, load_task
from kloop.task.schema import (
    Binding,
    BuildSpec,
    Correctness,
    Definition,
    Environment,
    Evaluation,
    Language,
    Performance,
    Trace,
    VerifyStatus,
)


def test_gemm_fixture_loads_with_workloads_and_solution(shared_fixtures: Path) -> None:
    root = shared_fixtures / "flashinfer-trace"
    task = load_fib_task(root, "gemm_n4096_k4096")
    assert task.definition.var_axes == ["M"]
    assert task.definition.const_axes == {"N": 4096, "K": 4096}
    assert len(task.workloads) == 43
    assert task.workloads[0].axes == {"M": 256}
    assert task.baseline is None  # the reference is the baseline
    [solution_path] = task.extra_solutions
    solution = load_solution(solution_path)
    assert solution.spec.language is Language.CUDA
    assert solution.entry_symbol == "gemm_n_4096_k_4096"
    assert solution.spec.destination_passing_style is True  # FIB's default when absent
    assert solution.spec.effective_binding is Binding.TORCH  # kloop's default for compiled code
    assert {s.path for s in solution.sources} == {"kernel.h", "kernel.cu"}


def test_gdn_definition_with_constraints_and_optional_input(shared_fixtures: Path) -> None:
    path = shared_fixtures / "flashinfer-trace" / "definitions" / "gdn_decode_qk4_v8_d128_k_last.json"
    definition = Definition.model_validate_json(path.read_text())
    assert definition.constraints == [
        "num_v_heads >= num_q_heads",
        "num_v_heads % num_q_heads == 0",
        "num_k_heads == num_q_heads",
    ]
    assert definition.inputs["state"].optional is True
    assert definition.inputs["scale"].shape is None
    assert list(definition.outputs) == ["output", "new_state"]


@pytest.mark.parametrize(
    "name", ["definitions/gemm_n4096_k4096.json", "definitions/gdn_decode_qk4_v8_d128_k_last.json"]
)
def test_definitions_round_trip_through_flashinfer_bench(shared_fixtures: Path, name: str) -> None:
    raw = json.loads((shared_fixtures / "flashinfer-trace" / name).read_text())
    ours = Definition.model_validate(raw)
    theirs = FibDefinition.model_validate(json.loads(ours.model_dump_json()))  # keeps shape: null
    assert theirs.name == ours.name
    assert list(theirs.inputs) == list(ours.inputs)
    assert theirs.const_axes == ours.const_axes


def test_example_solutions_validate_with_flashinfer_bench(examples_dir: Path) -> None:
    for folder in ["rmsnorm/baseline", "rmsnorm/solutions/cpp_fused", "silu_and_mul/solutions/cpp_tuned"]:
        ours = load_solution(examples_dir / folder)
        theirs = FibSolution.model_validate(json.loads(ours.model_dump_json(exclude_none=True)))
        assert theirs.spec.entry_point == ours.spec.entry_point
        assert theirs.spec.destination_passing_style == ours.spec.destination_passing_style


def test_built_trace_validates_with_flashinfer_bench(examples_dir: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    passed = Trace(
        definition=task.definition.name,
        workload=task.workloads[1],
        solution="rmsnorm_h2048_cpp_fused",
        evaluation=Evaluation(
            status=VerifyStatus.PASSED,
            environment=Environment(hardware="cpu", libs={"torch": "2"}),
            timestamp="2026-11-30T20:00:00Z",
            correctness=Correctness(max_relative_error=1e-6, max_absolute_error=2e-7),
            performance=Performance(latency_ms=0.5, reference_latency_ms=2.0, speedup_factor=4.0),
        ),
    )
    rejected = passed.model_copy(
        update={"evaluation": Evaluation(
            status=VerifyStatus.RUNTIME_ERROR, environment=Environment(hardware="cpu"),
            timestamp="2026-11-30T20:00:00Z", log="REJECTED: output cache keyed on input pointer")}
    )  # fmt: skip
    for trace in (passed, rejected):
        theirs = FibTrace.model_validate_json(trace.model_dump_json())
        assert theirs.evaluation.status.value == trace.evaluation.status.value
        assert theirs.workload.axes == trace.workload.axes
    workload_only = Trace(definition=task.definition.name, workload=task.workloads[0])
    assert FibTrace.model_validate_json(workload_only.model_dump_json()).is_workload_trace()
    FibWorkload.model_validate(task.workloads[0].model_dump())


def test_evaluation_metrics_must_match_status() -> None:
    env = Environment(hardware="cpu")
    with pytest.raises(ValueError, match="performance must be given"):
        Evaluation(status="PASSED", environment=env, timestamp="t", correctness=Correctness())
    with pytest.raises(ValueError, match="correctness must not be given"):
        Evaluation(status="TIMEOUT", environment=env, timestamp="t", correctness=Correctness())


def test_languages_extend_fib_with_hip_and_entry_point_needs_separator() -> None:
    spec = BuildSpec(language="hip", target_hardware=["gfx942"], entry_point="k.hip::run")
    assert spec.effective_binding is Binding.TORCH
    assert BuildSpec(language="python", target_hardware=["cpu"], entry_point="m.py::run").effective_binding is None
    with pytest.raises(ValueError, match="FILE::SYMBOL"):
        BuildSpec(language="cpp", target_hardware=["cpu"], entry_point="kernel.cpp:run")


def test_importing_schema_and_loaders_does_not_import_torch() -> None:
    code = (
        "import sys, kloop.task.schema, kloop.task.load, kloop.task.shapes, kloop.task.commands;"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_one_status_enum_and_rejected_never_reaches_a_fib_trace() -> None:
    from kloop.verify.result import VerifyStatus as VerifierStatus

    assert VerifierStatus is VerifyStatus
    assert VerifyStatus.REJECTED.fib() is VerifyStatus.RUNTIME_ERROR
    assert [s.fib() for s in VerifyStatus if s is not VerifyStatus.REJECTED] == \
        [s for s in VerifyStatus if s is not VerifyStatus.REJECTED]
    with pytest.raises(ValueError, match="REJECTED is not a FlashInfer-Bench status"):
        Evaluation(status=VerifyStatus.REJECTED, environment=Environment(hardware="cpu"), timestamp="t")
