"""Verify every honest red-team solution N times and count false rejects. Run by hand:

    .venv/bin/python bench/false_reject.py [--repeats 20] [--timing] [--coverage]

Each verification draws a fresh secret seed, fresh held-out workloads and (with --timing) runs
the A-B timing path with its wall-clock and re-check audits, so this measures how often the
verifier refuses a correct solution. Every verification also judges the input-coverage regimes
(signed, wide, small, tiny, special). `--coverage` adds the honest solutions of the coverage
tasks (tests/verify/redteam/coverage/<task>/honest_*, inputs declared in [0, 1)).
Prints one line per solution and the total.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kloop.task.load import load_task
from kloop.verify import VerifyOptions, verify

REPO = Path(__file__).resolve().parents[1]
REDTEAM = REPO / "tests" / "verify" / "redteam"
TASK = REPO / "tests" / "verify" / "tasks" / "rmsnorm_tiny"


def honest_solutions(coverage: bool = False) -> list[tuple[Path, Path]]:
    """(task dir, solution dir) of every honest red-team solution."""
    pairs = [(TASK, p) for p in sorted(REDTEAM.iterdir()) if p.name.startswith("honest_")]
    if coverage:
        pairs += [(TASK.parent / p.parent.name, p) for p in sorted(REDTEAM.glob("coverage/*/honest_*"))]
    return pairs


def count_false_rejects(repeats: int, timing: bool, coverage: bool = False) -> tuple[int, int, list[str]]:
    logs = Path(tempfile.mkdtemp(prefix="kloop-false-reject-"))
    options = VerifyOptions(device="cpu", timing=timing, speedup=timing, iterations=8, rounds=2, log_dir=logs,
                            prestart=True, timeout_s=30)  # fmt: skip
    total = rejects = 0
    reasons: list[str] = []
    for task_dir, solution in honest_solutions(coverage):
        task = load_task(task_dir)
        bad = 0
        start = time.perf_counter()
        for _ in range(repeats):
            result = verify(task, solution, options)
            total += 1
            if not result.passed:
                bad += 1
                reasons.extend(f"{solution.name}: {r}" for r in result.reasons)
        rejects += bad
        print(f"{solution.name:24s} {repeats - bad}/{repeats} passed  ({time.perf_counter() - start:.0f} s)", flush=True)
    return rejects, total, reasons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--timing", action="store_true", help="also run the timing path and its audits")
    parser.add_argument("--coverage", action="store_true", help="also the honest solutions of the coverage tasks")
    args = parser.parse_args()
    rejects, total, reasons = count_false_rejects(args.repeats, args.timing, args.coverage)
    print(f"false rejects: {rejects} / {total} verifications")
    for reason in reasons:
        print("  ", reason)


if __name__ == "__main__":
    main()
