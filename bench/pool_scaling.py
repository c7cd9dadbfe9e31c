"""Candidates verified per minute by the local pool with 1, 2 and 4 slots on the CPU examples.

    .venv/bin/python bench/pool_scaling.py [--jobs 8] [--slots 1,2,4] [--json OUT]

Each level starts a fresh `LocalPool`, waits until every slot process is up (start-up is
reported apart), then verifies the same mix of honest candidates (the vectorized silu_and_mul
and rmsnorm solutions, the fast option set the loop tests use) and reports jobs per minute,
the speed-up over one slot, and how many verdicts were not PASSED (on a loaded machine the
off-CPU check rejects honest candidates, which says the CPU sets are oversubscribed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kloop.pool.base import run_all  # noqa: E402
from kloop.pool.bundle import Bundle  # noqa: E402
from kloop.pool.job import VerifyJob  # noqa: E402
from kloop.pool.local import LocalPool  # noqa: E402
from kloop.pool.verifier import job_options  # noqa: E402

FAST = {"iterations": 2, "rounds": 6, "warmup": 1, "heldout": 1, "recheck": 1, "timeout_s": 120, "workloads": 1}
PAIRS = [(ROOT / "examples" / "silu_and_mul", "python_vectorized"), (ROOT / "examples" / "rmsnorm", "python_vectorized")]


def jobs(count: int) -> list[VerifyJob]:
    options = job_options("cpu", FAST, True, 1)
    out = []
    for i in range(count):
        task, name = PAIRS[i % len(PAIRS)]
        out.append(VerifyJob(id=f"j{i}", task=Bundle.from_dir(task), solution=Bundle.from_dir(task / "solutions" / name),
                             options=options))
    return out


def level(slots: int, count: int) -> dict[str, object]:
    start = time.monotonic()
    pool = LocalPool(device="cpu", slots=slots)
    try:
        for slot in pool.slots:
            slot.ready.wait(120)
        ready = time.monotonic()
        outcomes = run_all(pool, jobs(count))
        done = time.monotonic()
    finally:
        pool.close()
    statuses = [o.verify_result().status.value if o.result else "HARNESS" for o in outcomes]
    return {"slots": slots, "jobs": count, "startup_s": round(ready - start, 1), "wall_s": round(done - ready, 1),
            "per_minute": round(60.0 * count / (done - ready), 2),
            "not_passed": sum(s != "PASSED" for s in statuses), "statuses": statuses}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--slots", default="1,2,4")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    print(f"CPUs available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.1f}")
    rows = []
    for slots in (int(s) for s in args.slots.split(",")):
        row = level(slots, args.jobs)
        base = rows[0]["per_minute"] if rows else row["per_minute"]
        row["speedup_vs_1"] = round(float(row["per_minute"]) / float(base), 2)  # type: ignore[arg-type]
        row["load_after"] = round(os.getloadavg()[0], 1)
        rows.append(row)
        print(f"slots={slots}: {row['per_minute']} candidates/min ({row['jobs']} in {row['wall_s']}s, "
              f"x{row['speedup_vs_1']} vs 1 slot; start-up {row['startup_s']}s; not PASSED {row['not_passed']}; "
              f"load {row['load_after']})", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
