"""`kloop export RUN_DIR --fib DIR`: the best and the routed solution as FlashInfer-Trace files.

Layout written under DIR (a FlashInfer-Trace dataset fragment):

    definitions/<definition>.json              the sealed definition (`"shape": null` kept on scalars)
    workloads/<definition>.jsonl               the task's listed workloads, as FIB workload traces
    solutions/<definition>/<solution>.json     one FIB Solution per exported solution (sources inlined)
    traces/<definition>.jsonl                  Trace lines of each exported solution's verification

Only listed workloads become traces: held-out and coverage draws exist only inside one
verification (their inputs are secret and never stored), so a trace of them would name a workload
no file holds; they are counted in `skipped` instead. `speedup_factor` is written as
`reference_latency_ms / latency_ms` of the same trace (0 when either is unknown).

Solutions are packed from the run's own copies (`artifacts/round-NNN/candidate/`,
`routed/solution/`), tunables rendered at the configuration that was verified. The traces are the
verdicts the run already recorded (`verify.json`), so nothing is re-measured here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from kloop.errors import BadInput
from kloop.verify.result import VerifyResult

if TYPE_CHECKING:
    from kloop.task.load import Task
    from kloop.task.schema import Definition


class Exported(BaseModel):
    definition: str
    solutions: list[str] = Field(default_factory=list, description="Paths of Solution JSON files written.")
    traces: str | None = Field(default=None, description="Path of the Trace JSONL written.")
    trace_lines: int = 0
    skipped: list[str] = Field(default_factory=list, description="What could not be exported, and why.")


def _best_round(run_dir: Path) -> int:
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        return int(summary["best"]["round"])
    except (OSError, ValueError, KeyError, TypeError):
        raise BadInput(run_dir, "no readable summary.json: is this a kloop run directory?") from None


def sources_to_export(run_dir: Path) -> list[tuple[str, Path, Path]]:
    """(label, solution dir, verify.json) for the best and, when built, the routed solution."""
    out = []
    best = _best_round(run_dir)
    if best > 0:
        art = run_dir / "artifacts" / f"round-{best:03d}"
        out.append(("best", art / "candidate", art / "verify.json"))
    routed = run_dir / "routed"
    if (routed / "solution" / "solution.json").is_file():
        out.append(("routed", routed / "solution", routed / "verify.json"))
    return out


def export_run(run_dir: Path, dest: Path) -> Exported:
    """Write the FIB files; BadInput when the run has nothing better than its baseline to export."""
    from kloop.task.load import load_task, pack_solution
    from kloop.verify.trace import to_traces

    task = load_task(run_dir / "sealed")
    items = sources_to_export(run_dir)
    if not items:
        raise BadInput(run_dir, "no accepted candidate beat the baseline and no routed solution: nothing to export")
    name = task.definition.name
    (dest / "definitions").mkdir(parents=True, exist_ok=True)
    (dest / "definitions" / f"{name}.json").write_text(json.dumps(definition_json(task.definition), indent=2),
                                                       encoding="utf-8")
    _write_workloads(dest / "workloads" / f"{name}.jsonl", task)
    listed = {w.uuid for w in task.workloads}
    result = Exported(definition=name)
    lines: list[str] = []
    for label, folder, verify_json in items:
        solution = pack_solution(folder)
        sol_name = f"{solution.name}_{label}" if label == "best" else solution.name
        solution = solution.model_copy(update={"name": sol_name})
        path = dest / "solutions" / name / f"{sol_name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(solution.model_dump_json(indent=2, exclude_none=True), encoding="utf-8")
        result.solutions.append(str(path))
        if not verify_json.is_file():
            result.skipped.append(f"{label}: no verify.json, no trace")
            continue
        verdict = VerifyResult.model_validate(_unbounded(json.loads(verify_json.read_text(encoding="utf-8"))))
        traces = to_traces(verdict, task)
        kept = [t for t in traces if t["workload"]["uuid"] in listed]
        if len(kept) < len(traces):
            result.skipped.append(f"{label}: {len(traces) - len(kept)} held-out/coverage rows not exported as traces "
                                  f"(their workloads are drawn per verification and stored nowhere)")  # fmt: skip
        for trace in kept:
            trace["solution"] = sol_name
            _consistent_speedup(trace)
            lines.append(json.dumps(trace))
    if lines:
        traces = dest / "traces" / f"{name}.jsonl"
        traces.parent.mkdir(parents=True, exist_ok=True)
        traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
        result.traces, result.trace_lines = str(traces), len(lines)
    return result


def definition_json(definition: Definition) -> dict[str, Any]:
    """The definition as FIB reads it: None fields dropped, except `shape: null`, which marks a scalar."""
    data = definition.model_dump(mode="json", exclude_none=True)
    for role in ("inputs", "outputs"):
        for tname, spec in getattr(definition, role).items():
            if spec.shape is None:
                data[role][tname]["shape"] = None
    return data


def _write_workloads(path: Path, task: Task) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"definition": task.definition.name, "workload": w.model_dump(mode="json", exclude_none=True),
             "solution": None, "evaluation": None} for w in task.workloads]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _consistent_speedup(trace: dict[str, Any]) -> None:
    """speedup_factor = reference_latency_ms / latency_ms, the definition FIB states."""
    performance = (trace.get("evaluation") or {}).get("performance")
    if not performance:
        return
    latency, reference = performance.get("latency_ms") or 0.0, performance.get("reference_latency_ms") or 0.0
    performance["speedup_factor"] = reference / latency if latency > 0 and reference > 0 else 0.0


def _unbounded(data: Any) -> Any:
    """verify.json writes an unbounded CI end or log_se (inf) as null, which VerifyResult does not read back."""
    if isinstance(data, dict):
        return {k: (math.inf if v is None and (k == "log_se") else
                    [math.inf if x is None else x for x in v] if k.endswith("_ci") and isinstance(v, list) else
                    _unbounded(v)) for k, v in data.items()}  # fmt: skip
    if isinstance(data, list):
        return [_unbounded(x) for x in data]
    return data
