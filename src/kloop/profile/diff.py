"""`--against BASE`: kernels matched by normalized name, findings resolved/new, metric deltas.

Several launches of one kernel are matched in order (first with first); a kernel present in only
one report is listed as such rather than guessed.
"""

from __future__ import annotations

from kloop.profile.schema import KernelDiff, KernelReport, MetricDelta, ProfileDiff

RELATIVE_CHANGE = 0.01  # metric moves smaller than 1% (of the larger magnitude) are not listed


def _by_name(reports: list[KernelReport]) -> dict[str, list[KernelReport]]:
    grouped: dict[str, list[KernelReport]] = {}
    for report in reports:
        grouped.setdefault(report.profile.normalized_name, []).append(report)
    return grouped


def metric_deltas(base: KernelReport, new: KernelReport) -> dict[str, MetricDelta]:
    """Numeric normalized metrics that moved by more than RELATIVE_CHANGE."""
    before = base.profile.metrics.model_dump(exclude={"stall_breakdown"})
    after = new.profile.metrics.model_dump(exclude={"stall_breakdown"})
    deltas: dict[str, MetricDelta] = {}
    for name, old in before.items():
        value = after.get(name)
        if not isinstance(old, int | float) or not isinstance(value, int | float):
            continue
        scale = max(abs(old), abs(value))
        if scale and abs(value - old) / scale >= RELATIVE_CHANGE:
            deltas[name] = MetricDelta(base=old, new=value, delta=value - old)
    return deltas


def kernel_diff(name: str, base: KernelReport, new: KernelReport) -> KernelDiff:
    """One matched kernel."""
    old_ids = [f.id for f in base.findings]
    new_ids = [f.id for f in new.findings]
    b, n = base.profile.duration_ns, new.profile.duration_ns
    return KernelDiff(
        name=name,
        base_duration_ns=b,
        new_duration_ns=n,
        duration_ratio=n / b if b and n is not None else None,
        resolved=[i for i in old_ids if i not in new_ids],
        new_findings=[i for i in new_ids if i not in old_ids],
        persisting=[i for i in new_ids if i in old_ids],
        metric_deltas=metric_deltas(base, new),
    )


def diff_reports(base: list[KernelReport], new: list[KernelReport]) -> ProfileDiff:
    """Match kernels by normalized name and compare them."""
    old_groups, new_groups = _by_name(base), _by_name(new)
    result = ProfileDiff()
    for name, new_list in new_groups.items():
        old_list = old_groups.get(name, [])
        for index, report in enumerate(new_list):
            if index < len(old_list):
                result.kernels.append(kernel_diff(name, old_list[index], report))
            else:
                result.only_in_new.append(name)
    for name, old_list in old_groups.items():
        extra = len(old_list) - len(new_groups.get(name, []))
        result.only_in_base.extend([name] * max(0, extra))
    return result
