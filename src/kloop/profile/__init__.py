"""Profiler skill: collectors, readers into one KernelProfile, the playbook, digest and diff.

Public API: `read(path)` (any supported profiler output -> one KernelProfile per launch),
`analyze(profiles, min_bytes=, min_flops=)` (playbook -> ranked KernelReports),
`digest_markdown(reports)` / `digest_json(reports)`, `diff_reports(base, new)`.
"""

from __future__ import annotations

import importlib
from typing import Any

# Names load on first use (PEP 562), so `kloop profile analyze --help` and `kloop --help` stay fast.
_EXPORTS = {
    "diff_reports": "kloop.profile.diff", "analyze": "kloop.profile.digest", "digest_json": "kloop.profile.digest",
    "digest_markdown": "kloop.profile.digest", "read": "kloop.profile.read",
    **dict.fromkeys(
        ["Evidence", "Finding", "FindingId", "KernelProfile", "KernelReport", "NormalizedMetrics", "ProfileDiff"],
        "kloop.profile.schema",
    ),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kloop.profile' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


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
