"""Wall time per verification of a trivial solution, split by phase. Run by hand:

    .venv/bin/python bench/verify_overhead.py [--repeats 5] [--task DIR] [--solution DIR] [--timing]

Phases: sandbox start (time blocked until the sandbox's hello: interpreter, torch import, timer),
build (load request: build-cache hit + import), input generation, reference (float64), sandbox
runs, checks (comparisons), timing (A-B batches, when --timing), closing the sandboxes, other
(integrity hashing, environment, supervisor bookkeeping) and the total. Each configuration
is measured cold (a new sandbox per candidate) and with --prestart (a spare sandbox started while
the previous candidate ran, as the loop does). The first verification warms the build cache and
is not counted. `--gap S` waits S seconds between verifications, as the writer's turn does in the
loop: on 2 cores, back-to-back verifications (`--gap 0`) pay for starting the next spares too.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from kloop.device.detect import torch_device
from kloop.task.load import load_solution, load_task
from kloop.verify.result import VerifyOptions
from kloop.verify.supervisor import Verification

REPO = Path(__file__).resolve().parents[1]
PHASES = ("sandbox_start", "build", "inputs", "reference", "runs", "checks", "timing", "close", "other", "total")


def one(task_dir: Path, solution_dir: Path, options: VerifyOptions) -> dict[str, float]:
    """One verification; returns milliseconds per phase."""
    task = load_task(task_dir)
    solution = load_solution(solution_dir)
    baseline = task.baseline_or_reference()
    start = time.perf_counter()
    run = Verification(task, solution, options, torch_device(options.device), baseline)
    result = run.run()
    total = (time.perf_counter() - start) * 1e3
    if not result.passed:
        raise SystemExit(f"the trivial solution did not pass: {result.reasons}")
    phases = {k: v / 1e6 for k, v in run.phase_ns.items()}
    return {
        "sandbox_start": phases.get("sandbox_wait", 0.0),
        "build": phases.get("load", 0.0),
        "inputs": phases.get("inputs", 0.0),
        "reference": phases.get("reference", 0.0),
        "runs": phases.get("runs", 0.0),
        "checks": phases.get("checks", 0.0),
        "timing": phases.get("timing", 0.0),
        "close": phases.get("close", 0.0),
        "total": total,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=REPO / "tests/verify/tasks/rmsnorm_tiny")
    parser.add_argument("--solution", type=Path, default=REPO / "tests/verify/redteam/honest_value")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timing", action="store_true", help="include A-B timing against the baseline")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between verifications (the agent's turn)")
    args = parser.parse_args()
    logs = Path(tempfile.mkdtemp(prefix="kloop-bench-"))
    print(f"task {args.task.name}, solution {args.solution.name}, timing {'on' if args.timing else 'off'}, "
          f"gap {args.gap:g} s")
    print("| mode | " + " | ".join(PHASES) + " |")
    print("|" + " --- |" * (len(PHASES) + 1))
    for prestart in (False, True):
        options = VerifyOptions(device="cpu", timing=args.timing, speedup=args.timing, heldout=2, log_dir=logs,
                                prestart=prestart)  # fmt: skip
        one(args.task, args.solution, options)  # warm the build cache (and the pool)
        rows = []
        for _ in range(args.repeats):
            time.sleep(args.gap)
            rows.append(one(args.task, args.solution, options))
        for r in rows:
            r["other"] = r["total"] - sum(v for k, v in r.items() if k != "total")
        med = {p: statistics.median(r[p] for r in rows) for p in PHASES}
        mode = "prestarted sandbox" if prestart else "fresh sandbox"
        print(f"| {mode} | " + " | ".join(f"{med[p]:.0f}" for p in PHASES) + " |")
    print("(milliseconds, median of", args.repeats, "verifications)")


if __name__ == "__main__":
    main()
