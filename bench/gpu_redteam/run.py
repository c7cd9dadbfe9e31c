"""GPU red team: side streams, an L2-persistence carve-out, lazy launch, a pointer cache. Needs CUDA.

    PYTHONPATH=src python3 bench/gpu_redteam/run.py [--out DIR]

Each case is verified with the GPU timing path on examples/rmsnorm and must be refused by the
named checks, or pass without a speedup it did not earn. Prints a table, writes each verdict to
DIR/<case>.json, exits 1 when any expectation fails. tests/verify/test_gpu.py runs `check_all`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kloop.task.load import load_task
from kloop.verify import VerifyOptions, VerifyResult, verify

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TASK = REPO / "examples" / "rmsnorm"


@dataclass
class Case:
    name: str
    path: Path
    refused_by: set[str]
    """Checks allowed to refuse it; empty: it must pass."""
    if_passed: str
    """What a pass must satisfy: 'honest', 'no_speedup' (honest path is 20x the work) or 'no_l2_gain'."""


CASES = [
    Case("honest_torch", HERE / "honest_torch", set(), "honest"),
    Case("attack_side_stream", HERE / "attack_side_stream", {"wall_clock", "physics_floor", "outputs_written",
                                                             "numeric", "timed_outputs"}, "no_speedup"),  # fmt: skip
    Case("attack_l2_persist", HERE / "attack_l2_persist", {"wall_clock", "physics_floor"}, "no_l2_gain"),
    Case("attack_lazy_launch", HERE / "attack_lazy_launch", {"background_threads"}, "refused"),
    Case("attack_pointer_cache", HERE / "attack_pointer_cache", {"timed_outputs", "determinism", "numeric"},
         "no_speedup"),  # fmt: skip
]


def _geo_latency(result: VerifyResult) -> float | None:
    lat = [w.latency_ms for w in result.workloads if w.latency_ms]
    return math.exp(sum(math.log(v) for v in lat) / len(lat)) if lat else None


def judge(case: Case, result: VerifyResult, honest: VerifyResult | None) -> tuple[bool, str]:
    """Whether the verdict meets the case's expectation, and why."""
    failed = set(result.failed_checks())
    if not result.passed:
        ok = bool(failed & case.refused_by)
        return ok, f"refused by {sorted(failed)}" + ("" if ok else f", expected one of {sorted(case.refused_by)}")
    speedup = result.summary.speedup_geomean
    rules: dict[str, Callable[[], tuple[bool, str]]] = {
        "honest": lambda: (speedup is not None, f"passed, speedup {speedup}"),
        "refused": lambda: (False, "passed but must be refused"),
        "no_speedup": lambda: (speedup is not None and speedup < 1.0, f"passed, speedup {speedup} (must be < 1)"),
        "no_l2_gain": lambda: _no_l2_gain(result, honest),
    }
    return rules[case.if_passed]()


def _no_l2_gain(result: VerifyResult, honest: VerifyResult | None) -> tuple[bool, str]:
    mine, theirs = _geo_latency(result), _geo_latency(honest) if honest else None
    if mine is None or theirs is None:
        return False, "no latency to compare with the honest twin"
    return mine >= 0.8 * theirs, f"passed, latency {mine:.4f} ms vs honest twin {theirs:.4f} ms (must be >= 0.8x)"


def check_all(out: Path) -> list[tuple[str, str, bool, str]]:
    task = load_task(TASK)
    out.mkdir(parents=True, exist_ok=True)
    options = VerifyOptions(device="cuda", timeout_s=60, build_timeout_s=600, iterations=20, rounds=3, log_dir=out / "logs")
    rows = []
    honest: VerifyResult | None = None
    for case in CASES:
        result = verify(task, case.path, options)
        (out / f"{case.name}.json").write_text(result.model_dump_json(indent=2))
        if case.name == "honest_torch":
            honest = result
        ok, why = judge(case, result, honest)
        rows.append((case.name, result.status.value, ok, why))
        print(f"{case.name:22s} {result.status.value:20s} {'ok ' if ok else 'BAD'} {why}", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="kloop-gpu-redteam-")))
    args = parser.parse_args()
    rows = check_all(args.out)
    (args.out / "summary.json").write_text(json.dumps([dict(zip(("case", "status", "ok", "why"), r, strict=True)) for r in rows], indent=2))
    return 0 if all(r[2] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
