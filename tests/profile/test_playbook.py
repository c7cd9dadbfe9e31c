"""The playbook: rules.yaml validated on load, safe expressions, chip facts, kloop's own ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kloop.profile.digest import analyze
from kloop.profile.expr import ExpressionError, Missing, parse
from kloop.profile.playbook import RULES_PATH, PlaybookError, load_playbook
from kloop.profile.schema import Bound, FindingId, KernelProfile, LaunchConfig, NormalizedMetrics, Vendor


def _rules_with(tmp_path: Path, **change: object) -> Path:
    data = yaml.safe_load(RULES_PATH.read_text())
    data["rules"][0].update(change)
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_shipped_rules_load_and_cover_the_vocabulary() -> None:
    playbook = load_playbook()
    ids = {r.rule.id for r in playbook.rules}
    assert ids == set(FindingId)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": "slow_kernel"}, "rules\\[0\\].*id"),
        ({"when": ["tensor_pipe_utilisation_pct >= 60"]}, "unknown metric.*tensor_pipe_utilisation_pct"),
        ({"when": ["__import__('os').system('true') == 0"]}, "only .* may be called"),
        ({"when": ["dram_sol_pct.real > 1"]}, "Attribute is not allowed"),
        ({"gain": "[x for x in dram_sol_pct]"}, "not allowed"),
        ({"when": []}, "at least one condition"),
        ({"severity": "urgent"}, "severity"),
        ({"wiki_query": ""}, "wiki_query"),
    ],
)
def test_malformed_rules_fail_on_load_with_a_named_error(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(PlaybookError, match=message):
        load_playbook(_rules_with(tmp_path, **change))


def test_unreadable_rules_file(tmp_path: Path) -> None:
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules: [unclosed")
    with pytest.raises(PlaybookError, match="cannot read rules"):
        load_playbook(bad)


def test_expressions_are_evaluated_without_python_eval() -> None:
    expr = parse("clamp(a / b, 0, 1) * 100 >= default(c, 50) and not known(d)")
    assert expr.names == {"a", "b", "c", "d"}
    assert expr.evaluate({"a": 3, "b": 4}) is True
    assert expr.evaluate({"a": 1, "b": 4, "d": 1}) is False
    with pytest.raises(Missing):
        parse("a + 1").evaluate({})
    for text in ("open('x')", "a.b", "lambda: 1", "a[0]", "(1).__class__"):
        with pytest.raises(ExpressionError):
            parse(text)


def _profile(vendor: Vendor, arch: str, **metrics: object) -> KernelProfile:
    return KernelProfile(
        name="k", normalized_name="k", vendor=vendor, arch=arch, duration_ns=200_000.0,
        launch=LaunchConfig(grid=(4096, 1, 1), block=(256, 1, 1)), metrics=NormalizedMetrics(**metrics),
    )  # fmt: skip


def test_warp_divergence_threshold_comes_from_the_chip_warp_size() -> None:
    """40 active lanes is a full-ish warp on neither chip: 40/64 on CDNA, impossible (>32) on Hopper."""
    common = {"memory_throughput_pct": 20.0, "compute_throughput_pct": 30.0, "active_threads_per_warp": 40.0}
    amd = analyze([_profile(Vendor.amd, "gfx942", **common)])[0]
    nvidia = analyze([_profile(Vendor.nvidia, "sm_90", **common)])[0]
    assert FindingId.warp_divergence in [f.id for f in amd.findings]
    assert FindingId.warp_divergence not in [f.id for f in nvidia.findings]
    cited = {e.metric: e.value for e in next(f for f in amd.findings if f.id is FindingId.warp_divergence).evidence}
    assert cited["arch_warp_size"] == 64


def test_unknown_arch_keeps_chip_dependent_rules_silent() -> None:
    report = analyze([_profile(Vendor.nvidia, "sm_999", memory_throughput_pct=20.0, active_threads_per_warp=8.0)])[0]
    assert FindingId.warp_divergence not in [f.id for f in report.findings]


def test_a_specific_cause_outranks_the_bound_and_suppresses_the_health_verdict() -> None:
    report = analyze([_profile(Vendor.nvidia, "sm_90", dram_throughput_pct=85.0, memory_throughput_pct=85.0,
                               compute_throughput_pct=10.0, global_load_efficiency_pct=25.0)])[0]  # fmt: skip
    ids = [f.id for f in report.findings]
    assert report.bound is Bound.memory
    assert ids[:2] == [FindingId.uncoalesced_global_access, FindingId.memory_bound]
    assert FindingId.near_speed_of_light not in ids


def test_no_metrics_means_unknown_bound_and_no_invented_findings() -> None:
    report = analyze([_profile(Vendor.amd, "gfx942")])[0]
    assert report.bound is Bound.unknown and report.findings == []
    assert "collect a full profile" in report.next_edit
