"""Digest (markdown + JSON contract) and --against diffs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kloop.profile import analyze, diff_reports, digest_json, digest_markdown, read
from kloop.profile.schema import FindingId

FINDING_KEYS = {"id", "severity", "evidence", "mechanism", "fix", "wiki_query", "est_gain"}


def test_json_has_the_contract_fields(read_case) -> None:
    document = digest_json(analyze(read_case("transpose_conflict", "report.ncu-rep")))
    (kernel,) = document["kernels"]
    assert {"name", "vendor", "arch", "duration_ns", "launch", "metrics", "findings", "next_edit"} <= kernel.keys()
    assert kernel["vendor"] == "nvidia" and kernel["arch"] == "sm_90" and kernel["duration_ns"] == 85184.0
    assert kernel["launch"]["grid"] == [128, 128, 1]
    assert kernel["metrics"]["shared_bank_conflict_pct"] > 90
    for finding in kernel["findings"]:
        assert set(finding) == FINDING_KEYS
        for evidence in finding["evidence"]:
            assert set(evidence) == {"metric", "value", "threshold"}
    assert "diff" not in document


def test_markdown_has_one_diagnosis_citing_values_and_exactly_one_next_edit(read_case) -> None:
    text = digest_markdown(analyze(read_case("copy_strided", "details.csv")))
    assert text.count("**Next edit:**") == 1 and text.count("**Diagnosis:**") == 1
    diagnosis = next(line for line in text.splitlines() if line.startswith("**Diagnosis:**"))
    assert "memory-bound" in diagnosis and "global_load_efficiency_pct = 12" in diagnosis
    assert "1568" in diagnosis or "1570" in diagnosis  # duration in us
    assert "| 1 | uncoalesced_global_access | high |" in text


def test_against_base_reports_resolved_findings_and_duration_ratio(h200: Path, derived: Path) -> None:
    base = analyze(read(h200 / "copy_strided" / "details.csv"))
    new = analyze(read(derived / "copy_strided_fixed.details.csv"))
    diff = diff_reports(base, new)
    (kernel,) = diff.kernels
    assert kernel.name == "copy_strided"
    assert FindingId.uncoalesced_global_access in kernel.resolved
    assert FindingId.memory_bound in kernel.persisting
    assert kernel.duration_ratio == pytest.approx(64510 / 1570000, rel=1e-3)
    assert kernel.metric_deltas["dram_throughput_pct"].delta == pytest.approx(79.41 - 56.88, abs=0.01)
    assert diff.only_in_base == [] and diff.only_in_new == []
    text = digest_markdown(new, diff)
    assert "resolved: uncoalesced_global_access" in text and "0.041x duration" in text


def test_unmatched_kernels_are_listed_not_guessed(read_case) -> None:
    diff = diff_reports(analyze(read_case("fma_bound", "raw.csv")), analyze(read_case("heavy_regs", "raw.csv")))
    assert diff.kernels == [] and diff.only_in_base == ["fma_bound"] and diff.only_in_new == ["heavy_regs"]
