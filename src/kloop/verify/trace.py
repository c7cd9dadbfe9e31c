"""Export a verdict as FlashInfer-Trace `Trace` lines (one per workload).

REJECTED has no FlashInfer-Bench status: it is exported as RUNTIME_ERROR with the reasons in
`log`. Correctness goes with PASSED and INCORRECT_NUMERICAL only, performance with PASSED only,
as FlashInfer-Bench's Evaluation validator demands.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

from kloop.task.load import Task
from kloop.task.schema import Workload
from kloop.verify.result import VerifyResult, VerifyStatus, WorkloadResult


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 0.0


def _evaluation(result: VerifyResult, wl: WorkloadResult | None, timestamp: str) -> dict[str, Any]:
    own = wl.status if wl is not None else result.status
    status = own if own is not VerifyStatus.PASSED else result.status
    log_lines = list(result.reasons)
    if status is VerifyStatus.REJECTED:
        log_lines.insert(0, "kloop verdict: REJECTED (exported as RUNTIME_ERROR)")
    evaluation: dict[str, Any] = {
        "status": status.fib().value,
        "environment": {"hardware": result.environment.get("hardware") or result.device,
                        "libs": {k: v for k, v in result.environment.items() if k in ("torch", "triton", "cuda", "python", "kloop")}},
        "timestamp": timestamp,
        "log": "\n".join(log_lines),
    }  # fmt: skip
    if status in (VerifyStatus.PASSED, VerifyStatus.INCORRECT_NUMERICAL):
        evaluation["correctness"] = {
            "max_absolute_error": _finite(wl.max_abs_error if wl else None),
            "max_relative_error": _finite(wl.max_rel_error if wl else None),
        }
    if status is VerifyStatus.PASSED:
        # one definition: speedup_factor = reference latency / latency (0 where either is unknown,
        # e.g. a harness-bound workload, whose note goes into `log`)
        latency = _finite(wl.latency_ms if wl else None)
        reference = _finite(wl.baseline_latency_ms if wl else None)
        evaluation["performance"] = {
            "latency_ms": latency,
            "reference_latency_ms": reference,
            "speedup_factor": reference / latency if latency > 0 and reference > 0 else 0.0,
        }
        if wl is not None and wl.timing_note:
            evaluation["log"] = "\n".join([*log_lines, wl.timing_note])
    return evaluation


def _workload_json(workload: Workload | None, wl: WorkloadResult, task: Task) -> dict[str, Any]:
    if workload is not None:
        return workload.model_dump(mode="json", exclude_none=True)
    inputs = {name: {"type": "random"} for name in task.definition.inputs}
    return {"uuid": wl.uuid, "axes": wl.axes, "inputs": inputs}


def to_traces(result: VerifyResult, task: Task, workloads: list[Workload] | None = None) -> list[dict[str, Any]]:
    """Trace dicts: one per judged workload, or per listed workload when none was reached."""
    timestamp = dt.datetime.now(dt.UTC).isoformat()
    by_uuid = {w.uuid: w for w in task.workloads}
    lines = []
    for wl in result.workloads:
        lines.append({
            "definition": result.task, "solution": result.solution,
            "workload": _workload_json(by_uuid.get(wl.uuid) if not wl.heldout else None, wl, task),
            "evaluation": _evaluation(result, wl, timestamp),
        })  # fmt: skip
    if not lines:
        for workload in workloads if workloads is not None else task.workloads:
            lines.append({
                "definition": result.task, "solution": result.solution,
                "workload": workload.model_dump(mode="json", exclude_none=True),
                "evaluation": _evaluation(result, None, timestamp),
            })  # fmt: skip
    return lines


def write_traces(path: Path, result: VerifyResult, task: Task, workloads: list[Workload] | None = None) -> int:
    """Write JSONL; returns the number of lines."""
    lines = to_traces(result, task, workloads)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return len(lines)
