"""Benchmark: `kloop profile analyze` time per Nsight Compute --set full report (target < 2 s).

Run by hand: `.venv/bin/python bench/profile_analyze.py [FIXTURES_DIR] [--cli]`.
Prints, per case and format, the in-process time of read + playbook + digest (median of 3 runs,
after one warm-up that loads ncu_report), and with --cli the wall time of one cold
`kloop profile analyze --json` process, which includes Python start-up and imports.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from kloop.profile import analyze, digest_json, digest_markdown, read

FORMATS = ("report.ncu-rep", "details.csv", "raw.csv")
DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "ncu" / "h200"


def analyze_once(path: Path) -> float:
    start = time.perf_counter()
    reports = analyze(read(path))
    digest_markdown(reports)
    digest_json(reports)
    return time.perf_counter() - start


def cli_once(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kloop.cli", "profile", "analyze", str(path), "--json"], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = Path(args[0]) if args else DEFAULT
    cli = "--cli" in sys.argv
    cases = sorted(p.parent for p in root.glob("*/report.ncu-rep"))
    analyze_once(cases[0] / "report.ncu-rep")  # warm-up: loads the ncu_report library once
    print(f"{'case':20s} " + " ".join(f"{f:>16s}" for f in FORMATS) + ("   cli(ncu-rep)" if cli else ""))
    worst = 0.0
    for case in cases:
        times = [statistics.median(analyze_once(case / f) for _ in range(3)) for f in FORMATS]
        worst = max(worst, *times)
        line = f"{case.name:20s} " + " ".join(f"{t * 1000:14.0f}ms" for t in times)
        if cli:
            line += f"   {cli_once(case / 'report.ncu-rep') * 1000:10.0f}ms"
        print(line)
    print(f"worst in-process analyze: {worst * 1000:.0f} ms (target < 2000 ms)")
    return 0 if worst < 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
