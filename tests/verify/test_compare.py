"""Comparators on real tensors (timing statistics: test_stats.py)."""

from __future__ import annotations

import pytest
import torch

from kloop.task.schema import ComparatorName, Tolerance
from kloop.verify.compare import compare, left_poisoned, same, unwritten
from kloop.verify.workload import POISONS

TOL = Tolerance(atol=1e-4, rtol=1e-4)
ALL = ComparatorName.ALLCLOSE


def test_tolerance_rule_is_atol_plus_rtol_times_ref() -> None:
    ref = torch.tensor([0.0, 1.0, 100.0], dtype=torch.float64)
    inside = ref + torch.tensor([0.9e-4, 1.9e-4, 100.9e-4], dtype=torch.float64)
    outside = ref + torch.tensor([0.0, 0.0, 102e-4], dtype=torch.float64)
    assert compare(inside.float(), ref, TOL, ALL).numeric
    result = compare(outside, ref, TOL, ALL)
    assert not result.numeric and result.mismatched == 1
    assert result.max_abs_error == pytest.approx(102e-4)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nonfinite_where_reference_is_finite_always_fails(bad: float) -> None:
    ref = torch.ones(64, dtype=torch.float64)
    out = ref.float().clone()
    out[17] = bad
    loose = Tolerance(atol=1e9, rtol=1e9, matched_ratio=0.5)  # no tolerance excuses a NaN
    result = compare(out, ref, loose, ALL)
    assert not result.finite and not result.numeric
    assert "NaN/Inf" in result.detail


def test_nonfinite_matching_a_nonfinite_reference_is_fine() -> None:
    ref = torch.tensor([1.0, float("inf"), float("nan")], dtype=torch.float64)
    assert compare(ref.float(), ref, TOL, ALL).numeric


@pytest.mark.parametrize("wrong", [-float("inf"), float("nan"), 5.0, 0.0])
def test_a_reference_inf_is_matched_exactly_or_not_at_all(wrong: float) -> None:
    """atol + rtol*|inf| is inf: it must not excuse the other inf, a NaN, or any finite value."""
    ref = torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float64)
    out = ref.float().clone()
    out[1] = wrong
    result = compare(out, ref, TOL, ALL)
    assert not result.numeric and result.mismatched == 1, result.detail


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_output_may_sit_on_the_next_grid_point_but_no_further(dtype: torch.dtype) -> None:
    """A quantizer's honest float32 value a rounding error from a tie rounds either way; one step of
    the fp8 grid at the bottom of a binade (8 -> 9 in e4m3: 12.5 %) exceeds the default 1e-1."""
    fp8 = Tolerance(atol=0.1, rtol=0.1)
    grid = torch.arange(0, 256, dtype=torch.uint8).view(dtype).double()
    grid = grid[torch.isfinite(grid) & (grid > 0)].unique()  # every positive finite value, ascending
    ref = grid[:-2].to(dtype)
    above, two_above = grid[1:-1].to(dtype), grid[2:].to(dtype)
    assert compare(above, ref, fp8, ALL).numeric  # every value's upper neighbour
    assert compare(ref, above, fp8, ALL).numeric  # and lower neighbour
    strict = Tolerance(atol=0.0, rtol=0.0)
    assert compare(above, ref, strict, ALL).numeric  # one step, whatever the tolerance
    result = compare(two_above, ref, strict, ALL)
    assert result.mismatched == ref.numel(), result.detail  # two steps is never a rounding difference
    at_eight = int((grid == 8.0).nonzero())
    assert not compare(two_above[at_eight:at_eight + 1], ref[at_eight:at_eight + 1], fp8, ALL).numeric


def test_matched_ratio_and_error_cap() -> None:
    ref = torch.zeros(100, dtype=torch.float64)
    out = torch.zeros(100)
    out[:3] = 0.5
    assert compare(out, ref, TOL.model_copy(update={"matched_ratio": 0.95}), ALL).numeric
    capped = TOL.model_copy(update={"matched_ratio": 0.95, "max_error_cap": 0.1})
    assert not compare(out, ref, capped, ALL).numeric


def test_order_free_comparators() -> None:
    ref = torch.tensor([[3.0, 1.0, 2.0]], dtype=torch.float64)
    permuted = torch.tensor([[1.0, 2.0, 3.0]])
    assert not compare(permuted, ref, TOL, ALL).numeric
    assert compare(permuted, ref, TOL, ComparatorName.SORTED_ALLCLOSE).numeric
    idx_ref = torch.tensor([[5, 9, 1]])
    assert compare(torch.tensor([[1, 5, 9]]), idx_ref, TOL, ComparatorName.SET_EQUAL).numeric
    assert not compare(torch.tensor([[1, 5, 8]]), idx_ref, TOL, ComparatorName.SET_EQUAL).numeric


def test_integers_are_exact() -> None:
    ref = torch.tensor([1, 2, 3])
    assert compare(ref.clone(), ref, TOL, ALL).numeric
    assert not compare(torch.tensor([1, 2, 4]), ref, TOL, ALL).numeric


def test_unwritten_needs_both_poisons() -> None:
    a = torch.full((4,), POISONS[0][0])
    b = torch.full((4,), POISONS[1][0])
    a[:3] = b[:3] = 1.0
    assert unwritten(a, b, POISONS) == 1
    ints_a, ints_b = torch.full((3,), int(POISONS[0][1]), dtype=torch.int32), torch.full((3,), int(POISONS[1][1]), dtype=torch.int32)
    assert unwritten(ints_a, ints_b, POISONS) == 3


def test_one_run_counts_poison_left_where_the_reference_is_not_the_poison() -> None:
    """Input coverage runs once: a poison-valued element is a hole only where it is also wrong."""
    poison = POISONS[0]
    ref = torch.tensor([1.0, 2.0, poison[0], 4.0], dtype=torch.float64)
    out = ref.to(torch.float32)
    assert left_poisoned(out, ref, poison, TOL, ALL) == 0  # an honest poison-valued answer is no hole
    out[[0, 3]] = poison[0]
    assert left_poisoned(out, ref, poison, TOL, ALL) == 2
    near = ref.clone()
    near[0] = poison[0] * (1 + 5e-5)  # within rtol of the poison: right whichever it is
    assert left_poisoned(out, near, poison, TOL, ALL) == 1
    permuted = torch.tensor([[poison[0], 1.0, 2.0]])  # order-free: counted by value
    assert left_poisoned(permuted, torch.tensor([[2.0, poison[0], 1.0]], dtype=torch.float64), poison, TOL,
                         ComparatorName.SORTED_ALLCLOSE) == 0  # fmt: skip
    assert left_poisoned(permuted, torch.tensor([[2.0, 3.0, 1.0]], dtype=torch.float64), poison, TOL,
                         ComparatorName.SORTED_ALLCLOSE) == 1  # fmt: skip
    ints = torch.tensor([5, int(poison[1]), 7], dtype=torch.int32)
    assert left_poisoned(ints, torch.tensor([5, 6, 7]), poison, TOL, ALL) == 1
    e4m3 = torch.tensor([poison[0], 1.0]).to(torch.float8_e4m3fn)  # 320 is exact in e4m3, next to 288 and 352
    assert left_poisoned(e4m3, torch.tensor([300.0, 1.0], dtype=torch.float64), poison, TOL, ALL) == 0
    assert left_poisoned(e4m3, torch.tensor([200.0, 1.0], dtype=torch.float64), poison, TOL, ALL) == 1


def test_same_allows_tolerance_noise_but_not_garbage() -> None:
    a = torch.randn(32)
    assert same(a, a + 1e-7, TOL)[0]
    assert not same(a, a + 1.0, TOL)[0]




@pytest.mark.parametrize("dtype_name", ["float8_e4m3fn", "float8_e5m2"])
def test_every_check_works_on_fp8_outputs(dtype_name: str) -> None:
    """fp8 has no isfinite and overflows on 1234.5: checks compare in float64, poisons fit the dtype."""
    import torch

    from kloop.verify.compare import compare, disagreement, same

    dtype = getattr(torch, dtype_name)
    for run in POISONS:
        assert float(torch.tensor(run[0]).to(dtype)) == run[0]  # exact: a poisoned fp8 buffer is the poison
    ref = torch.tensor([0.5, -3.0, 96.0, 0.0], dtype=torch.float64)
    out = ref.to(dtype)
    tol = Tolerance(atol=0.1, rtol=0.1)
    c = compare(out, ref, tol, ComparatorName.ALLCLOSE)
    assert c.finite and c.numeric, c.detail
    wrong = (ref * 16).to(dtype)
    c = compare(wrong, ref, tol, ComparatorName.ALLCLOSE)
    assert not c.numeric and "worst at" in c.detail, c.detail
    a = torch.full((4,), POISONS[0][0], dtype=dtype)
    b = torch.full((4,), POISONS[1][0], dtype=dtype)
    b[0] = a[0]
    assert unwritten(a, b, POISONS) == 3
    assert same(out, out.clone(), tol)[0] and not same(out, wrong, tol)[0]
    assert "elements differ" in disagreement(out, wrong, tol)
