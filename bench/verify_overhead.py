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

`--against SRC` measures another copy of kloop's source (e.g. a `git worktree` of an older commit)
in the same run: each configuration runs in a worker process per code version, the versions
alternating verification by verification, so both see the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
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


def worker(args: argparse.Namespace) -> None:
    """One configuration's verifications in this process (its pool stays warm): one JSON row per line."""
    logs = Path(tempfile.mkdtemp(prefix="kloop-bench-"))
    options = VerifyOptions(device="cpu", timing=args.timing, speedup=args.timing, heldout=2, log_dir=logs,
                            prestart=args.prestart)  # fmt: skip
    one(args.task, args.solution, options)  # warm the build cache (and the pool)
    print("ready", flush=True)
    for line in sys.stdin:  # one verification per line the parent sends
        if not line.strip():
            break
        time.sleep(args.gap)
        row = one(args.task, args.solution, options)
        row["other"] = row["total"] - sum(v for k, v in row.items() if k != "total")
        print(json.dumps(row), flush=True)


def _spawn(src: Path | None, args: argparse.Namespace, prestart: bool) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    cmd = [sys.executable, __file__, "--worker", "--task", str(args.task), "--solution", str(args.solution),
           "--gap", str(args.gap)] + (["--timing"] if args.timing else []) + (["--prestart"] if prestart else [])  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"worker for {src or 'this tree'} did not start")
    return proc


def compare(args: argparse.Namespace) -> None:
    """This tree and `--against` side by side, alternating verification by verification."""
    versions = {"this tree": Path(__file__).resolve().parents[1] / "src", f"{args.against}": args.against}
    print(f"task {args.task.name}, solution {args.solution.name}, timing {'on' if args.timing else 'off'}, gap {args.gap:g} s")
    print("| code | mode | " + " | ".join(PHASES) + " |")
    print("|" + " --- |" * (len(PHASES) + 2))
    for prestart in (False, True):
        procs = {name: _spawn(src, args, prestart) for name, src in versions.items()}
        rows: dict[str, list[dict[str, float]]] = {name: [] for name in procs}
        for _ in range(args.repeats):
            for name, proc in procs.items():
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
                rows[name].append(json.loads(proc.stdout.readline()))
        for name, proc in procs.items():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
            med = {p: statistics.median(r[p] for r in rows[name]) for p in PHASES}
            mode = "prestarted sandbox" if prestart else "fresh sandbox"
            print(f"| {name} | {mode} | " + " | ".join(f"{med[p]:.0f}" for p in PHASES) + " |", flush=True)
    print("(milliseconds, median of", args.repeats, "verifications per row)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, default=REPO / "tests/verify/tasks/rmsnorm_tiny")
    parser.add_argument("--solution", type=Path, default=REPO / "tests/verify/redteam/honest_value")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timing", action="store_true", help="include A-B timing against the baseline")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between verifications (the agent's turn)")
    parser.add_argument("--against", type=Path, help="another kloop src/ directory, measured alternately in this run")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prestart", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.against is not None:
        compare(args)
        return
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
