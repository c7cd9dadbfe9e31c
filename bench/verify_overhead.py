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

`--against SRC` (repeatable) measures other copies of kloop's source (e.g. `git worktree`s of older
commits) in the same run: each configuration runs in a worker process per code version, the versions
alternating verification by verification, so all see the same load. `--task`/`--solution` may be
given several times (paired in order): every pair is measured, one table each.

Columns after `total` are parts of the phases before it, not added to them: `coverage` (the
coverage regimes: their inputs, references, runs and checks), `measure` (the supervisor's reads of
the box after each reply: the thread watch and the input hashes, issue 29) and `settle` (waiting for
a box to leave the CPU before a CPU-time read). `measure` + `settle` + `sandbox_start` + `close` is
what the bench can attribute to containment; the hand-off of timed calls one by one is inside `timing`.
Instrumented by wrapping those functions in the worker (absent in a tree: 0). `cpu` is the CPU time
of the verification's process (the supervisor, its torch threads included) and of the processes it
reaped during it (the sandboxes it closed; prestarted, that includes the spares started after the
previous verification): the work done, which load stretches far less than wall time, so on a shared
machine compare it across versions before the wall columns.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
PHASES = ("sandbox_start", "build", "inputs", "reference", "runs", "checks", "timing", "close", "other", "total",
          "coverage", "measure", "settle", "cpu")  # fmt: skip
PARTS = ("coverage", "measure", "settle", "cpu")
"""Parts of the phases before `total` (see the module docstring), not added to them."""
_SPENT: dict[str, int] = {"measure": 0, "settle": 0}


def _instrument() -> None:
    """Count the time spent in the supervisor's box reads, where this tree has them."""
    import functools

    from kloop.verify import cgroups, process

    for cls, name, key in ((getattr(process, "SandboxProcess", None), "_measure", "measure"),
                           (getattr(cgroups, "Containment", None), "_settle", "settle")):  # fmt: skip
        func = getattr(cls, name, None)
        if func is None:
            continue

        @functools.wraps(func)
        def timed(*args: object, _func=func, _key=key, **kwargs: object) -> object:  # noqa: ANN001
            t0 = time.perf_counter_ns()
            try:
                return _func(*args, **kwargs)
            finally:
                _SPENT[_key] += time.perf_counter_ns() - t0

        setattr(cls, name, timed)


def one(task_dir: Path, solution_dir: Path, options: VerifyOptions) -> dict[str, float]:
    """One verification; returns milliseconds per phase."""
    task = load_task(task_dir)
    solution = load_solution(solution_dir)
    baseline = task.baseline_or_reference()
    for key in _SPENT:
        _SPENT[key] = 0
    cpu0 = _cpu_s()
    start = time.perf_counter()
    run = Verification(task, solution, options, torch_device(options.device), baseline)
    result = run.run()
    total = (time.perf_counter() - start) * 1e3
    cpu = (_cpu_s() - cpu0) * 1e3
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
        "coverage": phases.get("coverage", 0.0),
        **{key: ns / 1e6 for key, ns in _SPENT.items()},
        "cpu": cpu,
    }


def _cpu_s() -> float:
    """User + system CPU seconds of this process and of its reaped children."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _other(row: dict[str, float]) -> dict[str, float]:
    row["other"] = row["total"] - sum(v for k, v in row.items() if k not in ("total", "other", *PARTS))
    return row


def worker(args: argparse.Namespace) -> None:
    """One configuration's verifications in this process (its pool stays warm): one JSON row per line."""
    _instrument()
    logs = Path(tempfile.mkdtemp(prefix="kloop-bench-"))
    options = VerifyOptions(device="cpu", timing=args.timing, speedup=args.timing, heldout=2, log_dir=logs,
                            prestart=args.prestart)  # fmt: skip
    one(args.task[0], args.solution[0], options)  # warm the build cache (and the pool)
    print("ready", flush=True)
    for line in sys.stdin:  # one verification per line the parent sends
        if not line.strip():
            break
        time.sleep(args.gap)
        print(json.dumps(_other(one(args.task[0], args.solution[0], options))), flush=True)


def _spawn(src: Path | None, args: argparse.Namespace, prestart: bool) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    cmd = [sys.executable, __file__, "--worker", "--task", str(args.pair[0]), "--solution", str(args.pair[1]),
           "--gap", str(args.gap)] + (["--timing"] if args.timing else []) + (["--prestart"] if prestart else [])  # fmt: skip
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"worker for {src or 'this tree'} did not start")
    return proc


def compare(args: argparse.Namespace) -> None:
    """This tree and every `--against` side by side, alternating verification by verification."""
    versions: dict[str, Path | None] = {"this tree": Path(__file__).resolve().parents[1] / "src"}
    versions.update({str(src): src for src in args.against})
    for task, solution in zip(args.task, args.solution, strict=True):
        args.pair = (task, solution)
        print(f"task {task.name}, solution {solution.name}, timing {'on' if args.timing else 'off'}, gap {args.gap:g} s")
        print("| code | mode | " + " | ".join(PHASES) + " |")
        print("|" + " --- |" * (len(PHASES) + 2))
        totals: list[str] = []
        for prestart in (False, True):
            procs = {name: _spawn(src, args, prestart) for name, src in versions.items()}
            rows: dict[str, list[dict[str, float]]] = {name: [] for name in procs}
            for _ in range(args.repeats):
                for name, proc in procs.items():
                    assert proc.stdin is not None and proc.stdout is not None
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                    rows[name].append(json.loads(proc.stdout.readline()))
            mode = "prestarted sandbox" if prestart else "fresh sandbox"
            for name, proc in procs.items():
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait()
                med = {p: statistics.median(r.get(p, 0.0) for r in rows[name]) for p in PHASES}
                print(f"| {name} | {mode} | " + " | ".join(f"{med[p]:.0f}" for p in PHASES) + " |", flush=True)
                totals.append(f"{name}, {mode}: totals " + ", ".join(f"{r['total']:.0f}" for r in rows[name])
                              + "; cpu " + ", ".join(f"{r.get('cpu', 0.0):.0f}" for r in rows[name]))  # fmt: skip
        print(f"(milliseconds, median of {args.repeats} verifications per row; {', '.join(PARTS)} are parts of the "
              "phases before total)")  # fmt: skip
        print("\n".join(totals), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", type=Path, action="append", help="repeatable (default rmsnorm_tiny)")
    parser.add_argument("--solution", type=Path, action="append", help="repeatable, paired with --task in order")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timing", action="store_true", help="include A-B timing against the baseline")
    parser.add_argument("--gap", type=float, default=0.0, help="seconds between verifications (the agent's turn)")
    parser.add_argument("--against", type=Path, action="append", default=[],
                        help="another kloop src/ directory, measured alternately in this run (repeatable)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--prestart", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.task = args.task or [REPO / "tests/verify/tasks/rmsnorm_tiny"]
    args.solution = args.solution or [REPO / "tests/verify/redteam/honest_value"]
    if len(args.task) != len(args.solution):
        parser.error("give --task and --solution the same number of times")
    if args.worker:
        worker(args)
        return
    if args.against:
        compare(args)
        return
    _instrument()
    logs = Path(tempfile.mkdtemp(prefix="kloop-bench-"))
    for task, solution in zip(args.task, args.solution, strict=True):
        single(task, solution, args, logs)


def single(task: Path, solution: Path, args: argparse.Namespace, logs: Path) -> None:
    """One --task/--solution pair measured in this process, fresh then prestarted: one table."""
    print(f"task {task.name}, solution {solution.name}, timing {'on' if args.timing else 'off'}, gap {args.gap:g} s")
    print("| mode | " + " | ".join(PHASES) + " |")
    print("|" + " --- |" * (len(PHASES) + 1))
    for prestart in (False, True):
        options = VerifyOptions(device="cpu", timing=args.timing, speedup=args.timing, heldout=2, log_dir=logs,
                                prestart=prestart)  # fmt: skip
        one(task, solution, options)  # warm the build cache (and the pool)
        rows = []
        for _ in range(args.repeats):
            time.sleep(args.gap)
            rows.append(one(task, solution, options))
        rows = [_other(r) for r in rows]
        med = {p: statistics.median(r[p] for r in rows) for p in PHASES}
        mode = "prestarted sandbox" if prestart else "fresh sandbox"
        print(f"| {mode} | " + " | ".join(f"{med[p]:.0f}" for p in PHASES) + " |", flush=True)
    print("(milliseconds, median of", args.repeats, "verifications)", flush=True)


if __name__ == "__main__":
    main()
