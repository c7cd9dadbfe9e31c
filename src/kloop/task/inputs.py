"""Deterministic input generation and held-out workloads.

Every input is drawn from its own `torch.Generator`, seeded from the verification seed and
the input's name, on the CPU and then moved to the device, so the same seed gives the same
tensors on every machine and adding an input does not change the others.
"""

from __future__ import annotations

import hashlib
import math
import random
from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.task.expr import ExpressionError, evaluate
from kloop.task.load import resolve_inside
from kloop.task.schema import (
    Definition,
    DType,
    HeldoutAxis,
    InputRange,
    RandomInput,
    SafetensorsInput,
    ScalarInput,
    TensorSpec,
    Workload,
)
from kloop.task.seeds import derive_seed
from kloop.task.shapes import resolve_axes

_INT_RANGE = InputRange(low=0, high=15)  # small, non-negative: safe as counts and most indices
NORMAL_MAX = 16.0
"""Above any value torch.randn can return: its Box-Muller draws in double reach sqrt(-2 ln 2^-53) = 8.6."""
_HELDOUT_TRIES = 200


def make_inputs(
    definition: Definition, workload: Workload, *, seed: int, device: str = "cpu", task_root: Path | str = ".",
    skip: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Inputs for one call, ordered as `definition.inputs` (absent optional inputs are None).

    Names in `skip` are left out: the caller draws them itself (`kloop.task.regimes`).
    """
    axes = resolve_axes(definition, workload)
    root = Path(task_root)  # once a call: the timing side makes a call's inputs per timed call
    inputs: dict[str, Any] = {}
    for name, spec in definition.inputs.items():
        if name in skip:
            continue
        source = workload.inputs.get(name)
        if source is None and spec.optional:
            inputs[name] = None
            continue
        shape = None if spec.shape is None else tuple(axes[a] for a in spec.shape)
        structure = definition.settings.structured.get(name)
        if structure is not None and shape is not None and isinstance(source or RandomInput(), RandomInput):
            inputs[name] = _to_device(_structured_tensor(structure, shape, spec.dtype, axes, seed, name), device)
            continue
        value = _make_one(definition, name, spec, shape, source or RandomInput(), seed, root)
        inputs[name] = _to_device(value, device)
    return inputs


def _make_one(
    definition: Definition,
    name: str,
    spec: TensorSpec,
    shape: tuple[int, ...] | None,
    source: RandomInput | ScalarInput | SafetensorsInput,
    seed: int,
    root: Path,
) -> Any:
    if isinstance(source, ScalarInput):
        return _scalar_value(spec.dtype, source.value, name)
    if isinstance(source, SafetensorsInput):
        return _load_safetensor(source, shape, spec.dtype, name, root)
    value_range = definition.settings.input_ranges.get(name)
    return random_tensor(shape, spec.dtype, seed=derive_seed(seed, name), value_range=value_range, name=name)


def _structured_tensor(structure: Any, shape: tuple[int, ...], dtype: DType, axes: dict[str, int], seed: int,
                       name: str) -> Any:  # fmt: skip
    """A random input that keeps its declared structure (`kloop.structured`), sized by this workload's axes."""
    import torch

    from kloop.task.structured import draw_structured

    gen = torch.Generator(device="cpu").manual_seed(derive_seed(seed, name))
    return draw_structured(structure, shape, torch_dtype(dtype, name), axes, gen)


def _scalar_value(dtype: DType, value: int | float | bool, name: str) -> int | float | bool:
    if dtype == DType.BOOL:
        return bool(value)
    if dtype.is_float:
        return float(value)
    if isinstance(value, float) and not value.is_integer():
        raise BadInput(f"input {name}", f"scalar {value} is not an integer but the dtype is {dtype.value}")
    return int(value)


def random_tensor(
    shape: tuple[int, ...] | None,
    dtype: DType,
    *,
    seed: int,
    value_range: InputRange | None = None,
    name: str = "input",
) -> Any:
    """A random tensor (or Python scalar when `shape` is None) sensible for `dtype`."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(seed)
    dims = shape if shape is not None else ()
    target = torch_dtype(dtype, name)
    if dtype == DType.BOOL:
        tensor = torch.randint(0, 2, dims, generator=gen, dtype=torch.int64).bool()
    elif dtype.is_float:
        finite = torch.finfo(target).max  # fp8 has no inf: out-of-range casts would be NaN
        if value_range is None:
            tensor = torch.randn(dims, generator=gen, dtype=torch.float32)
            if finite < NORMAL_MAX:  # no float dtype torch has: a normal draw never reaches 448
                tensor = tensor.clamp(-finite, finite)
        else:
            tensor = torch.rand(dims, generator=gen, dtype=torch.float32)
            tensor = tensor * (value_range.high - value_range.low) + value_range.low
            tensor = tensor.clamp(-finite, finite)
        tensor = tensor.to(target)
    else:
        bounds = value_range or _INT_RANGE
        info = torch.iinfo(target)
        low = max(math.ceil(bounds.low), info.min)
        high = min(math.floor(bounds.high), info.max)
        if high < low:
            raise BadInput(f"input {name}", f"input range [{bounds.low}, {bounds.high}] holds no {dtype.value} value")
        tensor = torch.randint(low, high + 1, dims, generator=gen, dtype=torch.int64).to(target)
    return tensor.item() if shape is None else tensor


def torch_dtype(dtype: DType, name: str = "tensor") -> Any:
    """The torch dtype for a FlashInfer-Trace dtype; BadInput when this torch lacks it."""
    import torch

    # float4_e2m1 has no unpacked torch dtype (torch packs two per byte), so kloop cannot make it.
    if dtype == DType.FLOAT4_E2M1 or not hasattr(torch, dtype.value):
        raise BadInput(f"input {name}", f"dtype {dtype.value} cannot be generated with this torch")
    return getattr(torch, dtype.value)


def _load_safetensor(
    source: SafetensorsInput, shape: tuple[int, ...] | None, dtype: DType, name: str, root: Path
) -> Any:
    from safetensors import SafetensorError
    from safetensors.torch import safe_open

    path = resolve_inside(root, source.path, f"input {name}", "safetensors file")
    try:
        with safe_open(str(path), framework="pt") as handle:
            if source.tensor_key not in handle.keys():  # noqa: SIM118 (safe_open has no __contains__)
                raise BadInput(path, f"no tensor {source.tensor_key!r} (input {name!r})")
            tensor = handle.get_tensor(source.tensor_key)
    except SafetensorError as exc:
        raise BadInput(path, f"not a readable safetensors file: {exc}") from None
    if tensor.dtype != torch_dtype(dtype, name):
        raise BadInput(path, f"tensor {source.tensor_key!r} is {tensor.dtype}, input {name!r} is {dtype.value}")
    if shape is not None and tuple(tensor.shape) != shape:
        raise BadInput(path, f"tensor {source.tensor_key!r} has shape {tuple(tensor.shape)}, expected {shape}")
    return tensor.item() if shape is None else tensor


def _to_device(value: Any, device: str) -> Any:
    if device == "cpu" or not hasattr(value, "to"):
        return value
    return value.to(device)


def heldout_workloads(
    definition: Definition, workloads: list[Workload], *, seed: int, count: int
) -> list[Workload]:
    """Up to `count` workloads whose var-axis values are not among the listed ones.

    Values come from `kloop.heldout.axes` rules when given, else by perturbing listed values.
    Constraints are respected; inputs are random (listed safetensors fit only their own shapes).
    """
    var_axes = definition.var_axes
    if not var_axes or not workloads or count <= 0:
        return []
    rng = random.Random(seed)
    rules = definition.settings.heldout.axes if definition.settings.heldout else {}
    listed = {tuple(w.axes[a] for a in var_axes) for w in workloads}
    drawn: list[Workload] = []
    for _ in range(_HELDOUT_TRIES):
        if len(drawn) >= count:
            break
        base = rng.choice(workloads)
        values = _derive_axes(definition, {a: _draw_axis(rng, base.axes[a], rules.get(a)) for a in var_axes})
        key = tuple(values[a] for a in var_axes)
        if key in listed or not _satisfies(definition, values):
            continue
        listed.add(key)
        inputs = {n: s if isinstance(s, ScalarInput) else RandomInput() for n, s in base.inputs.items()}
        uuid = f"heldout-{hashlib.sha256(repr((seed, key)).encode()).hexdigest()[:12]}"
        drawn.append(Workload(axes=values, inputs=inputs, uuid=uuid))
    return drawn


def _derive_axes(definition: Definition, values: dict[str, int]) -> dict[str, int]:
    """Var axes a constraint defines (`len_indptr == batch_size + 1`) follow the drawn ones."""
    full = {**definition.const_axes, **values}
    for text in definition.constraints:
        left, sep, right = text.partition("==")
        target = left.strip()
        if not sep or target not in values or "==" in right or "=" in right.strip()[:1]:
            continue
        try:
            derived = evaluate(right, full)
        except ExpressionError:
            continue
        if isinstance(derived, int | float) and float(derived).is_integer() and derived >= 0:
            values[target] = full[target] = int(derived)
    return values


def _draw_axis(rng: random.Random, listed_value: int, rule: HeldoutAxis | None) -> int:
    if rule is not None and rule.choices:
        return rng.choice(rule.choices)
    if rule is not None and (rule.min is not None or rule.max is not None):
        low = rule.min if rule.min is not None else 1
        high = rule.max if rule.max is not None else max(low, 2 * listed_value)
        value = rng.randint(low, max(low, high))
    else:
        spread = max(1, listed_value // 4)
        value = max(1, listed_value + rng.randint(-spread, spread))
    step = rule.multiple_of if rule is not None and rule.multiple_of else 1
    return max(step, value - value % step)


def _satisfies(definition: Definition, axes: dict[str, int]) -> bool:
    full = {**definition.const_axes, **axes}
    try:
        return all(bool(evaluate(text, full)) for text in definition.constraints)
    except ExpressionError:
        return False


# -- input coverage: see kloop.task.regimes (COVERAGE_REGIMES, coverage_regimes, coverage_inputs) ------------
