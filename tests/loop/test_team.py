"""`kloop run --team N`: real `kloop run` processes, the replay writer per branch (`{branch}` in
--writer), the rules reviewer, the real verifier through the local pool, on the CPU.

What a team must do: both branches run and show in status, summary.json and the report; the
global best is the best of both; a stalled branch rebases onto the other's best; a kill -9 of the
driver then `--resume` keeps every accepted candidate of every branch.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

from kloop.loop.branches import BranchLineage
from kloop.loop.lineage import Lineage
from kloop.loop.record import CandidateRecord
from tests.loop.helpers import ROWSCALE, VECTORIZED, lineage_rows, make_campaign, write_campaign
from tests.loop.test_end_to_end import ROW_LOOP, WRONG
from tests.loop.test_resume import kloop, round_commits


def team_run(tmp_path: Path, lines: dict[str, list[dict[str, Any]]], *extra: str,
             crash_at: str | None = None) -> Any:  # fmt: skip
    """`kloop run ROWSCALE --team len(lines)`, each branch replaying its own lines (also used over Ray)."""
    for branch, steps in lines.items():
        write_campaign(tmp_path / f"campaign-{branch}.jsonl", steps)
    return kloop("run", str(ROWSCALE), "--writer", f"replay:{tmp_path}/campaign-{{branch}}.jsonl",
                 "--reviewer", "rules", "--stages", "iterate", "--device", "cpu", "--team", str(len(lines)),
                 *extra, "--out", str(tmp_path / "run"), crash_at=crash_at)


def _rows(run: Path) -> list[dict[str, Any]]:
    return lineage_rows(run, "round, candidate, branch, parent, accepted, speedup_geomean, commit_sha")


# Each wrong kernel sleeps at import: b2 must not stall before b1's first round is accepted, and forked
# sandboxes (kloop.verify.forkserver) made its three failures faster than that round (b2 then stood on the
# baseline, the global best, and ended after 3 rounds).
OFF = ["import time\n\ntime.sleep(4)\n" + WRONG.replace("1e-2", value) for value in ("1e-2", "2e-2", "3e-2")]
REBASE_LINES = {"b1": [{"claim": "vectorized", "files": {"main.py": VECTORIZED}},
                       {"claim": "row loop", "files": {"main.py": ROW_LOOP}}],
                "b2": [{"claim": f"off {i}", "files": {"main.py": text}} for i, text in enumerate(OFF)]
                + [{"claim": "row loop after the rebase", "files": {"main.py": ROW_LOOP}}]}
"""b1 finds the fast kernel; b2 fails three times (verified failures: slower than b1's first round,
so b1's best exists by then), stalls (replan after 3, stall after 0 more), rebases onto b1's best
and plays its last line from there. Run with `--stall-after 0`."""


def check_rebase_run(tmp_path: Path, proc: Any, pool: str) -> dict[str, Any]:
    """What a team run of REBASE_LINES must show, whichever pool (`local` or `ray`) verified it:
    the same branches, rounds, best, parents and rebase. Returns summary.json."""
    assert proc.returncode == 0, proc.stderr
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed", summary["reason"]
    by_branch = {b["name"]: b for b in summary["branches"]}
    assert sorted(by_branch) == ["b1", "b2"]
    assert [by_branch[b]["rounds"] for b in ("b1", "b2")] == [2, 4]
    assert sorted(r["branch"] for r in summary["rounds"]) == ["b1"] * 2 + ["b2"] * 4

    accepted = [r for r in summary["rounds"] if r["accepted"]]
    top = max(accepted, key=lambda r: r["speedup_geomean"])
    assert summary["best"]["candidate"] == top["candidate"] and top["branch"] == "b1"
    assert by_branch["b1"]["best"]["candidate"] == top["candidate"]

    b2 = [r for r in summary["rounds"] if r["branch"] == "b2"]
    assert [r["parent"] for r in b2[:3]] == ["baseline"] * 3 and not any(r["accepted"] for r in b2)
    assert [m["onto"] for m in by_branch["b2"]["rebases"]] == [top["candidate"]]
    assert b2[3]["parent"] == top["candidate"]  # the round after the rebase starts from b1's best
    assert by_branch["b2"]["head"] == top["candidate"]
    for where in ("branches/b1", "branches/b2", "workspace"):  # every branch, and the run, at the global best
        assert (run / where / "solution" / "main.py").read_text() == VECTORIZED, where

    workers = {json.loads((run / "artifacts" / f"round-{r['round']:03d}" / "verify.json").read_text())
               ["environment"].get("pool_worker", "") for r in summary["rounds"] if r["speedup_geomean"]}
    assert workers and all(w.startswith(f"{pool}:") for w in workers), workers  # through the pool's workers
    return summary


def test_two_branches_share_one_best_and_a_stalled_branch_rebases(tmp_path: Path) -> None:
    """REBASE_LINES on the local pool; then status and the reports show both branches."""
    proc = team_run(tmp_path, REBASE_LINES, "--stall-after", "0")
    summary = check_rebase_run(tmp_path, proc, "local")
    run = tmp_path / "run"
    top = summary["best"]

    status = json.loads(kloop("status", str(run), "--json").stdout)
    assert [b["name"] for b in status["branches"]] == ["b1", "b2"]
    assert {r["branch"] for r in status["rounds"]} == {"b1", "b2"}
    text = kloop("status", str(run)).stdout
    assert "branch b1: completed" in text and f"rebased 1x (last onto {top['candidate']})" in text
    assert kloop("report", str(run), "--format", "md", "--out", str(tmp_path / "r.md")).returncode == 0
    report = (tmp_path / "r.md").read_text()
    assert "## Branches" in report and "| b1 | completed |" in report and "| b2 | completed |" in report
    assert 'id="branches"' in (run / "report.html").read_text()


def test_kill_9_of_the_driver_then_resume_keeps_every_branchs_accepted_candidates(tmp_path: Path) -> None:
    """Both branches' first rounds start against the baseline and pass it; the driver is killed (SIGKILL)
    right after the third row is written, while the other branch is mid-round. Which rows exist by then
    is the scheduler's choice (under load one branch may write two rows first), so the test asks that
    something was accepted, that nothing accepted is lost or changed, and that after `--resume` both
    branches have their accepted candidate."""
    lines = {"b1": [{"claim": "vectorized", "files": {"main.py": VECTORIZED}},
                    {"claim": "off", "files": {"main.py": WRONG}}],
             "b2": [{"claim": "row loop", "files": {"main.py": ROW_LOOP}},
                    {"claim": "escape", "files": {"../escape.txt": "x"}}]}
    first = team_run(tmp_path, lines, crash_at="after_lineage:3")
    assert first.returncode == -signal.SIGKILL, first.stderr
    run = tmp_path / "run"
    before = {r["candidate"]: r for r in _rows(run) if r["accepted"]}
    assert before, _rows(run)
    status = json.loads(kloop("status", str(run), "--json").stdout)
    assert [b["name"] for b in status["branches"]] == ["b1", "b2"]

    second = kloop("run", "--resume", str(run))
    assert second.returncode == 0, second.stderr
    after = {r["candidate"]: r for r in _rows(run)}
    for candidate, row in before.items():  # nothing accepted before the kill is lost or changed
        assert after[candidate] == row, (candidate, after.get(candidate))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "completed", summary["reason"]
    assert {r["branch"] for r in after.values() if r["accepted"]} == {"b1", "b2"}, after
    assert sorted(r["branch"] for r in summary["rounds"]) == ["b1", "b1", "b2", "b2"]  # no turn played twice
    assert {r["branch"] for r in after.values() if r["accepted"]} == {"b1", "b2"}, after
    assert summary["best"]["speedup_geomean"] == max(r["speedup_geomean"] or 0 for r in after.values() if r["accepted"])
    commits = round_commits(run / "workspace")
    assert sum(1 for n, c in commits.items() if n > 0 and c > 1) <= 2, commits  # at most the rounds in flight
    assert not (run / "branches" / "b2" / "escape.txt").exists()


def test_branches_claim_distinct_round_numbers_and_a_repeated_round_keeps_its_number(tmp_path: Path) -> None:
    """Two branches on their own connections, claiming at once: no number is handed out twice."""
    path = tmp_path / "lineage.sqlite"
    lineage = Lineage(path)
    lineage.add(CandidateRecord(round=0, candidate="baseline", stage="research", agent_status="completed",
                                accepted=True, speedup_geomean=1.0))
    lineage.close()
    claimed: dict[str, list[int]] = {"b1": [], "b2": []}

    def claim(branch: str) -> None:
        view = BranchLineage(path, branch)
        for _ in range(25):
            number = view.next_round()
            claimed[branch].append(number)
            view.add(CandidateRecord(round=number, candidate=f"r{number:03d}", stage="iterate",
                                     agent_status="completed", accepted=False))
        view.close()

    threads = [threading.Thread(target=claim, args=(b,)) for b in claimed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    numbers = claimed["b1"] + claimed["b2"]
    assert sorted(numbers) == list(range(1, 51))
    view = BranchLineage(path, "b1")
    open_claim = view.next_round()  # claimed, never recorded (a crash): asked again, the same number
    assert view.next_round() == open_claim == 51
    assert BranchLineage(path, "b2").next_round() == 52  # b1's open claim is not handed to b2
    assert [r.round for r in view.rounds()] == sorted(claimed["b1"])
    view.release_claims()
    assert BranchLineage(path, "b1").next_round() == 53  # 51 given back; numbers grow past b2's open 52


def test_a_single_run_keeps_the_single_run_layout(tmp_path: Path) -> None:
    """--team 1 is today's run: no branches/, no `branches` or `branch` in summary.json."""
    campaign = make_campaign(tmp_path, [{"claim": "vectorized", "files": {"main.py": VECTORIZED}}])
    campaign.run()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "branches" not in summary and all("branch" not in r for r in summary["rounds"])
    assert not (tmp_path / "run" / "branches").exists()


def test_branch_queries_in_sql_agree_with_the_rows(tmp_path: Path) -> None:
    """BranchLineage selects in SQL (its rounds, head, own best, marker, spending, the global best);
    on a lineage with ties, missing speedups and interleaved branches, each answer is the one the
    rows give when read in full, as they were before."""
    import random

    rng = random.Random(23)
    path = tmp_path / "lineage.sqlite"
    seed = Lineage(path)
    seed.add(CandidateRecord(round=0, candidate="baseline", stage="research", agent_status="completed",
                             accepted=True, speedup_geomean=1.0))
    for n in range(1, 121):
        seed.add(CandidateRecord(round=n, candidate=f"r{n:03d}", stage="iterate", agent_status="completed",
                                 branch=rng.choice(["b1", "b2", "b3"]), accepted=rng.random() < 0.4,
                                 speedup_geomean=rng.choice([None, 1.0, 1.5, 2.0, round(rng.uniform(0.5, 2), 1)]),
                                 cost_usd=rng.choice([None, 0.25, 1.0])))
    every = seed.all()
    seed.close()
    top = max((r for r in every if r.accepted), key=lambda r: (r.speedup_geomean or 0.0, -r.round))
    for branch in ("b1", "b2", "b3", "b4"):
        view = BranchLineage(path, branch)
        own = [r for r in every if r.round > 0 and r.branch == branch]
        kept = [r for r in own if r.accepted]
        assert view.rounds() == own
        assert view.spent_usd() == sum(r.cost_usd or 0.0 for r in own)
        assert view.best() == top
        assert view.own_best() == (max(kept, key=lambda r: (r.speedup_geomean or 0.0, -r.round)) if kept else None)
        assert view.head() == (kept[-1] if kept else every[0])
        assert view.marker() == max([r.round for r in kept] + [0])
        view.close()
