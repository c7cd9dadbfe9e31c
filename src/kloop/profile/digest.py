"""Digest: one diagnosis sentence citing measured values, ranked findings, exactly one next edit.

`analyze` runs the playbook over profiles; `digest_markdown` / `digest_json` render the result
(JSON exactly as the `kloop profile analyze --json` contract, plus `bound` and `diagnosis`).
"""

from __future__ import annotations

from typing import Any

from kloop.profile.playbook import Playbook, analyze_profile
from kloop.profile.schema import Bound, Evidence, Finding, KernelProfile, KernelReport, ProfileDiff

_BOUND_WORDS = {
    Bound.memory: "memory-bound",
    Bound.compute: "compute-bound",
    Bound.latency: "latency-bound (neither memory nor compute near peak)",
    Bound.unknown: "of unknown bound (the report lacks throughput metrics)",
}


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def _cite(evidence: list[Evidence], limit: int = 2) -> str:
    parts = []
    for item in evidence[:limit]:
        if item.value is None:
            continue
        threshold = f" ({item.threshold})" if isinstance(item.threshold, str) and item.threshold[:1] in "<>=!" else ""
        parts.append(f"{item.metric} = {_fmt(item.value)}{threshold}")
    return ", ".join(parts)


def diagnosis(report: KernelReport, ctx: dict[str, Any]) -> str:
    """One sentence: what bounds the kernel, with the values that show it, and the top finding."""
    profile = report.profile
    duration = f"{profile.duration_ns / 1000:.1f} us" if profile.duration_ns else "unknown duration"
    levels = []
    if ctx.get("memory_sol_pct") is not None:
        levels.append(f"memory at {ctx['memory_sol_pct']:.0f}%")
    if ctx.get("compute_sol_pct") is not None:
        levels.append(f"compute at {ctx['compute_sol_pct']:.0f}%")
    sentence = f"{profile.normalized_name} ({duration}) is {_BOUND_WORDS[report.bound]}"
    if levels:
        sentence += f": {' and '.join(levels)} of peak"
    if ctx.get("achieved_dram_gbs") is not None:
        peak = ctx.get("peak_dram_gbs_effective")
        share = f" = {ctx['achieved_dram_gbs'] / peak:.0%} of the {peak:,.0f} GB/s peak" if peak else ""
        sentence += f", DRAM/HBM {ctx['achieved_dram_gbs']:,.0f} GB/s{share}"
    if report.findings:
        top = report.findings[0]
        cited = _cite(top.evidence)
        sentence += f"; top finding {top.id.value}" + (f" ({cited})" if cited else "")
    return sentence + "."


def next_edit(findings: list[Finding]) -> str:
    """Exactly one change: the fix of the top finding."""
    if not findings:
        return "No rule fired: collect a full profile (ncu --set full / rocprof-compute) before changing code."
    return f"[{findings[0].id.value}] {findings[0].fix}"


def analyze(
    profiles: list[KernelProfile],
    *,
    min_bytes: float | None = None,
    min_flops: float | None = None,
    playbook: Playbook | None = None,
) -> list[KernelReport]:
    """Playbook + diagnosis + next edit for every profile."""
    reports = []
    for profile in profiles:
        report, ctx = analyze_profile(profile, min_bytes=min_bytes, min_flops=min_flops, playbook=playbook)
        report.diagnosis = diagnosis(report, ctx)
        report.next_edit = next_edit(report.findings)
        reports.append(report)
    return reports


def kernel_json(report: KernelReport) -> dict[str, Any]:
    """One kernel as the analyze contract shapes it."""
    profile = report.profile
    return {
        "name": profile.name,
        "vendor": profile.vendor.value,
        "arch": profile.arch,
        "duration_ns": profile.duration_ns,
        "launch": profile.launch.model_dump(mode="json", exclude_none=True),
        "metrics": profile.metrics.model_dump(mode="json", exclude_none=True),
        "findings": [f.model_dump(mode="json") for f in report.findings],
        "next_edit": report.next_edit,
        "bound": report.bound.value,
        "diagnosis": report.diagnosis,
        "sol_fractions": report.sol_fractions,
    }


def digest_json(reports: list[KernelReport], diff: ProfileDiff | None = None) -> dict[str, Any]:
    """The `analyze --json` document."""
    document: dict[str, Any] = {"kernels": [kernel_json(r) for r in reports]}
    if diff is not None:
        document["diff"] = diff.model_dump(mode="json")
    return document


def _finding_rows(findings: list[Finding]) -> list[str]:
    rows = ["| # | finding | severity | est. gain | evidence |", "| --- | --- | --- | --- | --- |"]
    for index, finding in enumerate(findings, 1):
        gain = f"{finding.est_gain:.0%}" if finding.est_gain is not None else "-"
        rows.append(f"| {index} | {finding.id.value} | {finding.severity.value} | {gain} | {_cite(finding.evidence, 3)} |")
    return rows


def kernel_markdown(report: KernelReport) -> str:
    """Markdown for one kernel: diagnosis, findings table, top mechanisms, hotspots, next edit."""
    profile = report.profile
    lines = [f"## {profile.normalized_name}", "", f"**Diagnosis:** {report.diagnosis}", ""]
    if report.findings:
        lines += [*_finding_rows(report.findings), ""]
        for finding in report.findings[:3]:
            lines.append(f"- **{finding.id.value}**: {finding.mechanism} Fix: {finding.fix} (wiki: `{finding.wiki_query}`)")
        lines.append("")
    if profile.hotspots:
        lines.append("Hotspots: " + "; ".join(f"{h.location} {h.share:.0%} ({h.top_stall.value if h.top_stall else '-'})" for h in profile.hotspots[:3]))
        lines.append("")
    lines.append(f"**Next edit:** {report.next_edit}")
    return "\n".join(lines)


def diff_markdown(diff: ProfileDiff) -> str:
    """Markdown for `--against`: duration ratio, resolved/new findings, biggest metric moves."""
    lines = ["## Against base", ""]
    for kernel in diff.kernels:
        ratio = f"{kernel.duration_ratio:.3f}x duration" if kernel.duration_ratio is not None else "duration n/a"
        lines.append(f"- **{kernel.name}**: {ratio}; resolved: {', '.join(f.value for f in kernel.resolved) or 'none'}; new: {', '.join(f.value for f in kernel.new_findings) or 'none'}")
        moves = sorted(kernel.metric_deltas.items(), key=lambda kv: -abs(kv[1].delta or 0))[:5]
        for name, delta in moves:
            lines.append(f"  - {name}: {_fmt(delta.base)} -> {_fmt(delta.new)}")
    for name in diff.only_in_base:
        lines.append(f"- {name}: only in base")
    for name in diff.only_in_new:
        lines.append(f"- {name}: only in new")
    return "\n".join(lines)


def digest_markdown(reports: list[KernelReport], diff: ProfileDiff | None = None) -> str:
    """The whole digest as markdown."""
    parts = [kernel_markdown(r) for r in reports]
    if diff is not None:
        parts.append(diff_markdown(diff))
    return "\n\n".join(parts) + "\n"
