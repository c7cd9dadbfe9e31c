"""Axes, shapes, constraints and the per-output numbers the verifier needs (no torch).

Var axes come from the workload, const axes from the definition; constraints and the
`kloop.flops` expression are evaluated with the restricted evaluator in `kloop.task.expr`.
"""

from __future__ import annotations

import math
from pathlib import Path

from kloop.errors import BadInput
from kloop.task.expr import ExpressionError, evaluate
from kloop.task.schema import (
    ComparatorName,
    Definition,
    DType,
    ScalarInput,
    Tolerance,
    ToleranceSpec,
    Workload,
)

# DESIGN.md defaults, by output dtype, when the definition gives none.
_DEFAULT_TOLERANCE: dict[DType, tuple[float, float]] = {
    DType.FLOAT32: (1e-4, 1e-4),
    DType.FLOAT16: (1e-2, 1e-2),
    DType.BFLOAT16: (1e-2, 1e-2),
    DType.FLOAT8_E4M3FN: (1e-1, 1e-1),
    DType.FLOAT8_E5M2: (1e-1, 1e-1),
    DType.FLOAT4_E2M1: (1e-1, 1e-1),
}


def check_workload(definition: Definition, workload: Workload, where: str | Path) -> dict[str, int]:
    """Check a workload against its definition; returns the resolved axes or raises BadInput."""
    for axis, value in workload.axes.items():
        if axis not in definition.axes:
            raise BadInput(where, f"workload {workload.uuid!r} gives unknown axis {axis!r}")
        const = definition.const_axes.get(axis)
        if const is not None and const != value:
            raise BadInput(where, f"workload gives const axis {axis!r} = {value}, definition says {const}")
    if missing := [a for a in definition.var_axes if a not in workload.axes]:
        raise BadInput(where, f"workload {workload.uuid!r} lacks var axes {missing}")
    for name, spec in workload.inputs.items():
        tensor = definition.inputs.get(name)
        if tensor is None:
            raise BadInput(where, f"workload {workload.uuid!r} names unknown input {name!r}")
        if isinstance(spec, ScalarInput) and tensor.shape is not None:
            raise BadInput(where, f"input {name!r} is a tensor but the workload gives a scalar")
    absent = [n for n, t in definition.inputs.items() if n not in workload.inputs and not t.optional]
    if absent:
        raise BadInput(where, f"workload {workload.uuid!r} gives no source for inputs {absent}")
    axes = resolve_axes(definition, workload)
    check_constraints(definition, axes, where)
    return axes


def resolve_axes(definition: Definition, workload: Workload) -> dict[str, int]:
    """Every axis's value: const ones from the definition, var ones from the workload."""
    axes = dict(definition.const_axes)
    for name in definition.var_axes:
        if name not in workload.axes:
            raise BadInput(f"workload {workload.uuid}", f"no value for var axis {name!r}")
        axes[name] = workload.axes[name]
    return axes


def check_constraints(definition: Definition, axes: dict[str, int], where: str | Path) -> None:
    """Raise BadInput naming the first constraint the axis values violate."""
    for text in definition.constraints:
        if not constraint_holds(text, axes, where):
            shown = ", ".join(f"{k}={v}" for k, v in axes.items())
            raise BadInput(where, f"constraint {text!r} does not hold for {shown}")


def constraint_holds(text: str, axes: dict[str, int], where: str | Path) -> bool:
    """Evaluate one constraint; a constraint that cannot be evaluated is the task's error."""
    try:
        return bool(evaluate(text, axes))
    except ExpressionError as exc:
        raise BadInput(where, f"constraint: {exc}") from None


def tensor_shapes(definition: Definition, axes: dict[str, int]) -> dict[str, tuple[int, ...] | None]:
    """Concrete shapes of inputs then outputs (None for scalars)."""
    return {
        name: None if spec.shape is None else tuple(axes[a] for a in spec.shape)
        for name, spec in {**definition.inputs, **definition.outputs}.items()
    }


def tolerance_for(definition: Definition, output_name: str) -> Tolerance:
    """The tolerance for one output: dtype defaults, then the definition's overrides."""
    dtype = definition.outputs[output_name].dtype
    settings = definition.settings
    if dtype not in _DEFAULT_TOLERANCE:
        return Tolerance(atol=0.0, rtol=0.0, exact=True)
    atol, rtol = _DEFAULT_TOLERANCE[dtype]
    resolved = Tolerance(atol=atol, rtol=rtol)
    for spec in (settings.tolerance, settings.output_tolerance.get(output_name)):
        if spec is not None:
            resolved = _merge(resolved, spec)
    return resolved


def _merge(base: Tolerance, spec: ToleranceSpec) -> Tolerance:
    update = {k: v for k, v in spec.model_dump().items() if v is not None}
    return base.model_copy(update=update)


def comparator_for(definition: Definition, output_name: str) -> ComparatorName:
    """How one output is compared: the per-output comparator, else the definition's default."""
    settings = definition.settings
    return settings.comparators.get(output_name, settings.comparator)


def flops_for(definition: Definition, axes: dict[str, int]) -> float | None:
    """FLOPs of one call from `kloop.flops`, or None when the definition does not say."""
    text = definition.settings.flops
    if text is None:
        return None
    try:
        value = float(evaluate(text, axes))
    except (ExpressionError, OverflowError, TypeError, ValueError) as exc:
        raise BadInput(f"definition {definition.name}", f"kloop.flops: {exc}") from None
    if not math.isfinite(value) or value < 0:
        raise BadInput(f"definition {definition.name}", f"kloop.flops evaluates to {value}")
    return value


def min_bytes_for(definition: Definition, axes: dict[str, int]) -> int:
    """Bytes every correct kernel must move at least: all tensor inputs read, all outputs written."""
    total = 0.0
    for spec in (*definition.inputs.values(), *definition.outputs.values()):
        if spec.shape is None:
            continue
        total += math.prod(axes[a] for a in spec.shape) * spec.dtype.itemsize
    return int(math.ceil(total))
