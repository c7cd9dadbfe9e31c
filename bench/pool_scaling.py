"""Candidates verified per minute by the local pool with 1, 2 and 4 slots on the CPU examples.

    .venv/bin/python bench/pool_scaling.py [--jobs 8] [--slots 1,2,4] [--json OUT]
    .venv/bin/python bench/pool_scaling.py --bottlenecks [--json OUT]

Each level starts a fresh `LocalPool`, waits until every slot process is up (start-up is
reported apart), then verifies the same mix of honest candidates (the vectorized silu_and_mul
and rmsnorm solutions, the fast option set the loop tests use) and reports jobs per minute,
the speed-up over one slot, and how many verdicts were not PASSED (on a loaded machine the
off-CPU check rejects honest candidates, which says the CPU sets are oversubscribed).

`--bottlenecks` measures, instead, what could limit throughput before the devices do (the
numbers docs/scaling.md's plan for 8 GPUs x 16 nodes rests on), each side by side in one run:

- coordinator: what the driver spends per job (bundle the candidate, serialize the job, parse
  the outcome) for a small task and a 32 MiB one (the task bundle travels in every local job;
  the Ray pool puts it in the object store once and sends the job less the task), and
  the pool's own round trip (one job through a 1-slot pool, minus the same job verified in this
  process, alternated);
- lineage: one team round's database work (claim a number, write a row, read the branch's rows,
  the global best, its head) with 1, 2, 4 and 8 branches at once, on 0 and 2,000 earlier rows
  (`--lineage-only` runs just this part, to compare two checkouts side by side);
- bundle cache: a task bundle unpacked cold, vs the cached copy re-checked on a worker.
The C++ build cache (cold build vs hit) is `bench/build_cache_bench.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kloop.pool.base import run_all  # noqa: E402
from kloop.pool.bundle import Bundle  # noqa: E402
from kloop.pool.job import JobOutcome, VerifyJob, identity, run_job  # noqa: E402
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


def _ms(fn, repeat: int) -> float:
    """Median wall milliseconds of `fn()` over `repeat` calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t0))
    return round(statistics.median(times), 3)


def _big_task(root: Path, mib: int) -> Path:
    """The silu_and_mul task plus `mib` MiB of incompressible workload data (a safetensors-sized set)."""
    import shutil

    dest = root / "big_task"
    shutil.copytree(PAIRS[0][0], dest, ignore=shutil.ignore_patterns("__pycache__", "solutions"))
    (dest / "blob").mkdir()
    for i in range(mib):
        (dest / "blob" / f"part{i:03d}.bin").write_bytes(os.urandom(1 << 20))
    return dest


def coordinator(tmp: Path) -> dict[str, object]:
    """Per-job driver cost for a small and a 32 MiB task, and the local pool's round trip."""
    task, name = PAIRS[0]
    solution = task / "solutions" / name
    options = job_options("cpu", FAST, True, 1)
    out: dict[str, object] = {}
    for label, task_dir in (("small", task), ("32MiB", _big_task(tmp, 32))):
        bundle = Bundle.from_dir(task_dir)
        job = VerifyJob(id="c", task=bundle, solution=Bundle.from_dir(solution), options=options)
        text = job.model_dump_json()
        out[label] = {
            "task_bundle_ms": _ms(lambda d=task_dir: Bundle.from_dir(d), 3),  # once per run (PoolVerifier caches it)
            "candidate_bundle_ms": _ms(lambda: Bundle.from_dir(solution), 20),
            "job_json_bytes": len(text),
            "job_serialize_ms": _ms(job.model_dump_json, 5),  # per job: the task bundle is in every job
            # RayPool since the task went to the object store: per job, the job less its task
            "ray_job_serialize_ms": _ms(lambda j=job: j.model_dump_json(exclude={"task"}), 20),
            "worker_parse_and_check_ms": _ms(lambda t=text: VerifyJob.model_validate_json(t).task.decoded(), 3),
        }
    real = run_job(jobs(1)[0], identity("bench", "inproc", "cpu"))
    result_text = real.model_dump_json()
    out["outcome"] = {"bytes": len(result_text),
                      "parse_ms": _ms(lambda: JobOutcome.model_validate_json(result_text).verify_result(), 20)}
    inproc, pooled = [], []
    pool = LocalPool(device="cpu", slots=1)
    try:
        pool.slots[0].ready.wait(120)
        for i in range(3):  # alternated, so load moves both sides alike
            job = jobs(1)[0].model_copy(update={"id": f"rt{i}"})
            t0 = time.monotonic()
            run_job(job, identity("bench", "inproc", "cpu"))
            inproc.append(time.monotonic() - t0)
            t0 = time.monotonic()
            pool.submit(job).result()
            pooled.append(time.monotonic() - t0)
    finally:
        pool.close()
    out["round_trip"] = {"in_process_s": [round(x, 2) for x in inproc], "through_pool_s": [round(x, 2) for x in pooled],
                         "median_overhead_s": round(statistics.median(p - q for p, q in zip(pooled, inproc, strict=True)), 2)}
    return out


def _record(number: int, branch: str) -> object:
    """A lineage row the size of a real one (30 workload speedups, a verify summary, two findings)."""
    from kloop.loop.lineage import CandidateRecord

    speedups = {f"{i:08x}-0000-0000-0000-000000000000": 1.0 + i / 100 for i in range(30)}
    return CandidateRecord(round=number, candidate=f"r{number:05d}", parent="baseline", stage="iterate",
                           agent_status="completed", claim="fuse the reduction " * 5, verify_status="PASSED",
                           verify_summary={"speedup_geomean": 1.2, "n": 30, "reasons": []}, speedup_geomean=1.0 + number % 7 / 10,
                           workload_speedups=speedups, accepted=number % 5 == 0, branch=branch,
                           findings=[{"severity": "info", "text": "ok " * 20}] * 2)


def lineage(tmp: Path, rounds_each: int = 10, sizes: tuple[int, ...] = (0, 2000)) -> list[dict[str, object]]:
    """One team round's lineage work, with 1-8 branches at once, on a fresh and a grown database."""
    from kloop.loop.branches import BranchLineage
    from kloop.loop.lineage import CandidateRecord, Lineage

    rows = []
    for earlier in sizes:
        for branches in (1, 2, 4, 8):
            path = tmp / f"lineage-{earlier}-{branches}.sqlite"
            seed = Lineage(path)
            seed.add(CandidateRecord(round=0, candidate="baseline", stage="research", agent_status="completed",
                                     accepted=True, speedup_geomean=1.0))
            for n in range(1, earlier + 1):
                seed.add(_record(n, "b0"))  # type: ignore[arg-type]
            seed.close()
            per_round: list[float] = []
            lock = threading.Lock()

            def play(branch: str, path: Path = path, per_round: list[float] = per_round,
                     lock: threading.Lock = lock) -> None:
                view = BranchLineage(path, branch)
                for _ in range(rounds_each):
                    t0 = time.perf_counter()
                    number = view.next_round()
                    view.rounds()
                    view.best()
                    view.head()
                    view.add(_record(number, branch))  # type: ignore[arg-type]
                    with lock:
                        per_round.append(time.perf_counter() - t0)
                view.close()

            threads = [threading.Thread(target=play, args=(f"b{i + 1}",)) for i in range(branches)]
            t0 = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - t0
            rows.append({"earlier_rows": earlier, "branches": branches, "rounds": branches * rounds_each,
                         "rounds_per_s": round(branches * rounds_each / wall, 1),
                         "median_round_ms": round(1000 * statistics.median(per_round), 2)})
            print(f"lineage: {earlier} earlier rows, {branches} branches: {rows[-1]['rounds_per_s']} rounds/s, "
                  f"median {rows[-1]['median_round_ms']} ms of DB work per round", flush=True)
    return rows


def bundle_cache(tmp: Path) -> dict[str, object]:
    """A task bundle unpacked cold vs its cached copy re-checked (what a worker does per job)."""
    out = {}
    for label, task_dir in (("small", PAIRS[0][0]), ("32MiB", tmp / "big_task")):
        bundle = Bundle.from_dir(task_dir)
        cache = tmp / f"cache-{label}"
        cache.mkdir()

        def cold(b: Bundle = bundle, c: Path = cache) -> None:
            import shutil

            shutil.rmtree(c / b.digest, ignore_errors=True)
            b.cached(c)

        out[label] = {"cold_ms": _ms(cold, 3), "hit_ms": _ms(lambda b=bundle, c=cache: b.cached(c), 3)}
    return out


def bottlenecks() -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="kloop-scaling-") as name:
        tmp = Path(name)
        report: dict[str, object] = {"coordinator": coordinator(tmp)}
        print("coordinator:", json.dumps(report["coordinator"], indent=1), flush=True)
        report["bundle_cache"] = bundle_cache(tmp)
        print("bundle cache:", json.dumps(report["bundle_cache"]), flush=True)
        report["lineage"] = lineage(tmp)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--slots", default="1,2,4")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--bottlenecks", action="store_true", help="Measure coordinator, lineage and bundle cache.")
    parser.add_argument("--lineage-only", action="store_true", help="Only the lineage part of --bottlenecks.")
    args = parser.parse_args()
    print(f"CPUs available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.1f}")
    if args.lineage_only:
        with tempfile.TemporaryDirectory(prefix="kloop-scaling-") as name:
            rows = lineage(Path(name))
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
        return 0
    if args.bottlenecks:
        report = bottlenecks()
        report["load_after"] = round(os.getloadavg()[0], 1)
        if args.json:
            args.json.write_text(json.dumps(report, indent=1))
        return 0
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
