"""Structured random inputs: the `kloop.structured` spec and the tensors it draws.

Some inputs are not free numbers: an `indptr` must start at 0, never decrease and end at the
token count; page indices must stay below the page count; probability rows sum to one. A
definition says so under `"kloop": {"structured": {INPUT: SPEC}}`, and every draw the verifier
makes (listed workloads, held-out workloads, coverage regimes) follows it, with sizes that come
from the workload's own axes. Expressions are over axis names (`kloop.task.expr`, never `eval`).

| kind | tensor drawn |
| --- | --- |
| `indptr` | 1-D, `[0, ..., total]`, non-decreasing; random segment lengths summing to `total` (`nonempty`: each >= 1) |
| `index` | integers in `[low, high)`; `unique: true` draws without repetition while it can |
| `full` | every element equal to `value` |
| `probs` | non-negative rows along the last dim that sum to 1 (softmax of a normal draw) |
| `unit_norm` | rows along the last dim with L2 norm 1 |

No torch import at module level: the schema imports this module.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["StructuredInput", "draw_structured"]


class StructuredInput(BaseModel):
    """How to draw one structured input (see the module docstring for the kinds)."""

    model_config = ConfigDict(extra="forbid")  # kloop owns these keys

    kind: Literal["indptr", "index", "full", "probs", "unit_norm"]
    """What structure the input has."""
    total: str | None = None
    """`indptr`: the last value, an expression over axes (e.g. `num_kv_indices`)."""
    low: str = "0"
    """`index`: the smallest value (expression over axes)."""
    high: str | None = None
    """`index`: one past the largest value (expression over axes)."""
    unique: bool = False
    """`index`: no value twice (while `high - low` allows)."""
    nonempty: bool = False
    """`indptr`: every segment holds at least one element (while `total` allows), for references that read
    each segment's first entry (a page of every sequence)."""
    value: str | None = None
    """`full`: the value of every element (expression over axes)."""
    why: str = ""
    """Where the structure came from (the definition's constraint, name or description)."""


def _value(text: str | None, axes: dict[str, int], what: str) -> int:
    from kloop.errors import BadInput
    from kloop.task.expr import ExpressionError, evaluate

    if text is None:
        raise BadInput("kloop.structured", f"{what} is required for this kind")
    try:
        return int(evaluate(text, axes))
    except ExpressionError as exc:
        raise BadInput("kloop.structured", f"{what} {text!r}: {exc}") from None


def draw_structured(spec: StructuredInput, shape: tuple[int, ...], target: Any, axes: dict[str, int], gen: Any) -> Any:
    """One tensor of `shape` and torch dtype `target` with the structure `spec` asks for."""
    import torch

    if spec.kind == "indptr":
        total = max(0, _value(spec.total, axes, "total"))
        length = shape[0] if shape else 1
        inner = max(0, length - 2)
        if spec.nonempty and total >= length - 1:
            cuts = (torch.randperm(max(0, total - 1), generator=gen)[:inner] + 1).sort().values
        else:
            cuts = torch.randint(0, total + 1, (inner,), generator=gen).sort().values
        values = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.full((1,), total)])[:length]
        return values.reshape(shape).to(target)
    if spec.kind == "index":
        low, high = _value(spec.low, axes, "low"), _value(spec.high, axes, "high")
        count = 1
        for dim in shape:
            count *= dim
        span = max(1, high - low)
        if spec.unique and count <= span:
            values = torch.randperm(span, generator=gen)[:count] + low
        else:
            values = torch.randint(low, low + span, (count,), generator=gen)
        return values.reshape(shape).to(target)
    if spec.kind == "full":
        return torch.full(shape, _value(spec.value, axes, "value"), dtype=torch.int64).to(target)
    drawn = torch.randn(shape, generator=gen, dtype=torch.float32)
    if spec.kind == "probs":
        return torch.softmax(drawn, dim=-1).to(target)
    norm = drawn.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return (drawn / norm).to(target)
