"""Profiler skill: collectors, readers into one KernelProfile, the playbook, digest and diff.

Public API: `read(path)` (any supported profiler output -> one KernelProfile per launch),
`analyze(profiles, min_bytes=, min_flops=)` (playbook -> ranked KernelReports),
`digest_markdown(reports)` / `digest_json(reports)`, `diff_reports(base, new)`.
"""

from __future__ import annotations

from kloop.lazy import lazy_exports
from kloop.profile.read import read  # eager: a lazy `read` would be shadowed by the submodule `read`

# Names load on first use (PEP 562), so `kloop profile analyze --help` and `kloop --help` stay fast.
_EXPORTS = {
    "diff_reports": "kloop.profile.diff", "analyze": "kloop.profile.digest", "digest_json": "kloop.profile.digest",
    "digest_markdown": "kloop.profile.digest",
    **dict.fromkeys(
        ["Evidence", "Finding", "FindingId", "KernelProfile", "KernelReport", "NormalizedMetrics", "ProfileDiff"],
        "kloop.profile.schema",
    ),
}


__getattr__ = lazy_exports(__name__, _EXPORTS)


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
