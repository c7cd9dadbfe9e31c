"""Comparators: candidate output vs the supervisor's (float64 where possible) reference.

Rule (DESIGN): |out - ref| <= atol + rtol * |ref| for at least `matched_ratio` of the elements,
no element's error above `max_error_cap`, and NaN/Inf where the reference is finite always fails.
Order-free comparators sort (or sort-and-match) along the last axis first.

An output in a float dtype of 8 bits or fewer may also sit on the grid point next to the
reference's: the reference rounds to that grid too (a quantizer's cast is its meaning), so an
honest kernel whose float32 value lands a rounding error away from a tie rounds the other way.
One e4m3 step is 12.5 % of the value at the bottom of each binade, more than the default 1e-1.
Where the reference is NaN or inf the output must be the same: no tolerance applies there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kloop.task.schema import ComparatorName, Tolerance
from kloop.verify.locate import locate
from kloop.verify.threads import single_threaded


@dataclass
class Comparison:
    """Outcome of comparing one output tensor."""

    finite: bool
    numeric: bool
    max_abs_error: float
    max_rel_error: float
    mismatched: int
    total: int
    detail: str


def _order_free(out: Any, ref: Any, comparator: ComparatorName) -> tuple[Any, Any]:
    if comparator is ComparatorName.ALLCLOSE or out.dim() == 0:
        return out, ref
    return out.sort(dim=-1).values, ref.sort(dim=-1).values


@single_threaded
def compare(out: Any, ref: Any, tolerance: Tolerance, comparator: ComparatorName) -> Comparison:
    """Compare `out` (any dtype) against `ref`; both are CPU tensors of the same shape."""
    import torch

    total = out.numel()
    if comparator is ComparatorName.SET_EQUAL or tolerance.exact or not out.dtype.is_floating_point:
        return _compare_exact(out, ref, comparator, total)
    o = out.to(torch.float64)
    r = ref.to(torch.float64)
    o, r = _order_free(o, r, comparator)
    diff = (o - r).abs()
    abs_r = r.abs()
    allowed = abs_r.mul(tolerance.rtol).add_(tolerance.atol)
    if out.dtype.itemsize == 1:
        allowed = torch.maximum(allowed, grid_step(o, r, out.dtype))
    if total and tolerance.atol >= 0 and tolerance.rtol >= 0 and bool(torch.isfinite(diff).all()):
        bad_nonfinite, ok, max_abs, max_rel = _finite_gaps(diff, abs_r, allowed)
    else:
        bad_nonfinite, ok, max_abs, max_rel = _special_gaps(o, r, diff, allowed, total)
    mismatched = total - int(ok.sum())
    matched_ratio = 1.0 - mismatched / total if total else 1.0
    numeric = matched_ratio >= tolerance.matched_ratio
    if tolerance.max_error_cap is not None and max_abs > tolerance.max_error_cap:
        numeric = False
    finite = bad_nonfinite == 0
    detail = (
        f"{mismatched}/{total} elements outside atol={tolerance.atol:g} rtol={tolerance.rtol:g}"
        f" (max abs err {max_abs:.3g}, max rel err {max_rel:.3g})"
    )
    if not finite:
        detail = f"{bad_nonfinite}/{total} NaN/Inf elements where the reference is finite"
    if not (numeric and finite):
        where = locate(o, r, ~ok, allowed)
        detail += f"; {where}" if where else ""
    return Comparison(finite, numeric and finite, max_abs, max_rel, mismatched, total, detail)


def grid_step(o: Any, r: Any, dtype: Any) -> Any:
    """Per element, the spacing of `dtype`'s grid at the smaller of |o| and |r| (float64): the
    two are neighbours on that grid exactly when they are this far apart. Where either is NaN or
    inf the step means nothing; `_special_gaps` decides those elements."""
    import torch

    info = torch.finfo(dtype)
    low = torch.minimum(o.abs(), r.abs()).clamp(min=info.smallest_normal)  # subnormals share one step
    _, exponent = torch.frexp(low)  # low = m * 2**exponent, m in [0.5, 1)
    return torch.ldexp(torch.full_like(low, info.eps), exponent - 1)


def _finite_gaps(diff: Any, abs_r: Any, allowed: Any) -> tuple[int, Any, float, float]:
    """`_special_gaps` where every |out - ref| is finite (so both are: inf or NaN on either side
    makes the difference non-finite), in half the passes over the tensors: no NaN or inf to pair
    up, and out == ref exactly where the difference is 0 (IEEE subtraction with subnormals), which
    a non-negative tolerance already allows. Same counts and maxima as the general path."""
    ok = diff <= allowed
    max_abs = float(diff.max())
    rel = diff.div(abs_r).masked_fill_(abs_r == 0, 0.0)  # relative error only where the reference is non-zero
    return 0, ok, max_abs, float(rel.max())


def _special_gaps(o: Any, r: Any, diff: Any, allowed: Any, total: int) -> tuple[int, Any, float, float]:
    """Elements outside the tolerance, largest absolute and relative error, NaN/inf paired up:
    (outputs non-finite where the reference is finite, ok mask, max abs, max rel)."""
    import torch

    ref_finite = torch.isfinite(r)
    bad_nonfinite = int((~torch.isfinite(o) & ref_finite).sum())
    same_special = (o == r) | (torch.isnan(o) & torch.isnan(r))  # inf == inf, nan where ref is nan
    diff = torch.where(same_special, torch.zeros_like(diff), diff)
    diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
    # Where the reference is inf, atol + rtol*|ref| is inf too and would excuse any output: NaN,
    # the other inf, a finite value. A non-finite reference is matched exactly or not at all.
    ok = ((diff <= allowed) & ref_finite) | same_special
    max_abs = float(diff.max()) if total else 0.0
    nonzero = r.abs() > 0
    max_rel = float((diff[nonzero] / r.abs()[nonzero]).max()) if bool(nonzero.any()) else 0.0
    return bad_nonfinite, ok, max_abs, max_rel


def _compare_exact(out: Any, ref: Any, comparator: ComparatorName, total: int) -> Comparison:
    import torch

    o, r = out, ref.to(out.dtype) if ref.dtype != out.dtype else ref
    if comparator is not ComparatorName.ALLCLOSE and o.dim() > 0:
        o, r = o.sort(dim=-1).values, r.sort(dim=-1).values
    finite = True
    if o.dtype.is_floating_point:
        finite = int((~torch.isfinite(o) & torch.isfinite(r)).sum()) == 0
    equal = (o == r) | (torch.isnan(o) & torch.isnan(r)) if o.dtype.is_floating_point else o == r
    mismatched = int((~equal).sum())
    diff = (o.to(torch.float64) - r.to(torch.float64)).abs()
    max_abs = float(diff.nan_to_num(float("inf")).max()) if total else 0.0
    detail = f"{mismatched}/{total} elements differ (exact comparison, {comparator.value})"
    return Comparison(finite, mismatched == 0 and finite, max_abs, max_abs, mismatched, total, detail)


@single_threaded
def unwritten(out_a: Any, out_b: Any, poison: tuple[list[float], list[float]]) -> int:
    """Elements still holding the two runs' poison patterns: never written by the candidate."""
    import torch

    if out_a.shape != out_b.shape or out_a.dtype != out_b.dtype or out_a.numel() == 0:
        return 0
    dtype = out_a.dtype
    if dtype == torch.bool:
        return 0  # one bit cannot hold two distinct poisons; determinism covers it
    index = 0 if dtype.is_floating_point else 1
    pa = torch.tensor(poison[0][index], dtype=torch.float64).to(dtype)
    pb = torch.tensor(poison[1][index], dtype=torch.float64).to(dtype)
    return int(((out_a == pa) & (out_b == pb)).sum())


@single_threaded
def left_poisoned(out: Any, ref: Any, poison: list[float], tolerance: Tolerance, comparator: ComparatorName) -> int:
    """Elements of a single run still holding its poison where the reference is not that value: never written.

    One run cannot tell an unwritten element from a computed value equal to the poison (`unwritten`
    needs two runs for that). Where the reference is within the tolerance of the poison the element
    is right whichever it is, so only wrong elements are counted, as unwritten rather than as a
    numeric miss. Order-free comparators count by value: poison-valued outputs beyond the
    reference's elements near the poison.
    """
    import torch

    if out.numel() == 0 or out.dtype == torch.bool or out.is_complex() or out.shape != ref.shape:
        return 0  # one bit holds no poison; a complex output's values are judged by the comparison alone
    p = torch.tensor(poison[0 if out.dtype.is_floating_point else 1], dtype=torch.float64).to(out.dtype)
    held = out == p
    if not bool(held.any()):
        return 0
    r, value = ref.to(torch.float64), float(p)
    if tolerance.exact or not out.dtype.is_floating_point or comparator is ComparatorName.SET_EQUAL:
        near = r == value
    else:
        allowed = r.abs().mul(tolerance.rtol).add_(tolerance.atol)
        if out.dtype.itemsize == 1:
            allowed = torch.maximum(allowed, grid_step(torch.full_like(r, value), r, out.dtype))
        near = (r - value).abs() <= allowed
    if comparator is ComparatorName.ALLCLOSE or out.dim() == 0:
        return int((held & ~near).sum())
    return max(int(held.sum()) - int(near.sum()), 0)


@single_threaded
def same(out_a: Any, out_b: Any, tolerance: Tolerance) -> tuple[bool, float]:
    """Whether two runs agree (within the tolerance, so atomics-order noise is allowed)."""
    import torch

    if out_a.shape != out_b.shape or out_a.dtype != out_b.dtype:
        return False, float("inf")
    if not out_a.dtype.is_floating_point:
        return bool(torch.equal(out_a, out_b)), 0.0
    if tolerance.atol >= 0 and tolerance.rtol >= 0 and torch.equal(out_a, out_b):
        return True, 0.0  # the general path's answer for bit-identical runs (NaN never compares equal here)
    a, b = out_a.to(torch.float64), out_b.to(torch.float64)
    diff, allowed = _run_gap(a, b, tolerance)
    return bool((diff <= allowed).all()), float(diff.max()) if diff.numel() else 0.0


def _run_gap(a: Any, b: Any, tolerance: Tolerance) -> tuple[Any, Any]:
    """Per element: how far two runs are apart, and how far they may be (NaN and inf must match exactly)."""
    import torch

    same_value = (torch.isnan(a) & torch.isnan(b)) | (a == b)
    diff = torch.where(same_value, torch.zeros_like(a), (a - b).abs()).nan_to_num(float("inf"))
    finite = torch.isfinite(a) & torch.isfinite(b)
    allowed = torch.where(finite, tolerance.atol + tolerance.rtol * b.abs(), torch.zeros_like(b))
    return diff, allowed


@single_threaded
def disagreement(out_a: Any, out_b: Any, tolerance: Tolerance) -> str:
    """What differs between two runs, in words: counts, the largest finite gap, NaN/inf mismatches."""
    import torch

    if out_a.shape != out_b.shape or out_a.dtype != out_b.dtype:
        return f"{tuple(out_a.shape)} {out_a.dtype} vs {tuple(out_b.shape)} {out_b.dtype}"
    if not out_a.dtype.is_floating_point:
        return f"{int((out_a != out_b).sum())}/{out_a.numel()} elements differ"
    a, b = out_a.to(torch.float64), out_b.to(torch.float64)
    diff, allowed = _run_gap(a, b, tolerance)
    bad = diff > allowed
    nan_mismatch = int((bad & (torch.isnan(a) ^ torch.isnan(b))).sum())
    inf_mismatch = int((bad & (torch.isinf(a) | torch.isinf(b)) & ~(torch.isnan(a) | torch.isnan(b))).sum())
    finite_bad = bad & torch.isfinite(a) & torch.isfinite(b)
    parts = [f"{int(bad.sum())}/{a.numel()} elements differ"]
    if finite_bad.any():
        parts.append(f"max diff {float(diff[finite_bad].max()):.3g}")
    if nan_mismatch:
        parts.append(f"{nan_mismatch} NaN in one run only")
    if inf_mismatch:
        parts.append(f"{inf_mismatch} inf in one run only or of opposite sign")
    return ", ".join(parts)
