"""Where a numerical rejection sits and what it looks like, in one short clause.

A count of elements outside tolerance says *that* an output is wrong; a writer fixing it needs
*where* and *how*: the worst element with both values, whether the mismatches sit in a few
slices along one dim (one row, the last columns), and whether the whole output is the reference
shifted by a constant, multiplied by one, transposed, or zero. Runs on the supervisor, on the
float64 tensors the comparator already holds.
"""

from __future__ import annotations

from typing import Any

FIT = 1e-6
"""Relative residual below which a candidate counts as an exact offset / scale of the reference."""


def locate(out: Any, ref: Any, bad: Any, allowed: Any) -> str:
    """A clause like `worst at [3, 17]: got 1.5, expected 0.5; all in row 3 of dim 0; looks like ...`."""
    import torch

    if out.numel() == 0 or not bool(bad.any()):
        return ""
    excess = torch.where(bad, (out - ref).abs().nan_to_num(float("inf")) - allowed, torch.full_like(out, -1.0))
    flat = int(excess.reshape(-1).argmax())
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), out.shape)] if out.dim() else []
    got, want = float(out.reshape(-1)[flat]), float(ref.reshape(-1)[flat])
    parts = [f"worst at {index}: got {got:.6g}, expected {want:.6g}"]
    where = _concentration(bad)
    if where:
        parts.append(where)
    shape = _pattern(out, ref, bad, allowed)
    if shape:
        parts.append(shape)
    return "; ".join(parts)


def _concentration(bad: Any) -> str:
    """The dim along which mismatches fill the fewest slices, when that is a small share of them."""
    if bad.dim() == 0:
        return ""
    best: tuple[float, int, list[int]] | None = None
    for dim in range(bad.dim()):
        size = bad.shape[dim]
        if size < 2:
            continue
        others = [d for d in range(bad.dim()) if d != dim]
        hit = bad.any(dim=others) if others else bad
        slices = [int(i) for i in hit.nonzero().reshape(-1)]
        share = len(slices) / size
        if share <= 0.34 and (best is None or share < best[0]):
            best = (share, dim, slices)
    if best is None:
        return ""
    _, dim, slices = best
    size = bad.shape[dim]
    role = {0: "row", 1: "column"}.get(dim, "index") if bad.dim() == 2 else "index"
    shown = ", ".join(str(i) for i in slices[:4]) + (", ..." if len(slices) > 4 else "")
    if len(slices) == 1:
        return f"all mismatches in {role} {shown} of dim {dim} (size {size})"
    tail = " (the last ones)" if slices == list(range(size - len(slices), size)) else ""
    return f"mismatches confined to {len(slices)} of {size} slices along dim {dim}{tail}: {role}s {shown}"


def _pattern(out: Any, ref: Any, bad: Any, allowed: Any) -> str:
    """Offset, scale, transposition or zeros: the first that explains the whole output."""
    import torch

    if not bool(torch.isfinite(out).all()) or not bool(torch.isfinite(ref).all()):
        return ""
    diff = out - ref
    norm = float(ref.abs().max()) or 1.0
    offset = float(diff.mean())
    if abs(offset) > FIT * norm and float((diff - offset).abs().max()) <= FIT * max(norm, abs(offset)):
        return f"looks like a constant offset: out = ref {'+' if offset > 0 else '-'} {abs(offset):.6g}"
    denom = float((ref * ref).sum())
    if denom > 0:
        factor = float((out * ref).sum()) / denom
        if abs(factor - 1) > FIT and float((out - factor * ref).abs().max()) <= FIT * norm * max(1.0, abs(factor)):
            return f"looks like a scale: out = {factor:.6g} * ref"
    for i in range(out.dim()):
        for j in range(i + 1, out.dim()):
            if out.shape[i] == 1 or out.shape[j] == 1:
                continue
            swapped = ref.transpose(i, j).reshape(out.shape)
            if bool(((out - swapped).abs() <= allowed.max()).all()):
                how = "transposed" if out.shape[i] == out.shape[j] else "transposed then reshaped"
                return f"looks like a transposition: out equals ref {how} (dims {i} and {j})"
    if bool((out[bad] == 0).all()):
        return "the candidate holds zeros where the reference does not (unwritten or skipped elements?)"
    return ""
