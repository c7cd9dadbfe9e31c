"""Wall time of the real `kloop` process for the commands that do no verification. Run by hand:

    .venv/bin/python bench/startup.py [--runs 20] [--run RUN_DIR] [--json FILE] [--limit 0.3]
                                      [--wiki DB] [--against OLD_CHECKOUT] [--resident]

Each command is started `--runs` times as its own process (`.venv/bin/kloop ...`, the console
script a user types), after one unmeasured warm-up run, in a rotating order so a burst of load
on a shared machine hits every command alike. It prints p50 and p95 per command, with two
floors for scale: a bare `python -c pass` and `python -c "import kloop.cli"`.

`kloop status` needs a run: `--run DIR` (default runs/demo when it exists; `bash scripts/demo.sh`
makes it). Without one, `status` is timed on a missing run directory (exit 2), which loads the
same modules up to the point where the run is read. `wiki search` reads a throwaway database
made here from the shipped cards; `--wiki DB` adds the same search over another database (e.g. the
four-repository wiki bench/wiki_real.py builds, /tmp/wiki_real.sqlite). `--resident` also times
each wiki search answered by a `kloop wiki serve` of a copy of its database, interleaved with the
rest. The exit status is 1 when a command's p95 is above --limit.

`--against DIR` times a second checkout side by side (e.g. `git worktree add /tmp/old HEAD` before a
change): each command runs through `python -m kloop.cli` with PYTHONPATH=DIR/src for the old code and
PYTHONPATH=src for the new, alternating old and new run by run, and prints p50/p95 of each with the
new/old ratios. On a loaded machine only these ratios mean anything. CPU seconds (user + sys of
the child) are shown beside wall seconds: load inflates them far less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KLOOP = Path(sys.executable).with_name("kloop")


def commands(run: Path | None, db: Path, wiki: Path | None = None, kloop: list[str] | None = None,
             floors: bool = True) -> dict[str, list[str]]:
    """label -> argv; the floors first. `kloop`: how the CLI is started (default: the console script)."""
    kloop = kloop or [str(KLOOP)]
    status_run = str(run) if run is not None else str(db.parent / "no-such-run")
    cmds = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "import kloop.cli (floor)": [sys.executable, "-c", "import kloop.cli"],
    } if floors else {}
    cmds |= {
        "kloop --help": [*kloop, "--help"],
        "kloop status": [*kloop, "status", status_run],
        "kloop wiki search": [*kloop, "wiki", "search", "tensor core gemm", "--db", str(db)],
        "kloop task show": [*kloop, "task", "show", str(REPO / "examples" / "rmsnorm")],
    }
    if wiki is not None:
        cmds["kloop wiki search (--wiki)"] = [*kloop, "wiki", "search", "paged attention int64 overflow", "--db", str(wiki)]
    return cmds


def serve(db: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`kloop wiki serve` of `db`, once its socket is there."""
    proc = subprocess.Popen([str(KLOOP), "wiki", "serve", "--db", str(db)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    sock = db.with_name(db.name + ".sock")
    while not sock.exists():
        if proc.poll() is not None:
            raise SystemExit(f"kloop wiki serve --db {db} exited with {proc.returncode}")
        time.sleep(0.05)
    return proc


def once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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
            times[label].append(once(cmds[label], env)[0])
    return times


def side_by_side(old: Path, run: Path | None, db: Path, wiki: Path | None, runs: int,
                 env: dict[str, str]) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """label -> {"old": [(wall, cpu)], "new": [...]}: old and new alternate run by run, the order
    flipping each run, so a burst of load lands on both alike."""
    module = [sys.executable, "-m", "kloop.cli"]
    cmds = commands(run, db, wiki, kloop=module, floors=False)
    envs = {"old": {**env, "PYTHONPATH": str(old / "src")}, "new": {**env, "PYTHONPATH": str(REPO / "src")}}
    times: dict[str, dict[str, list[tuple[float, float]]]] = {label: {"old": [], "new": []} for label in cmds}
    for argv in cmds.values():  # warm-up, not counted
        for side in envs:
            once(argv, envs[side])
    labels = list(cmds)
    for i in range(runs):
        for label in labels[i % len(labels):] + labels[: i % len(labels)]:
            for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                times[label][side].append(once(cmds[label], envs[side]))
    return times


def report_side_by_side(times: dict[str, dict[str, list[tuple[float, float]]]]) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}
    print(f"{'command':<30} {'old p50':>8} {'new p50':>8} {'ratio':>6}  {'old p95':>8} {'new p95':>8} {'ratio':>6}"
          f"  {'old cpu':>8} {'new cpu':>8} {'ratio':>6}")
    for label, sides in times.items():
        stat = {}
        for side in ("old", "new"):
            wall = [w for w, _ in sides[side]]
            cpu = [c for _, c in sides[side]]
            stat[side] = (statistics.median(wall), percentile(wall, 0.95), statistics.median(cpu))
        (o50, o95, ocpu), (n50, n95, ncpu) = stat["old"], stat["new"]
        rows[label] = {"old_p50_s": round(o50, 3), "new_p50_s": round(n50, 3), "p50_ratio": round(n50 / o50, 3),
                       "old_p95_s": round(o95, 3), "new_p95_s": round(n95, 3), "p95_ratio": round(n95 / o95, 3),
                       "old_cpu_p50_s": round(ocpu, 3), "new_cpu_p50_s": round(ncpu, 3),
                       "cpu_ratio": round(ncpu / ocpu, 3), "runs": len(sides["new"])}
        print(f"{label:<30} {o50:>8.3f} {n50:>8.3f} {n50 / o50:>6.2f}  {o95:>8.3f} {n95:>8.3f} {n95 / o95:>6.2f}"
              f"  {ocpu:>8.3f} {ncpu:>8.3f} {ncpu / ocpu:>6.2f}")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--run", type=Path, default=None, help="a run directory for `kloop status`")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    parser.add_argument("--limit", type=float, default=0.3, help="seconds a command's p95 may take")
    parser.add_argument("--wiki", type=Path, default=None, help="also search this wiki database (e.g. the 4-repo one)")
    parser.add_argument("--against", type=Path, default=None, help="an old checkout to time side by side")
    parser.add_argument("--resident", action="store_true",
                        help="also time each wiki search against a `kloop wiki serve` of a copy of its database")
    args = parser.parse_args()
    run = args.run or (REPO / "runs" / "demo" if (REPO / "runs" / "demo" / "summary.json").is_file() else None)
    with tempfile.TemporaryDirectory(prefix="kloop-startup-") as tmp:
        env = {**os.environ, "KLOOP_HOME": tmp}
        db = Path(tmp) / "wiki.sqlite"
        subprocess.run([str(KLOOP), "wiki", "ingest", "cards", "--db", str(db)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        if args.against is not None:
            print(f"old: {args.against}  new: {REPO}  ({args.runs} runs each, alternating; {os.cpu_count()} cores, "
                  f"load {os.getloadavg()[0]:.1f})")
            pairs = report_side_by_side(side_by_side(args.against.resolve(), run, db, args.wiki, args.runs, env))
            if args.json:
                args.json.write_text(json.dumps({"status_run": str(run) if run else None, "against": str(args.against),
                                                 "rows": pairs}, indent=1))
            return 0
        cmds = commands(run, db, args.wiki)
        servers = []
        if args.resident:  # the same searches, answered by a server of a copy of each database, interleaved
            for label in [label for label in cmds if label.startswith("kloop wiki search")]:
                copy = Path(tmp) / f"resident-{len(servers)}.sqlite"
                original = Path(cmds[label][cmds[label].index("--db") + 1])
                shutil.copyfile(original, copy)
                servers.append(serve(copy, env))
                argv = list(cmds[label])
                argv[argv.index("--db") + 1] = str(copy)
                cmds[label.replace("search", "search resident")] = argv
        try:
            times = measure(cmds, args.runs, env)
        finally:
            for server in servers:
                server.send_signal(signal.SIGINT)
                server.wait(timeout=30)
    rows = {label: {"p50_s": round(statistics.median(v), 3), "p95_s": round(percentile(v, 0.95), 3), "runs": len(v)}
            for label, v in times.items()}
    print(f"{'command':<28} {'p50 s':>7} {'p95 s':>7}   (status on {run or 'a missing run'}; {os.cpu_count()} cores)")
    for label, row in rows.items():
        print(f"{label:<28} {row['p50_s']:>7.3f} {row['p95_s']:>7.3f}")
    if args.json:
        args.json.write_text(json.dumps({"status_run": str(run) if run else None, "rows": rows}, indent=1))
    slow = [label for label, row in rows.items() if label.startswith("kloop") and row["p95_s"] > args.limit]
    if slow:
        print(f"above {args.limit} s at p95: {', '.join(slow)}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
