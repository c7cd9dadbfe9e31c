"""Read Nsight Compute `.ncu-rep` files through NVIDIA's `ncu_report` package (PyPI `ncu-report`).

One `KernelProfile` per profiled launch (action), with every metric kept in `raw`, the rule
results kept as `VendorRule` evidence and the top PC-sampling locations as hotspots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kloop.errors import BadInput
from kloop.profile.names import normalize_kernel_name
from kloop.profile.ncu_metrics import (
    STALL_REASONS,
    STALL_SAMPLE_PREFIX,
    build_launch,
    fill_from_rules,
    normalize_raw,
)
from kloop.profile.schema import KernelProfile, SourceHotspot, Vendor, VendorRule

HOTSPOT_COUNT = 5
_MSG_TYPES = {0: "NONE", 1: "INF", 2: "OPT", 3: "WRN", 4: "ERR"}
_SPEEDUP_TYPES = {0: None, 1: "local", 2: "global"}


def read_ncu_rep(path: Path) -> list[KernelProfile]:
    """All launches of one report, in report order."""
    try:
        import ncu_report
    except ImportError as exc:  # pragma: no cover - the package is a dependency
        raise BadInput(path, "reading .ncu-rep needs the 'ncu-report' package (pip install ncu-report)") from exc
    try:
        context = ncu_report.load_report(str(path))
    except Exception as exc:
        raise BadInput(path, f"not a readable Nsight Compute report ({exc})") from exc
    profiles = []
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            action = report_range.action_by_idx(action_index)
            profiles.append(_profile(action, ncu_report, path, len(profiles)))
    if not profiles:
        raise BadInput(path, "the report contains no profiled kernels")
    return profiles


def _raw_metrics(action: Any) -> dict[str, float | str]:
    raw: dict[str, float | str] = {}
    for name in action.metric_names():
        value = action[name].value()
        if isinstance(value, bool):
            value = float(value)
        if isinstance(value, int | float | str):
            raw[name] = float(value) if not isinstance(value, str) else value
    return raw


def _profile(action: Any, ncu_report: Any, path: Path, index: int) -> KernelProfile:
    raw = _raw_metrics(action)
    name = action.name(ncu_report.IAction.NameBase_DEMANGLED) or action.name()
    duration, launch_fields, metrics = normalize_raw(raw)
    rules = _vendor_rules(action)
    metrics = fill_from_rules(metrics, [(r.name, r.message) for r in rules])
    major, minor = raw.get("device__attribute_compute_capability_major"), raw.get("device__attribute_compute_capability_minor")
    arch = f"sm_{int(major)}{int(minor)}" if isinstance(major, float) and isinstance(minor, float) else None
    device = raw.get("device__attribute_display_name")
    return KernelProfile(
        name=name,
        normalized_name=normalize_kernel_name(name),
        vendor=Vendor.nvidia,
        arch=arch,
        device=device if isinstance(device, str) else None,
        launch_id=index,
        duration_ns=duration,
        launch=build_launch(_dims(raw, "launch__grid_dim"), _dims(raw, "launch__block_dim"), launch_fields),
        metrics=metrics,
        vendor_rules=rules,
        hotspots=_hotspots(action),
        raw=raw,
        source_format="ncu-rep",
        source_path=str(path),
    )


def _dims(raw: dict[str, float | str], prefix: str) -> tuple[int, int, int] | None:
    values = [raw.get(f"{prefix}_{axis}") for axis in "xyz"]
    if not all(isinstance(v, float) for v in values):
        return None
    return (int(values[0]), int(values[1]), int(values[2]))  # type: ignore[arg-type]


def _vendor_rules(action: Any) -> list[VendorRule]:
    rules = []
    for result in action.rule_results_as_dicts():
        message = result.get("rule_message") or {}
        speedup = result.get("speedup_estimation") or {}
        text = str(message.get("message", "")).strip()
        if not text:
            continue
        rules.append(
            VendorRule(
                name=str(result.get("rule_identifier") or result.get("name")),
                section=result.get("section_identifier"),
                type=_MSG_TYPES.get(int(message.get("type", 0)), str(message.get("type"))),
                message=text,
                est_speedup_pct=speedup.get("speedup"),
                speedup_type=_SPEEDUP_TYPES.get(int(speedup.get("type", 0))) if speedup else None,
            )
        )
    return rules


def _hotspots(action: Any) -> list[SourceHotspot]:
    """Top PCs by warp-state samples, with SASS and source line where the report has them."""
    per_pc: dict[int, dict[str, float]] = {}
    available = set(action.metric_names())
    for suffix, reason in STALL_REASONS.items():
        name = STALL_SAMPLE_PREFIX + suffix
        if name not in available:
            continue
        metric = action[name]
        if not metric.has_correlation_ids():
            continue
        pcs = metric.correlation_ids()
        for i in range(metric.num_instances()):
            count = float(metric.as_uint64(i))
            if count:
                slot = per_pc.setdefault(pcs.as_uint64(i), {})
                slot[reason.value] = slot.get(reason.value, 0.0) + count
    total = sum(sum(v.values()) for v in per_pc.values())
    ranked = sorted(per_pc.items(), key=lambda kv: -sum(kv[1].values()))[:HOTSPOT_COUNT]
    return [_hotspot(action, pc, counts, total) for pc, counts in ranked]


def _hotspot(action: Any, pc: int, counts: dict[str, float], total: float) -> SourceHotspot:
    samples = sum(counts.values())
    stalls = {k: v for k, v in counts.items() if k != "selected"} or counts
    info = action.source_info(pc)
    location = f"{info.file_name()}:{info.line()}" if info is not None else f"pc {pc:#x}"
    sass = action.sass_by_pc(pc)
    return SourceHotspot(
        location=location,
        instruction=sass.strip() if sass else None,
        samples=samples,
        share=samples / total if total else 0.0,
        top_stall=max(stalls, key=stalls.__getitem__),
    )
