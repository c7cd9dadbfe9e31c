"""A/A coverage: verify each CPU example's baseline against itself; the 95 % CI must contain 1.0.

    .venv/bin/python bench/aa_coverage.py [--runs 100] [--load-at 0.5] [--tasks DIR ...] [--quick]

Identical code on both sides, so every CI that excludes 1.0 is a false statement. The runs cycle
through the tasks; from `--load-at` (a fraction of the runs) on, one busy process per CPU competes
with the verifier, to show coverage holds on a loaded machine too. Prints, per phase (quiet,
loaded), how many geomean and per-workload CIs contained 1.0, the median verification time and
the load average; `--json OUT` writes every run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kloop.task.load import load_task, write_solution_dir
from kloop.verify import verify
from kloop.verify.result import Comparison, VerifyOptions
from kloop.verify.stats import BOX_SD, _t

REPO = Path(__file__).resolve().parents[1]
TASKS = [REPO / "examples" / "rmsnorm", REPO / "examples" / "silu_and_mul", REPO / "tests" / "verify" / "tasks" / "rmsnorm_tiny"]


def start_load() -> list[subprocess.Popen[bytes]]:
    """One pure-Python busy loop per CPU: a competing load the verifier cannot avoid.

    Each dies with this process (PR_SET_PDEATHSIG), so a benchmark killed mid-run leaves no load
    behind to skew the next measurement.
    """
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=_die_with_parent)
            for _ in range(os.cpu_count() or 2)]  # fmt: skip


def _die_with_parent() -> None:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def stop_load(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
        p.wait()


def one(task_dir: Path, workdir: Path, workloads: int | None, device: str = "cpu") -> dict[str, object]:
    task = load_task(task_dir)
    sol_dir = workdir / task_dir.name
    if not sol_dir.exists():
        write_solution_dir(task.baseline_or_reference(), sol_dir)
    options = VerifyOptions(device=device, heldout=1, workloads=workloads, prestart=True, log_dir=workdir / "logs")
    t0 = time.perf_counter()
    result = verify(task, sol_dir, options)
    took = time.perf_counter() - t0
    ci = result.summary.speedup_ci
    per = [w.speedup_ci for w in result.workloads if w.speedup_ci]
    comp = result.summary.comparison
    return {"task": task_dir.name, "status": result.status.value, "seconds": took, "speedup": result.summary.speedup_geomean,
            "ci": ci, "covered": bool(ci and ci[0] <= 1.0 <= ci[1]), "per_workload_covered": [c[0] <= 1.0 <= c[1] for c in per],
            "rounds_only_covered": rounds_only_covered(comp) if comp else None,
            "log_mean": comp.log_mean if comp else None, "log_se": comp.log_se if comp else None,
            "clock": result.summary.clock, "load": os.getloadavg()[0]}  # fmt: skip


def rounds_only_covered(comp: Comparison) -> bool:
    """Would the 95 % CI contain 1.0 without the between-box term (`kloop.verify.stats.between_boxes`)?"""
    se = math.sqrt(max(comp.log_se**2 - BOX_SD**2, 0.0))
    return abs(comp.log_mean) <= _t(0.975, comp.df) * se


def report(rows: list[dict[str, object]], phase: str) -> str:
    if not rows:
        return f"| {phase} | 0 | - | - | - | - | - |"
    covered = sum(bool(r["covered"]) for r in rows)
    per = [c for r in rows for c in r["per_workload_covered"]]  # type: ignore[attr-defined]
    secs = statistics.median(float(r["seconds"]) for r in rows)  # type: ignore[arg-type]
    load = statistics.median(float(r["load"]) for r in rows)  # type: ignore[arg-type]
    bare = sum(bool(r.get("rounds_only_covered")) for r in rows)
    return (f"| {phase} | {len(rows)} | {covered}/{len(rows)} = {covered / len(rows):.1%} | "
            f"{sum(per)}/{len(per)} = {sum(per) / max(len(per), 1):.1%} | {bare}/{len(rows)} = {bare / len(rows):.1%} | "
            f"{secs:.1f} | {load:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--load-at", type=float, default=0.5, help="fraction of runs after which the load starts")
    parser.add_argument("--tasks", type=Path, nargs="*", default=TASKS)
    parser.add_argument("--workloads", type=int, default=None, help="verify only the first N workloads")
    parser.add_argument("--quick", action="store_true", help="20 runs, 2 workloads each")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU examples (bench/device_check.sh)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.workloads = 20, args.workloads or 2
    work = Path(tempfile.mkdtemp(prefix="kloop-aa-"))
    rows: list[dict[str, object]] = []
    load: list[subprocess.Popen[bytes]] = []
    try:
        for i in range(args.runs):
            if not load and i >= args.load_at * args.runs:
                load = start_load()
            row = one(args.tasks[i % len(args.tasks)], work, args.workloads, args.device)
            row["loaded"] = bool(load)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        stop_load(load)
    print("| phase | runs | geomean CI contains 1.0 | per-workload CIs contain 1.0 | without the box term | median s | load |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(report([r for r in rows if not r["loaded"]], "quiet"))
    print(report([r for r in rows if r["loaded"]], "competing load"))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
