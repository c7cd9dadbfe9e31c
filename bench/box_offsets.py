"""How far apart two boxes run identical code: the spread that rounds never average away.

    .venv/bin/python bench/box_offsets.py [--runs 24] [--rounds 144] [--layout fixed|aslr] [--load] [--json OUT]

Verifies tests/loop/tasks/paced as bench/gate_power.py does (candidate, baseline and the current
best timed in the same rounds), alternating an A/A candidate (the best reworded) with one doing
1/1.05 of the work, with many rounds per verification, and keeps every round's per-call cost per
box. Per verification and pair of boxes it estimates the log ratio over all rounds (the 20 %
trimmed mean) and its standard error; across verifications the spread of those estimates beyond
what their standard errors explain is the between-box spread, `kloop.verify.stats.BOX_SD`.
It also cuts each verification into 16-round windows and counts how often the 95 % interval of an
A/A pair contains 1.0, with and without the between-box term.

`--layout aslr` starts the boxes with address-space randomisation on (as before setarch -R), to
show what the fixed layout removed. The pairs: B/I = baseline box / best box (the same code, both
only loaded), C/I and C/B = the candidate's box (which also ran correctness) / the others.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import kloop.verify.contain as contain
import kloop.verify.timed as timed
from kloop.task.load import load_task
from kloop.verify import verify
from kloop.verify.result import VerifyOptions
from kloop.verify.stats import BOX_SD, LogRatio, between_boxes, trimmed_mean

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aa_coverage import start_load, stop_load  # noqa: E402  (sibling bench scripts, not a package)
from gate_power import PACED, UNITS, write_variant  # noqa: E402

PAIRS = {"B/I": ("incumbent", "baseline"), "C/I": ("incumbent", "candidate"), "C/B": ("baseline", "candidate")}
WINDOW = 16


def record_rounds(sink: list[dict[str, list[float]]]) -> None:
    """Keep each timed workload's per-round whole per-call cost per box (instrumentation only)."""
    original = timed.TimingSession._record

    def keep(self: Any, workload: Any, result: Any, timing: Any, *args: Any) -> None:
        sink.append({label: list(values) for label, values in timing.cost_ns.items()})
        original(self, workload, result, timing, *args)

    timed.TimingSession._record = keep  # type: ignore[method-assign]


def log_ratios(rounds: dict[str, list[float]], pair: str) -> list[float]:
    top, bottom = PAIRS[pair]
    return [math.log(a / b) for a, b in zip(rounds[top], rounds[bottom], strict=True)]


def between_spread(estimates: list[LogRatio]) -> float:
    """sd of the estimates beyond their own standard errors (0 when they explain it all)."""
    if len(estimates) < 3:
        return float("nan")
    excess = statistics.variance([e.mean for e in estimates]) - statistics.fmean([e.se**2 for e in estimates])
    return math.sqrt(max(excess, 0.0))


def window_coverage(rows: list[dict[str, Any]], box_sd: float) -> tuple[int, int]:
    """16-round windows of A/A pairs whose 95 % interval contains 1.0 (covered, total)."""
    covered = total = 0
    for row in rows:
        pairs = ["B/I"] + (["C/I", "C/B"] if row["kind"] == "aa" else [])
        for pair in pairs:
            diffs = log_ratios(row["rounds"], pair)
            for start in range(0, len(diffs) - WINDOW + 1, WINDOW):
                lo, hi = between_boxes(trimmed_mean(diffs[start : start + WINDOW]), box_sd).ci()
                covered += lo <= 1.0 <= hi
                total += 1
    return covered, total


def report(rows: list[dict[str, Any]]) -> str:
    groups = [("B/I", "same code, both only loaded", rows), ("C/I", "A/A", [r for r in rows if r["kind"] == "aa"]),
              ("C/B", "A/A", [r for r in rows if r["kind"] == "aa"]),
              ("C/I", "the 5 % gain", [r for r in rows if r["kind"] == "gain"])]  # fmt: skip
    lines = ["| pair | which | verifications | mean log ratio | sd of estimates | rms se | between-box spread |",
             "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for pair, what, chosen in groups:
        estimates = [trimmed_mean(log_ratios(r["rounds"], pair)) for r in chosen]
        if len(estimates) < 2:
            continue
        lines.append(f"| {pair} | {what} | {len(estimates)} | {100 * statistics.fmean(e.mean for e in estimates):+.2f} % | "
                     f"{100 * statistics.stdev(e.mean for e in estimates):.2f} % | "
                     f"{100 * math.sqrt(statistics.fmean(e.se**2 for e in estimates)):.2f} % | "
                     f"{100 * between_spread(estimates):.2f} % |")  # fmt: skip
    for box_sd in (0.0, BOX_SD):
        covered, total = window_coverage(rows, box_sd)
        lines.append(f"{WINDOW}-round A/A windows whose 95 % CI contains 1.0, between-box term {100 * box_sd:.1f} %: "
                     f"{covered}/{total} = {covered / max(total, 1):.1%}")  # fmt: skip
    return "\n".join(lines)


def _mean_se(ratio: LogRatio) -> list[float]:
    return [round(ratio.mean, 6), round(ratio.se, 6)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=24, help="verifications, alternating A/A and a 5 %% gain")
    parser.add_argument("--rounds", type=int, default=144)
    parser.add_argument("--layout", choices=("fixed", "aslr"), default="fixed")
    parser.add_argument("--load", action="store_true", help="one busy process per CPU throughout")
    parser.add_argument("--json", type=Path, help="per verification: kind, and per pair the estimate and its se")
    args = parser.parse_args()
    if args.layout == "aslr":
        contain.fixed_layout_available = lambda: False  # type: ignore[assignment]
    sink: list[dict[str, list[float]]] = []
    record_rounds(sink)
    task = load_task(PACED)
    work = Path(tempfile.mkdtemp(prefix="kloop-boxes-"))
    best = write_variant(work, "best", UNITS, reword=False)
    same, faster = write_variant(work, "same", UNITS, reword=True), write_variant(work, "faster", round(UNITS / 1.05), reword=False)
    rows: list[dict[str, Any]] = []
    load = start_load() if args.load else []
    try:
        for i in range(args.runs):
            kind = "aa" if i % 2 == 0 else "gain"
            sink.clear()
            result = verify(task, same if kind == "aa" else faster, VerifyOptions(
                device="cpu", heldout=1, prestart=True, incumbent_path=best, rounds=args.rounds, log_dir=work / "logs"))
            if not result.passed or len(sink) != 1:
                print(f"run {i}: {result.status.value} {result.reasons[:1]}", flush=True)
                continue
            rows.append({"kind": kind, "rounds": sink[0]})
            print(f"run {i}: {kind} " + " ".join(f"{p} {100 * trimmed_mean(log_ratios(sink[0], p)).mean:+.2f} %"
                                                 for p in PAIRS), flush=True)  # fmt: skip
    finally:
        stop_load(load)
    print(f"layout {args.layout}, {'competing load' if args.load else 'quiet'}, {args.rounds} rounds per verification")
    print(report(rows))
    if args.json:
        summary = [{"kind": r["kind"], **{p: _mean_se(trimmed_mean(log_ratios(r["rounds"], p))) for p in PAIRS}}
                   for r in rows]  # fmt: skip
        args.json.write_text(json.dumps({"layout": args.layout, "load": args.load, "rounds": args.rounds,
                                         "per_verification_mean_se": summary}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
