"""Profiler skill: collectors, readers into one KernelProfile, the playbook, digest and diff.

Public API: `read(path)` (any supported profiler output -> one KernelProfile per launch),
`analyze(profiles, min_bytes=, min_flops=)` (playbook -> ranked KernelReports),
`digest_markdown(reports)` / `digest_json(reports)`, `diff_reports(base, new)`.
"""

from __future__ import annotations

from kloop.profile.diff import diff_reports
from kloop.profile.digest import analyze, digest_json, digest_markdown
from kloop.profile.read import read
from kloop.profile.schema import (
    Evidence,
    Finding,
    FindingId,
    KernelProfile,
    KernelReport,
    NormalizedMetrics,
    ProfileDiff,
)

__all__ = [
    "Evidence",
    "Finding",
    "FindingId",
    "KernelProfile",
    "KernelReport",
    "NormalizedMetrics",
    "ProfileDiff",
    "analyze",
    "diff_reports",
    "digest_json",
    "digest_markdown",
    "read",
]
