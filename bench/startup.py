"""Wall time of the real `kloop` process for the commands that do no verification. Run by hand:

    .venv/bin/python bench/startup.py [--runs 20] [--run RUN_DIR] [--json FILE] [--limit 0.3]

Each command is started `--runs` times as its own process (`.venv/bin/kloop ...`, the console
script a user types), after one unmeasured warm-up run, in a rotating order so a burst of load
on a shared machine hits every command alike. It prints p50 and p95 per command, with two
floors for scale: a bare `python -c pass` and `python -c "import kloop.cli"`.

`kloop status` needs a run: `--run DIR` (default runs/demo when it exists; `bash scripts/demo.sh`
makes it). Without one, `status` is timed on a missing run directory (exit 2), which loads the
same modules up to the point where the run is read. `wiki search` reads a throwaway database
made here from the shipped cards. The exit status is 1 when a command's p50 is above --limit.
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

REPO = Path(__file__).resolve().parents[1]
KLOOP = Path(sys.executable).with_name("kloop")


def commands(run: Path | None, db: Path) -> dict[str, list[str]]:
    """label -> argv; the floors first."""
    status_run = str(run) if run is not None else str(db.parent / "no-such-run")
    return {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "import kloop.cli (floor)": [sys.executable, "-c", "import kloop.cli"],
        "kloop --help": [str(KLOOP), "--help"],
        "kloop status": [str(KLOOP), "status", status_run],
        "kloop wiki search": [str(KLOOP), "wiki", "search", "tensor core gemm", "--db", str(db)],
        "kloop task show": [str(KLOOP), "task", "show", str(REPO / "examples" / "rmsnorm")],
    }


def once(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(cmds: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    labels = list(cmds)
    times: dict[str, list[float]] = {label: [] for label in labels}
    for label in labels:  # warm the page cache and __pycache__; not counted
        once(cmds[label], env)
    for i in range(runs):
        for label in labels[i % len(labels):] + labels[: i % len(labels)]:
            times[label].append(once(cmds[label], env))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--run", type=Path, default=None, help="a run directory for `kloop status`")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    parser.add_argument("--limit", type=float, default=0.3, help="seconds a command's p50 may take")
    args = parser.parse_args()
    run = args.run or (REPO / "runs" / "demo" if (REPO / "runs" / "demo" / "summary.json").is_file() else None)
    with tempfile.TemporaryDirectory(prefix="kloop-startup-") as tmp:
        env = {**os.environ, "KLOOP_HOME": tmp}
        db = Path(tmp) / "wiki.sqlite"
        subprocess.run([str(KLOOP), "wiki", "ingest", "cards", "--db", str(db)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        times = measure(commands(run, db), args.runs, env)
    rows = {label: {"p50_s": round(statistics.median(v), 3), "p95_s": round(percentile(v, 0.95), 3), "runs": len(v)}
            for label, v in times.items()}
    print(f"{'command':<28} {'p50 s':>7} {'p95 s':>7}   (status on {run or 'a missing run'}; {os.cpu_count()} cores)")
    for label, row in rows.items():
        print(f"{label:<28} {row['p50_s']:>7.3f} {row['p95_s']:>7.3f}")
    if args.json:
        args.json.write_text(json.dumps({"status_run": str(run) if run else None, "rows": rows}, indent=1))
    slow = [label for label, row in rows.items() if label.startswith("kloop") and row["p50_s"] > args.limit]
    if slow:
        print(f"above {args.limit} s at p50: {', '.join(slow)}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
