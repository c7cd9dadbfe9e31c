"""Where a verification's timing phase goes, on the supervisor's side. Run by hand:

    .venv/bin/python bench/timing_split.py TASK SOLUTION [--repeats 1]

Runs `kloop verify TASK SOLUTION` in this process (one unmeasured verification first warms the
build cache), with the timing side's functions wrapped in timers: every request to a sandbox by
operation, `BoxSlots.run` (one timed batch) with the sum of its calls' go-to-done wall times and
the box's CPU time over it, the settled CPU-time and run-delay reads, input generation and
packing for each round, the input check after each batch, the re-check of picked calls and the
hand-off calibration. Columns: total ms, count, us each. Parts overlap (a batch holds its reads and
requests); `bench/verify_overhead.py` gives the phases of whole verifications side by side.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import time
from collections.abc import Callable
from typing import Any

TOTAL: collections.Counter[str] = collections.Counter()
COUNT: collections.Counter[str] = collections.Counter()


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TOTAL[name] += time.perf_counter() - t0
            COUNT[name] += 1

    return wrapper


def _instrument() -> None:
    import kloop.verify.batches as batches
    import kloop.verify.timed as timed
    from kloop.verify.process import SandboxProcess

    request = SandboxProcess.request

    def by_op(self: SandboxProcess, op: str, *args: Any, **kwargs: Any) -> Any:
        return _timed(f"request {op}", request)(self, op, *args, **kwargs)

    SandboxProcess.request = by_op  # type: ignore[method-assign]
    batches.box_cpu_ns = _timed("settled CPU-time read", batches.box_cpu_ns)
    batches.run_delay_ns = _timed("run-delay read", batches.run_delay_ns)
    run = _timed("batch (BoxSlots.run)", batches.BoxSlots.run)

    def run_batch(self: Any, packed: bytearray, count: int, noop: bool, timeout_s: float) -> Any:
        take = run(self, packed, count, noop, timeout_s)
        TOTAL["  its calls, go to done"] += take.wall_ns / 1e9
        TOTAL["  the box's CPU in it"] += (take.cpu_ns or 0) / 1e9
        return take

    batches.BoxSlots.run = run_batch  # type: ignore[method-assign]
    timed.fresh_calls = _timed("round inputs (fresh_calls)", timed.fresh_calls)
    timed.packed_calls = _timed("packing (packed_calls)", timed.packed_calls)
    session = next(c for c in vars(timed).values() if isinstance(c, type) and hasattr(c, "_recheck"))
    for method, label in (("_time_workload", "timing phase (all workloads)"), ("_check_inputs", "input check"),
                          ("_recheck", "re-check of picked calls"), ("_harness_cost", "hand-off calibration")):
        setattr(session, method, _timed(label, getattr(session, method)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("solution")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    from kloop.cli import main as kloop

    argv = ["verify", args.task, args.solution, "--json", "/dev/null"]
    with contextlib.redirect_stdout(io.StringIO()):
        kloop(argv)  # warms the build cache
    _instrument()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        for _ in range(args.repeats):
            kloop(argv)
    print(f"{args.repeats} verification(s) of {args.solution}: {(time.perf_counter() - t0) / args.repeats:.2f} s each")
    for name, seconds in sorted(TOTAL.items(), key=lambda kv: -kv[1]):
        n = COUNT[name] or COUNT["batch (BoxSlots.run)"]
        print(f"{name:34s} {seconds * 1e3 / args.repeats:8.0f} ms  n={n // args.repeats:5d}  {seconds / n * 1e6:8.0f} us each")


if __name__ == "__main__":
    main()
