"""The loop's mechanics on the tiny task with kloop's deterministic FakeVerifier.

Every rejection path here is also covered end to end with the real verifier (test_end_to_end.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from kloop.loop.gate import SPEED_RULE
from kloop.loop.seal import hash_tree
from kloop.loop.stopping import Outcome, RunStatus
from kloop.loop.verifier import FakeVerifier
from tests.loop.helpers import ROWSCALE, VECTORIZED, fake, make_campaign

HACK = "import torch\n\n_SEEN = {}\n\n\ndef run(x, w):\n    return x * w\n"


def test_gate_accepts_honest_and_rejects_every_bad_round(tmp_path: Path) -> None:
    lines = [
        {"claim": "vectorized: 2x", "files": {"main.py": VECTORIZED, "FAKE_VERDICT.json": fake(2.0)}},
        {"claim": "a slower variant", "files": {"FAKE_VERDICT.json": fake(1.5)}},
        {"claim": "install a hook", "files": {"../.git/hooks/pre-commit": "#!/bin/sh\nexit 0\n"}},
        {"claim": "relax the task", "files": {"../sealed/definition.json": "{}"}},
        {"claim": "cache outputs", "files": {"main.py": HACK, "FAKE_VERDICT.json": fake(3.0)}},
        {"claim": "link out", "symlinks": {"task": "../../sealed"}, "files": {"task/README.md": "x"}},
        {"claim": "edit the plan", "files": {"../notes/plan.md": "anything goes"}},
        {"claim": "trust me", "files": {"../../.kloop/manifest.json": "{}", "../../.kloop/pristine/workloads.jsonl": ""}},
        {"claim": "faster: 3x", "files": {"FAKE_VERDICT.json": fake(3.0)}},
    ]
    campaign = make_campaign(tmp_path, lines, replan_after=10)
    sealed_before = hash_tree(tmp_path / "run" / "sealed")
    summary = campaign.run()

    assert summary.status is RunStatus.completed and summary.outcome is Outcome.improvement
    accepted = [r.round for r in summary.rounds if r.accepted]
    assert accepted == [1, 9]
    reasons = {r.round: " | ".join(r.reasons) for r in summary.rounds}
    assert "does not clear the current best 2.10x (its upper CI bound)" in reasons[2]
    assert "paths: changed .git/hooks" in reasons[3] or "paths: created .git/hooks/pre-commit" in reasons[3]
    assert "integrity: sealed/definition.json was modified" in reasons[4]
    assert "reviewer: rejected" in reasons[5] and "module-level state" in reasons[5]
    assert "symlink solution/task" in reasons[6]
    assert "notes/plan.md is frozen" in reasons[7]
    assert ".kloop/manifest.json (kloop's trusted hashes) was modified" in reasons[8]
    assert ".kloop/pristine/ (kloop's copy of the task) was modified" in reasons[8]
    assert summary.best.candidate == "r009" and summary.best.speedup_geomean == 3.0

    run = tmp_path / "run"
    assert hash_tree(run / "sealed") == sealed_before  # restored after the tamper round
    assert not (run / "workspace" / ".git" / "hooks" / "pre-commit").exists()
    assert not (run / "workspace" / "solution" / "task").exists()
    on_disk = json.loads((run / "summary.json").read_text())
    # the contract's keys, plus `reason` and `spent` (the agents' dollars and tokens): additions, none changed
    assert set(on_disk) == {"task", "status", "outcome", "reason", "best", "rounds", "spent"}
    assert on_disk["spent"]["tokens"] == 0 and on_disk["spent"]["usd"] == 0.0  # replay and rules spend nothing
    assert set(on_disk["best"]) == {"candidate", "round", "speedup_geomean"}
    assert set(on_disk["rounds"][0]) == {"round", "stage", "candidate", "parent", "verify_status", "speedup_geomean",
                                         "review_decision", "accepted", "reasons"}
    assert on_disk["rounds"][0]["verify_status"] == "PASSED"
    assert (run / "artifacts" / "round-001" / "review.json").is_file()
    assert (run / "report.html").read_text().count("<tr class=") == 9  # one row per round
    trusted = {k: v for k, v in sealed_before.items() if k != "manifest.json"}
    assert hash_tree(run / ".kloop" / "pristine") == trusted  # kloop's own copy repaired too
    review5 = json.loads((run / "artifacts" / "round-005" / "review.json").read_text())
    assert review5["full_review"] is True  # every 5th round the reviewer reviews in full


def test_stagnation_replans_then_stops_stalled(tmp_path: Path) -> None:
    lines = [{"claim": f"try {i}", "files": {"FAKE_VERDICT.json": fake(1.0 + i / 1000)}} for i in range(10)]
    campaign = make_campaign(tmp_path, lines, replan_after=2, stall_after=2)
    summary = campaign.run()
    assert summary.status is RunStatus.stalled
    assert summary.outcome is Outcome.no_go
    assert len(summary.rounds) == 4
    assert "tested: 'try 3': 1.00x (r004, rejected)" in summary.reason
    prompts = [(tmp_path / "run" / "artifacts" / f"round-{n:03d}" / "prompt.md").read_text() for n in (2, 3)]
    assert "## Replan" not in prompts[0] and "## Replan" in prompts[1]


def test_round_budget_and_target(tmp_path: Path) -> None:
    lines = [{"claim": "1.5x", "files": {"FAKE_VERDICT.json": fake(1.5)}},
             {"claim": "2.5x", "files": {"FAKE_VERDICT.json": fake(2.5)}},
             {"claim": "3x", "files": {"FAKE_VERDICT.json": fake(3.0)}}]
    summary = make_campaign(tmp_path / "a", lines, target_speedup=2.2).run()
    assert summary.status is RunStatus.target_reached and summary.best.candidate == "r002"
    summary = make_campaign(tmp_path / "b", lines, rounds=1).run()
    assert summary.status is RunStatus.budget and len(summary.rounds) == 1


def test_tune_stage_over_an_accepted_tunable_candidate(tmp_path: Path) -> None:
    from kloop.loop.config import Stage

    meta = json.loads((ROWSCALE / "baseline" / "solution.json").read_text())
    meta["sources"] = [{"path": "main.py"}, {"path": "FAKE_VERDICT.json"}]
    meta["kloop"] = {"tunables": {"S": [2.0, 1.5, 4.0]}}
    lines = [
        {"claim": "2x", "files": {"FAKE_VERDICT.json": fake(2.0)}},
        {"claim": "tunable", "goal": "tunables",
         "files": {"solution.json": json.dumps(meta), "FAKE_VERDICT.json": '{"speedup": ${S}}'}},
    ]
    campaign = make_campaign(tmp_path, lines, stages=[Stage.iterate, Stage.tune])
    summary = campaign.run()
    # S=2.0 is what r002 was verified at: the tuner does not measure it again
    assert [(r.stage, r.accepted) for r in summary.rounds] == [
        ("iterate", True), ("iterate", True), ("tune", False), ("tune", True)]
    assert [r.config for r in campaign.lineage.rounds()[2:]] == [{"S": 1.5}, {"S": 4.0}]
    assert summary.best.candidate == "r004" and summary.best.speedup_geomean == 4.0
    assert {r.parent for r in summary.rounds[2:]} == {"r002"}


def test_a_promising_inconclusive_round_is_measured_again_over_four_fresh_pairs_of_boxes(tmp_path: Path) -> None:
    """1.05x with a log-ratio se of 0.025 does not clear 1.01 at 99.5 % in one look (lower bound 0.975):
    the loop verifies it four more times, each with 2x the rounds (`SpeedRule.confirm_pairs`,
    `confirm_rounds_factor`), each into its own log folder, and the gate reads the five pooled."""
    verifier = FakeVerifier()
    lines = [{"claim": "5 % faster, not yet clear", "files": {"main.py": VECTORIZED,
                                                              "FAKE_VERDICT.json": fake(1.05, log_se=0.025)}}]  # fmt: skip
    campaign = make_campaign(tmp_path, lines, verifier=verifier, replan_after=10)
    summary = campaign.run()

    assert [r.accepted for r in summary.rounds] == [True], [r.reasons for r in summary.rounds]
    assert verifier.rounds_factors == [1, *[SPEED_RULE.confirm_rounds_factor] * SPEED_RULE.confirm_pairs]
    assert SPEED_RULE.confirm_pairs == 4 and SPEED_RULE.confirm_rounds_factor == 2
    assert len(set(verifier.log_dirs)) == 5  # every pair of boxes logs apart
    verdict = json.loads((tmp_path / "run" / "artifacts" / "round-001" / "verify.json").read_text())
    assert verdict["summary"]["comparison"]["replicates"] == 16 + 4 * 32
    assert math.isclose(verdict["summary"]["comparison"]["log_se"], 0.025 / math.sqrt(5))
