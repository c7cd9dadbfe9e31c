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


# -- the float64 mode: the reference's own casts are raised, not only its inputs ---------------------
DOWNCASTS = '''import torch

def run(x):
    a = x.float() + x.to(torch.float32) + x.to("cpu", torch.bfloat16) + x.half().float()
    z = torch.zeros(x.shape, dtype=torch.float32) + torch.tensor(1.0)
    s = x.sum(dtype=torch.float32)
    bits = x.float().view(torch.int32) if x.dtype == torch.float32 else x.view(torch.int64)
    q = x.to(torch.float8_e4m3fn)
    return a + z + s, bits, q
'''


def test_float64_mode_raises_every_working_precision_cast() -> None:
    import torch

    from kloop.task.precision import run_float64

    namespace: dict = {}
    exec(DOWNCASTS, namespace)
    x = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
    out, bits, q = run_float64(namespace["run"], {"x": x})
    assert out.dtype == torch.float64  # .float(), .to(float32), .to(dev, bf16), .half(), zeros(dtype=), tensor(1.0), sum(dtype=)
    assert bits.dtype == torch.int64  # view(dtype) reinterprets bits: left alone (on the float64 tensor)
    assert q.dtype == torch.float8_e4m3fn  # a quantizer's rounding is its output: left alone
    assert torch.get_default_dtype() == torch.float32  # restored


SEEDED = """
import torch
import torch.nn as nn

def run(x):
    torch.manual_seed(0)  # a KernelBench import builds its model's weights under a fixed seed
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Conv1d(1, 2, 3), nn.Flatten(), nn.LayerNorm(12))
    emb = nn.Embedding(5, 3)
    noise = torch.randn(2) + torch.rand(2, dtype=torch.bfloat16).to(torch.float32)
    return model(x.unsqueeze(1)) + emb.weight.sum() + torch.empty(12).normal_().sum() + noise.sum()
"""


def test_seeded_random_draws_keep_their_native_values_in_float64() -> None:
    """A float64 draw from seed 0 is other numbers: the reference would run with other weights than the
    solution it judges (examples/kernelbench/mlp, 73,135 of 73,216 outputs off before)."""
    import torch

    from kloop.task.precision import run_float64

    namespace: dict = {}
    exec(SEEDED, namespace)
    x = torch.randn(3, 4)
    native = namespace["run"](x)
    raised = run_float64(namespace["run"], {"x": x})
    assert raised.dtype == torch.float64
    assert torch.allclose(raised, native.double(), rtol=1e-5, atol=1e-5), (raised - native.double()).abs().max()


def test_the_gdn_reference_in_float64_is_not_its_float32_answer(shared_fixtures: Path) -> None:
    """The issue's vacuous oracle: float64 inputs alone reproduce the float32 answer bit for bit."""
    import torch

    from kloop.task.load import load_definition
    from kloop.task.precision import run_float64, upcast
    from kloop.task.reference import load_reference

    definition = load_definition(shared_fixtures / "flashinfer-trace" / "definitions" / "gdn_decode_qk4_v8_d128_k_last.json")
    run = load_reference(definition)
    gen = torch.Generator().manual_seed(3)

    def draw(*shape: int, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(dtype)

    inputs = {"q": draw(1, 1, 4, 128), "k": draw(1, 1, 4, 128), "v": draw(1, 1, 8, 128),
              "state": draw(1, 8, 128, 128, dtype=torch.float32), "A_log": draw(8, dtype=torch.float32),
              "a": draw(1, 1, 8), "dt_bias": draw(8, dtype=torch.float32), "b": draw(1, 1, 8), "scale": 0.0}  # fmt: skip
    native = run(*inputs.values())
    inputs_only = run(*upcast(inputs).values())
    forced = run_float64(run, inputs)
    assert torch.equal(native[1], inputs_only[1]) and inputs_only[1].dtype == torch.float32  # casts itself back down
    assert forced[1].dtype == torch.float64 and not torch.equal(forced[1], native[1].double())
    assert float((forced[1] - native[1].double()).abs().max()) < 1e-3  # the same answer, more digits
