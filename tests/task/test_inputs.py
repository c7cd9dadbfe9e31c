"""Input generation: deterministic per seed, sensible per dtype, scalars, safetensors, held-out draws."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from kloop.errors import BadInput
from kloop.task.inputs import heldout_workloads, make_inputs, random_tensor
from kloop.task.load import load_fib_task, load_task
from kloop.task.schema import Definition, DType, InputRange, Workload
from kloop.task.shapes import check_constraints


def _definition(inputs: dict, axes: dict | None = None, **extra: object) -> Definition:
    names = ", ".join(inputs)
    return Definition.model_validate({
        "name": "probe", "op_type": "test",
        "axes": axes or {"n": {"type": "var"}, "c": {"type": "const", "value": 8}},
        "inputs": inputs, "outputs": {"out": {"shape": ["n", "c"], "dtype": "float32"}},
        "reference": f"def run({names}):\n    return None\n", **extra,
    })  # fmt: skip


def test_same_seed_same_tensors_other_seed_differs(examples_dir: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    w = task.workloads[2]
    a = make_inputs(task.definition, w, seed=11, task_root=task.root)
    b = make_inputs(task.definition, w, seed=11, task_root=task.root)
    c = make_inputs(task.definition, w, seed=12, task_root=task.root)
    assert list(a) == ["x", "weight"]
    assert a["x"].shape == (64, 2048) and a["x"].dtype == torch.float32
    assert torch.equal(a["x"], b["x"]) and torch.equal(a["weight"], b["weight"])
    assert not torch.equal(a["x"], c["x"])
    # the definition's input range for weight is honoured; x is standard normal
    assert a["weight"].min().item() >= 0.5 and a["weight"].max().item() < 1.5
    assert abs(a["x"].std().item() - 1.0) < 0.05


@pytest.mark.parametrize("dtype", [d for d in DType if d is not DType.FLOAT4_E2M1])
def test_every_dtype_generates_sensible_values(dtype: DType) -> None:
    tensor = random_tensor((64, 32), dtype, seed=3)
    assert str(tensor.dtype) == f"torch.{dtype.value}"
    as_float = tensor.float()
    assert torch.isfinite(as_float).all()
    if dtype.is_float:
        assert as_float.std() > 0.5  # not all zeros or a constant
    elif dtype is DType.BOOL:
        assert 0 < as_float.mean() < 1
    else:
        assert as_float.min() >= 0 and as_float.max() <= 15 and as_float.unique().numel() > 4


def test_int_ranges_are_inclusive_and_float4_is_refused() -> None:
    ints = random_tensor((4096,), DType.INT32, seed=1, value_range=InputRange(low=-3, high=3))
    assert set(ints.tolist()) == set(range(-3, 4))
    with pytest.raises(BadInput, match="float4_e2m1"):
        random_tensor((4,), DType.FLOAT4_E2M1, seed=1)


def test_scalar_optional_and_shapeless_random_inputs() -> None:
    definition = _definition({
        "x": {"shape": ["n", "c"], "dtype": "bfloat16"},
        "state": {"shape": ["n", "c"], "dtype": "float32", "optional": True},
        "eps": {"shape": None, "dtype": "float32"},
        "k": {"shape": None, "dtype": "int32"},
    })  # fmt: skip
    workload = Workload.model_validate({
        "uuid": "w", "axes": {"n": 3},
        "inputs": {"x": {"type": "random"}, "eps": {"type": "scalar", "value": 1}, "k": {"type": "random"}},
    })  # fmt: skip
    inputs = make_inputs(definition, workload, seed=0)
    assert inputs["x"].shape == (3, 8) and inputs["x"].dtype == torch.bfloat16
    assert inputs["state"] is None
    assert inputs["eps"] == 1.0 and isinstance(inputs["eps"], float)
    assert isinstance(inputs["k"], int)


def test_safetensors_inputs_load_and_are_checked(tmp_path: Path) -> None:
    definition = _definition({"x": {"shape": ["n", "c"], "dtype": "float32"}})
    tensor = torch.arange(16, dtype=torch.float32).reshape(2, 8)
    (tmp_path / "blob").mkdir()
    save_file({"x0": tensor}, str(tmp_path / "blob" / "x.safetensors"))

    def workload(n: int, key: str = "x0") -> Workload:
        spec = {"type": "safetensors", "path": "blob/x.safetensors", "tensor_key": key}
        return Workload.model_validate({"uuid": "w", "axes": {"n": n}, "inputs": {"x": spec}})

    loaded = make_inputs(definition, workload(2), seed=0, task_root=tmp_path)
    assert torch.equal(loaded["x"], tensor)
    with pytest.raises(BadInput, match=r"has shape \(2, 8\), expected \(3, 8\)"):
        make_inputs(definition, workload(3), seed=0, task_root=tmp_path)
    with pytest.raises(BadInput, match="no tensor 'nope'"):
        make_inputs(definition, workload(2, "nope"), seed=0, task_root=tmp_path)
    (tmp_path / "blob" / "x.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(BadInput, match="not a readable safetensors file"):
        make_inputs(definition, workload(2), seed=0, task_root=tmp_path)


def test_fp8_gemm_style_inputs_cast_from_float(shared_fixtures: Path) -> None:
    task = load_fib_task(shared_fixtures / "flashinfer-trace", "gemm_n4096_k4096")
    data = json.loads(task.definition.model_dump_json())
    data["axes"]["K"]["value"] = 16
    data["inputs"]["A"]["dtype"] = "float8_e4m3fn"
    small = Definition.model_validate(data)
    inputs = make_inputs(small, task.workloads[-1], seed=5)
    assert inputs["A"].dtype == torch.float8_e4m3fn and inputs["A"].shape == (task.workloads[-1].axes["M"], 16)
    assert inputs["A"].float().abs().max() > 0.5


def test_heldout_values_are_new_within_rules_and_respect_constraints(examples_dir: Path) -> None:
    task = load_task(examples_dir / "rmsnorm")
    listed = {w.axes["tokens"] for w in task.workloads}
    drawn = heldout_workloads(task.definition, task.workloads, seed=4, count=5)
    assert len(drawn) == 5
    for w in drawn:
        assert w.axes["tokens"] not in listed and 1 <= w.axes["tokens"] <= 384  # kloop.heldout.axes
        assert w.uuid.startswith("heldout-")
    assert [w.axes for w in drawn] == [w.axes for w in heldout_workloads(task.definition, task.workloads, seed=4, count=5)]

    definition = _definition(
        {"x": {"shape": ["n", "m"], "dtype": "float32"}},
        axes={"n": {"type": "var"}, "m": {"type": "var"}, "c": {"type": "const", "value": 8}},
        constraints=["n % 4 == 0", "m <= n"],
    )
    listed_w = [Workload.model_validate({"uuid": f"w{n}", "axes": {"n": n, "m": n // 2}, "inputs": {"x": {"type": "random"}}})
                for n in (16, 64, 128)]  # fmt: skip
    drawn = heldout_workloads(definition, listed_w, seed=9, count=4)
    assert drawn, "perturbation should find values that satisfy the constraints"
    for w in drawn:
        check_constraints(definition, {**w.axes, "c": 8}, "test")
        assert (w.axes["n"], w.axes["m"]) not in {(16, 8), (64, 32), (128, 64)}


def test_ranges_beyond_a_dtype_are_clamped_not_wrapped_or_nan() -> None:
    fp8 = random_tensor((256,), DType.FLOAT8_E4M3FN, seed=2, value_range=InputRange(low=-2000, high=2000))
    assert torch.isfinite(fp8.float()).all() and fp8.float().abs().max() == 448
    int8 = random_tensor((256,), DType.INT8, seed=2, value_range=InputRange(low=-1000, high=1000))
    assert int8.min() >= -128 and int8.max() <= 127 and int8.unique().numel() > 100
    with pytest.raises(BadInput, match="holds no int32 value"):
        random_tensor((4,), DType.INT32, seed=1, value_range=InputRange(low=0.2, high=0.8))
