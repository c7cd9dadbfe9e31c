"""How much of the exhaustive optimum does the tuner find, for what share of the evaluations?

Two steps, because one verification takes 10-25 s on the shared CPU machine:

1. `--record`: every configuration of a tunable example goes through the real verifier once
   (timing on, no interleaved baseline: the objective is the geomean of the per-workload median
   latencies, and the baseline is the same for every configuration). One JSON line per
   configuration is written to `bench/tune_space_<name>.jsonl` with the load average.
2. default: replay search strategies offline against that record, over many seeds: each
   strategy asks for configurations, the record answers with the measured latency, and we score
   the best configuration found (by its recorded latency) against the exhaustive optimum.

    .venv/bin/python bench/tune_efficiency.py --record examples/rmsnorm examples/rmsnorm/solutions/python_tunable
    .venv/bin/python bench/tune_efficiency.py bench/tune_space_rmsnorm_python_tunable.jsonl --seeds 200
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))


def _recorded(paths: list[Path]) -> set[str]:
    done = set()
    for path in paths:
        if path.is_file():
            done |= {json.dumps(json.loads(line)["config"], sort_keys=True)
                     for line in path.read_text().splitlines() if line.strip()}
    return done


def record(task_dir: Path, solution_dir: Path, out: Path, also: list[Path] | None = None,
           reverse: bool = False) -> None:
    """Verify every configuration once and append its measured latencies to `out`."""
    import shutil

    from kloop.route.search import all_configs, read_space
    from kloop.task.load import load_task
    from kloop.task.tunables import instantiate_dir as instantiate
    from kloop.verify import verify
    from kloop.verify.result import VerifyOptions

    task = load_task(task_dir)
    space = read_space(solution_dir)
    files = [out, *(also or [])]
    done = _recorded(files)
    configs = [c for c in all_configs(space) if json.dumps(c, sort_keys=True) not in done]
    print(f"{len(configs)} configurations to verify ({len(done)} recorded)", flush=True)
    for config in reversed(configs) if reverse else configs:
        if json.dumps(config, sort_keys=True) in _recorded(files):  # another recorder took it
            continue
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp) / "solution"
            shutil.copytree(solution_dir, work)
            instantiate(work, config)
            began = time.time()
            result = _verify_retrying(verify, task, work, VerifyOptions(device="cpu", speedup=False, heldout=1))
        timed = [w.latency_ms for w in result.workloads if not w.heldout and w.latency_ms]
        line = {"config": config, "status": result.status.value,
                "latency_geomean_ms": math.exp(sum(map(math.log, timed)) / len(timed)) if timed and result.passed else None,
                "latency_ms": {json.dumps(w.axes): w.latency_ms for w in result.workloads if not w.heldout},
                "verify_s": round(time.time() - began, 2), "loadavg": os.getloadavg()[0]}
        with out.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)


def _verify_retrying(verify, task, work, options, attempts: int = 20):  # noqa: ANN001 - bench glue
    """A harness failure (the shared checkout mid-edit) is retried; a candidate's failure is a verdict."""
    from kloop.errors import HarnessFailure

    for attempt in range(attempts):
        try:
            return verify(task, work, options)
        except HarnessFailure as exc:
            print(f"harness failure, retrying in 30 s ({attempt + 1}/{attempts}): {exc}", flush=True)
            time.sleep(30)
    raise SystemExit("the verifier kept failing")


def load_record(path: Path) -> dict[str, float | None]:
    """config key -> recorded geomean latency (None: the configuration failed verification)."""
    from kloop.route.search import key

    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {key(r["config"]): r["latency_geomean_ms"] for r in rows}


def replay(space: dict, table: dict[str, float | None], budget: int, seed: int, start: dict) -> tuple[float, int]:
    """Run the adaptive search against the record: (best recorded latency found, evaluations used)."""
    from kloop.route.search import Observation, Search, key

    search = Search(space, budget=budget, seed=seed, start=start)
    history: list[Observation] = []
    while (config := search.next(history)) is not None:
        history.append(Observation(config, table[key(config)]))
    found = min((o.cost for o in history if o.cost), default=math.inf)
    return found, len(history)


def random_search(table: dict[str, float | None], budget: int, seed: int) -> float:
    """The yardstick: `budget` configurations drawn uniformly without replacement."""
    import random

    keys = sorted(table)
    picked = random.Random(seed).sample(keys, budget)
    return min((table[k] for k in picked if table[k]), default=math.inf)


def evaluate(paths: list[Path], seeds: int, fraction: float) -> int:
    """Score the search on each recorded space over `seeds` seeds; exit 1 if a target is missed."""
    from kloop.route.search import all_configs, key

    failed = False
    for path in paths:
        table = load_record(path)
        space = complete_subspace(table, _space_of(table))
        size = len(all_configs(space))
        if size != len(table):
            print(f"{path}: the record holds {len(table)} of {len(all_configs(_space_of(table)))} configurations; "
                  f"scoring the largest complete sub-space, {size} configurations: {space}")
        table = {k: v for k, v in table.items() if k in {key(c) for c in all_configs(space)}}
        optimum = min(v for v in table.values() if v)
        budget = int(fraction * size)
        start = {n: v[0] for n, v in space.items()}
        ratios, used = [], []
        for seed in range(seeds):
            found, evals = replay(space, table, budget, seed, start)
            ratios.append(optimum / found)
            used.append(evals)
        rand = [optimum / random_search(table, budget, seed) for seed in range(seeds)]
        mean, worst = sum(ratios) / len(ratios), min(ratios)
        share = sum(1 for r in ratios if r >= 0.98) / len(ratios)
        print(f"{path.name}: {size} configurations, budget {budget} ({budget / size:.0%}), {seeds} seeds")
        print(f"  adaptive: mean {mean:.1%} of the optimum, worst {worst:.1%}, >= 98% in {share:.0%} of seeds, "
              f"{max(used)} evaluations at most")
        print(f"  random:   mean {sum(rand) / len(rand):.1%}, worst {min(rand):.1%}")
        failed |= mean < 0.98
    return 1 if failed else 0


def complete_subspace(table: dict[str, float | None], space: dict[str, list]) -> dict[str, list]:
    """The space with one tunable cut to the values whose every configuration was recorded.

    A record interrupted part-way (the shared machine's load) is scored on what it fully covers,
    never on configurations it did not measure. The tunable cut is the one that keeps the most.
    """
    from kloop.route.search import all_configs, key

    best = space
    best_size = -1
    for name, values in space.items():
        kept = [v for v in values
                if all(key(c) in table for c in all_configs({**space, name: [v]}))]
        sub = {**space, name: kept}
        size = len(all_configs(sub)) if kept else 0
        if size > best_size:
            best, best_size = sub, size
    return best


def _space_of(table: dict[str, float | None]) -> dict[str, list]:
    """The declared space, rebuilt from the recorded configurations in first-seen order."""
    space: dict[str, list] = {}
    for text in table:
        for name, value in json.loads(text).items():
            values = space.setdefault(name, [])
            if value not in values:
                values.append(value)
    return space


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--record", action="store_true", help="verify every configuration: TASK SOLUTION")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--also", type=Path, action="append", help="with --record: skip configurations in this file too")
    parser.add_argument("--reverse", action="store_true", help="with --record: walk the space from the end")
    parser.add_argument("--fraction", type=float, default=0.30, help="evaluation budget as a share of the space")
    args = parser.parse_args()
    if args.record:
        task_dir, solution_dir = args.paths
        out = args.out or ROOT / "bench" / f"tune_space_{task_dir.name}_{solution_dir.name}.jsonl"
        record(task_dir, solution_dir, out, args.also, args.reverse)
        return 0
    return evaluate(args.paths, args.seeds, args.fraction)


if __name__ == "__main__":
    sys.exit(main())
