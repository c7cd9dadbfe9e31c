"""Naming a KernelBench problem's axes from what the problem itself says, never from coincidence.

An input dim is named after the variable `get_inputs()` passed to its factory call (`kb_source`);
failing that, after the one size variable of that value it reads; failing that, by its role
(`x_dim2`). An output dim is tied to an input axis only by evidence: on the meta device (shapes
only, no memory), each input axis is doubled in turn and forward re-run; an output dim that
doubles with exactly one axis *is* that axis. Dims no probe moves take the input axis at the same
position when the size agrees and that axis could not be probed (LayerNorm's `features`), else
the one other module integer of that size (`out_features`), else a role name (`output_dim1`).
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Any

from kloop.task import kb_source

RESERVED = {"run", "torch", "args"}
Probes = dict[str, list[list[int] | None] | None]
"""Input axis -> the output shapes with that axis doubled (None: the model refused the change)."""


@dataclass
class Axes:
    """Axis name -> size, plus the symbolic shape of every input and output."""

    sizes: dict[str, int]
    inputs: list[list[str] | None]
    outputs: list[list[str] | None]
    weights: dict[str, list[str]] = field(default_factory=dict)


def name_axes(source: str, namespace: dict[str, Any], input_names: list[str], inputs: list[Any],
              output_names: list[str], outputs: list[Any]) -> Axes:  # fmt: skip
    """The axes of one (already scaled) problem: inputs from the source, outputs from meta probes."""
    sizes = kb_source.module_sizes(source)
    axes: dict[str, int] = {}
    shapes = _input_axes(source, sizes, input_names, inputs, axes)
    probes = _probe(namespace, inputs, shapes, axes)
    module_by_value: dict[int, set[str]] = {}
    for var, n in sizes.ints.items():
        module_by_value.setdefault(n, set()).add(var)
    out_shapes = [_output_axes(i, o, name, axes, inputs, shapes, probes, module_by_value)
                  for i, (name, o) in enumerate(zip(output_names, outputs, strict=True))]  # fmt: skip
    return Axes(sizes=axes, inputs=shapes, outputs=out_shapes)


def _input_axes(source: str, sizes: kb_source.ModuleSizes, names: list[str], inputs: list[Any],
                axes: dict[str, int]) -> list[list[str] | None]:  # fmt: skip
    import torch

    hints = kb_source.input_dim_names(source, sizes) or []
    by_value: dict[int, set[str]] = {}
    for var in kb_source.input_size_names(source, sizes):
        if var in sizes.ints:
            by_value.setdefault(sizes.ints[var], set()).add(var)
    shapes: list[list[str] | None] = []
    for i, (tensor_name, value) in enumerate(zip(names, inputs, strict=True)):
        if not isinstance(value, torch.Tensor):
            shapes.append(None)
            continue
        hint = hints[i] if i < len(hints) and len(hints[i]) == value.dim() else [None] * value.dim()
        shape = []
        for k, n in enumerate(int(s) for s in value.shape):
            by_size = by_value.get(n, set())
            candidate = hint[k] or (next(iter(by_size)) if len(by_size) == 1 and n > 1 else None)
            if candidate is None or candidate in RESERVED or axes.get(candidate, n) != n:
                candidate = f"{tensor_name}_dim{k}"
            axes[candidate] = n
            shape.append(candidate)
        shapes.append(shape)
    return shapes


def _meta_shapes(namespace: dict[str, Any], inputs: list[Any], shapes: list[list[str] | None],
                 sizes: dict[str, int]) -> list[list[int] | None] | None:  # fmt: skip
    """Output shapes of forward on meta inputs of the given sizes (None when the model refuses them)."""
    import torch

    with torch.device("meta"), torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = [torch.empty([sizes[a] for a in s], dtype=t.dtype) if s is not None else t
                    for t, s in zip(inputs, shapes, strict=True)]  # fmt: skip
            model = namespace["Model"](*namespace["get_init_inputs"]())
            result = model(*args)
        except Exception:
            return None
    outs = list(result) if isinstance(result, tuple | list) else [result]
    return [list(o.shape) if isinstance(o, torch.Tensor) else None for o in outs]


def _probe(namespace: dict[str, Any], inputs: list[Any], shapes: list[list[str] | None], axes: dict[str, int]) -> Probes:
    if _meta_shapes(namespace, inputs, shapes, axes) is None:
        return {}
    return {a: _meta_shapes(namespace, inputs, shapes, {**axes, a: 2 * v}) for a, v in axes.items()}


def _output_axes(index: int, value: Any, name: str, axes: dict[str, int], tensors: list[Any],
                 shapes: list[list[str] | None], probes: Probes, module_by_value: dict[int, set[str]]) -> list[str]:  # fmt: skip
    input_axes = {a for s in shapes if s for a in s}
    shape = []
    for k, n in enumerate(int(s) for s in value.shape):
        moved = {a for a, outs in probes.items() if outs is not None and outs[index] is not None
                 and len(outs[index]) == value.dim() and outs[index][k] != n}  # fmt: skip
        tracks = [a for a in moved if axes[a] == n and probes[a][index][k] == 2 * n]  # type: ignore[index]
        same_place = [s[k] for t, s in zip(tensors, shapes, strict=True)
                      if s and len(s) == value.dim() and int(t.shape[k]) == n and probes.get(s[k], None) is None]  # fmt: skip
        unused = sorted(v for v in module_by_value.get(n, set()) - input_axes - RESERVED if axes.get(v, n) == n)
        if len(moved) == 1 and len(tracks) == 1:
            candidate = tracks[0]
        elif not moved and same_place:
            candidate = same_place[0]
        elif not moved and n > 1 and len(unused) == 1:
            candidate = unused[0]  # the one other module integer of this size (`out_features`, `out_channels`)
        else:
            candidate = f"{name}_dim{k}"
        axes[candidate] = n
        shape.append(candidate)
    return shape
