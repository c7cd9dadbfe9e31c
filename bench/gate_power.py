"""The gate's error rates on real verifications: false acceptance of A/A, detection of a real 5 % gain.

    .venv/bin/python bench/gate_power.py [--decisions 200] [--gain 1.05] [--load-at 0.5] [--rounds N]
                                         [--only aa|gain] [--quick]

Task: tests/loop/tasks/paced (`y = x * w` after UNITS units of busy work): the slowdown is ours to
set. Each decision verifies a candidate against the current best exactly as the loop does (the
best timed in the same rounds: `VerifyOptions.incumbent_path`) and applies the gate's speed rule
(`kloop.loop.gate.SPEED_RULE`). Decisions alternate between an A/A candidate (the best's own
code, reworded) and one doing 1/gain of the best's work. From `--load-at` on, one busy process
per CPU competes. Prints false acceptance and detection per phase (and, from the same looks,
what the rule would have decided without its between-box term), the median time per decision;
`--json OUT` keeps every decision.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import astuple
from pathlib import Path

from kloop.loop.gate import SPEED_RULE, another_look, confirmed
from kloop.task.load import load_task
from kloop.verify import verify
from kloop.verify.result import VerifyOptions, VerifyResult
from kloop.verify.stats import BOX_SD, LogRatio, pool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aa_coverage import start_load, stop_load  # noqa: E402  (a sibling bench script, not a package)

REPO = Path(__file__).resolve().parents[1]
PACED = REPO / "tests" / "loop" / "tasks" / "paced"
UNITS = 40_000


def write_variant(root: Path, name: str, units: int, reword: bool) -> Path:
    """The paced baseline with `units` of busy work; `reword` renames its variables (same work)."""
    out = root / name
    out.mkdir(parents=True, exist_ok=True)
    code = (PACED / "baseline" / "main.py").read_text().replace("UNITS = 40_000", f"UNITS = {units}")
    (out / "main.py").write_text(code.replace("acc", "total") if reword else code)
    (out / "solution.json").write_text((PACED / "baseline" / "solution.json").read_text())
    return out


def decide(task: object, candidate: Path, best: Path, work: Path, rounds: int) -> dict[str, object]:
    options = VerifyOptions(device="cpu", heldout=1, prestart=True, incumbent_path=best, log_dir=work / "logs",
                            rounds=rounds)  # fmt: skip
    t0 = time.perf_counter()
    result = verify(task, candidate, options)
    each, looks_done = [result], 1
    again = options.model_copy(update={"rounds": rounds * SPEED_RULE.confirm_rounds_factor})

    def one_pair(_pair: int) -> VerifyResult:
        each.append(verify(task, candidate, again))
        return each[-1]

    while another_look(result, False, looks_done):  # the loop's rule: a promising, inconclusive look is repeated
        looks_done += 1
        result = confirmed(result, one_pair)
    took = time.perf_counter() - t0
    inc = result.summary.incumbent
    if inc is None:
        return {"status": result.status.value, "accepted": False, "seconds": took, "reasons": result.reasons[:2]}
    ratio = inc.ratio()
    looks = [r.summary.incumbent.ratio() for r in each if r.summary.incumbent is not None]
    return {"status": result.status.value, "ratio": ratio.speedup, "lower": ratio.lower(SPEED_RULE.confidence),
            "se": inc.log_se, "looks": looks_done, "accepted": result.passed and SPEED_RULE.clears(ratio),
            "accepted_rounds_only": result.passed and rounds_only_accepts(looks), "look_stats": [list(astuple(r)) for r in looks],
            "seconds": took, "clock": result.summary.clock}  # fmt: skip


def rounds_only_accepts(looks: list[LogRatio]) -> bool:
    """The same verifications judged without the between-box term (what the rule would say had it none).

    `looks`: the first look's verification, then the confirming look's. Exact as a counterfactual: a
    look that clears with the term clears without it, and both rules ask for another look at the same
    estimate, so every verification this one needs was taken."""
    bare = [LogRatio(r.mean, math.sqrt(max(r.se**2 - BOX_SD**2, 1e-24)), r.df, r.replicates) for r in looks]
    if SPEED_RULE.clears(bare[0]):
        return True
    if len(bare) == 1 or not SPEED_RULE.another_look(bare[0], 1):
        return False
    so_far = bare[0]
    for more in bare[1:]:
        so_far = pool(so_far, more)
    return SPEED_RULE.clears(so_far)


def rate(rows: list[dict[str, object]], kind: str, loaded: bool, key: str = "accepted") -> str:
    chosen = [r for r in rows if r["kind"] == kind and r["loaded"] == loaded]
    if not chosen:
        return "-"
    hits = sum(bool(r.get(key)) for r in chosen)
    return f"{hits}/{len(chosen)} = {hits / len(chosen):.1%}"


def summary(rows: list[dict[str, object]], args: argparse.Namespace) -> str:
    """The table docs/benchmarks.md shows: both rates, with and without the between-box term, per phase."""
    lines = [f"rule: {SPEED_RULE.confidence:.1%} one-sided lower bound > {SPEED_RULE.min_gain}, second look "
             f"x{SPEED_RULE.confirm_factor} rounds over {SPEED_RULE.confirm_pairs} fresh pairs of boxes; between-box sd {BOX_SD}; gain {args.gain}; {args.rounds} rounds",
             "| phase | A/A accepted | gain detected | without the box term: A/A / gain | reported gain (median) "
             "| second looks A/A / gain | median s per decision A/A / gain | median load |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for loaded in (False, True):
        part = [r for r in rows if r["loaded"] == loaded]
        if not part:
            continue
        aa, gain = [r for r in part if r["kind"] == "aa"], [r for r in part if r["kind"] == "gain"]

        def med(chosen: list[dict[str, object]], key: str) -> str:
            values = [float(r[key]) for r in chosen if r.get(key) is not None]  # type: ignore[arg-type]
            return f"{statistics.median(values):.3g}" if values else "-"

        second = f"{sum(r.get('looks') == 2 for r in aa)} / {sum(r.get('looks') == 2 for r in gain)}"
        lines.append(f"| {'competing load' if loaded else 'quiet'} | {rate(rows, 'aa', loaded)} | {rate(rows, 'gain', loaded)} | "
                     f"{rate(rows, 'aa', loaded, 'accepted_rounds_only')} / {rate(rows, 'gain', loaded, 'accepted_rounds_only')} | "
                     f"{med(gain, 'ratio')} | {second} | {med(aa, 'seconds')} / {med(gain, 'seconds')} | {med(part, 'load')} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=400, help="total; half A/A, half with the gain")
    parser.add_argument("--gain", type=float, default=1.05)
    parser.add_argument("--load-at", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=VerifyOptions().rounds, help="timing rounds per verification")
    parser.add_argument("--only", choices=("aa", "gain"), help="decisions of one kind only")
    parser.add_argument("--quick", action="store_true", help="40 decisions")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.quick:
        args.decisions = 40
    task = load_task(PACED)
    work = Path(tempfile.mkdtemp(prefix="kloop-gate-"))
    best = write_variant(work, "best", UNITS, reword=False)
    same = write_variant(work, "same", UNITS, reword=True)
    faster = write_variant(work, "faster", round(UNITS / args.gain), reword=False)
    rows: list[dict[str, object]] = []
    load: list = []
    try:
        for i in range(args.decisions):
            if not load and i >= args.load_at * args.decisions:
                load = start_load()
            kind = args.only or ("aa" if i % 2 == 0 else "gain")
            row = decide(task, same if kind == "aa" else faster, best, work, args.rounds)
            row.update(kind=kind, loaded=bool(load), load=os.getloadavg()[0])
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        stop_load(load)
    print(summary(rows, args))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
