"""The AMD formula table and occupancy model: the shared step behind every AMD reader."""

from __future__ import annotations

import pytest

from kloop.errors import BadInput
from kloop.profile.amd_metrics import (
    AmdDispatch,
    device_from_facts,
    duration_from_timestamps,
    evaluate_formula,
    evaluate_formulas,
    occupancy_limits,
    parse_formula,
    sum_instances,
)


def test_every_formula_in_the_table_parses() -> None:
    # evaluating with no inputs exercises the whole table; nothing can be computed from nothing
    assert evaluate_formulas({}, {}) == {}


@pytest.mark.parametrize("text", ["a ** 2", "__import__('os')", "a.b", "[a]", "open('x')", "a if b else c"])
def test_formulas_are_arithmetic_only(text: str) -> None:
    with pytest.raises(BadInput):
        parse_formula(text, "test")


def test_missing_inputs_and_zero_divisors_are_unknown() -> None:
    tree = parse_formula("100 * a / (a + b)", "t")
    assert evaluate_formula(tree, {"a": 1.0, "b": 3.0}) == 25.0
    assert evaluate_formula(tree, {"a": 1.0}) is None
    assert evaluate_formula(tree, {"a": 0.0, "b": 0.0}) is None


def test_first_applicable_alternative_wins() -> None:
    """gfx942 TCC_EA0 counters beat rocprofv3's FETCH_SIZE; FETCH_SIZE alone is read as KB."""
    both = evaluate_formulas({"TCC_EA0_RDREQ_sum": 10.0, "TCC_EA0_RDREQ_32B_sum": 0.0, "FETCH_SIZE": 1.0}, {})
    assert both["dram_bytes_read"] == 640.0
    assert evaluate_formulas({"FETCH_SIZE": 3.0}, {})["dram_bytes_read"] == 3072.0


def test_sum_instances_prefers_the_tools_own_sum() -> None:
    counters = sum_instances(
        {"TCC_HIT[0]": 1.0, "TCC_HIT[1]": 2.0, "TCC_MISS[0]": 5.0, "TCC_MISS_sum": 7.0, "SQ_WAVES": 4.0}
    )
    assert counters["TCC_HIT_sum"] == 3.0 and counters["TCC_MISS_sum"] == 7.0
    assert counters["SQ_WAVES_sum"] == counters["SQ_WAVES"] == 4.0
    assert not any("[" in k for k in counters)


def test_lossy_timestamps_are_rejected() -> None:
    assert duration_from_timestamps("1410078545959517", "1410078545984317") == 24800
    assert duration_from_timestamps("8.1097E+14", "8.1097E+14") is None
    assert duration_from_timestamps(None, "5") is None
    assert duration_from_timestamps(10, 5) is None


def _occupancy(arch: str, **launch: int) -> dict[str, float]:
    dispatch = AmdDispatch(name="k", workgroup=(256, 1, 1), grid_items=(256 * 1000, 1, 1), **launch)
    return occupancy_limits(dispatch, device_from_facts(arch))


def test_occupancy_limits_read_the_arch_facts() -> None:
    assert _occupancy("gfx942", arch_vgpr=8)["theoretical_occupancy_pct"] == 100.0
    # 128 VGPRs: 4 waves per SIMD of 8 -> 16 of 32 wave slots
    assert _occupancy("gfx942", arch_vgpr=128)["theoretical_occupancy_pct"] == 50.0
    # AGPRs share the unified file on gfx942 ...
    assert _occupancy("gfx942", arch_vgpr=128, accum_vgpr=128)["theoretical_occupancy_pct"] == 25.0
    # ... but are a separate file on gfx908 (MI100: 40 wave slots, 256 + 256 registers)
    gfx908 = _occupancy("gfx908", arch_vgpr=128, accum_vgpr=128)
    assert gfx908["occupancy_limit_registers"] == 2 and gfx908["theoretical_occupancy_pct"] == 20.0
    # 64 KB of LDS per workgroup: one fits a gfx942 CU (64 KB), two fit a gfx950 CU (160 KB)
    assert _occupancy("gfx942", arch_vgpr=8, lds_bytes=65536)["occupancy_limit_shared_mem"] == 1
    assert _occupancy("gfx950", arch_vgpr=8, lds_bytes=65536)["occupancy_limit_shared_mem"] == 2
    waves = _occupancy("gfx942", arch_vgpr=8)["waves_per_unit"]
    assert waves == pytest.approx(1000 / (304 * 8))


def test_unknown_arch_still_reads() -> None:
    device = device_from_facts("gfx1234", "Future GPU")
    assert device.arch == "gfx1234" and device.peak_dram_gbs is None
