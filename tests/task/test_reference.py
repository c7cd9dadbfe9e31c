"""The reference compiles in a fresh namespace and names its outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kloop.errors import BadInput
from kloop.task.inputs import make_inputs
from kloop.task.load import load_task
from kloop.task.reference import load_reference, outputs_as_dict, run_reference
from kloop.task.schema import Definition


def test_rmsnorm_reference_matches_float64_formula(examples_dir: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    inputs = make_inputs(task.definition, task.workloads[1], seed=2)
    out = run_reference(task.definition, inputs)["y"]
    x, w = inputs["x"].double(), inputs["weight"].double()
    expected = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w
    assert torch.allclose(out.double(), expected, atol=1e-5, rtol=1e-5)


def test_fresh_namespace_per_load(examples_dir: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    first, second = load_reference(task.definition), load_reference(task.definition)
    assert first is not second and first.__globals__ is not second.__globals__
    first.__globals__["torch"] = None  # a poisoned namespace does not leak into the next load
    assert load_reference(task.definition).__globals__["torch"] is torch


def test_reference_that_fails_to_load_is_bad_input(examples_dir: Path) -> None:
    data = json.loads((examples_dir / "rmsnorm/definition.json").read_text())
    data["reference"] = "import no_such_module_kloop\n\ndef run(x, weight):\n    return x\n"
    with pytest.raises(BadInput, match="reference failed to load: ModuleNotFoundError"):
        load_reference(Definition.model_validate(data))
    data["reference"] = "run = 3\ndef run_(x):\n    pass\ndef run(x, weight):\n    pass\nrun = 4\n"
    with pytest.raises(BadInput, match="callable 'run'"):
        load_reference(Definition.model_validate(data))


def test_outputs_as_dict_accepts_tensor_tuple_dict_and_rejects_wrong_counts(shared_fixtures: Path) -> None:
    path = shared_fixtures / "flashinfer-trace/definitions/gdn_decode_qk4_v8_d128_k_last.json"
    definition = Definition.model_validate_json(path.read_text())
    a, b = torch.zeros(1), torch.ones(1)
    assert list(outputs_as_dict(definition, (a, b))) == ["output", "new_state"]
    assert outputs_as_dict(definition, {"new_state": b, "output": a})["output"] is a
    with pytest.raises(ValueError, match="returned 1 values"):
        outputs_as_dict(definition, a)


def test_gdn_fixture_runs_on_cpu_with_optional_state_and_scalar_scale(shared_fixtures: Path) -> None:
    path = shared_fixtures / "flashinfer-trace/definitions/gdn_decode_qk4_v8_d128_k_last.json"
    definition = Definition.model_validate_json(path.read_text())
    from kloop.task.schema import Workload
    from kloop.task.shapes import check_workload

    workload = Workload.model_validate({
        "uuid": "gdn-cpu", "axes": {"batch_size": 2},
        "inputs": {n: {"type": "random"} for n in definition.inputs if n not in ("state", "scale")}
        | {"scale": {"type": "scalar", "value": 0.0}},
    })  # fmt: skip
    axes = check_workload(definition, workload, "test")
    inputs = make_inputs(definition, workload, seed=8)
    assert inputs["state"] is None and inputs["scale"] == 0.0
    assert inputs["q"].shape == (2, 1, 4, 128) and inputs["q"].dtype == torch.bfloat16
    outputs = run_reference(definition, inputs)
    assert outputs["output"].shape == (2, 1, 8, 128) and outputs["new_state"].shape == (2, 8, 128, 128)
    assert torch.isfinite(outputs["new_state"]).all()
    assert axes["num_v_heads"] == 8
