"""`kloop.reference_float64` decides whether the supervisor runs the reference on float64 inputs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kloop.task.load import load_task
from kloop.task.schema import Definition
from kloop.verify.checks import CheckBook
from kloop.verify.workload import WorkloadJudge

RELU = Path(__file__).parent / "tasks" / "relu_unit"
# a reference that says which precision it was handed
TELLS = "import torch\n\ndef run(x):\n    return torch.full_like(x, 1.0 if x.dtype == torch.float64 else 2.0)\n"


@pytest.mark.parametrize(("setting", "expected"), [(None, 1.0), (True, 1.0), (False, 2.0)])
def test_reference_precision_follows_the_definition(setting: bool | None, expected: float) -> None:
    task = load_task(RELU)
    data = task.definition.model_dump(mode="json", exclude_none=True)
    data["reference"] = TELLS
    if setting is not None:
        data["kloop"] = {**data.get("kloop", {}), "reference_float64": setting}
    task = dataclasses.replace(task, definition=Definition.model_validate(data))
    judge = WorkloadJudge(task, CheckBook(), seed=7, dps=True)
    inputs, axes = judge.inputs_for(task.workloads[0])
    outputs = judge.reference_outputs(inputs, axes, "w0")
    assert float(outputs["y"].flatten()[0]) == expected
