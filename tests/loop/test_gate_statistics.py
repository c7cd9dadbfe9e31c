"""Issue #11 item 5, through the whole loop with the real verifier: noise is never progress, gains are.

One replay campaign on the paced task (tests/loop/tasks/paced: `y = x * w` after UNITS units of
busy work, so speed is set by one number). Rounds 1-2 are cosmetic rewrites of the baseline (the
same work, renamed and re-commented): never accepted. Rounds 3-5 each do 10 % less work than the
round before: each is accepted, judged against the best it follows, timed in the same rounds.
"""

from __future__ import annotations

from pathlib import Path

from kloop.loop.verifier import KloopVerifier
from tests.loop.helpers import TASKS, make_campaign

PACED = TASKS / "paced"
BASELINE = (PACED / "baseline" / "main.py").read_text()
META = (PACED / "baseline" / "solution.json").read_text()
# short batches, many rounds: the replicates the CI and the gate rest on
GATE_VERIFY = {"rounds": 24, "iterations": 2, "warmup": 1, "heldout": 1, "recheck": 1, "timeout_s": 120}

COSMETIC = [
    BASELINE.replace("acc", "total").replace("i * 7", "7 * i"),
    '"""Same work, reworded."""\n\nUNITS = 40_000  # busy-work units per call\n\n\ndef run(x, w):\n'
    "    mixed = 0\n    for k in range(UNITS):\n        mixed ^= k * 7\n    out = x * w\n    return out + 0 * (mixed & 0)\n",
]


def _faster(units: int) -> str:
    return BASELINE.replace("UNITS = 40_000", f"UNITS = {units}")


def test_cosmetic_rewrites_are_never_accepted_and_each_10_percent_gain_is(tmp_path: Path) -> None:
    lines = [{"claim": f"cosmetic rewrite {i + 1}: renamed variables", "files": {"main.py": code, "solution.json": META}}
             for i, code in enumerate(COSMETIC)]  # fmt: skip
    units = [36_000, 32_400, 29_160]  # each 10 % less work than the last
    lines += [{"claim": f"did {100 - 10 * (i + 1)} % ... 10 % less busy work than the last round",
               "files": {"main.py": _faster(u), "solution.json": META}} for i, u in enumerate(units)]  # fmt: skip
    campaign = make_campaign(tmp_path, lines, verifier=KloopVerifier("cpu", GATE_VERIFY), task=PACED,
                             replan_after=20)  # fmt: skip
    summary = campaign.run()
    by_round = {r.round: r for r in summary.rounds}
    reasons = {n: " | ".join(r.reasons) for n, r in by_round.items()}
    assert all(by_round[n].verify_status == "PASSED" for n in range(1, 6)), reasons
    assert not by_round[1].accepted and not by_round[2].accepted, reasons
    assert "speed:" in reasons[1] and "speed:" in reasons[2]
    assert "its 99.5% lower bound" in reasons[1], reasons[1]  # the rule's own confidence, not rounded to 100 %
    assert [n for n in (3, 4, 5) if by_round[n].accepted] == [3, 4, 5], reasons
    assert summary.best.candidate == "r005"
    # each round was compared with the best before it, directly
    for n in (4, 5):
        verify = (tmp_path / "run" / "artifacts" / f"round-{n:03d}" / "verify.json").read_text()
        assert '"incumbent": {' in verify.replace(" ", "").replace('"incumbent":{', '"incumbent": {')
